"""The dashboard at scale (issue 9, item 15): a cancel is honoured before thousands of cases are saved,
the heap settles without a full collection on the UI thread, replay files load case by case."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.support.evalfiles import case, turn, write_set
from tui_eval.agents.base import Agent, AgentSession, CaseContext
from tui_eval.agents.replay import ReplayAgent
from tui_eval.engine.events import CaseFinished, CaseKey, CasesStopped, RunFinished, RunStarted
from tui_eval.engine.plan import plan_run
from tui_eval.engine.runner import Run, RunOptions
from tui_eval.engine.store import ResultStore
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import Content, EvalCase, Invocation
from tui_eval.schema.results import CaseResult, EvalStatus
from tui_eval.tui.state import RunState
from tui_eval.tui.widgets.run_panel import RunPanel

ROOT = Path(__file__).resolve().parents[2]


class SlowEcho(Agent):
    """Answers each turn with its expected response after a delay (a real Agent, no mock)."""

    def __init__(self, delay: float) -> None:
        self.name = "slow-echo"
        self.delay = delay

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        delay = self.delay

        class Session(AgentSession):
            async def turn(self, user_content: Content, index: int) -> Invocation:
                await asyncio.sleep(delay)
                expected = (case.conversation or [])[index]
                return Invocation(user_content=user_content, final_response=expected.final_response,
                                  intermediate_data=expected.intermediate_data)

        return Session()


def _cases(tmp_path: Path, n: int) -> Path:
    return write_set(tmp_path / "many.evalset.json", "many",
                     *[case(f"c{i:02d}", turn(f"q{i}", "same answer", [("f", {"i": i})])) for i in range(n)])


# ---- the engine says when its cases stop, before it saves them ---------------------------------


async def test_a_cancelled_run_says_its_cases_stopped_before_it_saves(tmp_path: Path) -> None:
    events: list[object] = []
    run = Run(plan_run([str(_cases(tmp_path, 20))]), SlowEcho(0.05), options=RunOptions(concurrency=2),
              store=ResultStore(tmp_path / "hist"), on_event=events.append)

    async def cancel_soon() -> None:
        while sum(isinstance(e, CaseFinished) for e in events) < 3:
            await asyncio.sleep(0.01)
        run.cancel()

    record, _ = await asyncio.gather(run.execute(), cancel_soon())
    kinds = [type(e) for e in events]
    [stopped] = [e for e in events if isinstance(e, CasesStopped)]
    # After the last finished case, before the end (whose `saved` names the files written).
    assert kinds.index(CasesStopped) > max(i for i, k in enumerate(kinds) if k is CaseFinished)
    assert kinds.index(CasesStopped) < kinds.index(RunFinished)
    assert stopped.cancelled and stopped.run_id == record.run_id
    assert stopped.finished == len(record.results[0].case_results) == kinds.count(CaseFinished)
    assert isinstance(events[-1], RunFinished) and events[-1].saved


class LoopBlocking(Agent):
    """Each turn blocks its event loop until `go` is set (as a CPU-bound replay holds the loop)."""

    def __init__(self, started: threading.Event, go: threading.Event) -> None:
        self.name = "loop-blocking"
        self.started, self.go = started, go

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        agent = self

        class Session(AgentSession):
            async def turn(self, user_content: Content, index: int) -> Invocation:
                agent.started.set()
                agent.go.wait(10)
                expected = (case.conversation or [])[index]
                return Invocation(user_content=user_content, final_response=expected.final_response,
                                  intermediate_data=expected.intermediate_data)

        return Session()


def test_a_stop_asked_from_another_thread_while_the_loop_is_busy_starts_no_further_case(tmp_path: Path) -> None:
    # The dashboard's `x`: a loop callback (`cancel`) waits until a worker yields, so the UI thread also
    # sets a flag the workers read between cases.
    started, go = threading.Event(), threading.Event()
    run = Run(plan_run([str(_cases(tmp_path, 20))]), LoopBlocking(started, go), options=RunOptions(concurrency=1),
              store=ResultStore(tmp_path / "hist"))
    records: list[object] = []
    worker = threading.Thread(target=lambda: records.append(asyncio.run(run.execute())))
    worker.start()
    assert started.wait(10)  # the first case holds the engine's loop
    run.request_stop()
    go.set()
    worker.join(30)
    [record] = records
    assert record.cancelled  # type: ignore[attr-defined]
    assert len(record.results[0].case_results) == 1  # type: ignore[attr-defined]


async def test_a_finished_run_says_so_too(tmp_path: Path) -> None:
    events: list[object] = []
    await Run(plan_run([str(_cases(tmp_path, 3))]), SlowEcho(0.0), on_event=events.append).execute()
    [stopped] = [e for e in events if isinstance(e, CasesStopped)]
    assert stopped.finished == 3 and not stopped.cancelled


# ---- the run panel: `x` is honoured at once, saving is shown -----------------------------------


def _finished(key: CaseKey) -> CaseFinished:
    result = CaseResult(eval_set_id="s", eval_id=key.eval_id, status=EvalStatus.PASSED, metrics=[], actual=[])
    return CaseFinished(key, result)


def _status(state: RunState) -> str:
    return str(RunPanel._status_line(state.drain()))


def test_the_panel_says_cancelled_once_no_case_runs_while_the_finished_ones_save() -> None:
    state = RunState("run all")
    state.apply(RunStarted("r1", 10, {"m": 10}))
    for i in range(3):
        state.apply(_finished(CaseKey("f.evalset.json", f"c{i}")))
    state.cancel()
    assert "cancelling" in _status(state)
    state.apply(CasesStopped("r1", 3, cancelled=True))
    snap = state.drain()
    assert snap.saving == 3
    line = str(RunPanel._status_line(snap))
    assert "cancelled · saving 3 cases…" in line and "x cancels" not in line
    # Still busy: no new run starts before the finished cases are saved.
    assert state.active
    state.apply(RunFinished("r1", {}, cancelled=True, saved=("h.json",)))
    state.finish("cancelled")
    snap = state.drain()
    assert snap.saving is None and snap.saved == ["h.json"]
    assert "saving" not in str(RunPanel._status_line(snap))


def test_saving_is_shown_only_once_every_engine_run_of_the_state_stopped() -> None:
    state = RunState("run all")  # one engine run per agent feeds one state
    state.apply(RunStarted("a", 2, {}))
    state.apply(RunStarted("b", 5, {}))
    state.apply(CasesStopped("a", 2))
    assert state.drain().saving is None
    line = _status(state)
    assert "saving" not in line and "x cancels" in line
    state.apply(CasesStopped("b", 5))
    assert state.drain().saving == 7
    assert "running · saving 7 cases…" in _status(state)


# ---- the heap settles without a full collection on the UI thread -------------------------------


def _settle_in_a_fresh_process(young: int) -> dict[str, int]:
    """Run the dashboard's GC policy in a child process (it changes process-wide GC state) after
    `young` objects were made with the GC off, as a run makes them; report what it did."""
    script = textwrap.dedent(f"""
        import gc, json
        from tui_eval.tui.app import _gc_policy
        _gc_policy("run")
        keep = [[i] for i in range({young})]
        collections = []
        gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "start" else None)
        _gc_policy("settled")
        print(json.dumps({{"full": collections.count(2), "frozen": gc.get_freeze_count(),
                          "enabled": int(gc.isenabled())}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def test_a_big_settled_heap_is_frozen_without_a_full_collection() -> None:
    from tui_eval.tui.app import COLLECT_AT_MOST

    done = _settle_in_a_fresh_process(COLLECT_AT_MOST + 100_000)
    assert done["full"] == 0
    assert done["frozen"] > COLLECT_AT_MOST and done["enabled"] == 1


def test_a_small_settled_heap_is_collected_then_frozen() -> None:
    done = _settle_in_a_fresh_process(1_000)
    assert done["full"] == 1 and done["frozen"] > 1_000 and done["enabled"] == 1


def _dashboard_start_in_a_fresh_process(tmp_path: Path, env: dict[str, str]) -> dict[str, int]:
    """`tui-eval FOLDER` up to the moment the app would run (its run() stubbed), in a child process:
    how many collections ran while the dashboard's modules were imported, and whether the GC was on
    when the app started."""
    write_set(tmp_path / "a.evalset.json", "a", case("c1", turn("hi", "yo")))
    script = textwrap.dedent(f"""
        import builtins, gc, json, sys
        import tui_eval.cli as cli
        collections = []
        gc.callbacks.append(lambda phase, info: collections.append(1) if phase == "start" else None)
        seen = {{}}
        real_import = builtins.__import__

        def spy(name, globals=None, locals=None, fromlist=(), level=0):
            app = sys.modules.get("tui_eval.tui.app")
            if app is not None:
                seen.setdefault("start", len(collections))  # its first import statement
            module = real_import(name, globals, locals, fromlist, level)
            app = sys.modules.get("tui_eval.tui.app")
            if app is not None and hasattr(app, "run_app") and "end" not in seen:  # all of it imported
                seen["end"] = len(collections)
                app.EvalApp.run = lambda self, **kw: seen.__setitem__("at_run", int(gc.isenabled()))
            return module

        builtins.__import__ = spy
        cli.main([{str(tmp_path)!r}])
        print(json.dumps({{"during_import": seen["end"] - seen["start"], "enabled": seen["at_run"]}}))
    """)
    home = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}  # log, keymap
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **home, **env})
    return json.loads(out.stdout)


