"""tui/readmodel.py: the dashboard's one inbound queue of records and its fold, without a screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tui_eval.engine import events as ev
from tui_eval.engine import feed
from tui_eval.engine.events import CaseKey, CasesRemoved
from tui_eval.engine.workspace import Workspace
from tui_eval.schema.model import Content, Invocation, Part
from tui_eval.schema.results import CaseResult, EvalStatus, InvocationMetricResult, MetricResult
from tui_eval.tui import readmodel
from tui_eval.tui.listing import CaseListing
from tui_eval.tui.loader import FolderLoader, LoadDone, Notice, ResultLoaded
from tui_eval.tui.readmodel import SESSION, Changes, Inbound, ReadModel

P, F, N = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
FILE = "/f/a.evalset.json"


def result(eval_id: str, status: EvalStatus, turn_statuses: tuple[EvalStatus, ...] = (P,),
           score: float = 1.0) -> CaseResult:
    turns = [Invocation(user_content=Content(role="user", parts=[Part(text=f"q{i}")])) for i in range(len(turn_statuses))]
    metric = MetricResult(metric_name="m", threshold=0.5, score=score, status=status,
                          per_invocation=[InvocationMetricResult(score=score, status=s) for s in turn_statuses])
    return CaseResult(eval_set_id="s", eval_id=eval_id, status=status, metrics=[metric], actual=turns)


#: What the engine holds: every finished case's full result, by (case, repetition).
ENGINE: dict[feed.Wanted, CaseResult] = {}


def done(eval_id: str, status: EvalStatus, repetition: int = 1, **kw: Any) -> feed.CaseDone:
    r = result(eval_id, status, **kw)
    ENGINE[(CaseKey(FILE, eval_id), repetition)] = r
    return feed.CaseDone(CaseKey(FILE, eval_id), feed.summarize(r), repetition)


def model() -> tuple[ReadModel, list[str]]:
    listing = CaseListing(Path("/f"), workspace=Workspace(Path("/f")))
    listing.clock = lambda: 1000.0
    m = ReadModel(listing)
    cancels: list[str] = []
    m.cancel_engine = lambda: cancels.append("cancel")
    return m, cancels


def test_a_requested_run_streams_into_the_catalog_and_its_state() -> None:
    m, _ = model()
    state = m.new_run("Run all")
    assert state is not None and m.busy and m.new_run("again") is None  # one run at a time
    m.inbox.put_many([feed.RunBegan("Run all"), ev.RunStarted("r1", 3, {"m": 3}), ev.CaseStarted(CaseKey(FILE, "a"))])
    changes = m.pull(None)
    assert changes.new_run and changes.phase and changes.run is not None and changes.run.phase == "running"
    assert CaseKey(FILE, "a") in changes.dirty and m.listing.running == {CaseKey(FILE, "a")}
    m.inbox.put_many([done("a", P), done("b", F, turn_statuses=(P, F), score=0.2), done("c", P),
                      feed.MetricsScored({"m": 3}), ev.CasesStopped("r1", 3), ev.RunFinished("r1", {}, saved=("h.json",)),
                      feed.RunEnded(state.ticket)])
    changes = m.pull(None)
    snap = changes.run
    assert snap is not None and snap.phase == "finished" and snap.cases_done == 3
    assert snap.counts == {1: 2, 2: 1, 3: 0} and snap.metric_done == {"m": 3} and snap.metric_evaluated == {"m": 3}
    assert changes.dirty == {CaseKey(FILE, i) for i in "abc"} and m.listing.running == set()
    results = m.listing.results
    b = CaseKey(FILE, "b")
    assert results.status(b) == 2 and results.score(b) == 0.2 and results.origin(b) == SESSION
    assert results.turn_status(b, 0) == 1 and results.turn_status(b, 1) == 2 and results.turn_status(b, 5) == 3
    assert changes.timeline and m.listing.run_book.timeline[0].ran == 3
    assert m.listing.run_book.saved[b] == ("h.json",)
    assert not m.busy


def test_finished_cases_are_stored_a_slice_at_a_time_while_the_counts_are_whole_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readmodel, "FOLD_CHUNK", 10)
    m, _ = model()
    state = m.new_run("Run all")
    assert state is not None
    records: list[Inbound] = [feed.RunBegan("Run all"), ev.RunStarted("r1", 35, {})]
    m.inbox.put_many(records + [done(f"c{i:02d}", P) for i in range(35)] + [feed.RunEnded(state.ticket)])
    first = m.pull(0.0)  # no time to spare: one slice
    assert first.run is not None and first.run.cases_done == 35 and first.run.phase == "finished"
    assert len(m.listing.results) == 10 and m.backlog == 25
    assert not first.timeline  # the timeline entry waits for every case
    stored = [len(m.listing.results)]
    while m.backlog:
        changes = m.pull(0.0)
        stored.append(len(m.listing.results))
        assert len(changes.dirty) == 10 or not m.backlog
    assert stored == [10, 20, 30, 35]
    assert changes.timeline and m.listing.run_book.timeline[0].ran == 35
    assert sorted(k.eval_id for k in m.listing.results.keys()) == [f"c{i:02d}" for i in range(35)]


def _answer(m: ReadModel, wanted: list[feed.Wanted], held: dict[feed.Wanted, CaseResult] | None = None) -> Changes:
    """The engine's answer to a fetch arriving, as it does: a Fetched record among the others."""
    held = ENGINE if held is None else held
    m.inbox.put_many([feed.Fetched(0, tuple((w, feed.pack(held[w]) if w in held else None) for w in wanted))])
    return m.pull(None)


