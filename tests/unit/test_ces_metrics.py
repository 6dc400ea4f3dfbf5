"""CES's metrics on cases imported from CES: tool invocation, parameter correctness, ordered invocation,
latency (hand-computed values on hand-made goldens), thresholds and their precedence, semantic
similarity and hallucination through the judge service and the fake Gemini server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import orjson
import pytest

from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, json_reply
from tui_eval.schema.ces.files import evaluations_from_json
from tui_eval.schema.ces.mapping import evaluations_to_eval_set
from tui_eval.engine.plan import plan_run
from tui_eval.engine.runner import score_case
from tui_eval.judge import JudgeService
from tui_eval.metrics.ces import NOT_A_CES_CASE, with_ces_metrics
from tui_eval.schema.config import EvalConfig, default_config, read_eval_config
from tui_eval.schema.details import (
    CesLatencyDetails,
    CesSemanticSimilarityDetails,
    CesToolDetails,
    HallucinationDetails,
)
from tui_eval.schema.errors import SchemaError
from tui_eval.schema.load import parse_eval_set, read_eval_case
from tui_eval.schema.model import (
    Content,
    EvalCase,
    EvalSet,
    FunctionCall,
    IntermediateData,
    Invocation,
    ToolTiming,
)
from tui_eval.schema.results import EvalStatus, MetricResult

APP = "projects/p/locations/l/apps/a"
CES_METRICS = ["ces_tool_invocation", "ces_parameter_correctness", "ces_semantic_similarity", "ces_hallucination",
               "ces_tool_ordered_invocation", "ces_latency"]


# -- hand-made goldens ----------------------------------------------------------------------------------

def user(text: str) -> dict[str, Any]:
    return {"userInput": {"text": text}}


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"expectation": {"toolCall": {"tool": f"{APP}/tools/{tool}", "args": args}}}


def say(text: str) -> dict[str, Any]:
    return {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": text}]}}}


def golden(*turns: list[dict[str, Any]], eval_id: str = "g1", **extra: Any) -> dict[str, Any]:
    return {"name": f"{APP}/evaluations/{eval_id}", "displayName": eval_id,
            "golden": {"turns": [{"steps": steps} for steps in turns]}, **extra}


def eval_set(*evaluations: dict[str, Any], plain: list[dict[str, Any]] | None = None) -> EvalSet:
    data = evaluations_to_eval_set(evaluations_from_json(list(evaluations), "in.json"), "ces_set")
    data["eval_cases"].extend(plain or [])
    loaded, _legacy = parse_eval_set(orjson.dumps(data), "ces.evalset.json")
    return loaded


def acted(text: str, *calls: tuple[str, dict[str, Any]], reply: str | None = None, seconds: float | None = None,
          timings: Sequence[tuple[str, float]] = ()) -> Invocation:
    return Invocation(
        user_content=Content.from_text(text),
        final_response=Content.from_text(reply, role="model") if reply is not None else None,
        intermediate_data=IntermediateData(tool_uses=[FunctionCall(name=n, args=a) for n, a in calls]),
        duration=seconds,
        tool_timings=[ToolTiming(name=n, seconds=s) for n, s in timings],
    )


# Turn 1 expects get_weather(city, unit) then book_table(time, people); turn 2 expects no call.
TWO_TURNS = (
    [user("Weather in Paris, and a table?"), call("get_weather", city="Paris", unit="C"),
     call("book_table", time="19:00", people=2), say("It is 21 C. Table booked.")],
    [user("Thanks"), say("You are welcome.")],
)
# The agent books first with the wrong party size, then asks the weather, then calls a tool nobody expected.
ACTUAL = [
    acted("Weather in Paris, and a table?", ("book_table", {"time": "19:00", "people": 3}),
          ("get_weather", {"city": "Paris", "unit": "C", "extra": True}), ("lookup", {"x": 1}),
          reply="21 C, booked.", seconds=1.5, timings=[("book_table", 0.25), ("get_weather", 0.5)]),
    acted("Thanks", reply="Welcome!", seconds=0.5),
]


async def score(config: EvalConfig, case: EvalCase, actual: list[Invocation], judge: Any = None
                ) -> dict[str, MetricResult]:
    return {m.metric_name: m for m in await score_case(config, case, actual, judge=judge)}


def ces_config(evals: EvalSet, config: EvalConfig | None = None) -> EvalConfig:
    return with_ces_metrics(config or default_config(), evals)


# -- which cases get the metrics ------------------------------------------------------------------------

def test_metrics_are_added_only_to_eval_sets_with_ces_cases() -> None:
    base = default_config()
    plain = {"eval_id": "plain", "conversation": [{"user_content": {"role": "user", "parts": [{"text": "hi"}]}}]}
    without = parse_eval_set(orjson.dumps({"eval_set_id": "s", "eval_cases": [plain]}), "s.evalset.json")[0]
    assert with_ces_metrics(base, without) is base
    config = ces_config(eval_set(golden(*TWO_TURNS)))
    assert list(config.criteria) == ["tool_trajectory_avg_score", "response_match_score", *CES_METRICS]
    assert list(base.criteria) == ["tool_trajectory_avg_score", "response_match_score"]  # not changed in place
    # CES's default thresholds are the criteria's (semantic similarity on CES's 0..4 scale).
    assert {n: config.criteria[n].threshold for n in CES_METRICS[:4]} == {
        "ces_tool_invocation": 1.0, "ces_parameter_correctness": 1.0, "ces_semantic_similarity": 3.0,
        "ces_hallucination": 1.0}


def test_a_config_naming_ces_metrics_chooses_them(tmp_path: Path) -> None:
    evals = eval_set(golden(*TWO_TURNS))
    config = read_eval_config({"criteria": {"ces_parameter_correctness": 0.5}})
    chosen = ces_config(evals, config)
    assert list(chosen.criteria) == ["ces_parameter_correctness", "ces_tool_ordered_invocation", "ces_latency"]
    # The planner adds them to a file with CES cases.
    path = tmp_path / "ces.evalset.json"
    path.write_bytes(orjson.dumps(evals.to_dict()))
    plan = plan_run([str(path)])
    assert list(plan.targets[0].config.criteria)[2:] == CES_METRICS


def test_semantic_similarity_threshold_is_on_ces_scale() -> None:
    config = read_eval_config({"criteria": {"ces_semantic_similarity": 4}})
    assert config.criteria["ces_semantic_similarity"].threshold == 4.0
    assert config.criteria["ces_semantic_similarity"].judge.num_samples == 1
    assert read_eval_config({"criteria": {"ces_hallucination": 1.0}}).criteria["ces_hallucination"].judge.num_samples == 1
    with pytest.raises(SchemaError, match=r"outside CES's semantic similarity scale"):
        read_eval_config({"criteria": {"ces_semantic_similarity": 5}})
    config = read_eval_config({"criteria": {"ces_tool_invocation": {"threshold": 0.5,
                                                                    "extra_tool_call_behavior": "allow"}}})
    assert config.criteria["ces_tool_invocation"].typed.extra_tool_call_behavior == "ALLOW"  # type: ignore[union-attr]


async def test_non_ces_case_in_a_ces_set_is_not_evaluated() -> None:
    plain = {"eval_id": "plain", "conversation": [
        {"user_content": {"role": "user", "parts": [{"text": "hi"}]},
         "final_response": {"role": "model", "parts": [{"text": "hello"}]}}]}
    evals = eval_set(golden(*TWO_TURNS), plain=[plain])
    results = await score(ces_config(evals), evals.eval_cases[1], [acted("hi", reply="hello", seconds=0.1)])
    for name in CES_METRICS:
        assert results[name].status == EvalStatus.NOT_EVALUATED, name
        assert results[name].reason in (NOT_A_CES_CASE, "no judge credentials"), (name, results[name].reason)
    assert results["ces_tool_invocation"].reason == NOT_A_CES_CASE


# -- tools: hand-computed -------------------------------------------------------------------------------

async def test_tool_scores_by_hand() -> None:
    evals = eval_set(golden(*TWO_TURNS))
    results = await score(ces_config(evals), evals.eval_cases[0], ACTUAL)

    inv = results["ces_tool_invocation"]
    # Turn 1: both expected tools called (2/2 = 1.0) but `lookup` is an extra call: FAIL by CES's default.
    # Turn 2: nothing expected, nothing called: 1.0. Case: mean 1.0, FAILED by turn 1.
    assert [t.score for t in inv.per_invocation] == [1.0, 1.0]
    assert [t.status for t in inv.per_invocation] == [EvalStatus.FAILED, EvalStatus.PASSED]
    assert inv.score == 1.0 and inv.status == EvalStatus.FAILED and inv.threshold == 1.0
    assert inv.per_invocation[0].reason == "extra tool call lookup (extraToolCallBehavior FAIL)"
    details = inv.per_invocation[0].details
    assert isinstance(details, CesToolDetails)
    assert [(t.tool, t.actual_index, t.parameter_correctness_score, t.outcome) for t in details.tools] == [
        ("get_weather", 1, 1.0, "PASS"),  # the actual call's extra argument does not count
        ("book_table", 0, 0.5, "FAIL"),  # time right, people wrong: 1 of 2
    ]
    assert details.tools[1].arg_diffs == [{"path": "people", "kind": "changed", "expected": 2, "actual": 3}]
    assert details.extra_calls == [2] and details.extra_call_names == ["lookup"]

    params = results["ces_parameter_correctness"]
    # Turn 1: (1.0 + 0.5) / 2 = 0.75, book_table below 1.0: FAILED; turn 2 has no expected call.
    assert [t.score for t in params.per_invocation] == [0.75, None]
    assert [t.status for t in params.per_invocation] == [EvalStatus.FAILED, EvalStatus.NOT_EVALUATED]
    assert params.per_invocation[0].reason == "book_table parameters 0.50 < 1"
    assert params.per_invocation[1].reason == "the golden turn expects no tool call"
    assert params.score == 0.75 and params.status == EvalStatus.FAILED

    ordered = results["ces_tool_ordered_invocation"]
    # Turn 1: expected [get_weather, book_table], actual [book_table, get_weather, lookup]: 1 in order of 2.
    assert [t.score for t in ordered.per_invocation] == [0.5, 1.0]
    assert ordered.score == 0.75 and ordered.status == EvalStatus.INFORMATIONAL

    latency = results["ces_latency"]
    assert [t.score for t in latency.per_invocation] == [1.5, 0.5]
    assert latency.score == 1.0 and latency.status == EvalStatus.INFORMATIONAL
    first = latency.per_invocation[0].details
    assert isinstance(first, CesLatencyDetails)
    assert [(t.name, t.seconds) for t in first.tools] == [("book_table", 0.25), ("get_weather", 0.5)]


async def test_missing_call_and_repeated_tool_pairing() -> None:
    # Two expected get_weather calls; the agent makes one, with the second call's arguments: it pairs
    # with the expected call it matches best (the second), the first is not invoked.
    evals = eval_set(golden([user("Paris and Rome?"), call("get_weather", city="Paris"),
                             call("get_weather", city="Rome"), say("Both sunny.")]))
    actual = [acted("Paris and Rome?", ("get_weather", {"city": "Rome"}), reply="Sunny.", seconds=1.0)]
    results = await score(ces_config(evals), evals.eval_cases[0], actual)
    inv = results["ces_tool_invocation"]
    assert inv.score == 0.5 and inv.status == EvalStatus.FAILED
    # Greedy in expected order: the first expected call takes the only same-name call (0 of 1 args right).
    details = inv.per_invocation[0].details
    assert isinstance(details, CesToolDetails)
    assert [(t.actual_index, t.parameter_correctness_score) for t in details.tools] == [(0, 0.0), (None, None)]
    assert inv.per_invocation[0].reason == "get_weather not called"
    params = results["ces_parameter_correctness"]
    assert params.score == 0.0
    assert params.per_invocation[0].reason == "get_weather parameters 0.00 < 1; get_weather not called"


async def test_thresholds_precedence_config_over_override_over_last_result() -> None:
    override = {"goldenEvaluationMetricsThresholds": {
        "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.5},
        "toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"}}}
    last = {"evaluationMetricsThresholds": {"goldenEvaluationMetricsThresholds": {
        "turnLevelMetricsThresholds": {"overallToolInvocationCorrectnessThreshold": 0.4},
        "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.9}}}}
    evals = eval_set(golden(*TWO_TURNS, evaluationMetricsThresholdOverride=override, lastCompletedResult=last))
    results = await score(ces_config(evals), evals.eval_cases[0], ACTUAL)
    inv = results["ces_tool_invocation"]
    # ALLOW: the extra call no longer fails turn 1; the last result's 0.4 is the overall threshold.
    assert inv.status == EvalStatus.PASSED and inv.threshold == 0.4
    params = results["ces_parameter_correctness"]
    # The override's 0.5 beats the last result's 0.9: book_table's 0.5 passes.
    assert params.threshold == 0.5 and params.status == EvalStatus.PASSED and params.score == 0.75
    # A threshold the config names beats both; an extra_tool_call_behavior it names beats ALLOW.
    config = ces_config(evals, read_eval_config({"criteria": {
        "ces_parameter_correctness": 0.8, "ces_tool_invocation": {"threshold": 1.0, "extra_tool_call_behavior": "FAIL"}}}))
    results = await score(config, evals.eval_cases[0], ACTUAL)
    assert results["ces_parameter_correctness"].threshold == 0.8
    assert results["ces_parameter_correctness"].status == EvalStatus.FAILED
    assert results["ces_tool_invocation"].status == EvalStatus.FAILED


async def test_transfer_calls_are_not_extra_tool_calls() -> None:
    evals = eval_set(golden([user("Agent please"), say("Transferring.")]))
    actual = [acted("Agent please", ("transfer_to_agent", {"agent_name": "human"}), reply="Transferring.", seconds=1)]
    results = await score(ces_config(evals), evals.eval_cases[0], actual)
    assert results["ces_tool_invocation"].status == EvalStatus.PASSED


# -- judged: semantic similarity and hallucination ------------------------------------------------------

def only(*names: str) -> EvalConfig:
    return read_eval_config({"criteria": {n: 3 if n == "ces_semantic_similarity" else 1.0 for n in names}})


async def test_semantic_similarity_through_the_judge(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    def respond(req: RecordedRequest) -> Reply:
        text = req.prompt_text
        assert "<expected_response>" in text
        if "It is 21 C. Table booked." in text:
            return json_reply({"reasoning": "same facts", "score": 4})
        return json_reply({"reasoning": "misses the courtesy", "score": 2})

    fake_gemini.responder = respond
    evals = eval_set(golden(*TWO_TURNS))
    results = await score(only("ces_semantic_similarity"), evals.eval_cases[0], ACTUAL, judge)
    sim = results["ces_semantic_similarity"]
    assert len(fake_gemini.requests) == 2  # one sample per turn, as CES asks once
    assert [t.score for t in sim.per_invocation] == [4.0, 2.0]
    assert [t.status for t in sim.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert sim.score == 3.0 and sim.threshold == 3.0 and sim.status == EvalStatus.FAILED
    assert sim.per_invocation[1].reason == "2 (Partially consistent (minor omissions)) < 3"
    details = sim.per_invocation[0].details
    assert isinstance(details, CesSemanticSimilarityDetails)
    assert (details.score, details.label, details.rationale) == (4, "Fully consistent", "same facts")
    # The details survive a record round trip under their own kind.
    again = MetricResult.from_record(json.loads(json.dumps(sim.to_record())))
    assert again.per_invocation[0].details == details


async def test_semantic_similarity_median_of_samples_and_bad_scores(fake_gemini: FakeGemini,
                                                                   judge: JudgeService) -> None:
    replies = iter([{"reasoning": "a", "score": 1}, {"reasoning": "b", "score": 3}, {"reasoning": "c", "score": 9}])
    fake_gemini.responder = lambda _req: json_reply(next(replies))
    evals = eval_set(golden([user("Hi"), say("Hello there.")]))
    config = read_eval_config({"criteria": {"ces_semantic_similarity": {
        "threshold": 1, "judge_model_options": {"num_samples": 3}}}})
    results = await score(config, evals.eval_cases[0], [acted("Hi", reply="Hey.", seconds=1)], judge)
    sim = results["ces_semantic_similarity"]
    details = sim.per_invocation[0].details
    assert isinstance(details, CesSemanticSimilarityDetails)
    # 9 is off the 0..4 scale: that sample is dropped; the median of [1, 3] rounded down is 1.
    assert sorted(details.scores) == [1, 3] and len(details.errors) == 1
    assert details.score == 1 and sim.status == EvalStatus.PASSED


async def test_semantic_similarity_without_judge_or_response() -> None:
    evals = eval_set(golden(*TWO_TURNS))
    results = await score(only("ces_semantic_similarity"), evals.eval_cases[0], ACTUAL, None)
    assert results["ces_semantic_similarity"].status == EvalStatus.NOT_EVALUATED
    assert results["ces_semantic_similarity"].reason == "no judge credentials"


async def test_no_agent_response_scores_zero_without_asking(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    evals = eval_set(golden([user("Hi"), say("Hello there.")]))
    results = await score(only("ces_semantic_similarity"), evals.eval_cases[0], [acted("Hi", seconds=1)], judge)
    sim = results["ces_semantic_similarity"]
    assert sim.score == 0.0 and sim.status == EvalStatus.FAILED and not fake_gemini.requests


def hallucination_responder(labels: dict[str, str]) -> Any:
    def respond(req: RecordedRequest) -> Reply:
        text = req.prompt_text
        if "Split the response below" in text:
            response = text.split("<response>\n", 1)[1].split("\n</response>", 1)[0]
            return json_reply({"sentences": [response]})
        block = text.split("<sentences>\n", 1)[1].split("\n</sentences>", 1)[0]
        num, sentence = block.splitlines()[0].split(". ", 1)
        label = labels[sentence]
        return json_reply({"sentences": [{"index": int(num), "sentence": sentence, "rationale": f"why {label}",
                                          "label": label, "supporting_excerpt": None,
                                          "contradicting_excerpt": None}]})

    return respond


async def test_hallucination_as_ces_reads_it(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    fake_gemini.responder = hallucination_responder({"21 C, booked.": "supported", "Welcome!": "unsupported"})
    evals = eval_set(golden(*TWO_TURNS))
    config = read_eval_config({"criteria": {"ces_hallucination": {
        "threshold": 1.0, "judge_model_options": {"num_samples": 1}}}})
    results = await score(config, evals.eval_cases[0], ACTUAL, judge)
    hal = results["ces_hallucination"]
    assert [t.score for t in hal.per_invocation] == [1.0, 0.0]
    assert [t.reason for t in hal.per_invocation] == ["CES score 1 (justified)", "CES score 0 (not justified)"]
    assert hal.status == EvalStatus.FAILED and hal.metric_name == "ces_hallucination"
    assert isinstance(hal.per_invocation[0].details, HallucinationDetails)


async def test_hallucination_disabled_by_the_evaluation(fake_gemini: FakeGemini, judge: JudgeService) -> None:
    evals = eval_set(golden(*TWO_TURNS, evaluationMetricsThresholdOverride={
        "goldenHallucinationMetricBehavior": "DISABLED"}))
    results = await score(only("ces_hallucination"), evals.eval_cases[0], ACTUAL, judge)
    assert results["ces_hallucination"].status == EvalStatus.NOT_EVALUATED
    assert results["ces_hallucination"].reason == "the evaluation disables CES's hallucination check"
    assert not fake_gemini.requests


def test_case_reads_back_with_ces_key() -> None:
    # The metrics read the case's extra `ces` key (EvalCase keeps unknown keys in model_extra).
    case = read_eval_case({"eval_id": "x", "conversation": [], "ces": {"evaluation": {"golden": {}}}})
    assert (case.model_extra or {})["ces"] == {"evaluation": {"golden": {}}}


def test_a_pulled_folder_is_a_workspace_whose_runs_score_ces_metrics(tmp_path: Path) -> None:
    # What `tui-eval DIR` opens: the pulled eval set is found, its cases listed, and a run from the
    # dashboard plans the CES metrics as `tui-eval run` does.
    from tui_eval.engine.workspace import Workspace

    pulled = tmp_path / "pulled"
    pulled.mkdir()
    (pulled / "a.evalset.json").write_bytes(orjson.dumps(eval_set(golden(*TWO_TURNS)).to_dict()))
    workspace = Workspace(pulled)
    workspace.scan()
    assert [(p.name, c.eval_id) for p, c in workspace.cases()] == [("a.evalset.json", "g1")]
    plan = workspace.plan_for()
    assert list(plan.targets[0].config.criteria)[2:] == CES_METRICS
