"""Odd things in a watched folder: symlink loops and FIFOs named like eval files neither hang nor stop
discovery, loading or the live loop; each is reported as a problem with the file."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tui_eval.engine.events import FileProblem
from tui_eval.engine.live import LiveSession
from tui_eval.engine.workspace import Workspace
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import load_eval_set

BOUND = 5.0  # seconds: today a FIFO blocks forever, so every call under test runs on a watched thread


def _eval_set(eval_id: str) -> dict[str, Any]:
    return {"eval_set_id": "s", "eval_cases": [{
        "eval_id": eval_id,
        "conversation": [{"invocation_id": "", "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                          "final_response": {"role": "model", "parts": [{"text": "hello"}]}}],
    }]}


@pytest.fixture
def fifos() -> Iterator[list[Path]]:
    """FIFOs made by a test; at the end each is opened for writing once, so a reader stuck on it (the
    bug under test) gets end-of-file and its thread ends."""
    made: list[Path] = []
    yield made
    for path in made:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader is waiting, nothing to release
            assert exc.errno == errno.ENXIO, exc
        else:
            os.close(fd)


def bounded(fn: Callable[[], Any]) -> Any:
    """fn() on a daemon thread; fails the test if it has not returned within BOUND seconds."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed to the test below
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"still blocked after {BOUND} s"
    if errors:
        raise errors[0]
    return out[0]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "good.evalset.json").write_text(json.dumps(_eval_set("good")))
    return root


def test_symlink_loops_below_the_root_neither_hang_nor_stop_the_scan(root: Path) -> None:
    os.symlink("..", root / "sub" / "up")  # a folder loop: sub/up/sub/up/...
    os.symlink("self.evalset.json", root / "self.evalset.json")  # a file that links to itself
    os.symlink("pong.evalset.json", root / "ping.evalset.json")
    os.symlink("ping.evalset.json", root / "pong.evalset.json")
    ws = Workspace(root)
    changes = bounded(ws.scan)
    good = (root / "sub" / "good.evalset.json").resolve()
    # Folder links are not followed: the good file is found once, never again as sub/up/sub/...
    assert [p for p in ws.discover() if p.name == "good.evalset.json"] == [root.resolve() / "sub" / "good.evalset.json"]
    good_set = ws.eval_files[good].eval_set
    assert [c.eval_id for _, c in ws.cases()] == ["good"] and good_set is not None and list(good_set.eval_cases)
    problems = {c.path.name: str(c.error) for c in changes if c.error is not None}
    assert sorted(problems) == ["ping.evalset.json", "pong.evalset.json", "self.evalset.json"]
    assert all("symlink loop" in message for message in problems.values()), problems
    assert "self.evalset.json" in problems["self.evalset.json"]


def test_a_fifo_named_like_an_eval_file_or_config_is_a_problem_not_a_hang(root: Path, fifos: list[Path]) -> None:
    for name in ("pipe.evalset.json", "old.test.json", "test_config.json"):
        os.mkfifo(root / name)
        fifos.append(root / name)
    ws = Workspace(root)
    changes = bounded(ws.scan)
    problems = {c.path.name: str(c.error) for c in changes if c.error is not None}
    assert sorted(problems) == ["old.test.json", "pipe.evalset.json", "test_config.json"]
    assert all("FIFO, not a regular file" in m for m in problems.values()), problems
    assert [c.eval_id for _, c in ws.cases()] == ["good"]
    # the one-shot loader (headless runs) refuses it the same way
    with pytest.raises(LoadError, match="FIFO, not a regular file"):
        bounded(lambda: load_eval_set(root / "pipe.evalset.json"))


def test_a_good_eval_file_replaced_by_a_fifo_keeps_its_last_good_version(root: Path, fifos: list[Path]) -> None:
    ws = Workspace(root)
    ws.scan()
    path = root / "sub" / "good.evalset.json"
    path.unlink()
    os.mkfifo(path)
    fifos.append(path)
    change = bounded(lambda: ws.reload(path))
    assert change.error is not None and "FIFO" in str(change.error)
    state = ws.eval_files[path.resolve()]
    assert state.stale and state.eval_set is not None and [c.eval_id for c in state.eval_set.eval_cases] == ["good"]


def test_the_live_loop_reports_loops_and_fifos_and_goes_on(root: Path, fifos: list[Path]) -> None:
    events: list[Any] = []
    live = LiveSession(root, on_event=events.append, rerun=False)
    bounded(lambda: asyncio.run(live.start(run=False)))
    # Appearing while watching: a FIFO eval file, a file link loop, a folder link loop, a link loop
    # with a plain name (the watcher's filter looks at every changed path).
    os.mkfifo(root / "pipe.evalset.json")
    fifos.append(root / "pipe.evalset.json")
    os.symlink("loop.evalset.json", root / "loop.evalset.json")
    os.symlink("..", root / "sub" / "up")
    os.symlink("knot", root / "knot")
    changed = [root / "pipe.evalset.json", root / "loop.evalset.json", root / "sub" / "up", root / "knot"]
    assert not live.relevant(root / "knot") and not live.relevant(root / "sub" / "up")
    assert live.relevant(root / "loop.evalset.json")
    bounded(lambda: asyncio.run(live.handle_changes(changed)))
    problems = {Path(e.path).name: e.message for e in events if isinstance(e, FileProblem)}
    assert sorted(problems) == ["loop.evalset.json", "pipe.evalset.json"]
    assert "FIFO, not a regular file" in problems["pipe.evalset.json"]
    assert "symlink loop" in problems["loop.evalset.json"]
    assert [c.eval_id for _, c in live.workspace.cases()] == ["good"]