def test_a_full_result_is_asked_for_only_when_something_reads_it_arrives_as_a_record_and_is_kept() -> None:
    asked: list[list[feed.Wanted]] = []
    m, _ = model()
    m.set_fetcher(lambda wanted: asked.append(list(wanted)))
    state = m.new_run("Run all")
    assert state is not None
    records: list[Inbound] = [feed.RunBegan("Run all")]
    m.inbox.put_many(records + [done(f"c{i}", F if i % 2 else P) for i in range(200)] + [feed.RunEnded(state.ticket)])
    m.pull(None)
    cat = m.listing
    assert sum(cat.results.status(CaseKey(FILE, f"c{i}")) == 2 for i in range(200)) == 100
    assert cat.results.metric_names() == ["m"]
    assert cat.case_score(CaseKey(FILE, "c1")) == 1.0 and cat.score_text(CaseKey(FILE, "c1")) == "1.00"
    assert asked == []  # statuses, scores, counts, sorting and the run book never ask for a result
    key = CaseKey(FILE, "c3")
    # Reading it asks and returns at once: nothing that draws waits for the engine.
    assert cat.result(key) is None and cat.results.loading(key) and cat.results.waiting
    assert cat.result(key) is None and asked == [[(key, 1)]]  # asked once, not at every read
    changes = _answer(m, [(key, 1)])
    assert key in changes.dirty  # the views showing it redraw
    full = cat.result(key)
    assert full is not None and full.eval_id == "c3" and full.status == F and not cat.results.waiting
    assert cat.result(key) is full and len(asked) == 1  # kept
    keys = [CaseKey(FILE, f"c{i}") for i in range(5)] + [CaseKey(FILE, "never-ran")]
    assert [k.eval_id for k in cat.results.get_many(keys)] == ["c3"]  # what is at hand; the rest asked for
    assert len(asked) == 2 and len(asked[1]) == 4  # one round trip for the rest
    _answer(m, asked[1])
    assert sorted(k.eval_id for k in cat.results.get_many(keys)) == ["c0", "c1", "c2", "c3", "c4"]


def _one_held_failure() -> tuple[ReadModel, CaseKey]:
    """A read model after a run whose one case failed: its summary here, its full result in the engine."""
    m, _ = model()
    m.set_fetcher(lambda wanted: None)
    state = m.new_run("Run")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("Run"), done("a", F), feed.RunEnded(state.ticket)])
    m.pull(None)
    return m, CaseKey(FILE, "a")


def test_a_result_the_engine_no_longer_holds_reads_as_none_not_loading() -> None:
    m, key = _one_held_failure()
    assert m.listing.results.status(key) == 2  # the summary is there
    assert m.listing.result(key) is None and m.listing.results.loading(key)
    _answer(m, [(key, 1)], held={})  # the engine holds it no more
    assert m.listing.result(key) is None and not m.listing.results.loading(key)
    assert m.listing.results.status(key) == 2  # the summary still says what it was


def test_the_engine_going_away_ends_every_loading() -> None:
    m, key = _one_held_failure()
    assert m.listing.result(key) is None and m.listing.results.loading(key)
    m.inbox.put_many([feed.EngineGone("the engine process was killed by SIGKILL")])
    m.pull(None)
    assert not m.listing.results.loading(key)


def test_repetitions_are_asked_for_each_and_flakiness_reads_only_summaries() -> None:
    asked: list[feed.Wanted] = []
    m, _ = model()
    m.listing.run_book.num_runs = 3
    m.set_fetcher(lambda wanted: asked.extend(wanted))
    state = m.new_run("Run x3")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("Run x3"), done("a", P, 1), done("a", F, 2), done("a", P, 3),
                      feed.RunEnded(state.ticket)])
    m.pull(None)
    key = CaseKey(FILE, "a")
    assert m.listing.flaky(key) == (2, 3) and asked == []
    assert m.listing.run_book.runs_of(key) == [None, None, None]  # on their way
    assert sorted(asked) == [(key, 1), (key, 2), (key, 3)]
    _answer(m, list(asked))
    runs = m.listing.run_book.runs_of(key)
    assert [r.status if r is not None else None for r in runs] == [P, F, P]
    assert len(asked) == 3


