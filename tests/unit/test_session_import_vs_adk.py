"""The session import against google-adk 2.13's own conversion (`convert_session_to_eval_invocations`, what
`adk web`'s "add session to eval set" uses), on sessions with the event shapes that decide where an event
goes: partial and error events, skip_summarization, long-running tools, transfers between agents, several
final responses, events without content, grounding metadata; in both spellings a user has at hand."""

from __future__ import annotations

from typing import Any

import pytest

from tui_eval.schema.session import case_from_session

def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _events() -> list[list[dict[str, Any]]]:
    def user(inv: str, text: str, ts: float) -> dict[str, Any]:
        return {"invocation_id": inv, "author": "user", "timestamp": ts,
                "content": {"role": "user", "parts": [{"text": text}]}}

    def model(inv: str, author: str, *parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"invocation_id": inv, "author": author, "content": {"role": "model", "parts": list(parts)}, **extra}

    call = {"function_call": {"id": "c1", "name": "lookup", "args": {"q": "x", "n": [1, 2]}}}
    answer = {"function_response": {"id": "c1", "name": "lookup", "response": {"ok": True}}}
    transfer = {"function_call": {"id": "t1", "name": "transfer_to_agent", "args": {"agent_name": "helper"}}}
    return [
        # A tool call, its answer, then the final text.
        [user("e1", "find x", 1.0), model("e1", "root", call), model("e1", "root", answer),
         model("e1", "root", {"text": "found x"})],
        # Streaming: partial chunks, then the whole answer; two turns.
        [user("a", "hi", 1.0), model("a", "root", {"text": "Hel"}, partial=True),
         model("a", "root", {"text": "Hello"}), user("b", "again", 2.0), model("b", "root", {"text": "Hi again"})],
        # A transfer to another agent that answers; intermediate text by the first agent.
        [user("t", "help me", 1.0), model("t", "root", {"text": "Let me hand you over."}, transfer),
         model("t", "root", {"function_response": {"id": "t1", "name": "transfer_to_agent", "response": {}}}),
         model("t", "helper", {"text": "Helper here."})],
        # An error event, a skip_summarization tool answer, a long-running tool.
        [user("x", "do it", 1.0), model("x", "root", call, long_running_tool_ids=["c1"]),
         model("x", "root", answer, actions={"skip_summarization": True}),
         model("x", "root", {"text": ""}, error_code="MALFORMED", error_message="bad")],
        # An event without content, one with empty parts, grounding metadata, a user event without content.
        [{"invocation_id": "g", "author": "user", "timestamp": 3.0}, user("g", "ground", 4.0),
         {"invocation_id": "g", "author": "root"}, model("g", "root"),
         model("g", "root", {"text": "grounded"}, grounding_metadata={"web_search_queries": ["q"]})],
    ]


def _session(events: list[dict[str, Any]]) -> Any:
    from google.adk.sessions.session import Session

    return Session.model_validate({"id": "s", "app_name": "app", "user_id": "u", "events": events})


@pytest.mark.parametrize("events", _events(), ids=["tools", "partial", "transfer", "errors", "empty"])
@pytest.mark.parametrize("by_alias", [True, False], ids=["api_server", "model_dump_json"])
def test_the_import_makes_the_turns_adk_makes(events: list[dict[str, Any]], by_alias: bool) -> None:
    import json

    from google.adk.cli.utils.evals import convert_session_to_eval_invocations

    session = _session(events)
    adk_made = [_no_nulls(inv.model_dump(mode="json")) for inv in convert_session_to_eval_invocations(session)]
    text = session.model_dump_json(by_alias=True, exclude_none=True) if by_alias else session.model_dump_json()
    ours = case_from_session(json.loads(text), eval_id="c", now=0.0).case
    assert _no_nulls([inv.to_dict() for inv in ours.conversation or []]) == adk_made