def test_no_collection_runs_while_the_dashboard_imports(tmp_path: Path) -> None:
    done = _dashboard_start_in_a_fresh_process(tmp_path, {})
    assert done["during_import"] == 0
    assert done["enabled"] == 0  # the app's own policy: off until the loaded folder settles


def test_without_the_gc_policy_the_dashboard_runs_with_the_gc_on(tmp_path: Path) -> None:
    done = _dashboard_start_in_a_fresh_process(tmp_path, {"TUI_EVAL_NOGC": "1"})
    assert done["enabled"] == 1


# ---- replay files: case by case, with the full loader's errors ---------------------------------


def test_replay_loads_every_case_as_the_full_loader_does(tmp_path: Path) -> None:
    path = _cases(tmp_path, 30)
    agent = ReplayAgent(path)
    expected = load_eval_set(path).eval_cases
    assert sorted(agent._cases) == sorted(c.eval_id for c in expected)
    assert all(agent._cases[c.eval_id] == c for c in expected)


def _faulty(tmp_path: Path, name: str) -> Path:
    good = case("a", turn("q", "r", [("f", {})]))
    path = tmp_path / f"{name}.evalset.json"
    if name == "invalid_case":
        bad = case("b", turn("q", "r"))
        bad["conversation"][0]["user_content"] = "not content"
        data: object = {"eval_set_id": "s", "eval_cases": [good, bad]}
    elif name == "duplicate_ids":
        data = {"eval_set_id": "s", "eval_cases": [good, good]}
    elif name == "no_set_id":
        data = {"eval_cases": [good]}
    elif name == "cases_not_a_list":
        data = {"eval_set_id": "s", "eval_cases": {"a": good}}
    else:
        path.write_text('{"eval_set_id": "s", "eval_cases": [')
        return path
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("name", ["invalid_case", "duplicate_ids", "no_set_id", "cases_not_a_list", "bad_json"])
def test_a_faulty_replay_file_reports_what_the_full_loader_reports(tmp_path: Path, name: str) -> None:
    path = _faulty(tmp_path, name)
    with pytest.raises(LoadError) as full:
        load_eval_set(path)
    with pytest.raises(LoadError) as replay:
        ReplayAgent(path)
    assert str(replay.value) == str(full.value) and str(path) in str(replay.value)


