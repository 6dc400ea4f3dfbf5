"""A worker process of the local pool: imports one agent, answers many cases at once, streams every turn.

Started by the engine (`python -m tui_eval.agents.worker --fd N`) with one end of a socket pair; frames on
it are a 4-byte length and a pickle. The engine says `("load", folder)` once, then `("job", id, CaseJob)`
and `("cancel", id)` as it likes, and `("stop",)` at the end. The worker answers `("hello", name, error)`,
then per job `("turn_start", id, i)`, `("turn", id, i, Invocation)` and `("done", id, Inference,
judge_stats)`; `("retire",)` asks to be replaced (its memory ran out once).

Nothing agent code does here reaches the run: the worker ignores the terminal's Ctrl-C (the engine
decides), dies with the engine (PR_SET_PDEATHSIG), its stdout and stderr go to the engine's log, and the
working folder and environment are put back after each turn if a tool changed them. Whatever still
goes wrong (an exit, a signal, a loop that stops answering) the engine sees as this process ending.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import logging
import os
import pickle
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .base import Agent, AgentError
from .conversation import CaseJob, Inference, error_text, run_conversation

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeStats
    from ..judge.service import JudgeService

_HEAD = struct.Struct(">I")
log = logging.getLogger(__name__)


def frame(message: tuple[Any, ...]) -> bytes:
    """One message as it travels: its length, then its pickle."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEAD.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message, or None when the other side has gone."""
    try:
        head = await reader.readexactly(_HEAD.size)
        (size,) = _HEAD.unpack(head)
        body = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    message: tuple[Any, ...] = pickle.loads(body)
    return message


def _die_with_parent() -> None:
    """Linux: the kernel kills this process when the engine's process ends, however it ends."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the worker still ends when its socket closes
        log.debug("PR_SET_PDEATHSIG is not available here")


def start_child(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, socket.socket]:
    """What a child process of the engine (a pool worker, the Ray driver) does first: read `--fd` (its end of
    the socket pair), ignore the terminal's Ctrl-C (the engine decides), die with the engine, log warnings."""
    parser.add_argument("--fd", type=int, required=True)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return args, socket.socket(fileno=args.fd)


async def take_commands(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        handle: Callable[[tuple[Any, ...]], Awaitable[None]]) -> None:
    """Hand each message from the engine to `handle` until it says `stop` or goes; what `handle` sent is on its
    way before the next message is read."""
    while True:
        message = await read_frame(reader)
        if message is None or message[0] == "stop":
            return
        await handle(message)
        await writer.drain()


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Send what is left and close the socket (the engine may have gone already)."""
    try:
        await writer.drain()
        writer.close()
    except (ConnectionError, RuntimeError):
        log.debug("the engine's end of the socket had closed")


def import_agent(folder: str | Path) -> Agent | str:
    """The folder's agent, imported and warmed up, or why it cannot be loaded (one line)."""
    from .folder import load_agent_folder

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


class _Worker:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.agent: Agent | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.judge: JudgeService | None = None
        self._reported: JudgeStats | None = None
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)

    def send(self, message: tuple[Any, ...]) -> None:
        if not self.writer.is_closing():
            self.writer.write(frame(message))

    def load(self, folder: str) -> None:
        loaded = import_agent(folder)
        name, error = "", None
        if isinstance(loaded, str):
            error = loaded
        else:
            self.agent = loaded
            name = loaded.name
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)  # the agent's .env, as loaded, is part of its environment
        self.send(("hello", name, error))

    def judge_for(self, job: CaseJob) -> JudgeService:
        """The user simulator's judge service (scenario cases only), one per worker."""
        if self.judge is None:
            from ..judge import JudgeOptions, create_judge_service

            options = JudgeOptions()
            for key, value in job.judge.items():
                setattr(options, key, value)
            self.judge = create_judge_service(options)
        return self.judge

    def judge_delta(self) -> JudgeStats | None:
        """The judge's counters since the last report (the engine adds them to the run's); None without one."""
        if self.judge is None:
            return None
        now = self.judge.stats.copy()
        delta = now.since(self._reported) if self._reported is not None else now.copy()
        self._reported = now
        return delta

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

    async def run(self, job_id: int, job: CaseJob) -> None:
        agent = self.agent
        if agent is None:
            self.send(("done", job_id, Inference(error="the agent is not loaded"), {}))
            return
        judge = self.judge_for(job) if job.case.is_scenario else None

        def on_turn(i: int, inv: Any) -> None:
            self.restore()
            try:
                self.send(("turn", job_id, i, inv))
            except Exception as exc:  # noqa: BLE001 - an invocation that cannot travel fails its case
                raise AgentError(f"turn {i + 1}'s result cannot be sent back: {type(exc).__name__}: {exc}") from exc

        try:
            inference = await run_conversation(agent, job, judge=judge, on_turn=on_turn,
                                               on_turn_start=lambda i: self.send(("turn_start", job_id, i)))
        except asyncio.CancelledError:
            return
        finally:
            self.tasks.pop(job_id, None)
        self.restore()
        inference.actual = []  # every turn went back as it finished
        self.send(("done", job_id, inference, self.judge_delta()))
        if inference.error is not None and inference.error.startswith("MemoryError"):
            self.send(("retire",))

    async def close(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=1.0)
        if self.agent is not None:
            try:
                await asyncio.wait_for(self.agent.aclose(), 5.0)
            except BaseException as exc:  # noqa: BLE001 - closing is best effort, on the way out
                if isinstance(exc, KeyboardInterrupt):
                    raise
                log.warning("closing the agent failed: %s", error_text(exc).split("\n", 1)[0])
        if self.judge is not None:
            try:
                await asyncio.wait_for(self.judge.aclose(), 5.0)
            except Exception as exc:  # noqa: BLE001 - closing is best effort, on the way out
                log.warning("closing the judge failed: %s", exc)


def _warm_up() -> None:
    """Build the validators of the models every turn makes (they are built on first use, and a fresh
    worker's first cases paid for them, many times a warm case's cost), while no agent is loaded."""
    from pydantic import BaseModel

    from ..schema import model

    for value in vars(model).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == model.__name__:
            value.model_rebuild()


async def serve(sock: socket.socket) -> None:
    _warm_up()
    reader, writer = await asyncio.open_connection(sock=sock)
    worker = _Worker(writer)

    async def handle(message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "job":
            job_id, job = message[1], message[2]
            worker.tasks[job_id] = asyncio.create_task(worker.run(job_id, job))
        elif kind == "cancel":
            task = worker.tasks.get(message[1])
            if task is not None:
                task.cancel()
        elif kind == "load":
            worker.load(message[1])

    await take_commands(reader, writer, handle)
    await worker.close()
    await close_writer(writer)


def _limit_memory(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="tui_eval.agents.worker")
    parser.add_argument("--memory-limit", type=int, default=None)
    args, sock = start_child(parser, argv)
    if args.memory_limit:
        _limit_memory(args.memory_limit)
    try:
        asyncio.run(serve(sock))
    finally:
        # Agent code's exit handlers run (a tool may flush a file at exit), but threads it left running
        # are not waited for: the engine asked this process to end.
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a tool closed it
                pass
        os._exit(0)


if __name__ == "__main__":  # pragma: no cover - the pool starts it
    main()