def test_cancel_asks_the_engine_and_the_run_ends_cancelled() -> None:
    m, cancels = model()
    state = m.new_run("Run all")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("Run all"), ev.RunStarted("r1", 5, {}), done("a", P)])
    m.pull(None)
    m.cancel()
    assert cancels == ["cancel"] and state.phase == "cancelling"
    m.inbox.put_many([ev.CasesStopped("r1", 1, cancelled=True)])
    snap = m.pull(None).run
    assert snap is not None and snap.saving == 1  # nothing runs any more; the finished case saves
    m.inbox.put(feed.RunEnded(state.ticket))
    assert m.pull(None).run.phase == "cancelled"  # type: ignore[union-attr]


def test_a_live_rerun_gets_a_state_of_its_own_and_ends_with_its_run() -> None:
    m, cancels = model()
    m.inbox.put_many([feed.RunBegan("a.evalset.json: c1"), done("c1", F), feed.RunOver("a.evalset.json: c1")])
    changes = m.pull(None)
    assert changes.new_run and m.current is not None and m.current.label == "a.evalset.json: c1"
    assert m.current.phase == "finished" and m.listing.results.status(CaseKey(FILE, "c1")) == 2
    m.inbox.put(feed.RunBegan("config", rescore=True))
    m.pull(None)
    assert m.current.label == "re-score: config" and m.busy
    m.cancel()
    assert cancels == ["cancel"]


def test_saved_results_never_replace_this_sessions_and_removed_cases_drop() -> None:
    m, _ = model()
    state = m.new_run("r")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("r"), done("a", P), feed.RunEnded(state.ticket)])
    m.pull(None)
    old = result("a", F)
    for eval_id in ("a", "b"):
        r = result(eval_id, F)
        m.inbox.put(ResultLoaded(CaseKey(FILE, eval_id), feed.summarize(r, insight=False), old if eval_id == "a" else r,
                                 "saved 2026-01-01 00:00", 500.0))
    m.inbox.put_many([LoadDone(), Notice("could not read x.json", "warning")])
    changes = m.pull(None)
    assert changes.loaded and not m.loading and m.listing.loaded
    assert changes.messages == [("could not read x.json", "warning")]
    results = m.listing.results
    assert results.origin(CaseKey(FILE, "a")) == SESSION and results.status(CaseKey(FILE, "a")) == 1
    assert results.origin_text(CaseKey(FILE, "b"), 1000.0, short=True) == "saved 8min ago"
    m.inbox.put(CasesRemoved((CaseKey(FILE, "b"),)))
    changes = m.pull(None)
    assert CaseKey(FILE, "b") in changes.dirty and results.summary(CaseKey(FILE, "b")) is None


def test_the_engine_going_away_fails_the_run_and_says_why() -> None:
    m, _ = model()
    state = m.new_run("r")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("r"), done("a", P), feed.EngineGone("the engine process was killed by SIGKILL")])
    changes = m.pull(None)
    assert state.phase == "failed" and "SIGKILL" in state.errors[-1]
    assert changes.messages and changes.messages[0][1] == "error" and not m.engine_ready
    assert m.listing.results.status(CaseKey(FILE, "a")) == 1  # what finished stays


def test_files_the_loader_reads_reach_the_catalog_and_the_engines_reloads_are_asked_for(tmp_path: Path) -> None:
    from tests.support.evalfiles import case, turn, write_set

    path = write_set(tmp_path / "a.evalset.json", "a", case("c1", turn("hi", "yo")), case("c2", turn("hey", "yo")))
    listing = CaseListing(tmp_path)
    m = ReadModel(listing)
    loader = FolderLoader(tmp_path, None, m.inbox.put)
    loader.load_all()
    changes = m.pull(None)
    resolved = path.resolve()
    assert changes.files.added == [resolved] and changes.loaded
    assert [c.eval_id for c in listing.cases(resolved)] == ["c1", "c2"]
    assert listing.case(listing.key(resolved, "c2")) is not None
    # The engine re-read the file: the app reloads the dashboard's copy, which then redraws its cases.
    m.inbox.put(feed.FilesChanged((str(resolved),)))
    assert m.pull(None).reload == [resolved]
    write_set(path, "a", case("c1", turn("hi", "yo")))
    loader.reload(resolved)
    changes = m.pull(None)
    assert changes.files.reloaded == [resolved] and listing.case(listing.key(resolved, "c2")) is None
    assert listing.key(resolved, "c1") in changes.dirty


