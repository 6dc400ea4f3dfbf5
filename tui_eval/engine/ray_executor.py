"""`--executor ray` (or `ray://HOST:PORT`): each case of an agent folder runs as a Ray task on a cluster.

This process never imports Ray: it starts a Ray driver process (`engine/ray_driver.py`) and speaks to it
over a socket, as the local pool speaks to its workers. With no address the driver starts or joins a Ray
instance on this machine (127.0.0.1; `RAY_ADDRESS` or a `ray start` cluster is joined); with `HOST:PORT`
it joins that cluster as a driver, with `ray://HOST:PORT` through Ray Client. What the cases produce comes
back turn by turn and is scored here, exactly as a local run's.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import itertools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.base import AgentError
from ..agents.conversation import CaseJob, Inference
from ..agents.worker import frame
from .child import InFlight, child_env, output_lines, read_messages, signal_name, spawn_child
from .executor import Executor, OnTurn
from .ray_driver import is_loopback

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient

log = logging.getLogger(__name__)
driver_output = logging.getLogger("tui_eval.ray_output")

INSTALL_HINT = "pip install 'tui-eval[ray]'"
#: Seconds the driver may take to connect (or start a local Ray instance) and load the agent in a worker.
LOAD_TIMEOUT = 300.0
#: Seconds the driver is given to cancel what runs and disconnect (stopping a local instance) on close.
STOP_GRACE = 15.0


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

    # ---- executor interface ------------------------------------------------------------------

    def source_paths(self) -> list[Path]:
        from ..agents.folder import source_files

        return source_files(Path(self.ref))

    async def start(self) -> str | None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None or self._writer is None:
                self._error = await self._spawn()
                if self._error is None:
                    self._error = await self._say_hello(("load", self.ref, self.address))
            return self._error

    async def restart(self) -> str | None:
        """The agent's code changed: it is packed again, and new Ray workers import it fresh."""
        if self._proc is None or self._error is not None:
            await self.aclose()
            return await self.start()
        self._error = await self._say_hello(("reload",))
        return self._error

    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        error = await self.start()
        if error is not None:
            return Inference(error=f"agent could not start a session: {error}")
        job_id = next(self._ids)
        future: asyncio.Future[Inference] = asyncio.get_running_loop().create_future()
        self._jobs[job_id] = InFlight(job, future, on_turn, judge)
        self._send(("job", job_id, job))
        try:
            return await future
        except asyncio.CancelledError:
            if self._jobs.pop(job_id, None) is not None:
                self._send(("cancel", job_id))
            raise

    async def aclose(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._send(("stop",))
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

    # ---- the driver process ------------------------------------------------------------------

    async def _spawn(self) -> str | None:
        env = child_env()
        if is_loopback(self.address or env.get("RAY_ADDRESS")):
            # Ray otherwise names this machine by its network address, even for a local instance:
            # everything stays on 127.0.0.1.
            env.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            self._proc, reader, self._writer = await spawn_child("tui_eval.engine.ray_driver", env=env)
        except OSError as exc:
            return f"cannot start the Ray driver process: {exc}"
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._hello = None
        self._tasks = [asyncio.create_task(self._read(reader)),
                       asyncio.create_task(self._output(self._proc.stdout, "stdout")),
                       asyncio.create_task(self._output(self._proc.stderr, "stderr"))]
        return None

    async def _say_hello(self, message: tuple[Any, ...]) -> str | None:
        self._hello = asyncio.get_running_loop().create_future()
        self._send(message)
        try:
            return await asyncio.wait_for(asyncio.shield(self._hello), LOAD_TIMEOUT)
        except TimeoutError:
            return f"Ray did not load the agent within {LOAD_TIMEOUT:g} s"

    def _send(self, message: tuple[Any, ...]) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(frame(message))

    async def _output(self, stream: asyncio.StreamReader, what: str) -> None:
        """What the driver (Ray) prints goes to the log, never to the run's output."""
        async for text in output_lines(stream):
            if text:
                if what == "stderr":
                    self._tail.append(text)
                driver_output.info("ray driver %s: %s", what, text[:2000])

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            await read_messages(reader, self._on_message)
        except Exception:  # a frame we cannot read: the driver is no use any more
            log.exception("the Ray driver sent something unreadable")
            if self._proc is not None and self._proc.returncode is None:
                self._proc.kill()
        finally:
            await self._ended()

    def _on_message(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "turn":
            pending = self._jobs.get(message[1])
            if pending is not None:
                pending.took_turn(message[2], message[3])
        elif kind == "done":
            pending = self._jobs.pop(message[1], None)
            if pending is not None:
                pending.finish(message[2], message[3])
        elif kind == "hello":
            if message[1]:
                self.name = message[1]
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(message[2])

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
            if not pending.future.done():
                turn = len(pending.actual)
                pending.future.set_result(Inference(actual=pending.actual,
                                                    error=f"{cause} during turn {turn + 1}"))
        self._writer = None

