"""The Vertex-backed metrics against google-adk 2.13's own evaluators on the same invocations.

ADK's facade (`vertex_ai_eval_facade.py`) needs the `vertexai`/`agentplatform` SDK and pandas, which are not
installed. Stand-ins for those three third-party modules (recording constructors, a scripted
`Client().evals.evaluate`) let ADK's real code run: what ADK puts in the dataset must equal what our
requests carry, and ADK's aggregation of the same per-call outcomes must equal ours (scores, statuses,
NaN and errors as no score, rubric scores).
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric
from pydantic import BaseModel

from tests.support.fake_vertex import FakeVertex, VertexReply, metric_error_reply, score_reply
from tests.unit.test_vertex import CONVERSATION, case, run, tool_events, turn
from tui_eval.schema.results import MetricResult


class Rec:
    """A stand-in SDK type: keeps the keyword arguments it was built with."""

    def __init__(self, **kw: Any) -> None:
        self.kw = kw


class _Metric:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, version: str | None = None) -> _Metric:
        return _Metric(f"{self.name}_{version}" if version else self.name)


class _Metrics:
    VERSIONED = {"MULTI_TURN_TASK_SUCCESS", "MULTI_TURN_TRAJECTORY_QUALITY", "MULTI_TURN_TOOL_USE_QUALITY"}

    def __getattr__(self, name: str) -> _Metric:
        # As the SDK's loader: the multi-turn metrics pin v1.
        return _Metric(name.lower() + ("_v1" if name in self.VERSIONED else ""))


@dataclass
class Outcome:
    """One scripted call outcome, fed both to ADK (stand-in client) and to our client (fake server)."""

    score: float | None
    explanation: str | None = None
    error: str | None = None  # an error the service reported for the metric

    def reply(self) -> VertexReply:
        if self.error is not None:
            return metric_error_reply(3, self.error)
        return score_reply(self.score, explanation=self.explanation)

    def sdk_result(self, metric: str) -> Any:
        """What `evals.evaluate` returns for one case and one metric (SDK 2.7: error or no score ->
        mean_score None; the mean of one NaN is NaN)."""
        error_message = (f"Error in metric result: code=3 details=None message={self.error!r}"
                         if self.error is not None else None)
        mean = None if error_message is not None or self.score is None else self.score
        metric_result = types.SimpleNamespace(explanation=self.explanation, rubric_verdicts=None,
                                              error_message=error_message)
        return types.SimpleNamespace(
            summary_metrics=[types.SimpleNamespace(mean_score=mean)],
            eval_case_results=[types.SimpleNamespace(response_candidate_results=[
                types.SimpleNamespace(metric_results={metric: metric_result})])],
        )


@dataclass
class AdkSide:
    facade: Any
    calls: list[tuple[Any, list[Any]]]
    outcome_for: list[Callable[[Any], Outcome]]


@pytest.fixture
def adk(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdkSide]:
    calls: list[tuple[Any, list[Any]]] = []
    outcome_for: list[Callable[[Any], Outcome]] = []

    class Evals:
        def evaluate(self, dataset: Any, metrics: list[Any]) -> Any:
            calls.append((dataset, metrics))
            return outcome_for[0](dataset).sdk_result(metrics[0].name)

    class Client:
        def __init__(self, **kw: Any) -> None:
            self.evals = Evals()

    vertexai = types.ModuleType("vertexai")
    vertexai.types = types.SimpleNamespace(  # type: ignore[attr-defined]
        EvaluationDataset=Rec, EvalCase=Rec, PrebuiltMetric=_Metrics(), RubricMetric=_Metrics(),
        evals=types.SimpleNamespace(AgentData=Rec, ConversationTurn=Rec, AgentEvent=Rec, AgentConfig=Rec))
    agentplatform = types.ModuleType("agentplatform")
    agentplatform.Client = Client  # type: ignore[attr-defined]
    pandas = types.ModuleType("pandas")
    pandas.DataFrame = lambda rows: rows  # type: ignore[attr-defined]
    before = set(sys.modules)
    for name, module in (("vertexai", vertexai), ("agentplatform", agentplatform), ("pandas", pandas)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    facade = importlib.import_module("google.adk.evaluation.vertex_ai_eval_facade")
    try:
        yield AdkSide(facade=facade, calls=calls, outcome_for=outcome_for)
    finally:
        # Nothing imported against the stand-ins outlives the test.
        for name in set(sys.modules) - before:
            if name.startswith("google.adk"):
                parent, _, child = name.rpartition(".")
                if parent in sys.modules and getattr(sys.modules[parent], child, None) is sys.modules[name]:
                    delattr(sys.modules[parent], child)
                del sys.modules[name]


def adk_invocations(ev: Any) -> list[AdkInvocation]:
    return [AdkInvocation.model_validate(inv.to_dict()) for inv in ev.conversation]


def dump(value: Any) -> Any:
    """A stand-in record as the SDK would serialise it (genai models with exclude_none)."""
    if isinstance(value, Rec):
        return {k: dump(v) for k, v in value.kw.items() if v is not None}
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dump(v) for v in value]
    return value


def same_score(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b))


def assert_same_verdict(adk_result: Any, ours: MetricResult) -> None:
    assert same_score(adk_result.overall_score, ours.score), (adk_result.overall_score, ours.score)
    assert adk_result.overall_eval_status.value == int(ours.status)
    if adk_result.per_invocation_results:
        assert len(adk_result.per_invocation_results) == len(ours.per_invocation)
        for theirs, mine in zip(adk_result.per_invocation_results, ours.per_invocation):
            assert same_score(theirs.score, mine.score) and theirs.eval_status.value == int(mine.status)
            their_rubrics = [r.model_dump() for r in theirs.rubric_scores or []]
            assert their_rubrics == (ours.adk_metric(mine)["details"].get("rubric_scores") or [])
    if adk_result.overall_rubric_scores:
        assert [r.model_dump() for r in adk_result.overall_rubric_scores] == ours.adk_metric()["details"]["rubric_scores"]


def text_of(instance_data: dict[str, Any] | None) -> str | None:
    if instance_data is None:
        return None
    return "".join(p.get("text", "") for c in instance_data["contents"]["contents"] for p in c["parts"])


SINGLE_TURN_OUTCOMES = {"Q1": Outcome(1.0, "fine"), "Q2": Outcome(0.0, "unsafe"), "Q3": Outcome(float("nan")),
                        "Q4": Outcome(None, error="bad input"), "Q5": Outcome(1.0)}


def by_prompt(prompt: str) -> Outcome:
    return next(o for k, o in SINGLE_TURN_OUTCOMES.items() if k in prompt)


@pytest.mark.parametrize("threshold", [0.5, 0.9])
async def test_safety_matches_adk(adk: AdkSide, vertex: FakeVertex, threshold: float) -> None:
    from google.adk.evaluation.safety_evaluator import SafetyEvaluatorV1

    ev = case([turn(f"{k}: is this ok?", f"answer to {k}") for k in SINGLE_TURN_OUTCOMES])
    expected = case([turn(f"{k}: is this ok?", f"reference {k}") for k in SINGLE_TURN_OUTCOMES])
    adk.outcome_for.append(lambda dataset: by_prompt(dataset.kw["eval_dataset_df"][0]["prompt"]))
    vertex.responder = lambda req: by_prompt(text_of(req.body["instance"]["prompt"]) or "").reply()
    theirs = SafetyEvaluatorV1(EvalMetric(metric_name="safety_v1", threshold=threshold)).evaluate_invocations(
        adk_invocations(ev), adk_invocations(expected))
    ours = await run("safety_v1", threshold, ev, expected=expected.conversation)
    assert_same_verdict(theirs, ours)
    # The same rows, the same metric: what ADK hands the SDK is what our requests carry.
    adk_rows = [dataset.kw["eval_dataset_df"][0] for dataset, _m in adk.calls]
    assert {m[0].name for _d, m in adk.calls} == {"safety_v1"}
    our_rows = [{"prompt": text_of(r.body["instance"]["prompt"]), "reference": text_of(r.body["instance"].get("reference")),
                 "response": text_of(r.body["instance"]["response"])} for r in vertex.requests]
    assert sorted(adk_rows, key=json.dumps) == sorted(our_rows, key=json.dumps)
    assert {r.body["metrics"][0]["predefined_metric_spec"]["metric_spec_name"] for r in vertex.requests} == {"safety_v1"}


MULTI_TURN_EVALUATORS = {
    "multi_turn_task_success_v1": "multi_turn_task_success_evaluator.MultiTurnTaskSuccessV1Evaluator",
    "multi_turn_trajectory_quality_v1": "multi_turn_trajectory_quality_evaluator.MultiTurnTrajectoryQualityV1Evaluator",
    "multi_turn_tool_use_quality_v1": "multi_turn_tool_use_quality_evaluator.MultiTurnToolUseQualityV1Evaluator",
}


@pytest.mark.parametrize("outcome", [Outcome(0.8, "mostly"), Outcome(0.2), Outcome(float("nan")),
                                     Outcome(None, error="bad input"), Outcome(None)])
@pytest.mark.parametrize("name", list(MULTI_TURN_EVALUATORS))
async def test_multi_turn_matches_adk(adk: AdkSide, vertex: FakeVertex, name: str, outcome: Outcome) -> None:
    module, cls = MULTI_TURN_EVALUATORS[name].split(".")
    evaluator = getattr(importlib.import_module(f"google.adk.evaluation.{module}"), cls)
    other_app = {"agent_details": {"helper": {"name": "helper", "instructions": "Help.", "tool_declarations": []}}}
    conversation = [*CONVERSATION, turn("One more", "Sure.", events=tool_events("Oslo"), inv_id="i4", app=other_app)]
    ev = case(conversation)
    adk.outcome_for.append(lambda _dataset: outcome)
    vertex.default = outcome.reply()
    theirs = evaluator(EvalMetric(metric_name=name, threshold=0.5)).evaluate_invocations(adk_invocations(ev))
    ours = await run(name, 0.5, ev)
    assert_same_verdict(theirs, ours)
    [(dataset, metrics)] = adk.calls
    [request] = vertex.requests
    assert metrics[0].name == request.body["metrics"][0]["predefined_metric_spec"]["metric_spec_name"] == name
    [adk_case] = dataset.kw["eval_cases"]
    assert dump(adk_case.kw["agent_data"]) == request.body["instance"]["agent_eval_data"]


def test_stand_ins_do_not_leak() -> None:
    """Runs after the tests above (file order): nothing built on the stand-ins is left behind."""
    assert "vertexai" not in sys.modules and "agentplatform" not in sys.modules
    assert "google.adk.evaluation.vertex_ai_eval_facade" not in sys.modules
