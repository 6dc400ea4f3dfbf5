"""Where agent code runs: what a pool worker and a Ray task both do with a case.

Import the agent once, run each case with `run_conversation`, send every turn as it finishes and the
outcome at the end as frames of the protocol, put back the working folder and environment a tool
changed, and count the user simulator's judge calls. The process that sends the frames (a socket to
the engine, a Ray generator) is the caller's business.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..agents.base import Agent, AgentError
from ..agents.conversation import error_text, run_conversation
from ..protocol import CaseEnded, CaseOutcome, CaseSpec, TurnStarted, encode
from .wire import job_of, outcome_of, turn_frame

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeStats
    from ..judge.options import JudgeOptions
    from ..judge.service import JudgeService
    from ..schema.model import Invocation

log = logging.getLogger(__name__)

Send = Callable[[bytes], None]


def ran_out_of_memory(error: str | None) -> bool:
    """A case's error that says its process's memory ran out (`MemoryError in tool X`, a bare MemoryError)."""
    return error is not None and error.startswith("MemoryError")


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Linux: the kernel sends this process `sig` (kills it) when its parent ends, however it ends."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, sig)
    except (OSError, AttributeError):  # not Linux: the process still ends when its socket closes
        log.debug("PR_SET_PDEATHSIG is not available here")


def start_child(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, socket.socket]:
    """What a child process of the engine (a pool worker, the Ray driver) does first: read `--fd` (its end of
    the socket pair), ignore the terminal's Ctrl-C (the engine decides), die with the engine, log warnings."""
    parser.add_argument("--fd", type=int, required=True)
    args = parser.parse_args(argv)
    # The engine holds its stop signals for its signal reader (engine/signals.py); a child inherits that
    # block, and a child that cannot be stopped would leave its own children (Ray's) behind.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return args, socket.socket(fileno=args.fd)


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Send what is left and close the socket (the engine may have gone already)."""
    try:
        await writer.drain()
        writer.close()
    except (ConnectionError, RuntimeError):
        log.debug("the engine's end of the socket had closed")


def import_agent(folder: str | Path) -> Agent | str:
    """The folder's agent, imported and warmed up, or why it cannot be loaded (one line)."""
    from ..agents.folder import load_agent_folder

    try:
        agent = load_agent_folder(folder)
        agent.warm_up()
    except AgentError as exc:
        return str(exc)
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import: the agent cannot load
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"cannot import the agent: {error_text(exc).split(chr(10), 1)[0]}"
    return agent


def warm_up() -> None:
    """Build the validators of the models every turn makes (they are built on first use, and a fresh
    process's first cases paid for them, many times a warm case's cost), while no agent is loaded."""
    from pydantic import BaseModel

    from ..schema import model

    for value in vars(model).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == model.__name__:
            value.model_rebuild()


class CaseRuntime:
    """One agent process's cases: their shared working folder and environment, and the user simulator's
    judge (one per process)."""

    def __init__(self) -> None:
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)
        self.judge: JudgeService | None = None
        self._reported: JudgeStats | None = None

    def settle(self) -> None:
        """The agent is loaded: its working folder and environment (its `.env`, as loaded) are the ones
        every case starts from."""
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)

    def restore(self) -> None:
        """Put back the working folder and environment a tool changed (other cases share them)."""
        try:
            if os.getcwd() != self.cwd:
                os.chdir(self.cwd)
        except OSError:
            os.chdir(self.cwd)
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)

    def judge_for(self, options: JudgeOptions | None) -> JudgeService:
        """The user simulator's judge service (scenario cases only), built once with the engine's settings."""
        if self.judge is None:
            from ..judge import JudgeOptions, create_judge_service

            self.judge = create_judge_service(options or JudgeOptions())
        return self.judge

    def judge_delta(self) -> JudgeStats | None:
        """The judge's counters since the last report (the engine adds them to the run's); None without one."""
        if self.judge is None:
            return None
        now = self.judge.stats.copy()
        delta = now.since(self._reported) if self._reported is not None else now.copy()
        self._reported = now
        return delta

    async def run(self, agent: Agent, job_id: int, spec: CaseSpec, send: Send,
                  before_end: Callable[[CaseOutcome], None] | None = None) -> CaseOutcome:
        """Run one case, sending its reports as frames; returns how it ended (`before_end` sees it before
        it is sent). Cancelling the awaiting task cancels the case (nothing more is sent)."""
        try:
            job = job_of(spec)
        except Exception as exc:  # noqa: BLE001 - the case fails, with why; the process goes on
            outcome = CaseOutcome(error=f"the agent process could not read the case: {error_text(exc)}")
            send(encode(CaseEnded(job_id, outcome)))
            return outcome
        judge = self.judge_for(job.judge) if job.case.is_scenario else None

        def on_turn(i: int, inv: Invocation) -> None:
            self.restore()
            send(turn_frame(job_id, i, inv))

        def on_turn_start(i: int) -> None:
            send(encode(TurnStarted(job_id, i)))

        try:
            inference = await run_conversation(agent, job, judge=judge, on_turn=on_turn, on_turn_start=on_turn_start)
        finally:
            self.restore()
        outcome = outcome_of(inference)
        if before_end is not None:
            before_end(outcome)
        send(encode(CaseEnded(job_id, outcome, self.judge_delta())))
        return outcome

    async def aclose(self, agent: Agent | None) -> None:
        """Close the agent and the judge (best effort: on the way out)."""
        if agent is not None:
            try:
                await asyncio.wait_for(agent.aclose(), 5.0)
            except BaseException as exc:  # noqa: BLE001 - closing is best effort, on the way out
                if isinstance(exc, KeyboardInterrupt):
                    raise
                log.warning("closing the agent failed: %s", error_text(exc).split("\n", 1)[0])
        if self.judge is not None:
            try:
                await asyncio.wait_for(self.judge.aclose(), 5.0)
            except Exception as exc:  # noqa: BLE001 - closing is best effort, on the way out
                log.warning("closing the judge failed: %s", exc)
