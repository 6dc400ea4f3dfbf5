"""One status vocabulary: one rule combines verdicts, one property says a metric went wrong, and every
text output writes a metric's verdict in the same words."""

from __future__ import annotations

from html import escape as html_escape

from tui_eval.engine.feed import summarize
from tui_eval.report import case_lines
from tui_eval.schema.model import Content, Invocation, Part
from tui_eval.schema.results import CaseResult, EvalSetResult, InvocationMetricResult, MetricResult
from tui_eval.schema.status import EvalStatus, combine_statuses
from tui_eval.share import SharedRun, render_html, render_markdown
from tui_eval.tui.listing import turn_status_of
from tui_eval.tui.progress import RunState

P, F, N, I = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL


def _turn(text: str) -> Invocation:
    return Invocation(user_content=Content(role="user", parts=[Part(text=text)]))


def _metric(name: str, status: EvalStatus, score: float | None, *turns: EvalStatus,
            reason: str | None = None, threshold: float = 1.0) -> MetricResult:
    return MetricResult(metric_name=name, threshold=threshold, score=score, status=status, reason=reason,
                        per_invocation=[InvocationMetricResult(score=score, status=t) for t in turns])


def test_one_rule_combines_verdicts_given_as_members_or_adk_integers() -> None:
    assert combine_statuses([P, F, N]) is F
    assert combine_statuses([1, 3, 4]) is P  # a case summary carries ADK's integers
    assert combine_statuses([I, N]) is N and combine_statuses([]) is N
    # CES's informational checks: scored turns that neither passed nor failed leave the metric informational.
    assert combine_statuses([I, N], otherwise=I) is I
    assert combine_statuses([I, P], otherwise=I) is P


def test_a_turns_status_is_the_same_from_a_full_result_and_from_its_summary() -> None:
    case = CaseResult(eval_set_id="s", eval_id="c", status=F, actual=[_turn("a"), _turn("b")], metrics=[
        _metric("m1", F, 0.5, F, P),
        _metric("m2", P, 1.0, P, N),
        _metric("m3", I, 3.0, I, I),
    ])
    summary = summarize(case, insight=False)
    for index in (0, 1, 2):
        for metric in (None, "m1", "m2", "m3", "absent"):
            assert turn_status_of(case, index, metric) == summary.turn_status(index, metric)
    assert turn_status_of(case, 0) is F and turn_status_of(case, 1) is P
    assert turn_status_of(case, 1, "m3") is N and turn_status_of(case, 2) is N


def test_a_metric_went_wrong_unless_it_passed_or_is_an_efficiency_metric() -> None:
    assert not _metric("tool_trajectory_avg_score", P, 1.0).went_wrong
    assert _metric("tool_trajectory_avg_score", F, 0.0).went_wrong
    assert _metric("hallucinations_v1", N, None, reason="no judge credentials").went_wrong
    # ADK's efficiency metrics are summed up in one line; CES's informational checks are listed.
    assert not _metric("token_usage_v1", I, 812.0).went_wrong
    assert _metric("ces_tool_ordered_invocation", I, 1.0).went_wrong


def _run() -> tuple[SharedRun, CaseResult]:
    case = CaseResult(eval_set_id="dice", eval_id="roll", status=F, metrics=[
        _metric("ces_parameter_correctness", F, 0.0, reason="turn 1: roll_die parameters 0.00 < 1"),
        _metric("ces_tool_ordered_invocation", I, 1.0),
        _metric("token_usage_v1", I, 812.0),
        _metric("response_match_score", P, 0.9, threshold=0.8),
    ])
    result = EvalSetResult(eval_set_result_id="r", eval_set_id="dice", creation_timestamp=0.0, case_results=[case])
    return SharedRun("r", [result], [1]), case


def test_the_markdown_and_html_reports_word_a_verdict_as_the_cli_summary_does() -> None:
    run, case = _run()
    summary = "\n".join(case_lines(case, case.eval_id))
    page = render_markdown(run)
    html = render_html(run)
    failed = "ces_parameter_correctness: 0.000 < 1 FAILED (turn 1: roll_die parameters 0.00 < 1)"
    informational = "ces_tool_ordered_invocation: 1.000 (informational)"
    for line in (failed, informational):
        assert line in summary
        assert html_escape(line) in html
    assert "- ces\\_parameter\\_correctness: 0.000 \\< 1 FAILED (turn 1: roll\\_die parameters 0.00 \\< 1)" in page
    assert "- ces\\_tool\\_ordered\\_invocation: 1.000 (informational)" in page
    # What passed, and ADK's efficiency metrics, are no failure anywhere.
    for text in (summary, page, html):
        assert "token_usage_v1" not in text.replace("\\_", "_") and "response_match" not in text.replace("\\_", "_")


def test_run_progress_counts_cases_by_evalstatus() -> None:
    state = RunState("Run all")
    state.set_counts(3, 3, {1: 1, 2: 2})
    counts = state.drain().counts
    assert list(counts) == [P, F, N] and all(type(k) is EvalStatus for k in counts)
    assert counts == {P: 1, F: 2, N: 0}
