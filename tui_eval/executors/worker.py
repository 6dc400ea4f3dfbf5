"""A worker process of the local pool: imports one agent, answers many cases at once, streams every turn.

Started by the engine (`python -m tui_eval.executors.worker --fd N`) with one end of a socket pair, on which
it reads `protocol.Command`s and writes `protocol.Report`s: LoadAgent once (answered by AgentLoaded), then
RunCase and CancelCase as the engine likes (each case reports TurnStarted, TurnFinished per turn and
CaseEnded), and Stop at the end. Retire asks to be replaced (its memory ran out once).

Nothing agent code does here reaches the run: the worker ignores the terminal's Ctrl-C (the engine
decides), dies with the engine (PR_SET_PDEATHSIG), its stdout and stderr go to the engine's log, and the
working folder and environment are put back after each turn if a tool changed them. Whatever still
goes wrong (an exit, a signal, a loop that stops answering, bytes written into the socket) the engine
sees as this process ending or its stream refused.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import socket
import sys

from ..agents.base import Agent
from ..protocol import (AgentLoaded, CancelCase, CaseEnded, CaseOutcome, CaseSpec, LoadAgent, Retire, RunCase, Stop,
                        encode, read_command)
from .runtime import CaseRuntime, close_writer, import_agent, start_child, warm_up


class _Worker:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.agent: Agent | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.runtime = CaseRuntime()

    def send(self, frame: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(frame)

    def load(self, folder: str) -> None:
        loaded = import_agent(folder)
        if isinstance(loaded, str):
            self.send(encode(AgentLoaded("", loaded)))
            return
        self.agent = loaded
        self.runtime.settle()
        self.send(encode(AgentLoaded(loaded.name)))

    def start(self, job_id: int, spec: CaseSpec) -> None:
        self.tasks[job_id] = asyncio.create_task(self.run(job_id, spec))

    async def run(self, job_id: int, spec: CaseSpec) -> None:
        try:
            if self.agent is None:
                self.send(encode(CaseEnded(job_id, CaseOutcome(error="the agent is not loaded"))))
                return
            outcome = await self.runtime.run(self.agent, job_id, spec, self.send)
        except asyncio.CancelledError:
            return
        finally:
            self.tasks.pop(job_id, None)
        if outcome.error is not None and outcome.error.startswith("MemoryError"):
            self.send(encode(Retire()))

    async def close(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=1.0)
        await self.runtime.aclose(self.agent)


async def serve(sock: socket.socket) -> None:
    warm_up()
    reader, writer = await asyncio.open_connection(sock=sock)
    worker = _Worker(writer)
    while True:
        command = await read_command(reader)
        if command is None or isinstance(command, Stop):
            break
        if isinstance(command, RunCase):
            worker.start(command.job, command.spec)
        elif isinstance(command, CancelCase):
            task = worker.tasks.get(command.job)
            if task is not None:
                task.cancel()
        elif isinstance(command, LoadAgent):
            worker.load(command.folder)
        await writer.drain()
    await worker.close()
    await close_writer(writer)


def _limit_memory(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="tui_eval.executors.worker")
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
