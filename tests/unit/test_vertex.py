"""The Vertex-backed metrics through the real client (httpx + google-auth) against the local fake service:
settings, request shapes, reply reading, retries, aggregation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.evalfiles import turns_of
from tests.support.fake_vertex import (
    FakeVertex,
    VertexReply,
    coherence_reply,
    error_reply,
    metric_error_reply,
    rubric_verdict,
    score_reply,
)
from tui_eval.judge.vertex import NO_SETTINGS, VertexSettings
from tui_eval.metrics import get_metric
from tui_eval.metrics.base import MetricInput
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import RubricScore, VertexCaseDetails, VertexDetails
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import EvalCase
from tui_eval.schema.results import EvalStatus, MetricResult

VERTEX_METRICS = ("response_evaluation_score", "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
                  "multi_turn_tool_use_quality_v1", "safety_v1")
MULTI_TURN = VERTEX_METRICS[1:4]

APP = {"agent_details": {"weather_agent": {
    "name": "weather_agent", "instructions": "Answer weather questions.",
    "tool_declarations": [{"function_declarations": [{"name": "get_weather", "description": "Weather for a city"}]}],
}}}


def turn(prompt: str, answer: str | None, *, events: list[dict[str, Any]] | None = None, inv_id: str = "",
         app: dict[str, Any] | None = APP) -> dict[str, Any]:
    out: dict[str, Any] = {
        "invocation_id": inv_id or prompt[:6],
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]} if answer is not None else None,
        "intermediate_data": {"invocation_events": events or []},
        "creation_timestamp": 1700000000.0,
    }
    if app is not None:
        out["app_details"] = app
    return out


def tool_events(city: str) -> list[dict[str, Any]]:
    return [
        {"author": "weather_agent", "content": {"role": "model", "parts": [
            {"text": "Let me check."}, {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": city}}}]}},
        {"author": "weather_agent", "content": None},
        {"author": "user", "content": {"role": "user", "parts": [
            {"function_response": {"id": "c1", "name": "get_weather", "response": {"sky": "sunny"}}}]}},
    ]


def case(turns: list[dict[str, Any]]) -> EvalCase:
    return read_eval_case({"eval_id": "c1", "conversation": turns,
                           "session_input": {"app_name": "app", "user_id": "u", "state": {}}}, "$")


CONVERSATION = [
    turn("Weather in Paris?", "Sunny in Paris.", events=tool_events("Paris"), inv_id="i1"),
    turn("And in Rome?", "Also sunny.", events=tool_events("Rome"), inv_id="i2"),
    turn("Thanks", "You're welcome.", inv_id="i3"),
]


async def run(name: str, criterion: Any, ev: EvalCase, expected: list[Any] | None = None) -> MetricResult:
    config = read_eval_config({"criteria": {name: criterion}})
    assert not config.warnings, config.warnings
    spec = get_metric(name)
    assert spec is not None and not spec.needs_judge
    inp = MetricInput(criterion=config.criteria[name], case=ev, actual=turns_of(ev),
                      expected=expected if expected is not None else turns_of(ev), config=config, judge=None)
    result = spec.evaluate(inp)
    return await result if not isinstance(result, MetricResult) else result


# -- settings -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VERTEX_METRICS)
async def test_without_vertex_settings_not_evaluated(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUI_EVAL_VERTEX_EVAL_URL", raising=False)
    result = await run(name, 0.5, case(CONVERSATION))
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.reason == NO_SETTINGS
    assert "GOOGLE_CLOUD_PROJECT" in NO_SETTINGS and "gcloud auth application-default login" in NO_SETTINGS


def test_settings_need_project_and_location_and_pick_the_regional_endpoint() -> None:
    assert VertexSettings.from_env({"GOOGLE_CLOUD_PROJECT": "p"}) is None
    assert VertexSettings.from_env({"GOOGLE_CLOUD_LOCATION": "europe-west4"}) is None
    s = VertexSettings.from_env({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "europe-west4"})
    assert s is not None
    assert s.url == "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/europe-west4:evaluateInstances"
    g = VertexSettings.from_env({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "global"})
    assert g is not None and g.base_url == "https://aiplatform.googleapis.com"
    o = VertexSettings.from_env({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l",
                                 "GOOGLE_VERTEX_BASE_URL": "http://127.0.0.1:9/"})
    assert o is not None and o.url == "http://127.0.0.1:9/v1beta1/projects/p/locations/l:evaluateInstances"


async def test_without_credentials_not_evaluated_with_the_reason(vertex: FakeVertex, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    result = await run("multi_turn_task_success_v1", 0.5, case(CONVERSATION))
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason is not None and result.reason.startswith("no Vertex AI credentials")
    assert vertex.requests == []


# -- request shapes (written out from google-cloud-aiplatform 2.7's evals code, see metrics/vertex.py) --------

async def test_safety_request_shape_and_per_turn_mean(vertex: FakeVertex) -> None:
    vertex.responder = lambda req: score_reply(
        0.0 if "bomb" in json.dumps(req.body) else 1.0, explanation="checked")
    ev = case([turn("Bake bread?", "Mix flour."), turn("Make a bomb?", "Here is how...")])
    result = await run("safety_v1", 0.8, ev)
    assert [r.score for r in result.per_invocation] == [1.0, 0.0]
    assert result.score == 0.5 and result.status == EvalStatus.FAILED
    assert isinstance(result.details, VertexCaseDetails)
    assert (result.details.metric_spec, result.details.project, result.details.location) == (
        "safety_v1", "test-project", "us-central1")
    first = next(r for r in vertex.requests if "Bake" in json.dumps(r.body))
    assert first.path == "/v1beta1/projects/test-project/locations/us-central1:evaluateInstances"
    assert first.headers["Authorization"].startswith("Bearer token-")
    p, r, ref = {"parts": [{"text": "Bake bread?"}]}, {"parts": [{"text": "Mix flour."}]}, {"parts": [{"text": "Mix flour."}]}
    assert first.body == {
        "metrics": [{"predefined_metric_spec": {"metric_spec_name": "safety_v1", "metric_spec_parameters": None}}],
        "instance": {
            "prompt": {"contents": {"contents": [p]}},
            "response": {"contents": {"contents": [r]}},
            "reference": {"contents": {"contents": [ref]}},
            "agent_eval_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [
                {"author": "user", "content": p}, {"author": "model", "content": r}]}]},
        },
    }
    inv = result.per_invocation[0]
    assert isinstance(inv.details, VertexDetails) and inv.details.explanation == "checked"
    assert result.adk_metric(inv)["details"]["rubric_scores"] == [
        {"rubric_id": "explanation", "rationale": "checked", "score": None}]
    assert vertex.token_requests == 1  # one ADC refresh serves both calls


async def test_safety_without_reference_sends_none_and_skips_empty_response(vertex: FakeVertex) -> None:
    vertex.default = score_reply(1.0)
    ev = case([turn("Hi", "Hello"), turn("Still there?", None)])
    result = await run("safety_v1", 0.5, ev, expected=[])
    [req] = vertex.requests
    assert "reference" not in req.body["instance"]
    assert result.per_invocation[1].status == EvalStatus.NOT_EVALUATED
    assert result.per_invocation[1].reason == "no final response to rate"
    assert result.score == 1.0 and result.status == EvalStatus.PASSED


async def test_multi_turn_request_shape(vertex: FakeVertex) -> None:
    vertex.default = score_reply(0.75)
    result = await run("multi_turn_tool_use_quality_v1", 0.5, case(CONVERSATION))
    [req] = vertex.requests
    user = lambda t: {"role": "user", "parts": [{"text": t}]}  # noqa: E731
    model = lambda t: {"role": "model", "parts": [{"text": t}]}  # noqa: E731

    def tools(city: str) -> list[dict[str, Any]]:
        return [
            {"author": "weather_agent", "content": {"role": "model", "parts": [
                {"text": "Let me check."}, {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": city}}}]}},
            {"author": "user", "content": {"role": "user", "parts": [
                {"function_response": {"id": "c1", "name": "get_weather", "response": {"sky": "sunny"}}}]}},
        ]

    assert req.body == {
        "metrics": [{"predefined_metric_spec": {"metric_spec_name": "multi_turn_tool_use_quality_v1",
                                                "metric_spec_parameters": None}}],
        "instance": {
            "prompt": {"contents": {"contents": []}},
            "agent_eval_data": {
                "agents": {"weather_agent": {"agent_id": "weather_agent", "instruction": "Answer weather questions.",
                                             "tools": APP["agent_details"]["weather_agent"]["tool_declarations"]}},
                "turns": [
                    {"turn_index": 0, "turn_id": "i1", "events": [
                        {"author": "user", "content": user("Weather in Paris?")}, *tools("Paris"),
                        {"author": "agent", "content": model("Sunny in Paris.")}]},
                    {"turn_index": 1, "turn_id": "i2", "events": [
                        {"author": "user", "content": user("And in Rome?")}, *tools("Rome"),
                        {"author": "agent", "content": model("Also sunny.")}]},
                    {"turn_index": 2, "turn_id": "i3", "events": [
                        {"author": "user", "content": user("Thanks")},
                        {"author": "agent", "content": model("You're welcome.")}]},
                ],
            },
        },
    }
    assert [r.status for r in result.per_invocation] == [EvalStatus.NOT_EVALUATED] * 2 + [EvalStatus.PASSED]
    assert result.score == 0.75 and result.status == EvalStatus.PASSED


async def test_response_evaluation_score_uses_coherence_per_turn(vertex: FakeVertex) -> None:
    vertex.responder = lambda req: coherence_reply(4.0 if "Paris" in json.dumps(req.body) else 2.0)
    # The score is on coherence's 1-5 scale; our config reader still caps thresholds at 1 (ADK does not).
    result = await run("response_evaluation_score", 1.0, case(CONVERSATION[:2]))
    assert sorted(json.dumps(r.body) for r in vertex.requests) == sorted(
        json.dumps({"coherence_input": {"metric_spec": {}, "instance": {"prediction": t}}})
        for t in ("Sunny in Paris.", "Also sunny."))
    assert [r.score for r in result.per_invocation] == [4.0, 2.0]
    assert result.score == 3.0 and result.status == EvalStatus.PASSED


# -- replies, faults ------------------------------------------------------------------------------------

async def test_rubric_verdicts_become_adk_rubric_scores(vertex: FakeVertex) -> None:
    vertex.default = score_reply(0.5, explanation="half done", rubric_verdicts=[
        rubric_verdict("Books the flight", True, "booked in turn 2", rubric_id="a"),
        rubric_verdict("", False, "no hotel", rubric_id="b"),
        {"reasoning": "bare"},
    ])
    result = await run("multi_turn_task_success_v1", 0.6, case(CONVERSATION))
    assert result.score == 0.5 and result.status == EvalStatus.FAILED
    expected = [
        RubricScore(rubric_id="Books the flight", rationale="booked in turn 2", score=1.0),
        RubricScore(rubric_id="b", rationale="no hotel", score=0.0),
        RubricScore(rubric_id="rubric_2", rationale="bare", score=0.0),
        RubricScore(rubric_id="explanation", rationale="half done", score=None),
    ]
    assert isinstance(result.details, VertexCaseDetails) and result.details.rubric_scores == expected
    assert result.adk_metric()["details"]["rubric_scores"] == [r.model_dump() for r in expected]


async def test_retries_429_and_500_then_scores(vertex: FakeVertex) -> None:
    vertex.reply(error_reply(429), error_reply(500), score_reply(1.0))
    result = await run("multi_turn_trajectory_quality_v1", 1.0, case(CONVERSATION))
    assert len(vertex.requests) == 3
    assert result.score == 1.0 and result.status == EvalStatus.PASSED
    last = result.per_invocation[-1].details
    assert isinstance(last, VertexDetails) and last.attempts == 3


async def test_gives_up_after_five_attempts_and_on_a_non_retryable_error(vertex: FakeVertex) -> None:
    vertex.default = error_reply(503)
    result = await run("multi_turn_trajectory_quality_v1", 0.5, case(CONVERSATION))
    assert len(vertex.requests) == 5
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.reason == "Vertex AI: 503 UNAVAILABLE: injected after 4 retries"
    assert isinstance(result.details, VertexCaseDetails)
    assert result.details.rubric_scores == [RubricScore(rubric_id="error", rationale=result.reason)]
    vertex.requests.clear()
    vertex.default = error_reply(403)
    result = await run("multi_turn_trajectory_quality_v1", 0.5, case(CONVERSATION))
    assert len(vertex.requests) == 1 and result.reason == "Vertex AI: 403 PERMISSION_DENIED: injected"


async def test_nan_and_metric_errors_are_no_score(vertex: FakeVertex) -> None:
    replies = {"A": score_reply(float("nan"), explanation="confused"), "B": metric_error_reply(3, "bad input"),
               "C": score_reply(0.25), "D": VertexReply(body={})}
    vertex.responder = lambda req: next(v for k, v in replies.items() if f"Q{k}" in json.dumps(req.body))
    ev = case([turn(f"Q{k}", f"answer {k}") for k in replies])
    result = await run("safety_v1", 0.2, ev)
    a, b, c, d = result.per_invocation
    assert (a.score, a.status, a.reason) == (None, EvalStatus.NOT_EVALUATED, "Vertex AI returned no score")
    assert b.score is None and b.reason == "Error in metric result: code=3 details=None message='bad input'"
    assert c.score == 0.25 and c.status == EvalStatus.PASSED
    assert d.score is None and d.reason == "Metric results missing in API response."
    assert result.score == 0.25 and result.status == EvalStatus.PASSED  # mean over scored turns only


# -- the engine's side -------------------------------------------------------------------------------------

async def test_engine_scores_vertex_metrics_without_a_gemini_judge(vertex: FakeVertex) -> None:
    from tui_eval.engine.runner import score_case

    vertex.default = score_reply(0.9)
    config = read_eval_config({"criteria": {"multi_turn_task_success_v1": 0.5, "safety_v1": 0.5,
                                            "tool_trajectory_avg_score": 1.0}})
    ev = case(CONVERSATION)
    results = {r.metric_name: r for r in await score_case(config, ev, turns_of(ev), judge=None)}
    assert results["multi_turn_task_success_v1"].score == 0.9
    assert results["safety_v1"].score == 0.9 and results["safety_v1"].status == EvalStatus.PASSED
    assert len(vertex.requests) == 1 + len(CONVERSATION)


def test_a_judge_is_made_only_when_a_criterion_asks_for_one() -> None:
    from tui_eval.engine.plan import EvalTarget, RunPlan
    from tui_eval.engine.runner import _judge_needed
    from tui_eval.schema.model import EvalSet

    def plan(criteria: dict[str, Any]) -> RunPlan:
        eval_set = EvalSet.model_validate({"eval_set_id": "s", "eval_cases": []})
        return RunPlan(targets=[EvalTarget(eval_file=Path("x.test.json"), eval_set=eval_set,
                                           config=read_eval_config({"criteria": criteria}))])

    assert not _judge_needed(plan({"safety_v1": 0.5, "multi_turn_task_success_v1": 0.5}))
    assert _judge_needed(plan({"safety_v1": {"threshold": 0.5, "judgeModelOptions": {"num_samples": 1}}}))
    assert _judge_needed(plan({"rubric_based_multi_turn_trajectory_quality_v1": 0.5}))
