"""The engine's side of a child process that runs agent code (a pool worker, the Ray driver): starting it,
reading its reports, its output, the cases in flight in it and their turn clocks."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Callable

from ..agents.conversation import CaseJob, Inference
from ..protocol import CaseEnded, ProtocolError, Report, TurnFinished, read_report
from .wire import inference_of, read_turn

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient, JudgeStats
    from ..schema.model import Invocation
    from .base import OnTurn

log = logging.getLogger(__name__)

#: Seconds past a turn's --turn-timeout before its agent process counts as unresponsive (at least this, or
#: a tenth of the timeout): the process's own timer fires first whenever its loop runs.
GRACE_MIN = 2.0


#: The engine's agent processes (pool workers, by the pid it started: their supervisor) and what runs in
#: each, in words. A stop signal sent from inside one of their trees came from agent code (engine/signals.py).
_agent_processes: dict[int, Callable[[], str]] = {}


def register_agent_process(pid: int, describe: Callable[[], str]) -> None:
    _agent_processes[pid] = describe


def forget_agent_process(pid: int) -> None:
    _agent_processes.pop(pid, None)


def agent_process_among(pids: list[int]) -> str | None:
    """What runs in the first of `pids` (a process and its ancestors) that is an agent process of ours, or
    None when none is."""
    for pid in pids:
        describe = _agent_processes.get(pid)
        if describe is not None:
            return describe()
    return None


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


async def read_reports(reader: asyncio.StreamReader, on_report: Callable[[Report], None]) -> None:
    """Hand every report to `on_report` until the child's end of the socket closes. Anything that is not a
    report of the protocol raises ProtocolError (the child is no use any more)."""
    while True:
        report = await read_report(reader)
        if report is None:
            return
        on_report(report)


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


def deadline_after(turn_timeout: float) -> float:
    """When a turn that starts now is past saving: its timeout plus the grace its own timer gets."""
    return time.monotonic() + turn_timeout + max(GRACE_MIN, turn_timeout / 10)


@dataclass(slots=True)
class TurnClock:
    """Which turn of a case is under way and when its agent process counts as unresponsive. The pool and
    the Ray driver each keep one per case and kill what is late."""

    turn_timeout: float
    scenario: bool
    #: The turn under way (-1: opening the session; None between turns of a simulated conversation).
    turn: int | None = -1
    #: Turns finished.
    turns: int = 0
    deadline: float | None = None

    def __post_init__(self) -> None:
        self.deadline = deadline_after(self.turn_timeout)

    def started(self, index: int) -> None:
        self.turn = index
        self.deadline = deadline_after(self.turn_timeout)

    def finished(self, index: int) -> None:
        self.turns = index + 1
        self.turn = None if self.scenario else index + 1
        self.deadline = None if self.turn is None else deadline_after(self.turn_timeout)

    def late(self, now: float) -> bool:
        return self.deadline is not None and self.deadline < now

    @property
    def current(self) -> int:
        """The turn a failure happened in (0-based; -1 while opening the session)."""
        return self.turns if self.turn is None else self.turn


@dataclass(slots=True, eq=False)
class InFlight:
    """A case handed to a child process: its clock, its turns as they arrive, the future its caller awaits."""

    job: CaseJob
    future: asyncio.Future[Inference]
    on_turn: OnTurn | None
    judge: JudgeClient | None
    clock: TurnClock = field(init=False)
    actual: list[Invocation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock = TurnClock(self.job.turn_timeout, self.job.case.is_scenario)

    def took_turn(self, report: TurnFinished) -> None:
        """Turn `index` finished (a simulated conversation may send a turn again: the later one counts).
        Raises ProtocolError for a turn that is not one."""
        inv = read_turn(report)
        self.clock.finished(report.index)
        del self.actual[report.index:]
        self.actual.append(inv)
        if self.on_turn is not None:
            self.on_turn(report.index, inv)

    def finish(self, report: CaseEnded) -> None:
        """The case ended in the child: its turns went back one by one, its judge calls count in the run's."""
        add_judge_stats(self.judge, report.judge)
        if not self.future.done():
            self.future.set_result(inference_of(report.outcome, self.actual))

    def fail(self, reason: str) -> None:
        """The case cannot go on (its process sent something that is not a turn): it fails with why."""
        if not self.future.done():
            self.future.set_result(Inference(actual=self.actual, error=reason))


def add_judge_stats(judge: JudgeClient | None, delta: JudgeStats | None) -> None:
    """The child's user-simulator judge calls count in the run's judge statistics."""
    if judge is not None and delta is not None:
        judge.stats.add(delta)


__all__ = ["GRACE_MIN", "InFlight", "ProtocolError", "TurnClock", "add_judge_stats", "agent_process_among",
           "child_env", "deadline_after", "forget_agent_process", "output_lines", "read_reports",
           "register_agent_process", "signal_name", "spawn_child"]