def test_a_batch_of_finished_cases_folds_as_its_cases_one_by_one_would() -> None:
    one, _ = model()
    batch, _ = model()
    records = [done("a", P), done("b", F, turn_statuses=(P, F), score=0.2), done("c", N, score=0.0)]
    for m, finished in ((one, records), (batch, [feed.cases_done(records)])):
        state = m.new_run("Run")
        assert state is not None
        m.inbox.put_many([feed.RunBegan("Run"), ev.RunStarted("r", 3, {"m": 3}), *finished,
                          feed.MetricsScored({"m": 3}), feed.RunEnded(state.ticket)])
        m.pull(None)
    for m in (one, batch):
        snap = m.current.drain() if m.current is not None else None
        assert snap is not None and snap.cases_done == 3 and snap.counts[1] == 1 and snap.counts[2] == 1
        assert snap.metric_evaluated == {"m": 2}  # c was not evaluated
    for eval_id in "abc":
        key = CaseKey(FILE, eval_id)
        assert batch.listing.results.summary(key) == one.listing.results.summary(key)
        assert batch.listing.results.origin(key) == SESSION
    assert batch.listing.results.turn_status(CaseKey(FILE, "b"), 1) == 2


def test_the_engine_sends_a_batch_s_finished_cases_as_one_record_and_drops_starts_they_overtook() -> None:
    from tui_eval.engine.feed import EngineConfig
    from tui_eval.engine.service import EngineService

    sent: list[list[object]] = []
    service = EngineService(EngineConfig("/f", None, None, None, 1, False, False, False), sent.append)
    a, b, c = (CaseKey(FILE, i) for i in "abc")
    service.put(feed.CaseBegun(a))  # told in a batch of its own
    service.flush()
    for record in (feed.CaseBegun(b), done("a", P), done("b", F), feed.CaseBegun(c), feed.CaseBegun(a)):
        service.put(record)
    service.flush()
    assert sent[0] == [feed.CaseBegun(a)]
    second = sent[1]
    assert [type(r).__name__ for r in second] == ["CasesDone", "CaseBegun", "CaseBegun"]
    folded = second[0]
    assert isinstance(folded, feed.CasesDone)
    assert folded.keys == ((FILE, "a"), (FILE, "b")) and folded.ended == (a,)  # b's start was never told
    assert folded.counts == {1: 1, 2: 1} and folded.repetitions == (1, 1)
    assert [r.key if isinstance(r, feed.CaseBegun) else None for r in second[1:]] == [c, a]  # a started again: still told
    assert feed.summary_of(folded.summaries[1]) == feed.summarize(ENGINE[(b, 1)])


def test_a_case_finishing_several_times_in_one_slice_counts_once_in_its_file() -> None:
    m, _ = model()
    path = Path(FILE)
    m.listing.workspace = None
    state = m.new_run("Run x3")
    assert state is not None
    from tui_eval.engine.workspace import EvalFileState
    from tui_eval.schema.model import EvalCase, EvalSet

    ws = Workspace(Path("/f"))
    ws.eval_files[path] = EvalFileState(path, eval_set=EvalSet(eval_set_id="s", eval_cases=[
        EvalCase(eval_id="a", conversation=[]), EvalCase(eval_id="b", conversation=[])]))
    m.listing.workspace = ws
    assert m.listing.counts(path)[None] == 2  # counted (and cached) before the run
    m.inbox.put_many([feed.RunBegan("Run x3"), feed.cases_done([done("a", P, 1), done("a", F, 2), done("a", P, 3),
                                                                done("b", F, 1)]), feed.RunEnded(state.ticket)])
    m.pull(None)
    counts = m.listing.counts(path)
    assert counts[P] == 1 and counts[F] == 1 and counts[None] == 0


def test_cases_stored_between_pulls_are_told_at_the_next_pull(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readmodel, "FOLD_CHUNK", 10)
    m, _ = model()
    state = m.new_run("Run")
    assert state is not None
    m.inbox.put_many([feed.RunBegan("Run"), feed.cases_done([done(f"c{i:02d}", P) for i in range(30)])])
    first = m.pull(0.0)  # one slice
    assert len(first.dirty) == 10 and m.backlog == 20
    m.store(0.0)  # between pulls: one more slice, told at the next pull
    assert m.backlog == 10 and len(m.listing.results) == 20
    second = m.pull(None)
    assert second.dirty == {CaseKey(FILE, f"c{i:02d}") for i in range(10, 30)} and m.backlog == 0
