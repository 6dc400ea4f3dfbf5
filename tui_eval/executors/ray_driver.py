"""The Ray driver of `--executor ray`: a process of its own that connects to Ray and runs each case as a Ray task.

Started by `executors/ray.py` (`python -m tui_eval.executors.ray_driver --fd N`); it speaks the protocol a
pool worker speaks (`protocol.py`). Each Ray task yields its reports as frames; the driver checks every one
(a frame of the protocol, about the case it was given) before it passes it on, byte for byte.

Why a process of its own: a Ray driver brings a dozen threads, C++ signal handlers (SIGTERM among them)
and prints of its own on stdout (`(raylet) A worker died...`). None of that may reach the run's output,
its Ctrl-C or the dashboard's GIL; here it reaches the engine's log.

Each case is a Ray streaming generator task (`executors/ray_task.py`), so turns arrive as they finish. The
agent folder travels as a zip in Ray's object store; each code version gets Ray worker processes of its
own (its digest is in the task's runtime environment), so an edited agent is imported fresh, never
reloaded in place. A turn's own timer runs in the Ray worker; a worker whose loop stops answering (C code
holding the GIL) is force-cancelled here once its turn is past the deadline. Over Ray Client
(`ray://HOST:PORT`), which has no streaming generators, a case is one plain task and its turns arrive
when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol import (AgentLoaded, CancelCase, CaseEnded, CaseOutcome, CaseSpec, LoadAgent, ProtocolError,
                        ReloadAgent, RunCase, Stop, TurnFinished, TurnStarted, check_body, check_head, decode_report,
                        encode, read_command)
from .child import TurnClock, deadline_after
from .runtime import close_writer, start_child

log = logging.getLogger(__name__)

#: CPUs one case asks Ray for (each case runs in a Ray worker process of its own). One, Ray's default:
#: Ray keeps about one idle worker per CPU warm, so with less it starts and kills workers all the time
#: (bench/ray_overhead.py; its figures are in bench/README.md).
#: TUI_EVAL_RAY_CASE_CPUS=0.25 suits agents that mostly wait for their model on a cluster with CPUs
#: to spare.
CASE_CPUS = float(os.environ.get("TUI_EVAL_RAY_CASE_CPUS") or 1)
#: Seconds a cancelled case may take to end on its own before its Ray worker is killed.
CANCEL_GRACE = 2.0
#: Seconds to reach a cluster's address before saying it cannot be reached.
CONNECT_TIMEOUT = 5.0
INSTALL_HINT = "pip install 'tui-eval[ray]'"
#: Variables of the engine's environment that reach the agent on the cluster (its model's keys and
#: endpoints, tui-eval's own settings); anything else an agent needs goes in its folder's .env, which
#: travels with it. (A local instance's workers inherit the whole environment anyway.)
FORWARDED_PREFIXES = ("GOOGLE_", "GEMINI_", "OPENAI_", "TUI_EVAL_")


def is_loopback(address: str | None) -> bool:
    """Whether a Ray address is on this machine (None: a local instance is started or joined)."""
    if not address:
        return True
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def probe_address(address: str) -> str | None:
    """Why a cluster address cannot be reached (a TCP connection to it), or None."""
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return f"not a Ray address: {address!r} (HOST:PORT, or ray://HOST:PORT)"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        return f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
    return None


@dataclass(slots=True, eq=False)
class _Job:
    spec: CaseSpec
    clock: TurnClock
    handle: Any = None
    task: asyncio.Task[None] | None = None
    timed_out: bool = False
    cancelled: bool = False


class _Driver:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.folder: Path | None = None
        self.address: str | None = None
        self.client = False
        self.box: Any = None
        self.digest = ""
        self.jobs: dict[int, _Job] = {}
        self._remote: dict[str, Any] = {}
        self._watchdog: asyncio.Task[None] | None = None

    def send(self, frame: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(frame)

    # ---- connecting and loading --------------------------------------------------------------

    def connect(self, address: str | None) -> str | None:
        """ray.init (blocking): None, or why Ray cannot be reached."""
        try:
            import ray
        except ImportError:
            return f"Ray is not installed: {INSTALL_HINT}"
        if ray.is_initialized():
            return None
        target = address or os.environ.get("RAY_ADDRESS") or None
        if target and target not in ("auto", "local"):
            unreachable = probe_address(target)
            if unreachable is not None:
                return unreachable
        self.client = bool(target and target.startswith("ray://"))
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if not self.client:
            kwargs["include_dashboard"] = False
        # tui-eval's own code travels with the job, so a cluster runs the engine's version of it (the
        # cluster's nodes need its dependencies: pip install 'tui-eval[ray]' there too).
        package = Path(__file__).resolve().parents[1]
        kwargs["runtime_env"] = {"py_modules": [str(package)], "excludes": ["__pycache__", "*.pyc"]}
        try:
            ray.init(address=address, **kwargs)
        except Exception as exc:  # ConnectionError, RuntimeError, auth errors: said in one line
            where = f"the Ray cluster at {target}" if target else "a local Ray instance"
            text = str(exc).strip().split("\n", 1)[0] or type(exc).__name__
            return f"cannot connect to {where}: {text}"
        return None

    def remote(self, name: str) -> Any:
        """The Ray remote function `name` of agents/ray_task.py."""
        found = self._remote.get(name)
        if found is None:
            import ray

            from . import ray_task

            if name == "stream":
                found = ray.remote(num_returns="streaming", max_retries=0, num_cpus=CASE_CPUS)(
                    ray_task.stream_case)
            elif name == "whole":
                found = ray.remote(max_retries=0, num_cpus=CASE_CPUS)(ray_task.whole_case)
            else:
                found = ray.remote(max_retries=0, num_cpus=CASE_CPUS)(ray_task.probe)
            self._remote[name] = found
        return found

    def options(self, name: str) -> Any:
        """The remote function with this code version's runtime environment (made once per version)."""
        key = f"{name}@{self.digest}"
        found = self._remote.get(key)
        if found is None:
            env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}
            # The digest in the environment gives each code version Ray worker processes of its own.
            env["TUI_EVAL_AGENT_CODE"] = self.digest
            found = self._remote[key] = self.remote(name).options(runtime_env={"env_vars": env})
        return found

    async def load(self, folder: str | None, address: str | None) -> None:
        if folder is not None:
            self.folder = Path(folder)
            self.address = address
        error = await asyncio.to_thread(self.connect, self.address)
        if error is not None:
            self.send(encode(AgentLoaded("", error)))
            return
        import ray

        from .ray_task import pack_folder

        assert self.folder is not None
        try:
            self.digest, data = await asyncio.to_thread(pack_folder, self.folder)
        except OSError as exc:
            self.send(encode(AgentLoaded("", f"cannot read the agent folder: {exc}")))
            return
        self.box = (self.folder.name, self.digest, [ray.put(data)])
        try:
            answer = self.checked(await self.options("probe").remote(self.box), None)
            loaded = answer if isinstance(answer, AgentLoaded) else AgentLoaded("", "the agent's Ray task did not say")
        except ProtocolError as exc:
            loaded = AgentLoaded("", f"the agent's Ray task answered with something that is not a message: {exc}")
        except Exception as exc:  # a Ray failure while loading: said in one line
            loaded = AgentLoaded("", f"the agent could not be loaded on Ray: {self.failure(exc, None)}")
        self.send(encode(loaded))

    # ---- cases -------------------------------------------------------------------------------

    @staticmethod
    def checked(item: object, job_id: int | None) -> object:
        """A report a Ray task sent, checked: a frame of the protocol (anything else is refused before it
        is decoded as more than bytes), about the case it was given."""
        if type(item) is not bytes or len(item) < 10:
            raise ProtocolError(f"a Ray task sent {type(item).__name__}, not a message")
        size, crc = check_head(item[:10])
        report = decode_report(check_body(item[10:], crc))
        if size != len(item) - 10:
            raise ProtocolError("a message whose length does not match its head")
        if job_id is not None and getattr(report, "job", job_id) != job_id:
            raise ProtocolError(f"a message about another case ({getattr(report, 'job', None)})")
        return report

    def on_item(self, job_id: int, state: _Job, item: object) -> bool:
        """Check and forward one report of a case; True when it was the last."""
        report = self.checked(item, job_id)
        assert isinstance(item, bytes)
        if isinstance(report, TurnStarted):
            state.clock.started(report.index)
        elif isinstance(report, TurnFinished):
            state.clock.finished(report.index)
        self.send(item)
        return isinstance(report, CaseEnded)

    def fail(self, job_id: int, reason: str) -> None:
        self.send(encode(CaseEnded(job_id, CaseOutcome(error=reason))))

    async def run(self, job_id: int, state: _Job) -> None:
        try:
            if self.client:
                await self._run_whole(job_id, state)
            else:
                handle = state.handle = self.options("stream").remote(self.box, job_id, state.spec)
                async for ref in handle:
                    if self.on_item(job_id, state, await ref):
                        break
        except asyncio.CancelledError:
            return
        except ProtocolError as exc:
            self.cancel(job_id, force=True)
            self.fail(job_id, f"the agent's Ray task sent something that is not a message: {exc}")
        except Exception as exc:  # Ray's errors: the worker died, the task was cancelled, the node left
            if not state.cancelled:
                self.fail(job_id, self.failure(exc, state))
        finally:
            self.jobs.pop(job_id, None)

    async def _run_whole(self, job_id: int, state: _Job) -> None:
        spec = state.spec
        turns = spec.turns if not spec.scenario else 20
        # No turn reaches us before the case ends: the whole case gets the deadline of all its turns.
        state.clock.deadline = time.monotonic() + (turns + 1) * (deadline_after(spec.turn_timeout) - time.monotonic())
        handle = state.handle = self.options("whole").remote(self.box, job_id, spec)
        for item in await handle:
            if self.on_item(job_id, state, item):
                break

    def failure(self, exc: BaseException, state: _Job | None) -> str:
        """A Ray error as the case's error, in words."""
        from ray import exceptions as rx

        turn = -1 if state is None else state.clock.current
        # A Ray task's last words (its turn_start) may be lost with it: with no turn heard of, say so.
        where = "before any of its turns was heard of" if turn < 0 else f"during turn {turn + 1}"
        if self.client and state is not None:
            where = "during the case"  # over Ray Client no turn is heard of before the case ends
        first = (str(exc).strip().split("\n", 1)[0] or type(exc).__name__)[:300]
        if state is not None and state.timed_out:
            timeout = state.spec.turn_timeout
            if self.client:
                return (f"the case timed out: no answer within {timeout:g} s per turn (the agent process did "
                        "not respond; it was killed)")
            return (f"turn {max(turn, 0) + 1} timed out after {timeout:g} s (the agent process did not "
                    f"respond for {timeout:g} s after a turn's timeout; it was killed)")
        if isinstance(exc, rx.OutOfMemoryError):
            return f"the agent process was killed by Ray's memory monitor (out of memory) {where}"
        if isinstance(exc, rx.WorkerCrashedError):
            return (f"the agent process died {where}: it exited or was killed (an exit call, a signal or "
                    "the out-of-memory killer; its Ray worker log says which)")
        if isinstance(exc, rx.NodeDiedError):
            return f"the Ray node running the case died {where}"
        if isinstance(exc, rx.RayTaskError):
            return f"the Ray task of the case failed {where}: {first}"
        return f"Ray failed the case {where}: {type(exc).__name__}: {first}"

    def start_job(self, job_id: int, spec: CaseSpec) -> None:
        state = _Job(spec, TurnClock(spec.turn_timeout, spec.scenario))
        self.jobs[job_id] = state
        state.task = asyncio.create_task(self.run(job_id, state))
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.create_task(self.watch())

    def cancel(self, job_id: int, *, force: bool = False) -> None:
        state = self.jobs.get(job_id)
        if state is None or state.handle is None:
            if state is not None and state.task is not None:
                state.task.cancel()
            return
        import ray

        state.cancelled = True
        try:
            ray.cancel(state.handle, force=force)
        except Exception as exc:  # the task already ended
            log.debug("cancelling case %s: %s", state.spec.eval_id, exc)
        if not force:
            asyncio.get_running_loop().call_later(CANCEL_GRACE, self._force, job_id, state)

    def _force(self, job_id: int, state: _Job) -> None:
        if self.jobs.get(job_id) is state:
            self.cancel(job_id, force=True)

    async def watch(self) -> None:
        """Kill the Ray worker of a case past its turn's deadline that has not said so itself: its event
        loop does not run (C code holding the GIL, a sync call on the loop)."""
        import ray

        while self.jobs:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for state in list(self.jobs.values()):
                if state.clock.late(now) and not state.timed_out and state.handle is not None:
                    state.timed_out = True
                    try:
                        ray.cancel(state.handle, force=True)
                    except Exception as exc:  # the task ended meanwhile
                        log.debug("killing case %s: %s", state.spec.eval_id, exc)

    async def close(self) -> None:
        for job_id in list(self.jobs):
            self.cancel(job_id, force=True)
        tasks = [s.task for s in self.jobs.values() if s.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_GRACE)
        try:
            import ray

            if ray.is_initialized():
                await asyncio.to_thread(ray.shutdown)
        except ImportError:
            pass


async def serve(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    driver = _Driver(writer)
    loading: asyncio.Task[None] | None = None
    while True:
        command = await read_command(reader)
        if command is None or isinstance(command, Stop):
            break
        if isinstance(command, RunCase):
            if loading is not None:
                await loading
            driver.start_job(command.job, command.spec)
        elif isinstance(command, CancelCase):
            driver.cancel(command.job)
        elif isinstance(command, LoadAgent):
            loading = asyncio.create_task(driver.load(command.folder, command.address))
        elif isinstance(command, ReloadAgent):
            if loading is not None:
                await loading
            loading = asyncio.create_task(driver.load(None, None))
        await writer.drain()
    await driver.close()
    await close_writer(writer)


def main(argv: list[str] | None = None) -> None:
    _args, sock = start_child(argparse.ArgumentParser(prog="tui_eval.executors.ray_driver"), argv)
    try:
        asyncio.run(serve(sock))
    finally:
        os._exit(0)


if __name__ == "__main__":  # pragma: no cover - the Ray executor starts it
    main()
