"""Efficiency metrics end to end: an ADK agent and a native agent against the fake Gemini server, whose
replies carry usage metadata; `tui-eval run --json` reports exactly the tokens the server returned."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation._efficiency_evaluators import (
    _InferenceCallCountV1Evaluator,
    _InvocationDurationV1Evaluator,
    _TokenUsageV1Evaluator,
    _ToolCallCountV1Evaluator,
)
from google.adk.evaluation.eval_result import EvalSetResult

from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, function_call_reply, text_reply
from tui_eval.cli import main

ADK_AGENT = '''
from google.adk.agents import LlmAgent


def get_weather(city: str) -> dict:
    """Current weather of a city."""
    return {"city": city, "forecast": "sunny"}


root_agent = LlmAgent(name="{name}", model="gemini-2.5-flash", instruction="Answer with your tools.",
                      tools=[get_weather])
'''

NATIVE_AGENT = '''
from tui_eval.agents.native import NativeAgent


def get_weather(city: str) -> dict:
    """Current weather of a city.

    Args:
        city: The city.
    """
    return {"city": city, "forecast": "sunny"}


root_agent = NativeAgent("{name}", "Answer with your tools.", tools=[get_weather])
'''


def _write(tmp_path: Path, name: str, source: str) -> tuple[Path, Path]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(source).replace("{name}", name))
    def turn(text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        return {"user_content": {"role": "user", "parts": [{"text": text}]},
                "final_response": {"role": "model", "parts": [{"text": "Sunny."}]},
                "intermediate_data": {"tool_uses": calls}}

    eval_set = {"eval_set_id": "eff", "eval_cases": [{
        "eval_id": "two_turns",
        "conversation": [turn("Weather in Paris?", [{"name": "get_weather", "args": {"city": "Paris"}}]),
                         turn("And now? no tools please", [])],
        "session_input": {"app_name": name, "user_id": "u", "state": {}},
    }]}
    eval_file = folder / "eff.evalset.json"
    eval_file.write_text(json.dumps(eval_set))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    return folder, eval_file


class UsageScript:
    """Turn 1: a tool call then an answer; turn 2: an answer. Each reply's usage is distinct and kept."""

    def __init__(self) -> None:
        self.sent: list[dict[str, int]] = []  # in request order

    def __call__(self, request: RecordedRequest) -> Reply:
        n = len(self.sent)
        usage = {"promptTokenCount": 100 + 10 * n, "candidatesTokenCount": 7 + n, "thoughtsTokenCount": 3,
                 "totalTokenCount": 110 + 11 * n + 3}
        if n == 2:
            usage["cachedContentTokenCount"] = 64
        self.sent.append(usage)
        user_texts = [p.get("text", "") for c in request.contents if c.get("role") == "user"
                      for p in c.get("parts") or []]
        latest = next((t for t in reversed(user_texts) if t), "")
        if "no tools" in latest or request.function_responses and n == 1:
            return text_reply("Sunny.", usage=usage)
        return function_call_reply("get_weather", {"city": "Paris"}, id=f"c{n}", usage=usage)


def _tokens(usage: dict[str, int]) -> int:
    # ADK's definition, written out: input = prompt (+ tool-use prompt), output = candidates + thoughts.
    return usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]


@pytest.mark.parametrize("kind", ["adk", "native"])
def test_token_counts_equal_what_the_server_returned(
    kind: str, tmp_path: Path, gemini_env: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "gemini")
    script = UsageScript()
    gemini_env.responder = script
    folder, eval_file = _write(tmp_path, f"{kind}_agent", ADK_AGENT if kind == "adk" else NATIVE_AGENT)
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / "results.json"
    code = main(["run", str(folder), str(eval_file), "--json", str(json_out), "--no-save"], out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert len(script.sent) == 3  # turn 1: call + answer; turn 2: answer

    [raw] = json.loads(json_out.read_text())
    parsed = EvalSetResult.model_validate(raw)
    [case] = parsed.eval_case_results
    assert case.final_eval_status.value == 1  # informational metrics never fail or pass a case
    overall = {m.metric_name: m for m in case.overall_eval_metric_results}
    assert list(overall) == ["tool_trajectory_avg_score", "tool_call_count_v1", "inference_call_count_v1",
                             "token_usage_v1", "invocation_duration_v1"]
    per_turn = [{m.metric_name: m for m in inv.eval_metric_results} for inv in case.eval_metric_result_per_invocation]

    turn1 = _tokens(script.sent[0]) + _tokens(script.sent[1])
    turn2 = _tokens(script.sent[2])
    assert [t["token_usage_v1"].score for t in per_turn] == [turn1, turn2]
    assert overall["token_usage_v1"].score == (turn1 + turn2) / 2
    turn_details = per_turn[1]["token_usage_v1"].details
    assert turn_details is not None
    details = turn_details.token_usage_details
    assert details is not None and details.cached_tokens == 64 and details.reasoning_tokens == 3
    assert details.prompt_tokens == script.sent[2]["promptTokenCount"]
    assert [t["inference_call_count_v1"].score for t in per_turn] == [2.0, 1.0]
    assert [t["tool_call_count_v1"].score for t in per_turn] == [1.0, 0.0]
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"):
        assert overall[name].eval_status.value == 4 and overall[name].threshold is None
    durations = [t["invocation_duration_v1"] for t in per_turn]
    assert all(d.score is not None and d.score >= 0 for d in durations)
    assert durations[0].details is not None
    split = durations[0].details.duration_details
    assert split is not None and split.model_seconds is not None and split.tool_seconds is not None

    # ADK's own evaluators on the very invocations we recorded give the same values.
    actual = [inv.actual_invocation for inv in case.eval_metric_result_per_invocation]
    for name, evaluator in (("tool_call_count_v1", _ToolCallCountV1Evaluator()),
                            ("inference_call_count_v1", _InferenceCallCountV1Evaluator()),
                            ("token_usage_v1", _TokenUsageV1Evaluator()),
                            ("invocation_duration_v1", _InvocationDurationV1Evaluator())):
        theirs: Any = evaluator.evaluate_invocations(actual)
        assert overall[name].score == theirs.overall_score, name
        assert [t[name].score for t in per_turn] == [r.score for r in theirs.per_invocation_results], name

    summary = out.getvalue()
    assert f"efficiency: 0.5 tool calls/turn, 1.5 model calls/turn, {(turn1 + turn2) / 2:.0f} tokens/turn, " in summary
