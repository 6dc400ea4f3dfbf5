"""A worker process of the local pool: imports one agent, answers many cases at once, streams every turn.

Started by the engine (`python -m tui_eval.executors.worker --fd N`) with one end of a socket pair, on which
it reads `protocol.Command`s and writes `protocol.Report`s: LoadAgent once (answered by AgentLoaded), then
RunCase and CancelCase as the engine likes (each case reports TurnStarted, TurnFinished per turn and
CaseEnded), and Stop at the end. Retire, sent before a case's end, says the process ran out of memory
(under --agent-memory-limit the engine recycles it and runs its cases again, each alone).

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
import signal
import socket
import sys
from typing import NoReturn

from ..agents.base import Agent
from ..protocol import (AgentLoaded, CancelCase, CaseEnded, CaseOutcome, CaseSpec, LoadAgent, Retire, RunCase, Stop,
                        encode, read_command)
from .procs import end_descendants
from .runtime import CaseRuntime, close_writer, import_agent, ran_out_of_memory, start_child, warm_up


#: A worker under a memory limit whose address space is within this share of it has run out: any allocation
#: may fail there (a thread's stack, a tool's buffer), whichever case asked for it.
NEAR_LIMIT = 1 / 8


def address_space() -> int | None:
    """Bytes of address space this process uses (what RLIMIT_AS limits), or None where it is not known."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class _Worker:
    def __init__(self, writer: asyncio.StreamWriter, memory_limit: int | None = None) -> None:
        self.memory_limit = memory_limit
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
            await self.runtime.run(self.agent, job_id, spec, self.send, self._before_end)
        except asyncio.CancelledError:
            return
        finally:
            self.tasks.pop(job_id, None)

    def _before_end(self, outcome: CaseOutcome) -> None:
        """A case failed for want of memory (a MemoryError, or any error while this process is at its memory
        limit: another case's runaway may be the cause): say Retire before the case's end, so the engine
        recycles this process and runs its cases again, each alone."""
        if outcome.error is None:
            return
        size = address_space() if self.memory_limit else None
        if ran_out_of_memory(outcome.error) or (
                self.memory_limit and size is not None and size > self.memory_limit * (1 - NEAR_LIMIT)):
            self.send(encode(Retire()))

    async def close(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=1.0)
        await self.runtime.aclose(self.agent)


async def serve(sock: socket.socket, memory_limit: int | None = None) -> None:
    warm_up()
    reader, writer = await asyncio.open_connection(sock=sock)
    worker = _Worker(writer, memory_limit)
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


#: Linux prctl options.
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: What the supervisor waits for: its worker (or an adopted orphan) ending, and the engine's word to end.
_SUPERVISED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # not Linux
        return False


def _supervise(worker: int, engine: int) -> NoReturn:
    """The supervisor's life: reap orphans the agent's tools leave (it is their child subreaper); on SIGTERM
    from the engine (or the engine's death) kill the worker; once the worker has ended, end every process
    its agent started, then end as the worker did (its exit code or signal, for the engine's report).
    A signal from anyone else (agent code signalling its parent) is ignored."""
    status: int | None = None
    while status is None:
        info = signal.sigtimedwait(_SUPERVISED, 1.0)
        orphaned = os.getppid() != engine
        if info is not None and info.si_signo != signal.SIGCHLD and not orphaned and info.si_pid != engine:
            print(f"the worker's supervisor ignored {signal.Signals(info.si_signo).name} from pid {info.si_pid}",
                  file=sys.stderr, flush=True)
        elif orphaned or (info is not None and info.si_signo != signal.SIGCHLD):
            try:
                os.kill(worker, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while True:
                pid, code = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == worker:
                    status = code
        except ChildProcessError:
            status = 0 if status is None else status
    end_descendants()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # (whose action cannot be set: always the default)
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _start_supervised(sock: socket.socket) -> bool:
    """Fork: the child goes on as the worker (True); this process stays as its supervisor and never returns.
    False where there is no PR_SET_CHILD_SUBREAPER (not Linux): the worker runs unsupervised."""
    engine = os.getppid()
    if not _prctl(PR_SET_CHILD_SUBREAPER, 1):
        return True
    signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISED)
    supervisor = os.getpid()
    worker = os.fork()
    if worker == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != supervisor:  # the supervisor went before the line above
            os._exit(1)
        return True
    sock.close()
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the engine's death reaches the supervisor as a SIGTERM
    _supervise(worker, engine)


def main(argv: list[str] | None = None) -> None:
    """The worker's entry point. On Linux it first becomes a supervisor (a child subreaper) with the worker
    as its one child: every process the agent starts, even one that leaves its process group and session
    (a daemon, a double fork), stays in the supervisor's tree, and ends when the worker ends, however it
    ends (a Stop, a recycle, a crash, the engine's death). The memory limit is the worker's own."""
    parser = argparse.ArgumentParser(prog="tui_eval.executors.worker")
    parser.add_argument("--memory-limit", type=int, default=None)
    args, sock = start_child(parser, argv)
    _start_supervised(sock)
    if args.memory_limit:
        _limit_memory(args.memory_limit)
    try:
        asyncio.run(serve(sock, args.memory_limit))
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
