"""tui-eval's own opt-in metrics beyond ADK (the calls inside tool calls, the final session state, argument
rules): what they score, and that a config naming them is still one google-adk loads and runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.evalfiles import turns_of
from tui_eval.metrics.base import MetricInput
from tui_eval.metrics.custom import spec_for
from tui_eval.schema.details import state_diff
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import SessionStateDetails, TrajectoryDetails
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import EvalCase, EvalSet, NestedCall
from tui_eval.schema.results import EvalStatus, MetricResult


def _turn(inv_id: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"invocation_id": inv_id, "user_content": {"role": "user", "parts": [{"text": "roll"}]},
            "final_response": {"role": "model", "parts": [{"text": "done"}]},
            "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls],
                                  "tool_responses": [], "intermediate_responses": []}}


def _case(**extra: Any) -> EvalCase:
    return read_eval_case({"eval_id": "c", "conversation": [_turn("t1", [("dice_agent", {"request": "d6"})])],
                           "session_input": {"app_name": "a", "user_id": "u", "state": {}}, **extra}, "$")


def _score(name: str, criterion: Any, case: EvalCase, *, nested: list[NestedCall] | None = None,
           state: dict[str, Any] | None = None, config: dict[str, Any] | None = None) -> MetricResult:
    cfg = read_eval_config(config or {"criteria": {name: criterion}})
    spec = spec_for(name, cfg)
    assert spec is not None
    actual = turns_of(case)
    actual[0].nested_calls = nested or []
    value = spec.evaluate(MetricInput(cfg.criteria[name], case, actual, turns_of(case), cfg,
                                      final_session_state=state))
    return value if isinstance(value, MetricResult) else asyncio.run(value)  # type: ignore[arg-type]


EXPECTED = {"t1": [{"agent": "dice_agent", "name": "roll_die", "args": {"sides": 6}},
                   {"agent": "dice_agent", "name": "log", "args": {}}]}


def _inner(*calls: tuple[str, dict[str, Any]], agent: str = "dice_agent") -> list[NestedCall]:
    return [NestedCall(agent=agent, name=n, args=a, depth=1, parent="outer") for n, a in calls]


@pytest.mark.parametrize(("match_type", "calls", "passed"), [
    ("EXACT", [("roll_die", {"sides": 6}), ("log", {})], True),
    ("EXACT", [("log", {}), ("roll_die", {"sides": 6})], False),
    ("ANY_ORDER", [("log", {}), ("roll_die", {"sides": 6})], True),
    ("IN_ORDER", [("roll_die", {"sides": 6}), ("peek", {}), ("log", {})], True),
    ("IN_ORDER", [("roll_die", {"sides": 20}), ("log", {})], False),
])
def test_deep_trajectory_scores_the_calls_inside_tool_calls(match_type: str, calls: list[Any], passed: bool) -> None:
    result = _score("deep_tool_trajectory_v1", {"threshold": 1.0, "match_type": match_type},
                    _case(expected_nested_calls=EXPECTED), nested=_inner(*calls))
    assert result.status == (EvalStatus.PASSED if passed else EvalStatus.FAILED)
    [turn] = result.per_invocation
    assert isinstance(turn.details, TrajectoryDetails) and turn.details.match_type == match_type
    # The same diff view as the trajectory metric: each call named with the agent that made it.
    assert turn.details.exact["expected"][0]["name"] == "dice_agent › roll_die"


def test_deep_trajectory_attributes_calls_to_their_agent() -> None:
    result = _score("deep_tool_trajectory_v1", {"threshold": 1.0}, _case(expected_nested_calls=EXPECTED),
                    nested=_inner(("roll_die", {"sides": 6}), ("log", {}), agent="coin_agent"))
    assert result.status == EvalStatus.FAILED


def test_deep_trajectory_is_not_evaluated_without_expected_nested_calls() -> None:
    result = _score("deep_tool_trajectory_v1", 1.0, _case(), nested=_inner(("roll_die", {"sides": 6})))
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "the case names no expected_nested_calls"


def test_expected_nested_calls_round_trip_through_google_adk() -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    ours = EvalSet(eval_set_id="s", eval_cases=[_case(expected_nested_calls=EXPECTED)])
    adk = AdkEvalSet.model_validate(ours.to_dict())
    written = json.loads(adk.model_dump_json())
    assert written["eval_cases"][0]["expected_nested_calls"] == {
        "t1": [{"agent": "dice_agent", "name": "roll_die", "args": {"sides": 6}, "depth": 1},
               {"agent": "dice_agent", "name": "log", "args": {}, "depth": 1}]}
    again = EvalSet.model_validate(written)
    assert again.eval_cases[0].expected_nested_calls == ours.eval_cases[0].expected_nested_calls


def test_state_diff_gives_one_reason_per_key() -> None:
    expected = {"last_roll": 4, "player": "ana", "score": 1}
    actual = {"last_roll": 17, "score": 1.0, "debug": True}
    assert [d.reason for d in state_diff(expected, actual)] == [
        "last_roll: expected 4, got 17",
        'player: expected "ana", the session has no such key',
        "debug: not expected, the session has true",
    ]
    assert [d.key for d in state_diff(expected, actual, "named_keys")] == ["last_roll", "player"]


@pytest.mark.parametrize(("compare", "status"), [("exact", EvalStatus.FAILED), ("named_keys", EvalStatus.PASSED),
                                                 ("named-keys", EvalStatus.PASSED)])
def test_final_session_state_exact_or_named_keys(compare: str, status: EvalStatus) -> None:
    result = _score("final_session_state_v1", {"threshold": 1.0, "compare": compare},
                    _case(final_session_state={"last_roll": 4}), state={"last_roll": 4, "player": "ana"})
    assert result.status == status
    assert isinstance(result.details, SessionStateDetails)
    if status == EvalStatus.FAILED:
        assert result.reason == 'player: not expected, the session has "ana"'


def test_final_session_state_says_why_it_was_not_evaluated() -> None:
    no_state = _score("final_session_state_v1", 1.0, _case(final_session_state={"k": 1}), state=None)
    assert no_state.status == EvalStatus.NOT_EVALUATED and "session state is not known" in (no_state.reason or "")
    not_named = _score("final_session_state_v1", 1.0, _case(), state={"k": 1})
    assert not_named.reason == "the case names no final_session_state"


# -- configs google-adk still accepts ---------------------------------------------------------------

ADK_CONFIG: dict[str, Any] = {
    "criteria": {
        "tool_trajectory_avg_score": 1.0,
        "deep_tool_trajectory_v1": {"threshold": 1.0, "match_type": "IN_ORDER"},
        "final_session_state_v1": {"threshold": 1.0, "compare": "named_keys"},
        "tool_args_rules": {"threshold": 1.0, "ignore_args": ["request_id"], "numeric_tolerance": 0.01,
                            "patterns": {"date": r"2026-\d\d-\d\d"}},
    },
    "custom_metrics": {
        "deep_tool_trajectory_v1": {"code_config": {"name": "tui_eval.metrics.adk_functions.deep_tool_trajectory_v1"}},
        "final_session_state_v1": {"code_config": {"name": "tui_eval.metrics.adk_functions.final_session_state_v1"}},
        "tool_args_rules": {"code_config": {"name": "tui_eval.metrics.arg_rules.tool_trajectory_with_arg_rules"}},
    },
}


def _adk_evaluator(name: str) -> Any:
    """The evaluator google-adk builds for a metric of ADK_CONFIG, through its own config loading."""
    from google.adk.evaluation.custom_metric_evaluator import _CustomMetricEvaluator
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config

    config = AdkEvalConfig.model_validate_json(json.dumps(ADK_CONFIG))
    metrics = {m.metric_name: m for m in get_eval_metrics_from_config(config)}
    metric = metrics[name]
    return _CustomMetricEvaluator(metric, ADK_CONFIG["custom_metrics"][name]["code_config"]["name"])


def _adk_turns(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    return [AdkInvocation.model_validate(_turn("t1", list(calls)))]


@pytest.mark.parametrize("name", ["deep_tool_trajectory_v1", "final_session_state_v1"])
def test_adk_runs_our_metrics_as_not_evaluated_saying_why(name: str) -> None:
    result = asyncio.run(_maybe(_adk_evaluator(name).evaluate_invocations(_adk_turns(), _adk_turns())))
    assert result.overall_eval_status.name == "NOT_EVALUATED"
    [why] = result.overall_rubric_scores
    assert "which ADK never hands a custom metric: run it with tui-eval" in why.rationale


async def _maybe(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


@pytest.mark.parametrize(("actual", "passed"), [
    ({"date": "2026-03-01", "price": 10.004, "request_id": "x1"}, True),
    ({"date": "2026-03-01", "price": 10.2, "request_id": "x1"}, False),  # beyond the tolerance
    ({"date": "March 1st", "price": 10.0, "request_id": "x1"}, False),  # not the pattern
    ({"date": "2026-03-01", "price": 10.0}, True),  # request_id ignored, even absent
])
def test_adk_custom_metric_evaluator_runs_the_argument_rules(actual: dict[str, Any], passed: bool) -> None:
    expected = _adk_turns(("book", {"date": "any", "price": 10.0, "request_id": "r0"}))
    result = asyncio.run(_maybe(_adk_evaluator("tool_args_rules").evaluate_invocations(
        _adk_turns(("book", actual)), expected)))
    assert result.overall_eval_status.name == ("PASSED" if passed else "FAILED")
    assert result.overall_score == (1.0 if passed else 0.0)


def test_tui_eval_runs_the_declared_metrics_natively() -> None:
    case = _case(final_session_state={"last_roll": 4}, expected_nested_calls=EXPECTED)
    state = _score("final_session_state_v1", None, case, state={"last_roll": 4}, config=ADK_CONFIG)
    assert state.status == EvalStatus.PASSED and isinstance(state.details, SessionStateDetails)
    deep = _score("deep_tool_trajectory_v1", None, case, nested=_inner(("roll_die", {"sides": 6}), ("log", {})),
                  config=ADK_CONFIG)
    assert deep.status == EvalStatus.PASSED
    rules = _score("tool_args_rules", None, case, config=ADK_CONFIG)
    assert rules.status == EvalStatus.PASSED  # through google-adk's signature, on our turns
