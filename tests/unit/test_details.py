"""Typed verdict details: every kind round-trips through the run record into its own class, and the
readers (turn view helpers, --print-detailed-results) show what is stored, never a recomputation."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from tui_eval.engine.store import RECORD_FORMAT, load_record, record_json
from tui_eval.report import detail_lines, print_detailed
from tui_eval.schema.details import (
    ActualStatus,
    Alignment,
    CheckedResponse,
    ExpectedStatus,
    HallucinationDetails,
    JudgeCaseDetails,
    JudgeSample,
    MetricDetails,
    ResponseMatchJudgeDetails,
    RougeDetails,
    RubricDetails,
    RubricSampleVerdict,
    RubricScore,
    RubricVerdict,
    SafetyDetails,
    SentenceSampleLabel,
    SentenceVerdict,
    SimulatorCriterionVerdict,
    SimulatorSample,
    SimulatorTurnDetails,
    StopSignalVerdict,
    TrajectoryDetails,
    Votes,
)
from tui_eval.schema.model import Content, FunctionCall, IntermediateData, Invocation
from tui_eval.schema.results import CaseResult, EvalSetResult, EvalStatus, InvocationMetricResult, MetricResult
from tui_eval.schema.usage import TokenUsage

A = {"index": 0, "name": "a", "status": "matched", "actual_index": 0}
A_ACT = {"index": 0, "name": "a", "status": "matched", "expected_index": 0}


def _alignment(passed: bool, exp_status: ExpectedStatus = "matched",
               act_status: ActualStatus = "matched") -> Alignment:
    return {"passed": passed,
            "expected": [{"index": 0, "name": "a", "status": exp_status,
                          "actual_index": 0 if exp_status == "matched" else None}],
            "actual": [{"index": 0, "name": "a", "status": act_status,
                        "expected_index": 0 if act_status == "matched" else None}]}


def _usage(n: int) -> TokenUsage:
    return TokenUsage(prompt_tokens=n, output_tokens=1, total_tokens=n + 1)


def every_kind() -> list[MetricDetails]:
    """One details model of every kind, with every nested field set."""
    sample = JudgeSample(sample=0, cached=True, latency=0.25, usage=_usage(3), verdict="valid", rationale="fine")
    dropped = JudgeSample(sample=1, error="invalid JSON", raw_text="{oops")
    return [
        TrajectoryDetails(
            match_type="IN_ORDER", ignore_args=True, exact=_alignment(False, "missing", "extra"),
            in_order={"passed": False, "expected": [{"index": 0, "name": "a", "status": "missing", "actual_index": 0,
                                                      "arg_diffs": [{"path": "x.y[1]", "kind": "changed",
                                                                     "expected": [1, {"z": None}], "actual": 2.5}]}],
                      "actual": [{"index": 0, "name": "a", "status": "extra", "expected_index": 0,
                                  "arg_diffs": [{"path": "q", "kind": "extra", "actual": "s"}]}]},
            any_order=_alignment(True)),
        RougeDetails(precision=0.5, recall=0.25, shared_tokens=1, candidate_tokens=2, reference_tokens=4),
        ResponseMatchJudgeDetails(samples=[sample, dropped], votes=Votes(yes=1, no=0), errors=["sample 1: invalid JSON"],
                                  token_usage=_usage(3), verdict="valid", rationale="fine"),
        SafetyDetails(samples=[JudgeSample(sample=0, verdict="unsafe", rationale="r", violated_policies=["privacy"])],
                      votes=Votes(yes=0, no=1), verdict="unsafe", rationale="r", violated_policies=["privacy"]),
        RubricDetails(
            rubrics=[RubricVerdict(rubric_id="r1", text="Is polite", type="FINAL_RESPONSE_QUALITY", verdict="yes",
                                   score=1.0, votes=Votes(yes=2, no=1), rationale="polite",
                                   samples=[RubricSampleVerdict(sample=0, verdict="yes", rationale="polite",
                                                                evidence="the prompt")]),
                     RubricVerdict(rubric_id="r2")],
            samples=[JudgeSample(sample=0)], errors=[], token_usage=_usage(5), unmatched_rubric_ids=["made_up"]),
        HallucinationDetails(
            steps=[CheckedResponse(source="intermediate", author="bot", text="It rains. Hi.", score=0.5,
                                   samples=[JudgeSample(sample=0)], token_usage=_usage(2)),
                   CheckedResponse(source="final", text="x", reason="the judge found no sentences")],
            sentences=[SentenceVerdict(text="It rains.", label="contradictory", rationale="tool says sun",
                                       excerpt="sun", contradicting_excerpt="sun", source="intermediate", step=0,
                                       votes={"contradictory": 2, "supported": 1}, span=(0, 9),
                                       samples=[SentenceSampleLabel(sample=0, label="contradictory", rationale="t")]),
                       SentenceVerdict(text="Hi.", source="intermediate", step=0)],
            labels={"contradictory": 1}, errors=["segmentation: 503"], token_usage=_usage(7)),
        SimulatorTurnDetails(
            user_text="book it", turn_kind="stop_signal", verdict=False, rationale="STOP: too early",
            failed_criteria=["STOP_CONDITION_FOLLOWED"], votes=Votes(yes=1, no=2),
            samples=[SimulatorSample(sample=0, is_valid=False,
                                     criteria=[SimulatorCriterionVerdict(name="STOP", reasoning="early",
                                                                         passes=False)])]),
        JudgeCaseDetails(judge_model="m", num_samples=3, evaluated_invocations=1, token_usage=_usage(9),
                         rubric_scores=[RubricScore(rubric_id="r1", rationale="mean", score=0.5)],
                         stop_signal="</finished>",
                         stop_signal_turn=StopSignalVerdict(score=0.0, status=2, reason=None,
                                                            details=SimulatorTurnDetails(user_text="</finished>"))),
    ]


def _turn(calls: list[FunctionCall]) -> Invocation:
    return Invocation(user_content=Content.from_text("q"), final_response=Content.from_text("a"),
                      intermediate_data=IntermediateData(tool_uses=calls))


def _write_record(tmp_path: Path, case: CaseResult) -> Path:
    """A run record as ResultStore.save_run writes it (same keys, same serialisation)."""
    path = tmp_path / "app_set_1.tui-eval.json"
    assert json.loads(record_json({"case": case.as_record()}))["case"] == case.to_record()  # the fast writer
    record: dict[str, Any] = {"format": RECORD_FORMAT, "run_id": "r", "name": "app_set_1", "adk_file": None, "app_name": "app",
              "agent": None, "eval_file": "set.evalset.json", "eval_set_id": "set", "creation_timestamp": 1.0,
              "cancelled": False, "criteria": {}, "config_source": None, "counts": {}, "cases": [case.as_record()]}
    path.write_bytes(record_json(record))
    return path


def test_every_kind_round_trips_through_the_record_into_its_own_class(tmp_path: Path) -> None:
    kinds = every_kind()
    per_invocation = [InvocationMetricResult(score=0.5, status=EvalStatus.FAILED, reason="why", details=d)
                      for d in kinds]
    case = CaseResult(eval_set_id="set", eval_id="c1", status=EvalStatus.FAILED, metrics=[
        MetricResult(metric_name="m", threshold=1.0, score=0.5, status=EvalStatus.FAILED,
                     criterion={"threshold": 1.0, "match_type": "IN_ORDER"}, per_invocation=per_invocation,
                     details=kinds[-1]),
        MetricResult.not_evaluated("n", 0.5, "no judge credentials"),
    ], eval_set_file="set.evalset.json", session_id="s", wall_seconds=0.5)
    _meta, loaded = load_record(_write_record(tmp_path, case))
    [back] = loaded.case_results
    assert back.metrics == case.metrics  # field by field, nested models included
    for before, after in zip(kinds, [inv.details for inv in back.metrics[0].per_invocation]):
        assert type(after) is type(before) and after == before
    assert back.metrics[0].details == kinds[-1]
    assert back.status is EvalStatus.FAILED and back.metrics[1].reason == "no judge credentials"
    traj = back.metrics[0].per_invocation[0].details
    assert isinstance(traj, TrajectoryDetails)
    assert traj.alignment("IN_ORDER")["expected"][0]["arg_diffs"][0]["expected"] == [1, {"z": None}]
    hall = back.metrics[0].per_invocation[5].details
    assert isinstance(hall, HallucinationDetails) and hall.sentences[0].span == (0, 9)


def test_details_are_frozen_as_the_results_that_carry_them(tmp_path: Path) -> None:
    """A metric builds its details whole: no details model, fresh or loaded from a record, changes in place
    (a result, and so its details, may be shared by several cases)."""
    kinds = every_kind()
    case = CaseResult(eval_set_id="set", eval_id="c1", status=EvalStatus.FAILED, metrics=[
        MetricResult(metric_name="m", threshold=1.0, score=0.5, status=EvalStatus.FAILED, criterion={},
                     per_invocation=[InvocationMetricResult(score=0.5, status=EvalStatus.FAILED, details=d)
                                     for d in kinds])])
    _meta, loaded = load_record(_write_record(tmp_path, case))
    back = [inv.details for inv in loaded.case_results[0].metrics[0].per_invocation]
    nested = [Votes(yes=1), JudgeSample(sample=0), CheckedResponse(), SentenceVerdict(text="t"),
              RubricVerdict(rubric_id="r"), SimulatorSample(sample=0), StopSignalVerdict()]
    for details in [*kinds, *back, *nested]:
        assert details is not None
        name = next(n for n in type(details).model_fields if n != "kind")
        with pytest.raises(ValidationError, match="frozen"):
            setattr(details, name, getattr(details, name))
    assert back == kinds


def test_an_unknown_kind_is_an_error_not_a_guess() -> None:
    adapter: TypeAdapter[MetricDetails] = TypeAdapter(MetricDetails)
    with pytest.raises(ValidationError):
        adapter.validate_python({"kind": "votes", "votes": {"yes": 1}})
    with pytest.raises(ValidationError):  # a kind names its class: fields of another kind do not load
        adapter.validate_python({"kind": "rouge", "votes": {"yes": 1, "no": 0}})


def test_an_older_record_loads_without_its_details(tmp_path: Path) -> None:
    path = tmp_path / "old.tui-eval.json"
    case = {"eval_set_id": "set", "eval_id": "c1", "status": 1, "metrics": [
        {"metric_name": "tool_trajectory_avg_score", "threshold": 1.0, "score": 1.0, "status": 1, "criterion": {},
         "per_invocation": [{"score": 1.0, "status": 1, "details": {"alignment": {"match_type": "EXACT"}}}]}]}
    path.write_text(json.dumps({"format": "tui-eval.run/1", "run_id": "r", "name": "n", "eval_set_id": "set",
                                "creation_timestamp": 1.0, "cases": [case]}))
    _meta, result = load_record(path)
    [inv] = result.case_results[0].metrics[0].per_invocation
    assert inv.status is EvalStatus.PASSED and inv.details is None


def test_record_keeps_adk_rubric_scores_and_tool_timings_out_of_the_adk_shape() -> None:
    rubric = every_kind()[4]
    inv = InvocationMetricResult(score=1.0, status=EvalStatus.PASSED, details=rubric)
    m = MetricResult(metric_name="rubric_based_final_response_quality_v1", threshold=0.5, score=1.0,
                     status=EvalStatus.PASSED, per_invocation=[inv],
                     details=JudgeCaseDetails(rubric_scores=[RubricScore(rubric_id="r1", rationale="x", score=1.0)]))
    assert m.adk_metric(inv)["details"] == {"rubric_scores": [
        {"rubric_id": "r1", "rationale": "polite", "score": 1.0}, {"rubric_id": "r2", "rationale": None, "score": None}]}
    assert m.adk_metric()["details"] == {"rubric_scores": [{"rubric_id": "r1", "rationale": "x", "score": 1.0}]}
    from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

    case = CaseResult(eval_set_id="s", eval_id="c", status=EvalStatus.PASSED, metrics=[m], actual=[_turn([])],
                      expected=[_turn([])], session_id="x")
    adk = EvalSetResult(eval_set_result_id="s_1", eval_set_id="s", creation_timestamp=1.0, case_results=[case]).to_adk()
    parsed = AdkEvalSetResult.model_validate(adk)
    adk_details = parsed.eval_case_results[0].overall_eval_metric_results[0].details
    assert adk_details is not None and adk_details.rubric_scores is not None
    assert adk_details.rubric_scores[0].rubric_id == "r1"


def test_status_vocabulary_comes_from_the_enum() -> None:
    assert [s.value for s in EvalStatus] == [1, 2, 3, 4]  # ADK's numbering, INFORMATIONAL included
    assert [s.label for s in EvalStatus] == ["passed", "failed", "not evaluated", "informational"]
    assert [s.glyph for s in EvalStatus] == ["✔", "✘", "–", "ℹ"]
    assert [s.mark for s in EvalStatus] == ["PASS", "FAIL", "N/E ", "INFO"]


def _contrived_case() -> CaseResult:
    """Actual calls equal the expected ones, yet the stored alignments say otherwise, differently for
    each match type: a reader that recomputed would show three passes."""
    calls = [FunctionCall(name="a", args={"x": 1})]
    details = TrajectoryDetails(
        match_type="ANY_ORDER", exact=_alignment(False, "missing", "extra"),
        in_order=_alignment(True), any_order=_alignment(False, "missing", "out_of_order"))
    inv = InvocationMetricResult(score=0.0, status=EvalStatus.FAILED, reason="stored", details=details)
    metric = MetricResult(metric_name="tool_trajectory_avg_score", threshold=1.0, score=0.0,
                          status=EvalStatus.FAILED, per_invocation=[inv])
    return CaseResult(eval_set_id="set", eval_id="c1", status=EvalStatus.FAILED, metrics=[metric],
                      actual=[_turn(calls)], expected=[_turn(list(calls))])


def test_report_prints_the_stored_verdict_of_every_match_type() -> None:
    case = _contrived_case()
    details = case.metrics[0].per_invocation[0].details
    lines = detail_lines(details)
    assert lines[0] == "match types: EXACT ✘  IN_ORDER ✔  ANY_ORDER* ✘ (* configured)"
    assert lines[1] == "calls: 1 missing, 1 out of order"  # the configured (ANY_ORDER) alignment's counts


def test_detailed_results_print_rubric_verdicts_with_votes_and_rationale() -> None:
    from tui_eval.engine.runner import RunRecord

    rubric = every_kind()[4]
    inv = InvocationMetricResult(score=1.0, status=EvalStatus.PASSED, details=rubric)
    m = MetricResult(metric_name="rubric_based_final_response_quality_v1", threshold=0.5, score=1.0,
                     status=EvalStatus.PASSED, per_invocation=[inv])
    case = CaseResult(eval_set_id="s", eval_id="c", status=EvalStatus.PASSED, metrics=[m], actual=[_turn([])],
                      expected=[_turn([])])
    record = RunRecord(run_id="r", started=0.0)
    record.results.append(EvalSetResult(eval_set_result_id="s_1", eval_set_id="s", creation_timestamp=1.0,
                                        case_results=[case]))
    out = io.StringIO()
    print_detailed(record, out)
    text = out.getvalue()
    assert "    rubric r1: yes (votes 2/3 yes): polite" in text
    assert "    rubric r2: not evaluated (the judge gave no verdict) (no votes)" in text
    assert "    ids the judge made up: made_up" in text


def test_turn_view_helpers_read_the_stored_alignments_without_alignment_code(tmp_path: Path) -> None:
    path = _write_record(tmp_path, _contrived_case())
    # A fresh interpreter: rendering must not import the metric code at all.
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from tui_eval.engine.store import load_record
        from tui_eval.schema.model import Content, FunctionCall, IntermediateData, Invocation
        from tui_eval.tui.verdicts import alignment_summary, configured_match_type, stored_trajectory, trajectory_rows
        from tui_eval.tui.widgets.trajectory import verdict_chips

        _meta, result = load_record(Path({str(path)!r}))
        [case] = result.case_results
        stored = stored_trajectory(case, 0)
        assert configured_match_type(case, stored) == ("ANY_ORDER", False)
        alignments = stored.alignments()
        chips = str(verdict_chips(alignments, "EXACT", "ANY_ORDER"))
        assert "EXACT" in chips and "✘" in chips.split("IN_ORDER")[0], chips
        assert "IN_ORDER ✔" in chips and "ANY_ORDER* ✘" in chips, chips
        assert alignment_summary(alignments["EXACT"]) == "1 missing, 1 extra"
        assert alignment_summary(alignments["IN_ORDER"]) == "1 matched"
        assert alignment_summary(alignments["ANY_ORDER"]) == "1 missing, 1 out of order"
        calls = [FunctionCall(name="a", args={{"x": 1}})]
        rows = trajectory_rows(alignments["EXACT"], calls, list(calls))
        assert [(str(r.expected or ""), str(r.actual or "")) for r in rows] == [
            ("✘ missing a(x=1)", ""), ("", "+ extra a(x=1)")], rows
        leaked = sorted(m for m in sys.modules if m.startswith("tui_eval.metrics"))
        assert not leaked, leaked
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_trusted_construction_equals_validation() -> None:
    # The scoring hot path builds results without validation; they must be the very models validation makes.
    from tui_eval.schema.fast import trusted

    rouge = trusted(RougeDetails, kind="rouge", precision=0.5, recall=0.25, shared_tokens=1, candidate_tokens=2,
                    reference_tokens=4)
    assert rouge == RougeDetails(precision=0.5, recall=0.25, shared_tokens=1, candidate_tokens=2, reference_tokens=4)
    traj = trusted(TrajectoryDetails, kind="trajectory", match_type="EXACT", ignore_args=False,
                   exact=_alignment(True), in_order=None, any_order=None)
    assert traj == TrajectoryDetails(exact=_alignment(True))
    inv = trusted(InvocationMetricResult, score=1.0, status=EvalStatus.PASSED, reason=None, details=rouge)
    assert inv == InvocationMetricResult(score=1.0, status=EvalStatus.PASSED, details=rouge)
    assert inv.model_dump() == InvocationMetricResult(score=1.0, status=EvalStatus.PASSED, details=rouge).model_dump()
    metric = MetricResult.mean_of("m", 0.5, {"threshold": 0.5}, [inv])
    assert metric == MetricResult(metric_name="m", threshold=0.5, score=1.0, status=EvalStatus.PASSED,
                                  criterion={"threshold": 0.5}, per_invocation=[inv])


def test_registry_says_which_metrics_need_a_judge() -> None:
    # The faces ask the registry (kind / needs_judge), never a list of their own.
    from tui_eval.metrics.base import registered_metrics
    from tui_eval.schema.criteria import METRIC_NAMES

    specs = registered_metrics()
    assert set(specs) == set(METRIC_NAMES)
    judged = {name for name, spec in specs.items() if spec.kind == "judge"}
    assert judged == {name for name, spec in specs.items() if spec.needs_judge}
    # CES's metrics (tui_eval/metrics/ces.py) run only on cases imported from CES; two of them ask a judge.
    ces = {name for name in specs if name.startswith("ces_")}
    informational = {name for name, spec in specs.items() if spec.kind == "informational"} - ces
    assert informational == {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                             "invocation_duration_v1"}
    assert {"ces_semantic_similarity", "ces_hallucination"} == ces & judged
    assert {"tool_trajectory_avg_score", "response_match_score",
            # tui-eval's own opt-in metrics: the calls inside tool calls, the final session state.
            "deep_tool_trajectory_v1", "final_session_state_v1"} == {
        name for name, spec in specs.items() if spec.kind == "deterministic" and name not in ces}
    # ADK's Vertex-backed metrics run on Vertex AI, not through the Gemini judge.
    vertex = {"response_evaluation_score", "safety_v1", "multi_turn_task_success_v1",
              "multi_turn_trajectory_quality_v1", "multi_turn_tool_use_quality_v1"}
    assert vertex == {name for name, spec in specs.items() if spec.kind == "vertex"}
    assert not any(specs[name].needs_judge for name in vertex)
