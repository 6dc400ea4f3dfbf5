"""What both out-of-process executors share: a child process spoken to in frames over a socket pair (a pool
worker, the Ray driver), its output, and the cases in flight in it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from ..agents.conversation import CaseJob, Inference
from ..agents.worker import read_frame
from .executor import OnTurn

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient, JudgeStats
    from ..schema.model import Invocation


def child_env() -> dict[str, str]:
    """This process's environment, with tui_eval importable the way this process imported it (installed or
    from a source checkout)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


async def spawn_child(module: str, *args: str, env: dict[str, str]) -> tuple[
        asyncio.subprocess.Process, asyncio.StreamReader, asyncio.StreamWriter]:
    """`python -m module --fd N *args` with one end of a socket pair as fd N; its stdout and stderr are piped.
    It gets its own process group: the terminal's Ctrl-C reaches the engine, which decides."""
    parent, child = socket.socketpair()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, "--fd", str(child.fileno()), *args,
            pass_fds=[child.fileno()], stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=env)
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    reader, writer = await asyncio.open_connection(sock=parent)
    return proc, reader, writer


async def read_messages(reader: asyncio.StreamReader, on_message: Callable[[tuple[Any, ...]], None]) -> None:
    """Hand every message to `on_message` until the child's end of the socket closes (a frame that cannot be
    read raises)."""
    while True:
        message = await read_frame(reader)
        if message is None:
            return
        on_message(message)


async def output_lines(stream: asyncio.StreamReader) -> AsyncIterator[str]:
    """What a child prints, line by line (decoded, without the line end); a line longer than the stream's
    limit is named, not kept."""
    while True:
        try:
            line = await stream.readline()
        except (ValueError, ConnectionError):  # a line longer than the stream's limit
            line = b"(a line too long to show)\n"
        if not line:
            return
        yield line.decode("utf-8", "replace").rstrip()


def signal_name(number: int) -> str:
    """`SIGSEGV` for 11 (a process's return code is minus the signal that ended it)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(slots=True, eq=False)
class InFlight:
    """A case handed to a child process: its turns as they arrive, and the future its caller awaits."""

    job: CaseJob
    future: asyncio.Future[Inference]
    on_turn: OnTurn | None
    judge: JudgeClient | None
    actual: list[Invocation] = field(default_factory=list)

    def took_turn(self, index: int, inv: Invocation) -> None:
        """Turn `index` finished (a simulated conversation may send a turn again: the later one counts)."""
        del self.actual[index:]
        self.actual.append(inv)
        if self.on_turn is not None:
            self.on_turn(index, inv)

    def finish(self, inference: Inference, judge_stats: JudgeStats | None) -> None:
        """The case ended in the child: its turns went back one by one, its judge calls count in the run's."""
        inference.actual = self.actual
        add_judge_stats(self.judge, judge_stats)
        if not self.future.done():
            self.future.set_result(inference)


def add_judge_stats(judge: JudgeClient | None, delta: JudgeStats | None) -> None:
    """The child's user-simulator judge calls count in the run's judge statistics."""
    if judge is not None and delta is not None:
        judge.stats.add(delta)