def test_replay_files_the_fast_path_leaves_to_the_full_loader_still_load(tmp_path: Path) -> None:
    good = case("a", turn("q", "r", [("f", {})]))
    # An unknown top-level key (ADK ignores it; the full loader warns) and a legacy list file.
    extra = tmp_path / "extra.evalset.json"
    extra.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [good], "owner": "me"}))
    assert list(ReplayAgent(extra)._cases) == ["a"]
    legacy = tmp_path / "old.test.json"
    legacy.write_text(json.dumps([{"query": "hi", "expected_tool_use": [], "reference": "hello"}]))
    assert len(ReplayAgent(legacy)._cases) == len(load_eval_set(legacy).eval_cases) == 1


# ---- keys during a run: the engine thread pauses while the UI handles one ----------------------


def test_the_engine_waits_while_the_ui_holds_the_priority() -> None:
    import threading

    from tui_eval.tui.state import UiPriority

    priority = UiPriority()
    priority.MAX_PAUSE = 60.0  # the test must not race the cap
    passed = threading.Event()

    def engine() -> None:
        priority.wait()
        passed.set()

    priority.wait()  # free: returns at once
    priority.hold()
    assert priority.held
    thread = threading.Thread(target=engine)
    thread.start()
    assert not passed.wait(0.05)  # still held: the engine waits
    priority.release()
    thread.join(10)
    assert passed.is_set() and not priority.held


