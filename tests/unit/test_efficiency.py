"""The informational efficiency metrics against google-adk 2.13's own evaluators: values exactly equal."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation._efficiency_evaluators import (
    _InferenceCallCountV1Evaluator,
    _InvocationDurationV1Evaluator,
    _TokenUsageV1Evaluator,
    _ToolCallCountV1Evaluator,
)
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_eval.metrics import efficiency
from tui_eval.metrics.base import get_metric
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import DurationDetails, TokenUsageDetails
from tui_eval.schema.errors import SchemaError
from tui_eval.schema.model import (
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
)
from tui_eval.schema.results import CaseResult, EvalSetResult, EvalStatus, MetricResult, combine_statuses

SETTINGS = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
_COUNTS = ("prompt_token_count", "tool_use_prompt_token_count", "candidates_token_count", "thoughts_token_count",
           "cached_content_token_count")
_CAMEL = {"prompt_token_count": "promptTokenCount", "tool_use_prompt_token_count": "toolUsePromptTokenCount",
          "candidates_token_count": "candidatesTokenCount", "thoughts_token_count": "thoughtsTokenCount",
          "cached_content_token_count": "cachedContentTokenCount"}


@st.composite
def usage(draw: st.DrawFn) -> dict[str, int] | None:
    """A usage metadata dict as a file holds it: any subset of the counts, snake or camel case."""
    if draw(st.booleans()):
        return None
    camel = draw(st.booleans())
    out = {}
    for key in _COUNTS:
        if draw(st.booleans()):
            out[_CAMEL[key] if camel else key] = draw(st.integers(0, 5000))
    return out


@st.composite
def turn(draw: st.DrawFn) -> Invocation:
    shape = draw(st.sampled_from(["events", "tool_uses", "none"]))
    calls = [FunctionCall(name=f"t{i}", args={"i": i}) for i in range(draw(st.integers(0, 3)))]
    data: Any
    if shape == "none":
        data = None
    elif shape == "tool_uses":
        data = IntermediateData(tool_uses=calls, tool_responses=[FunctionResponse(name=c.name, response={}) for c in calls])
    else:
        events = []
        for c in calls:
            events.append(InvocationEvent(author="agent", content=Content(parts=[Part(function_call=c)], role="model"),
                                          usage_metadata=draw(usage()),
                                          model_version=draw(st.sampled_from([None, "gemini-2.5-flash"]))))
            events.append(InvocationEvent(author="agent", content=Content(
                parts=[Part(function_response=FunctionResponse(name=c.name, response={}))], role="user")))
        # the final response's event: content None (its text is on final_response), usage kept
        events.append(InvocationEvent(author="agent", content=None, usage_metadata=draw(usage()),
                                      model_version=draw(st.sampled_from([None, "gemini-2.5-flash"]))))
        data = InvocationEvents(invocation_events=events)
    seconds = st.floats(0, 30, allow_nan=False).map(lambda v: round(v, 3))
    duration = draw(st.one_of(st.none(), seconds))
    timed = duration is not None
    return Invocation(user_content=Content.from_text("go"), invocation_id="i", intermediate_data=data,
                      final_response=Content.from_text("done", role="model"), duration=duration,
                      model_duration=draw(st.one_of(st.none(), seconds)) if timed else None,
                      tool_duration=draw(st.one_of(st.none(), seconds)) if timed else None)


def _adk(invocations: list[Invocation]) -> list[AdkInvocation]:
    return [AdkInvocation.model_validate(inv.to_dict()) for inv in invocations]


def _same_scores(ours: MetricResult, adk: Any) -> None:
    assert ours.status is EvalStatus.INFORMATIONAL and adk.overall_eval_status.value == 4
    assert ours.score == adk.overall_score and type(ours.score) in (type(None), float, int)
    assert [r.score for r in ours.per_invocation] == [r.score for r in adk.per_invocation_results]
    assert all(r.status is EvalStatus.INFORMATIONAL for r in ours.per_invocation)


def _same_details(ours: MetricResult, kind: type[TokenUsageDetails] | type[DurationDetails], overall: Any,
                  per_turn: list[Any]) -> None:
    """Our details equal ADK's details dicts, the case's and each turn's."""
    assert isinstance(ours.details, kind)
    assert overall is not None
    assert ours.details.to_adk() == overall.model_dump()
    for mine, adk_details in zip(ours.per_invocation, per_turn):
        assert isinstance(mine.details, kind)
        assert adk_details is not None
        assert mine.details.to_adk() == adk_details.model_dump()


@SETTINGS
@given(st.lists(turn(), min_size=0, max_size=4))
def test_every_efficiency_metric_equals_adk(actual: list[Invocation]) -> None:
    adk_actual = _adk(actual)
    _same_scores(efficiency.tool_call_count_result(actual),
                 _ToolCallCountV1Evaluator().evaluate_invocations(adk_actual))
    _same_scores(efficiency.inference_call_count_result(actual),
                 _InferenceCallCountV1Evaluator().evaluate_invocations(adk_actual))

    ours = efficiency.token_usage_result(actual)
    theirs = _TokenUsageV1Evaluator().evaluate_invocations(adk_actual)
    _same_scores(ours, theirs)
    if actual:
        _same_details(ours, TokenUsageDetails, theirs.overall_token_usage_details,
                      [adk_inv.token_usage_details for adk_inv in theirs.per_invocation_results])

    ours = efficiency.invocation_duration_result(actual)
    theirs = _InvocationDurationV1Evaluator().evaluate_invocations(adk_actual)
    _same_scores(ours, theirs)
    if actual:
        _same_details(ours, DurationDetails, theirs.overall_duration_details,
                      [adk_inv.duration_details for adk_inv in theirs.per_invocation_results])


