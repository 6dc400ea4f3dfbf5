"""`tui-eval ces show`: a pulled case's CES result as text, every CES string escaped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from tests.support.fake_ces import APP, golden_evaluation, scenario_evaluation
from tui_eval.schema.ces.model import Evaluation
from tui_eval.ces.show import evaluation_lines
from tui_eval.cli import main

RESULT: dict[str, Any] = {
    "name": f"{APP}/evaluations/e/results/r7",
    "evaluationStatus": "FAIL",
    "executionState": "COMPLETED",
    "createTime": "2026-02-01T10:00:00Z",
    "appVersionDisplayName": "v3",
    "evaluationMetricsThresholds": {"goldenEvaluationMetricsThresholds": {
        "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 3,
                                       "overallToolInvocationCorrectnessThreshold": 1.0},
        "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.5},
        "toolMatchingSettings": {"extraToolCallBehavior": "FAIL"}}},
    "goldenResult": {"turnReplayResults": [{
        "overallToolInvocationResult": {"toolInvocationScore": 0.5, "outcome": "FAIL"},
        "toolOrderedInvocationScore": 0.5,
        "semanticSimilarityResult": {"score": 2, "label": "Partially consistent", "outcome": "FAIL",
                                     "explanation": "omits the\x1b]0;pwned\x07 temperature"},
        "hallucinationResult": {"score": 0, "label": "Not justified", "explanation": "invents rain"},
        "turnLatency": "2.5s",
        "toolCallLatencies": [{"tool": f"{APP}/tools/get_weather", "executionLatency": "0.4s"}],
        "expectationOutcome": [
            {"outcome": "FAIL", "expectation": {"toolCall": {"tool": f"{APP}/tools/get_weather",
                                                             "args": {"city": "Paris"}}, "note": "weather"},
             "toolInvocationResult": {"parameterCorrectnessScore": 0.0, "outcome": "FAIL",
                                      "explanation": "city was Rome"},
             "observedToolCall": {"tool": f"{APP}/tools/get_weather", "args": {"city": "Rome"}}},
            {"outcome": "PASS", "expectation": {"agentResponse": {"chunks": [{"text": "Sunny"}]}},
             "observedAgentResponse": {"chunks": [{"text": "It is sunny\nFAKE LINE"}]}},
        ],
        "errorInfo": {"errorType": "TOOL_ERROR", "errorMessage": "timeout"},
    }], "evaluationExpectationResults": [
        {"evaluationExpectation": f"{APP}/evaluationExpectations/polite", "outcome": "PASS",
         "explanation": "polite throughout"}]},
}


def test_golden_result_lines() -> None:
    evaluation = Evaluation.model_validate({**golden_evaluation(), "lastCompletedResult": RESULT,
                                            "lastTenResults": [RESULT, {**RESULT, "evaluationStatus": "PASS",
                                                                        "name": "x/results/r6"}]})
    lines = evaluation_lines("weather-golden", evaluation, history=True)
    assert lines == [
        "weather-golden: Weather in Paris",
        "  FAIL r7 (2026-02-01T10:00:00Z, v3)",
        "    thresholds: semantic similarity >= 3, tool invocation >= 1, parameter correctness >= 0.5, "
        "extra tool calls FAIL",
        "    turn 1: tool invocation 0.50 FAIL  ordered 0.50  semantic similarity 2 FAIL  hallucination 0  latency 2.5s",
        "      semantic similarity: Partially consistent: omits the\\x1b]0;pwned\\x07 temperature",
        "      hallucination: Not justified: invents rain",
        "      FAIL tool call get_weather [weather]",
        "             parameter correctness 0.00 FAIL",
        "             city was Rome",
        "             observed call: get_weather({'city': 'Rome'})",
        "      PASS agent response 'Sunny'",
        "             observed: It is sunny\\nFAKE LINE",
        "      tool latency get_weather 0.4s",
        "      error: TOOL_ERROR timeout",
        "    PASS polite: polite throughout",
        "  history (2 result(s)):",
        "    FAIL 2026-02-01T10:00:00Z r7",
        "    PASS 2026-02-01T10:00:00Z r6",
    ]


def test_scenario_result_and_no_result() -> None:
    scenario = {**scenario_evaluation(), "lastCompletedResult": {
        "name": "x/results/s1", "evaluationStatus": "PASS",
        "scenarioResult": {
            "taskCompletionResult": {"score": 1, "label": "Completed", "explanation": "refund issued"},
            "userGoalSatisfactionResult": {"score": 1, "label": "Satisfied"},
            "rubricOutcomes": [{"rubric": "The agent is polite.", "score": 1.0, "scoreExplanation": "thanks the user"}],
            "expectationOutcomes": [{"outcome": "PASS", "expectation": {"toolExpectation": {
                "expectedToolCall": {"tool": f"{APP}/tools/refund"}}}}],
            "hallucinationResult": [{"score": -1, "label": "No claim"}],
            "toolCallLatencies": [{"displayName": "Refund", "executionLatency": "0.1s"}],
        }}}
    assert evaluation_lines("refund", Evaluation.model_validate(scenario)) == [
        "refund: Refund a late order",
        "  PASS s1",
        "    task completion: 1 Completed: refund issued",
        "    user goal: 1 Satisfied",
        "    rubric 1.00 The agent is polite.: thanks the user",
        "    PASS tool call refund",
        "    turn 1 hallucination -1 No claim",
        "    tool latency Refund 0.1s",
    ]
    bare = Evaluation.model_validate(scenario_evaluation())
    assert evaluation_lines("refund", bare)[1] == (
        "  no completed result in CES (run it with `tui-eval ces run`, then pull again)")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_ces_show_command(tmp_path: Path) -> None:
    source = tmp_path / "ces.json"
    golden = {**golden_evaluation(), "lastCompletedResult": RESULT}
    source.write_text(json.dumps([golden, scenario_evaluation()]))
    eval_file = tmp_path / "app.evalset.json"
    assert _cli("ces", "import", str(source), "-o", str(eval_file))[0] == 0
    code, out, err = _cli("ces", "show", f"{eval_file}:weather-golden")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == ["weather-golden: Weather in Paris", "  FAIL r7 (2026-02-01T10:00:00Z, v3)"]
    assert "\x1b" not in out and "refund-scenario" not in out
    code, out, _err = _cli("ces", "show", str(eval_file))
    assert code == 0 and "refund-scenario: Refund a late order" in out
    code, _out, err = _cli("ces", "show", f"{eval_file}:nope")
    assert code == 2 and err == f"error: {eval_file}: no eval case with id 'nope'\n"
    plain = tmp_path / "plain.evalset.json"
    plain.write_text(json.dumps({"eval_set_id": "plain", "eval_cases": [
        {"eval_id": "p", "conversation": [{"user_content": {"role": "user", "parts": [{"text": "hi"}]}}]}]}))
    code, _out, err = _cli("ces", "show", str(plain))
    assert code == 2 and "no case came from CES" in err
