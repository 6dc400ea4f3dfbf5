"""engine/trends.py: pass rate per run, a case's scores and statuses over saved runs, one case's usage and tool latency."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.support.flaky_agent import flaky_folder
from tui_eval.cli import main
from tui_eval.engine.store import HistoryEntry, list_history
from tui_eval.engine.trends import (
    case_series,
    case_status_series,
    case_tool_latency,
    case_usage,
    load_run_scores,
    pass_rate_series,
    run_points,
)
from tui_eval.schema.model import (
    Content,
    FunctionResponse,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
    ToolTiming,
)
from tui_eval.schema.results import CaseResult, EvalStatus

P, F = EvalStatus.PASSED, EvalStatus.FAILED


def _entry(run_id: str, ts: float, passed: int, failed: int, coverage: str | None = "all",
           eval_set_id: str = "s", duration: float = 1.0) -> HistoryEntry:
    return HistoryEntry(path=Path(f"/nowhere/{run_id}-{ts}.tui-eval.json"), run_id=run_id, eval_set_id=eval_set_id,
                        eval_file="s.evalset.json", creation_timestamp=ts,
                        counts={"PASSED": passed, "FAILED": failed, "NOT_EVALUATED": 0}, cancelled=False,
                        coverage=coverage, duration=duration)


def test_run_points_add_up_repetitions_and_sort_oldest_first() -> None:
    entries = [_entry("b", 20.0, 1, 1), _entry("a", 10.0, 3, 1), _entry("b", 20.0, 2, 0, duration=3.0),
               _entry("x", 5.0, 1, 0, eval_set_id="other")]
    points = run_points(entries, "s")
    assert [p.run_id for p in points] == ["a", "b"]
    assert (points[1].passed, points[1].failed, points[1].duration) == (3, 1, 3.0)
    assert pass_rate_series(points) == [0.75, 0.75]


def test_pass_rate_leaves_out_partial_runs() -> None:
    entries = [_entry("a", 1.0, 1, 1), _entry("b", 2.0, 0, 3, coverage="failures"),
               _entry("c", 3.0, 1, 0, coverage="selection"), _entry("d", 4.0, 0, 1, coverage="cancelled"),
               _entry("e", 5.0, 2, 0, coverage=None)]
    assert pass_rate_series(run_points(entries, "s")) == [0.5, 1.0]


@pytest.fixture
def flaky_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two saved runs of the flaky agent: one with --num-runs 4, then a single run."""
    folder = flaky_folder(tmp_path)
    eval_file = folder / "flaky.evalset.json"
    for extra in (["--num-runs", "4"], []):
        out, err = io.StringIO(), io.StringIO()
        code = main(["run", str(folder), str(eval_file), "--concurrency", "1", *extra], out, err)
        assert code == 1, out.getvalue() + err.getvalue()
    return folder / ".adk" / "eval_history"


def test_case_series_over_saved_runs(flaky_history: Path) -> None:
    entries = list_history(flaky_history)
    runs = load_run_scores(entries, "flaky")
    assert len(runs) == 2
    # Run 1 (4 repetitions, one agent process: heads, tails, heads, tails); run 2 starts the agent afresh.
    assert case_status_series(runs, "flip") == [P, F, P, F, P]
    assert case_status_series(runs, "steady") == [P] * 5
    # ROUGE-1 F of "heads" vs "heads" is 1, of "tails" 0: the mean over run 1's repetitions is 0.5.
    assert case_series(runs, "flip")["response_match_score"] == [0.5, 1.0]
    # "wrong answer" vs "the right answer": precision 1/2, recall 1/3, F 0.4.
    assert case_series(runs, "broken")["response_match_score"] == pytest.approx([0.4, 0.4])
    assert case_series(runs, "no such case") == {}
    assert len(load_run_scores(entries, "flaky", limit=1)) == 1
    # A byte budget keeps the newest record and drops older ones once spent.
    (newest,) = load_run_scores(entries, "flaky", max_bytes=1)
    assert newest.run_id == runs[1].run_id and case_status_series([newest], "flip") == [P]


def _invocation() -> Invocation:
    usage = {"prompt_token_count": 100, "candidates_token_count": 20, "cached_content_token_count": 10,
             "total_token_count": 120}
    events = [InvocationEvent(author="a", model_version="m1", usage_metadata=usage),
              InvocationEvent(author="a", model_version="m1", usage_metadata=usage),
              InvocationEvent(author="a", content=Content(role="user", parts=[
                  Part(function_response=FunctionResponse(name="t", response={"error": "x"}, id="2"))]))]
    return Invocation(user_content=Content(role="user", parts=[Part(text="hi")]),
                      intermediate_data=InvocationEvents(invocation_events=events),
                      tool_timings=[ToolTiming(name="t", seconds=0.5, call_id="1"),
                                    ToolTiming(name="t", seconds=1.5, call_id="2"),
                                    ToolTiming(name="u", seconds=0.25)])


def test_case_usage_and_tool_latency() -> None:
    case = CaseResult(eval_set_id="s", eval_id="c", status=P, metrics=[], actual=[_invocation(), _invocation()])
    usage = case_usage(case)
    assert list(usage) == ["m1"]
    m1 = usage["m1"]
    assert (m1.prompt_tokens, m1.output_tokens, m1.cached_tokens, m1.total_tokens) == (400, 80, 40, 480)
    tools = {t.name: t for t in case_tool_latency(case)}
    assert (tools["t"].count, tools["t"].passed, tools["t"].failed) == (4, 2, 2)
    assert tools["t"].mean_seconds == pytest.approx(1.0) and tools["t"].p95_seconds == 1.5
    assert (tools["u"].count, tools["u"].failed) == (2, 0)