def test_a_hold_the_ui_never_releases_only_pauses_the_engine() -> None:
    from tui_eval.tui.state import UiPriority

    import threading

    priority = UiPriority()
    priority.MAX_PAUSE = 0.0
    priority.hold()
    engine = threading.Thread(target=priority.wait)  # the engine thread: returns, the cap is over
    engine.start()
    engine.join(10)
    assert not engine.is_alive() and priority.held


def test_the_thread_holding_the_priority_never_waits_for_itself() -> None:
    from tui_eval.tui.state import UiPriority

    priority = UiPriority()
    priority.MAX_PAUSE = 60.0
    priority.hold()
    priority.wait()  # returns at once: the holder delivering an event must not stall itself
    assert priority.held


# ---- a CPU-bound engine thread yields the GIL in slices ---------------------------------------


def _paced(events: list[float]) -> list[float]:
    """Feed engine events at the given clock times to a UiPriority (from a non-UI thread); the sleeps it took."""
    import threading

    from tui_eval.tui.state import UiPriority

    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(now[0])
        now[0] += seconds

    priority = UiPriority(clock=lambda: now[0], sleep=sleep)

    def engine() -> None:
        for at in events:
            now[0] = max(now[0], at)
            priority.wait()

    thread = threading.Thread(target=engine)
    thread.start()
    thread.join(10)
    return slept


def test_a_busy_engine_yields_the_gil_once_per_slice() -> None:
    from tui_eval.tui.state import UiPriority

    # An event every 0.2 ms for 50 ms of uninterrupted scoring.
    slept = _paced([i * 0.0002 for i in range(250)])
    assert len(slept) == pytest.approx(0.05 / (UiPriority.RUN_SLICE + UiPriority.YIELD_FOR), abs=1)
    gaps = [b - a for a, b in zip(slept, slept[1:])]
    assert all(UiPriority.RUN_SLICE <= gap < UiPriority.RUN_SLICE + 0.001 for gap in gaps)


def test_an_engine_that_waits_between_events_never_sleeps() -> None:
    # A paced run (an LLM, a timer): events 5 ms apart, far more than a slice in all, never in a row.
    assert _paced([i * 0.005 for i in range(200)]) == []


def test_the_ui_thread_never_sleeps_for_the_engine() -> None:
    from tui_eval.tui.state import UiPriority

    now = [0.0]
    slept: list[float] = []
    priority = UiPriority(clock=lambda: now[0], sleep=slept.append)
    for i in range(500):  # events the UI thread delivers itself, back to back
        now[0] = i * 0.0002
        priority.wait()
    assert slept == []


# ---- the case index is built by the loader, not by the UI's first fold -------------------------


def test_the_loader_indexes_every_loaded_file_and_a_reload_is_indexed_again(tmp_path: Path) -> None:
    from tui_eval.engine.workspace import Workspace
    from tui_eval.tui.catalog import Catalog
    from tui_eval.tui.loader import load_workspace

    path = _cases(tmp_path, 5)
    workspace = Workspace(tmp_path)
    load_workspace(workspace)
    catalog = Catalog(tmp_path, workspace=workspace)
    [loaded] = workspace.eval_files
    catalog.index_cases()  # on the loader's thread (EvalApp._load)
    cases = workspace.eval_files[loaded].eval_set.eval_cases  # type: ignore[union-attr]
    assert catalog._case_index[loaded][1] == {c.eval_id: c for c in cases}
    assert catalog.case(catalog.key(loaded, "c03")) is cases[3]
    # The file is rewritten with one case fewer: a new list, looked up afresh.
    write_set(path, "many", *[case(f"c{i:02d}", turn(f"q{i}", "other answer")) for i in range(4)])
    workspace.reload(loaded)
    assert catalog.case(catalog.key(loaded, "c04")) is None
    assert catalog.case(catalog.key(loaded, "c03")).conversation[0].final_response.parts[0].text == "other answer"  # type: ignore[union-attr]
