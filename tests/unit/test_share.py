"""share.py's escaping and the usage reader behind the token counts."""

from __future__ import annotations

from google.genai import types

from tui_eval.engine.insight import invocation_usage, usage_from_metadata
from tui_eval.schema.usage import TokenUsage
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.model import Content, InvocationEvent, InvocationEvents, Invocation, Part
from tui_eval.share import md


def test_markdown_escape_keeps_agent_text_inert() -> None:
    assert md("a | b") == "a \\| b"
    assert md("`code`") == "\\`code\\`"
    assert md("<img src=x onerror=alert(1)>") == "\\<img src=x onerror=alert(1)\\>"
    assert md("[link](http://x)") == "\\[link\\](http://x)"
    assert md("A & B") == "A &amp; B"
    # Control characters are shown, never passed on (a newline would end a table row).
    assert "\n" not in md("one\ntwo") and "\x1b" not in md("\x1b[31mred")


def test_usage_from_google_genai_metadata_and_adk_dicts() -> None:
    meta = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120, candidates_token_count=30, cached_content_token_count=20,
        thoughts_token_count=5, total_token_count=155)
    expected = TokenUsage(prompt_tokens=120, output_tokens=35, cached_tokens=20, total_tokens=155)
    assert usage_from_metadata(meta) == expected
    as_json = meta.model_dump(mode="json", by_alias=True, exclude_none=True)  # camelCase, as the API sends
    assert usage_from_metadata(as_json) == expected
    assert usage_from_metadata(None) is None and usage_from_metadata({"other": 1}) is None


def test_invocation_usage_reads_each_events_metadata() -> None:
    events = InvocationEvents(invocation_events=[
        InvocationEvent(author="a", usage_metadata={"prompt_token_count": 10, "candidates_token_count": 2},
                        model_version="gemini-2.5-pro"),
        InvocationEvent(author="a", content=Content(role="model", parts=[Part(text="hi")])),
        InvocationEvent(author="a", usage_metadata={"prompt_token_count": 7, "candidates_token_count": 1}),
    ])
    inv = Invocation(user_content=Content(role="user", parts=[Part(text="q")]), intermediate_data=events)
    assert invocation_usage(inv) == [("gemini-2.5-pro", TokenUsage(prompt_tokens=10, output_tokens=2, total_tokens=12)),
                                     ("unknown model", TokenUsage(prompt_tokens=7, output_tokens=1, total_tokens=8))]


def test_config_accepts_a_prices_section_without_warning() -> None:
    config = read_eval_config({"criteria": {"response_match_score": 0.8},
                               "prices": {"my-model": {"prompt": 1.0, "output": 2.0}}})
    assert config.warnings == []