def _turn_with_usage(prompt: int, out: int, thoughts: int | None = None) -> Invocation:
    meta: dict[str, int] = {"promptTokenCount": prompt, "candidatesTokenCount": out}
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    call = FunctionCall(name="lookup", args={})
    events = InvocationEvents(invocation_events=[
        InvocationEvent(author="a", content=Content(parts=[Part(function_call=call)], role="model"),
                        usage_metadata=meta, model_version="m"),
        InvocationEvent(author="a", content=None, usage_metadata={"promptTokenCount": 1, "candidatesTokenCount": 1},
                        model_version="m"),
    ])
    return Invocation(user_content=Content.from_text("q"), intermediate_data=events, duration=1.5,
                      model_duration=1.0, tool_duration=0.25)


def test_hand_computed_values() -> None:
    # Written out by hand from ADK's definitions, not from our code.
    actual = [_turn_with_usage(100, 20, thoughts=5), _turn_with_usage(200, 10)]
    tokens = efficiency.token_usage_result(actual)
    assert [r.score for r in tokens.per_invocation] == [127, 212]
    assert tokens.score == (127 + 212) / 2
    assert isinstance(tokens.details, TokenUsageDetails)
    assert tokens.details.reasoning_tokens == 5 / 2  # the turn that omitted it counts as 0, not n/a
    assert tokens.details.cached_tokens is None  # no call reported it: n/a
    assert efficiency.inference_call_count_result(actual).score == 2.0
    assert efficiency.tool_call_count_result(actual).score == 1.0
    duration = efficiency.invocation_duration_result(actual)
    assert duration.score == 1.5
    assert isinstance(duration.details, DurationDetails) and duration.details.framework_seconds == 0.25


def test_not_available_is_none_never_zero() -> None:
    bare = Invocation(user_content=Content.from_text("q"), intermediate_data=IntermediateData())
    results = {m.metric_name: m for m in efficiency.efficiency_results([bare])}
    assert list(results) == ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                             "invocation_duration_v1"]
    assert results["tool_call_count_v1"].score == 0.0
    for name in ("inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"):
        assert results[name].score is None and results[name].status is EvalStatus.INFORMATIONAL
        reason = results[name].reason
        assert reason is not None and reason.startswith("n/a")


def test_informational_never_passes_or_fails_a_case() -> None:
    infos = [m.status for m in efficiency.efficiency_results([_turn_with_usage(1, 1)])]
    assert combine_statuses(infos) is EvalStatus.NOT_EVALUATED
    assert combine_statuses(infos + [EvalStatus.PASSED]) is EvalStatus.PASSED
    assert combine_statuses(infos + [EvalStatus.FAILED]) is EvalStatus.FAILED


@pytest.mark.parametrize("name", efficiency.EFFICIENCY_METRICS)
def test_a_threshold_for_an_informational_metric_is_an_error(name: str) -> None:
    with pytest.raises(SchemaError, match="informational"):
        read_eval_config({"criteria": {name: 0.5}})
    with pytest.raises(ValueError, match="does not support a threshold"):  # as ADK
        {"tool_call_count_v1": _ToolCallCountV1Evaluator, "inference_call_count_v1": _InferenceCallCountV1Evaluator,
         "token_usage_v1": _TokenUsageV1Evaluator,
         "invocation_duration_v1": _InvocationDurationV1Evaluator}[name](EvalMetric(metric_name=name, threshold=0.5))


def test_registry_knows_them_as_informational() -> None:
    for name in efficiency.EFFICIENCY_METRICS:
        spec = get_metric(name)
        assert spec is not None and spec.kind == "informational" and not spec.needs_judge
        assert not spec.needs_reference


def test_adk_json_shape_validates_with_adk() -> None:
    actual = [_turn_with_usage(100, 20, thoughts=5)]
    case = CaseResult(eval_set_id="s", eval_id="c", status=EvalStatus.NOT_EVALUATED,
                      metrics=efficiency.efficiency_results(actual), actual=actual, expected=None)
    doc = EvalSetResult(eval_set_result_id="r", eval_set_id="s", creation_timestamp=1.0, case_results=[case]).to_adk()
    parsed = AdkEvalSetResult.model_validate(doc)
    overall = {m.metric_name: m for m in parsed.eval_case_results[0].overall_eval_metric_results}
    tokens = overall["token_usage_v1"]
    assert tokens.threshold is None and tokens.criterion is None and tokens.eval_status.value == 4
    assert tokens.details is not None and tokens.details.token_usage_details is not None
    assert tokens.details.token_usage_details.total_tokens == 127
    assert tokens.details.token_usage_details.reasoning_tokens == 5
    duration = overall["invocation_duration_v1"].details
    assert duration is not None and duration.duration_details is not None
    assert duration.duration_details.model_seconds == 1.0
    per_inv = parsed.eval_case_results[0].eval_metric_result_per_invocation[0].eval_metric_results
    assert {m.metric_name: m.score for m in per_inv}["inference_call_count_v1"] == 2.0
