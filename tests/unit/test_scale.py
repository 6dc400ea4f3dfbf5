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

from tests.support.evalfiles import case, turn, turns_of, write_set
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
from tui_eval.tui.progress import RunState
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


# ---- the dashboard's entry point owns its heap policy (issue 18) -------------------------------


def _dashboard_heap_in_a_fresh_process(tmp_path: Path) -> dict[str, int]:
    """`tui-eval FOLDER` up to the moment the app would run (its run() stubbed), in a child process:
    whether the GC is on when the app starts, and what the app's `on_loaded` hook then does."""
    write_set(tmp_path / "a.evalset.json", "a", case("c1", turn("hi", "yo")))
    script = textwrap.dedent(f"""
        import gc, json
        import tui_eval.cli as cli
        from tui_eval.tui import app as app_module
        seen = {{}}

        def run(self, **kw):
            seen["at_run"] = int(gc.isenabled())
            keep = [[i] for i in range(1000)]  # the loaded folder
            self.on_loaded()
            seen["after_loaded"] = int(gc.isenabled())
            seen["frozen"] = gc.get_freeze_count()
            seen["threshold_ok"] = int(gc.get_threshold() == app_module.UI_GC_THRESHOLD)

        app_module.EvalApp.run = run
        cli.main([{str(tmp_path)!r}])
        print(json.dumps(seen))
    """)
    home = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}  # log, keymap
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **home})
    return json.loads(out.stdout)


def test_the_dashboard_loads_without_the_gc_then_freezes_what_it_loaded(tmp_path: Path) -> None:
    done = _dashboard_heap_in_a_fresh_process(tmp_path)
    assert done["at_run"] == 0
    assert done["after_loaded"] == 1 and done["frozen"] > 1000 and done["threshold_ok"] == 1


def test_the_engine_process_settles_its_heap_once_the_folder_is_loaded() -> None:
    script = textwrap.dedent("""
        import gc, json
        from tui_eval.engine import service
        gc.disable()
        keep = [[i] for i in range(1000)]
        service.settle_heap()
        print(json.dumps({"enabled": int(gc.isenabled()), "frozen": gc.get_freeze_count(),
                          "threshold_ok": int(gc.get_threshold() == service.ENGINE_GC_THRESHOLD)}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    done = json.loads(out.stdout)
    assert done["enabled"] == 1 and done["threshold_ok"] == 1 and done["frozen"] > 1000


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


# ---- the case index is built by the loader, not by the UI's first fold -------------------------


def test_the_loader_indexes_every_loaded_file_and_a_reload_is_indexed_again(tmp_path: Path) -> None:
    from tui_eval.tui.listing import CaseListing
    from tui_eval.tui.loader import FolderLoader
    from tui_eval.tui.readmodel import ReadModel

    path = _cases(tmp_path, 5)
    listing = CaseListing(tmp_path)
    model = ReadModel(listing)
    # On the loader's thread (the dashboard's folder loader): each file arrives with its case index.
    loader = FolderLoader(tmp_path, None, model.inbox.put)
    loader.load_all()
    model.pull(None)
    loaded = path.resolve()
    assert listing.workspace is not None
    cases = listing.workspace.eval_files[loaded].eval_set.eval_cases  # type: ignore[union-attr]
    assert listing._case_index[loaded][1] == {c.eval_id: c for c in cases}
    assert listing.case(listing.key(loaded, "c03")) is cases[3]
    # The file is rewritten with one case fewer: a new list, looked up afresh.
    write_set(path, "many", *[case(f"c{i:02d}", turn(f"q{i}", "other answer")) for i in range(4)])
    loader.reload(loaded)
    model.pull(None)
    assert listing.case(listing.key(loaded, "c04")) is None
    c03 = listing.case(listing.key(loaded, "c03"))
    assert c03 is not None
    answer = turns_of(c03)[0].final_response
    assert answer is not None and answer.parts is not None and answer.parts[0].text == "other answer"
