"""The dashboard's engine runs in a process of its own (issue 18, item 5): a run streams from it, `x`
cancels it, quitting during a run keeps the finished cases, and the engine never outlives the dashboard,
however the dashboard ends (quit, or SIGKILL)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

from tests.app.conftest import full_result, run_all_until, settle, slow_agent_folder, wait_until
from tests.support.evalfiles import case, turn, write_set


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped yet counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _history_cases(folder: Path) -> set[str]:
    """Every case id saved in the eval history below a folder."""
    found: set[str] = set()
    for path in folder.rglob("*.evalset_result.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data = json.loads(data) if isinstance(data, str) else data
        found.update(c["eval_id"] for c in data.get("eval_case_results", []))
    return found


async def test_a_run_streams_from_the_engine_process(tmp_path: Path, make_app) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=40, delay=0.5)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        engine = app.engine
        assert engine is not None and engine.pid is not None and engine.pid != os.getpid()
        # Cases reach the screen while the run goes on, a few at a time.
        await run_all_until(pilot)
        assert app.run_state.active and app.run_state.cases_done < 40
        assert "/40 cases" in str(app.main.query_one("#run-status").render())
        await settle(pilot)
        assert app.run_state.phase == "finished" and app.run_state.cases_done == 40
        assert len(app.listing.results) == 40
        # A result reached the dashboard packed; the summary pane parses it when it shows it.
        key = app.listing.key(root / "slow" / "slow.evalset.json", "case-03")
        assert app.listing.results.status(key) == 1
        assert app.listing.result(key) is None and app.listing.results.loading(key)  # asked for, on its way
        assert (await full_result(pilot, key)).eval_id == "case-03"


async def test_the_dashboard_never_waits_for_the_engine_it_shows_loading(tmp_path: Path, make_app) -> None:
    # The engine process stopped dead (SIGSTOP) after a run: keys still move and open screens at once, and
    # what the engine holds reads "loading" until it goes on (SIGCONT) and the result arrives.
    from tui_eval.tui.screens.turn import TurnScreen
    from tui_eval.tui.widgets.summary import Summary

    root = slow_agent_folder(tmp_path / "slowws", cases=3, delay=0.01)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert app.run_state.phase == "finished" and len(app.listing.results) == 3
        pid = app.engine.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            await pilot.press("down", "enter", "down")  # the eval set, open it, its first case
            await pilot.pause()
            summary = str(app.main.query_one(Summary).render())
            assert "loading this result from the engine" in summary, summary
            await pilot.press("enter", "down", "enter")  # its turns, the first, open it
            await pilot.pause()
            assert isinstance(app.screen, TurnScreen)
            title = str(app.screen.query_one("#turn-title").render())
            assert "loading the result from the engine" in title, title
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, TurnScreen)
            assert not [n for n in app._notifications if n.severity == "error"]
        finally:
            os.kill(pid, signal.SIGCONT)
        await pilot.press("enter")  # the turn again
        await wait_until(pilot, lambda: isinstance(app.screen, TurnScreen)
                         and "loading" not in str(app.screen.query_one("#turn-title").render()))
        assert "this session" in str(app.screen.query_one("#turn-title").render())


CANCEL_CASES = 30_000


async def test_x_cancels_a_replay_run_that_scores_flat_out(tmp_path: Path, make_app) -> None:
    # Enough cases that the engine (about 15,000 replayed cases a second when idle) is still scoring
    # when `x` lands, however fast the machine.
    write_set(tmp_path / "many.evalset.json", "many",
              *[case(f"c{i:05d}", turn(f"q{i}", "same answer")) for i in range(CANCEL_CASES)])
    app = make_app(tmp_path, recording="many.evalset.json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await run_all_until(pilot)
        await pilot.press("x")
        await settle(pilot)
        state = app.run_state
        assert state.phase == "cancelled", (state.phase, state.cases_done)
        assert state.cases_done < CANCEL_CASES
        assert "cancelled" in str(app.main.query_one("#run-status").render())


async def test_quitting_during_a_run_keeps_the_finished_cases_and_ends_the_engine(tmp_path: Path, make_app) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=40, delay=1.0)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        pid = app.engine.pid
        await run_all_until(pilot, 2)
        done = {k.eval_id for k in app.listing.results.keys()}
        await pilot.press("q")
        await pilot.press("y")  # "Quit during a run?"
        await pilot.pause()
    assert _wait_gone(pid, 15)
    saved = _history_cases(root)
    assert done <= saved and len(saved) < 40


def test_the_engine_does_not_outlive_a_killed_dashboard(tmp_path: Path) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=2, delay=0.1)
    tui_eval = str(Path(sys.executable).with_name("tui-eval"))
    env = {**os.environ, "TERM": "xterm-256color", "XDG_STATE_HOME": str(tmp_path / "state")}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the dashboard, as a terminal starts it
        os.execvpe(tui_eval, [tui_eval, str(root)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        out = bytearray()
        deadline = time.monotonic() + 60
        engine: int | None = None
        while engine is None:
            assert time.monotonic() < deadline, out[-2000:]
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 1 << 16)
                except OSError:
                    break
            if b"eval file" in out:
                # (a thread started it: every thread's children)
                children = [c for task in Path(f"/proc/{pid}/task").iterdir()
                            for c in (task / "children").read_text().split()]
                engine = int(children[0]) if children else None
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert engine is not None and _wait_gone(engine, 15), "the engine process outlived the dashboard"
    finally:
        os.close(fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
