"""tui/runbook.py: repetitions, usage and latency of the run in progress, and the timeline's broke / fixed."""

from __future__ import annotations

from tui_eval.engine.events import CaseKey
from tui_eval.schema.model import Content, Invocation, InvocationEvent, InvocationEvents, Part, ToolTiming
from tui_eval.schema.results import CaseResult, EvalStatus
from tui_eval.tui.runbook import RunBook, flip

P, F, N = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED


def _result(eval_id: str, status: EvalStatus, tokens: int = 0, tool_seconds: float | None = None) -> CaseResult:
    events = [InvocationEvent(author="a", model_version="gemini-2.5-flash",
                              usage_metadata={"prompt_token_count": tokens, "candidates_token_count": 0})] if tokens else []
    inv = Invocation(user_content=Content(role="user", parts=[Part(text="q")]),
                     intermediate_data=InvocationEvents(invocation_events=events),
                     tool_timings=[ToolTiming(name="t", seconds=tool_seconds)] if tool_seconds is not None else [])
    return CaseResult(eval_set_id="s", eval_id=eval_id, status=status, metrics=[], actual=[inv])


def test_flip_reads_changes_as_history_compare_does() -> None:
    assert flip(1, 2) == "broke" and flip(2, 1) == "fixed"
    assert flip(None, 2) is None and flip(1, 1) is None and flip(2, 2) is None
    # No verdict on one side (a judge outage) neither broke nor fixed a case (issue 21, part 3).
    assert flip(1, 3) is None and flip(3, 2) is None and flip(3, 1) is None and flip(2, 3) is None


def test_repetitions_usage_latency_and_timeline() -> None:
    a, b, c = CaseKey("f", "a"), CaseKey("f", "b"), CaseKey("f", "c")
    old = {a: _result("a", P), b: _result("b", F)}
    book = RunBook(num_runs=2)
    book.start("agent x: agent.py")
    book.feed([(a, _result("a", F, 10, 0.5)), (c, _result("c", P, 5))], [1, 1], old.get)
    # The second repetition of a finishes: its "before" is still the result from before the run.
    book.feed([(a, _result("a", P, 10, 1.5)), (b, _result("b", P))], [2, 1], lambda k: _result("a", F))
    assert [r.status if r else None for r in book.runs_of(a)] == [F, P]
    assert [r.status if r else None for r in book.runs_of(b)] == [P, None]
    assert book.runs_of(CaseKey("f", "zzz")) == []
    tokens = book.total_tokens()
    assert tokens is not None and tokens.prompt_tokens == 25
    cost = book.cost()
    assert cost is not None and cost.known_usd > 0
    (tool,) = book.tool_latency()
    assert (tool.count, tool.mean_seconds, tool.p95_seconds) == (2, 1.0, 1.5)
    entry = book.finish("finished", now=100.0)
    assert entry is not None and entry.fixed == (b,) and entry.broke == () and entry.ran == 3
    assert entry.summary() == "1 fixed"
    assert book.finish("finished") is None  # once per run
    book.start("Run all")
    book.feed([(a, _result("a", F)), (b, _result("b", F))], [1, 1], {a: _result("a", P), b: _result("b", P)}.get)
    second = book.finish("finished", now=200.0)
    assert second is not None and second.summary() == "2 cases broke"
    assert [e.label for e in book.timeline] == ["Run all", "agent x: agent.py"]
    assert book.total_tokens() is None and book.runs_of(a)[0] is not None


def test_single_runs_keep_no_repetitions() -> None:
    key = CaseKey("f", "a")
    book = RunBook()
    book.start("Run")
    book.feed([(key, _result("a", P))], [1], lambda k: None)
    assert book.runs_of(key) == []


def test_tool_latency_is_recomputed_at_most_once_a_second_while_the_run_streams(monkeypatch) -> None:
    import tui_eval.tui.runbook as runbook

    clock = [0.0]
    monkeypatch.setattr(runbook.time, "perf_counter", lambda: clock[0])
    key = CaseKey("f", "a")
    book = RunBook()
    book.start("Run")
    book.feed([(key, _result("a", P, 5, 1.0))], [1], lambda k: None)
    assert book.tool_latency()[0].count == 1
    book.feed([(key, _result("a", P, 5, 3.0))], [1], lambda k: None)
    clock[0] = 0.5
    assert book.tool_latency()[0].count == 1  # asked again on the next tick: not sorted again yet
    clock[0] = 1.0
    assert book.tool_latency()[0].count == 2
    book.feed([(key, _result("a", P, 5, 2.0))], [1], lambda k: None)
    book.finish("finished", now=1.0)
    (tool,) = book.tool_latency()  # the run ended: its last calls count at once
    assert (tool.count, tool.p95_seconds) == (3, 3.0)


def test_a_turns_status_reads_any_result_under_the_metric_filter() -> None:
    # The turn view shows a repetition's result (k) with the same rule as the latest one's.
    from tui_eval.schema.results import InvocationMetricResult, MetricResult
    from tui_eval.tui.listing import turn_status_of

    def metric(name: str, status: EvalStatus) -> MetricResult:
        return MetricResult(metric_name=name, threshold=1.0, score=None, status=status,
                            per_invocation=[InvocationMetricResult(score=None, status=status)])

    result = _result("a", F).model_copy(update={"metrics": [metric("m1", F), metric("m2", P)]})
    assert turn_status_of(result, 0) == F
    assert turn_status_of(result, 0, "m2") == P
    assert turn_status_of(result, 0, "m3") == N  # metrics ran, none of the filtered one
    assert turn_status_of(result, 5) == N and turn_status_of(None, 0) is None


def test_the_dashboards_prices_are_read_once_before_any_run_costs_anything(tmp_path, monkeypatch) -> None:
    # The summary prices a saved case's tokens before any run of this session had a cost to show.
    import json

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": {"my-model": {"prompt": 1.0, "output": 2.0}}}))
    monkeypatch.setenv("TUI_EVAL_PRICES", str(prices))
    book = RunBook()
    table = book.price_table()
    assert table.lookup("my-model") is not None and table.lookup("my-model").output == 2.0  # type: ignore[union-attr]
    assert book.price_table() is table and book.prices is table
