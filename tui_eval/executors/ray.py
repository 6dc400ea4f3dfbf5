"""`--executor ray` (or `ray://HOST:PORT`): each case of an agent folder runs as a Ray task on a cluster.

This process never imports Ray: it starts a Ray driver process (`executors/ray_driver.py`) and speaks to it
over a socket, as the local pool speaks to its workers. With no address the driver joins `RAY_ADDRESS`,
else starts a Ray instance of its own on 127.0.0.1 (`ray_driver.LocalHead`: only a base environment, a token
of its own, ended with the run); with `ray://HOST:PORT` it joins that cluster through Ray Client. Before
joining, one call to the cluster says what is wrong (authentication, RAY_AUTH_MODE, no answer) in seconds.
Only the driver environment (`ray_driver.driver_environment`) reaches the driver; the agent's allowlisted
variables travel with each task. What the cases produce comes
back turn by turn and is scored here, exactly as a local run's.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import itertools
import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.base import AgentError
from ..agents.conversation import CaseJob, Inference
from ..protocol import (AgentLoaded, CancelCase, CaseEnded, Command, LoadAgent, ProtocolError, ReloadAgent, Report,
                        RunCase, Stop, TurnFinished, TurnStarted, encode)
from .base import Executor, OnTurn
from .child import InFlight, child_env, output_lines, read_reports, signal_name, spawn_child
from .ray_driver import CLUSTER_FAILED, agent_environment, driver_environment, is_loopback, uses_tls
from .wire import CaseNotSent, spec_of

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient

log = logging.getLogger(__name__)
driver_output = logging.getLogger("tui_eval.ray_output")

INSTALL_HINT = "pip install 'tui-eval[ray]'"
#: Seconds the driver may take to connect (or start a local Ray instance) and load the agent in a worker.
LOAD_TIMEOUT = 300.0
#: Seconds the driver is given to cancel what runs and disconnect (stopping a local instance) on close.
STOP_GRACE = 20.0


class RayExecutor(Executor):
    """Cases of one agent folder as Ray tasks (see the module docstring)."""

    def __init__(self, ref: str, *, address: str | None = None) -> None:
        try:
            found = importlib.util.find_spec("ray")
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise AgentError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}")
        self.ref = ref
        self.home = Path(ref)
        self.name = self.home.name
        self.address = address
        self._proc: asyncio.subprocess.Process | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._hello: asyncio.Future[str | None] | None = None
        self._jobs: dict[int, InFlight] = {}
        self._ids = itertools.count(1)
        self._error: str | None = None
        self._lock: asyncio.Lock | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=5)
        #: The driver ended on its own during the run (Ray's infrastructure failed): what fails after is no
        #: verdict on the agent either.
        self._lost = False
        #: Names this run's unpacked copies of the agent on every Ray node (removed when it ends).
        self._run_token = secrets.token_hex(16)
        self._closing = False
        self._warned = False

    # ---- executor interface ------------------------------------------------------------------

    def source_paths(self) -> list[Path]:
        from ..agents.folder import source_files

        return source_files(Path(self.ref))

    async def start(self) -> str | None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None or self._writer is None:
                self._warn_unencrypted()
                self._error = await self._spawn()
                if self._error is None:
                    self._error = await self._say_hello(LoadAgent(self.ref, self.address))
            return self._error

    def _warn_unencrypted(self) -> None:
        """The agent's variables (API keys) go with each task: say so when they would leave this machine
        unencrypted."""
        env = child_env()
        target = self.address or env.get("RAY_ADDRESS")
        names = sorted(agent_environment(env))
        if self._warned or not names or is_loopback(target) or uses_tls(env):
            return
        self._warned = True
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        log.warning("the agent's variables (%s) go to the Ray cluster at %s unencrypted: RAY_USE_TLS is not set",
                    shown, target)

    async def restart(self) -> str | None:
        """The agent's code changed: it is packed again, and new Ray workers import it fresh."""
        if self._proc is None or self._error is not None:
            await self.aclose()
            return await self.start()
        self._error = await self._say_hello(ReloadAgent())
        return self._error

    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        error = await self.start()
        if error is not None:
            if self._lost:  # Ray went away during the run and cannot be reached again
                return Inference(error=f"{CLUSTER_FAILED}: {error}")
            return Inference(error=f"agent could not start a session: {error}")
        try:
            spec = spec_of(job)
        except CaseNotSent as exc:
            return Inference(error=str(exc))
        job_id = next(self._ids)
        future: asyncio.Future[Inference] = asyncio.get_running_loop().create_future()
        self._jobs[job_id] = InFlight(job, future, on_turn, judge)
        self._send(RunCase(job_id, spec))
        try:
            return await future
        except asyncio.CancelledError:
            if self._jobs.pop(job_id, None) is not None:
                self._send(CancelCase(job_id))
            raise

    async def aclose(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._closing = True
        self._send(Stop())
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE)
        except TimeoutError:
            log.warning("the Ray driver did not stop within %g s; it was killed", STOP_GRACE)
            proc.kill()
            await proc.wait()
        done, late = await asyncio.wait(self._tasks, timeout=STOP_GRACE) if self._tasks else (set(), set())
        for task in late:
            task.cancel()
        self._proc = None
        self._writer = None
        self._closing = False
        from .ray_task import remove_run

        remove_run(self._run_token)  # this machine's copies, should a driver have died before removing them

    # ---- the driver process ------------------------------------------------------------------

    async def _spawn(self) -> str | None:
        env = driver_environment(child_env())  # nothing else of this environment goes near Ray
        if is_loopback(self.address or env.get("RAY_ADDRESS")):
            # Ray otherwise names this machine by its network address, even for a local instance:
            # everything stays on 127.0.0.1.
            env.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            self._proc, reader, self._writer = await spawn_child("tui_eval.executors.ray_driver", "--run",
                                                                 self._run_token, env=env)
        except OSError as exc:
            return f"cannot start the Ray driver process: {exc}"
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._hello = None
        self._tasks = [asyncio.create_task(self._read(reader)),
                       asyncio.create_task(self._output(self._proc.stdout, "stdout")),
                       asyncio.create_task(self._output(self._proc.stderr, "stderr"))]
        return None

    async def _say_hello(self, message: Command) -> str | None:
        self._hello = asyncio.get_running_loop().create_future()
        self._send(message)
        try:
            return await asyncio.wait_for(asyncio.shield(self._hello), LOAD_TIMEOUT)
        except TimeoutError:
            return f"Ray did not load the agent within {LOAD_TIMEOUT:g} s"

    def _send(self, message: Command) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(encode(message))

    async def _output(self, stream: asyncio.StreamReader, what: str) -> None:
        """What the driver (Ray) prints goes to the log, never to the run's output."""
        async for text in output_lines(stream):
            if text:
                if what == "stderr":
                    self._tail.append(text)
                driver_output.info("ray driver %s: %s", what, text[:2000])

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            await read_reports(reader, self._on_report)
        except ProtocolError as exc:  # not a message of ours: the driver is no use any more
            log.error("the Ray driver sent something that is not a message: %s", exc)
            if self._proc is not None and self._proc.returncode is None:
                self._proc.kill()
        finally:
            await self._ended()

    def _on_report(self, report: Report) -> None:
        if isinstance(report, TurnFinished):
            pending = self._jobs.get(report.job)
            if pending is not None:
                try:
                    pending.took_turn(report)
                except ProtocolError as exc:
                    self._jobs.pop(report.job, None)
                    pending.fail(f"the agent process sent an invalid turn: {exc}")
                    self._send(CancelCase(report.job))
        elif isinstance(report, TurnStarted):
            pending = self._jobs.get(report.job)
            if pending is not None:
                pending.clock.started(report.index)
        elif isinstance(report, CaseEnded):
            pending = self._jobs.pop(report.job, None)
            if pending is not None:
                pending.finish(report)
        elif isinstance(report, AgentLoaded):
            if report.name:
                self.name = report.name
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(report.error)

    async def _ended(self) -> None:
        """The driver's socket closed: every case in flight fails with why; the next case starts a new one."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                proc.kill()
                code = await proc.wait()
        cause = "the Ray driver process ended"
        if self._hello is not None and self._hello.done() and not self._closing:
            # It ran no agent code: Ray's own infrastructure went (a raylet, the cluster).
            self._lost = True
            cause = f"{CLUSTER_FAILED}: {cause}"
        if code is not None and code < 0:
            cause += f" (killed by {signal_name(-code)})"
        elif code:
            cause += f" (exit code {code})"
        if self._tail:
            cause += f": {self._tail[-1][:200]}"
        if self._hello is not None and not self._hello.done():
            self._hello.set_result(cause)
        jobs, self._jobs = self._jobs, {}
        for pending in jobs.values():
            pending.fail(f"{cause} during turn {len(pending.actual) + 1}")
        self._writer = None

