"""The local executor: a pool of worker processes that each import the agent once and run many cases.

Cases go to the worker with the fewest in flight; each worker runs its cases concurrently on its own event
loop, with sync tools on threads, so no case waits for another's tools. A worker is a fresh interpreter
(`python -m tui_eval.executors.worker`), not a fork of this process: it imports the agent from source, holds
no copy of the engine's threads or locks, and is replaced whole when the agent's code changes.

Faults, and what the run sees:
- a turn past --turn-timeout: the worker's own timer fails that case and frees its slot;
- a worker that stops answering (C code holding its GIL, a tool blocking its loop): killed once a case in
  it is `grace` seconds past its turn's deadline;
- a worker that dies (an exit, a signal, the kernel's OOM killer, the kill above): replaced; the cases that
  were in flight in it run again, each in a worker of its own, so only the case that brings its own worker
  down fails, with the cause in words (`agent process exited with code 0 during turn 1`);
- a worker that runs out of memory (--agent-memory-limit: a limit is per process, so one runaway case makes
  every allocation in its worker fail): recycled at its first MemoryError, and the cases that were in it
  (the one that reported it too) run again the same way, so only the culprit fails.
A case run again after its worker died says so (`Inference.reruns_after_crash`: the summary, --json and the
run record show it: its tools ran twice); with `retry_after_crash=False` (--no-retry-after-crash, for tools
with side effects) it fails instead, as its worker died. Re-runs take at most `size` workers at once.

Every process an agent starts ends with its worker: the worker's entry point is a small supervisor (see
`worker.py`) that adopts what its tools leave behind and ends all of it when the worker ends.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.conversation import CaseJob, Inference
from ..protocol import (AgentLoaded, CancelCase, CaseEnded, Command, LoadAgent, ProtocolError, Report, Retire, RunCase,
                        Stop, TurnFinished, TurnStarted, encode)
from .base import Executor, OnTurn
from .child import (InFlight, child_env, forget_agent_process, output_lines, read_reports, register_agent_process,
                    signal_name, spawn_child)
from .wire import CaseNotSent, spec_of

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient
    from ..schema.model import Invocation

log = logging.getLogger(__name__)
agent_output = logging.getLogger("tui_eval.agent_output")

#: Seconds a worker may take to start and import its agent.
LOAD_TIMEOUT = 120.0
#: Seconds a worker is given to end after `stop` (its agent's exit handlers run) before it is killed.
STOP_GRACE = 2.0
#: Seconds after the agent loaded before live mode starts its next spare worker.
SPARE_DELAY = 0.2
#: Bytes of a worker's stdout/stderr logged at most; the rest is counted, not kept.
OUTPUT_BUDGET = 1 << 20


def default_pool_size() -> int:
    """Workers: one per core, at least one, at most 4 (agents mostly wait for models: a worker runs
    many cases at once; the pool spreads the CPU work of their frameworks over the cores)."""
    return max(1, min(4, os.cpu_count() or 1))


def max_pool_size() -> int:
    """The most workers a pool starts, whatever --workers asks: four per core, at least 8 (each is an
    interpreter with the agent imported; more only take memory from the cases)."""
    return max(8, 4 * (os.cpu_count() or 1))


def pool_size(requested: int | None) -> int:
    """The workers a pool of `requested` (None: the default) starts; a request over the bound is capped,
    with a warning that says so."""
    size = max(1, requested or default_pool_size())
    bound = max_pool_size()
    if size > bound:
        log.warning("--workers %d is more than this machine can use: %d worker processes (four per core, "
                    "at least 8)", size, bound)
        return bound
    return size


class _WorkerLost(Exception):
    def __init__(self, cause: str, turn: int, actual: list[Invocation]) -> None:
        super().__init__(cause)
        self.cause = cause
        self.turn = turn
        self.actual = actual

    def where(self) -> str:
        return "while starting a session" if self.turn < 0 else f"during turn {self.turn + 1}"


@dataclass(slots=True, eq=False, kw_only=True)
class _Pending(InFlight):
    worker: _Process
    solo: bool


class _Process:
    """One worker process and its socket."""

    _ids = itertools.count(1)

    def __init__(self, pool: ProcessPool) -> None:
        self.id = next(self._ids)
        self.pool = pool
        self.proc: asyncio.subprocess.Process | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.jobs: dict[int, _Pending] = {}
        self.loaded: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.name = ""
        self.dead = False
        self.retiring = False
        #: Why we killed it, if we did (else its exit status says why it ended).
        self.killed_because: str | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=5)
        #: The cases that ended in it last (eval ids, oldest first).
        self.ended: collections.deque[str] = collections.deque(maxlen=3)
        self._output_left = OUTPUT_BUDGET
        self._tasks: list[asyncio.Task[Any]] = []

    async def spawn(self) -> None:
        args = ["--memory-limit", str(self.pool.memory_limit)] if self.pool.memory_limit else []
        self.proc, reader, self.writer = await spawn_child("tui_eval.executors.worker", *args, env=child_env())
        assert self.proc.stdout is not None and self.proc.stderr is not None
        register_agent_process(self.proc.pid, self.describe)
        self._tasks = [asyncio.create_task(self._read(reader)),
                       asyncio.create_task(self._output(self.proc.stdout, "stdout")),
                       asyncio.create_task(self._output(self.proc.stderr, "stderr"))]

    def send(self, message: Command) -> None:
        if self.writer is not None and not self.writer.is_closing() and not self.dead:
            self.writer.write(encode(message))

    async def load(self, ref: str) -> str | None:
        self.send(LoadAgent(ref))
        try:
            return await asyncio.wait_for(asyncio.shield(self.loaded), LOAD_TIMEOUT)
        except TimeoutError:
            self.kill(f"did not load the agent within {LOAD_TIMEOUT:g} s")
            return f"the agent took more than {LOAD_TIMEOUT:g} s to import"

    async def _output(self, stream: asyncio.StreamReader, what: str) -> None:
        """What agent code prints goes to the log (never to the run's output), within a budget."""
        async for text in output_lines(stream):
            if what == "stderr" and text:
                self.tail.append(text)
            if self._output_left > 0:
                self._output_left -= len(text) + 1
                agent_output.info("worker %d %s: %s", self.id, what, text[:2000])
                if self._output_left <= 0:
                    agent_output.info("worker %d: further output is not logged", self.id)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            await read_reports(reader, self._on_report)
        except ProtocolError as exc:  # not a message of ours: agent code wrote into the socket
            log.warning("worker %d: %s", self.id, exc)
            self.kill(f"wrote something that is not a message to the engine ({exc})")
        finally:
            await self._ended()

    def describe(self) -> str:
        """`worker 3 (cases in flight: a, b; ended last: c)`: what a signal from this process's tree is traced
        to (a signal is read a moment after it was sent: the case that sent it may have ended meanwhile)."""
        cases = ", ".join(sorted(p.job.eval_id for p in self.jobs.values())) or "none"
        ended = f"; ended last: {', '.join(reversed(self.ended))}" if self.ended else ""
        return f"worker {self.id} (cases in flight: {cases}{ended})"

    def _on_report(self, report: Report) -> None:
        if self.killed_because is not None and not isinstance(report, AgentLoaded):
            return  # being ended: its cases in flight are lost with it (and may run again)
        if isinstance(report, TurnFinished):
            pending = self.jobs.get(report.job)
            if pending is not None:
                try:
                    pending.took_turn(report)
                except ProtocolError as exc:
                    self.jobs.pop(report.job, None)
                    self.send(CancelCase(report.job))
                    pending.fail(f"the agent process sent an invalid turn: {exc}")
        elif isinstance(report, TurnStarted):
            pending = self.jobs.get(report.job)
            if pending is not None:
                pending.clock.started(report.index)
        elif isinstance(report, CaseEnded):
            pending = self.jobs.get(report.job)
            if pending is None:
                return
            del self.jobs[report.job]
            self.ended.append(pending.job.eval_id)
            pending.finish(report)
        elif isinstance(report, AgentLoaded):
            self.name = report.name
            if not self.loaded.done():
                self.loaded.set_result(report.error)
        elif isinstance(report, Retire):
            self.retiring = True
            if self.pool.memory_limit and any(not p.solo for p in self.jobs.values()):
                # Its memory ran out: one case's runaway makes every allocation in the process fail, so
                # which case it was is not known here. It goes now (the case that said so too, whose end
                # follows); its cases run again, each alone. A case alone in its worker is the culprit.
                self.kill("ran out of memory (--agent-memory-limit) and was recycled")

    def kill(self, because: str) -> None:
        """End the worker and every process its agent started: SIGTERM to its supervisor (worker.py), which
        kills the worker at once and then what the agent left; `_ended` kills the supervisor itself if it
        lingers."""
        if self.killed_because is None:
            self.killed_because = because
        self.retiring = True
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.terminate()
            except ProcessLookupError:
                pass

    def _force(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    async def _ended(self) -> None:
        """The socket closed: the process ended (or is ending). Every case in flight is lost with it."""
        if self.dead:
            return
        self.dead = True
        proc = self.proc
        if proc is not None:
            # One that closed our socket but lives on is no worker of ours any more.
            await self._reap(proc, "closed its socket")
        cause = self.cause()
        if not self.loaded.done():
            self.loaded.set_result(f"{cause} while importing the agent")
        jobs, self.jobs = self.jobs, {}
        for pending in jobs.values():
            if not pending.future.done():
                pending.future.set_exception(_WorkerLost(cause, pending.clock.current, pending.actual))
        self.pool.lost(self)

    async def _reap(self, proc: asyncio.subprocess.Process, because: str) -> None:
        """Wait for the process to end: killed (`because`) if it does not, forced if even that fails."""
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE)
        except TimeoutError:
            self.kill(because)
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                self._force()
                await proc.wait()
        forget_agent_process(proc.pid)

    def cause(self) -> str:
        """Why the process ended, in words."""
        if self.killed_because is not None:
            return f"the agent process {self.killed_because}"
        code = self.proc.returncode if self.proc is not None else None
        if code is None:
            return "the agent process ended"
        if code < 0:
            name = signal_name(-code)
            text = f"the agent process was killed by {name}"
            if name == "SIGKILL":
                text += " (out of memory?)"
        else:
            text = f"the agent process exited with code {code}"
        last = self.tail[-1] if self.tail else ""
        if last and ("Error" in last or "error" in last):
            text += f" ({last[:200]})"
        return text

    async def stop(self) -> None:
        """Ask the worker to end (its agent's exit handlers run); kill it if it does not."""
        self.send(Stop())
        proc = self.proc
        if proc is None:
            return
        await self._reap(proc, "did not stop")
        # Its socket and pipes reach their end once it has exited: the readers finish on their own.
        done, late = await asyncio.wait(self._tasks, timeout=STOP_GRACE)
        for task in late:
            task.cancel()


class ProcessPool(Executor):
    """Worker processes for one agent folder (see the module docstring)."""

    def __init__(self, ref: str, *, size: int | None = None, memory_limit: int | None = None,
                 keep_spare: bool = False, concurrency: int = 8, retry_after_crash: bool = True) -> None:
        self.ref = ref
        self.home = Path(ref)
        self.name = self.home.name
        self.size = pool_size(size)
        #: False (--no-retry-after-crash): a case whose worker died fails, instead of running again alone.
        self.retry_after_crash = retry_after_crash
        #: Re-runs after a worker died take at most `size` workers at once.
        self._solo_slots = asyncio.Semaphore(self.size)
        #: Cases in flight on every worker before another worker starts (the run's concurrency spread
        #: over the pool: 8 cases at once on 2 workers start the second at the fifth case), so a small run
        #: starts one process.
        self.per_worker = max(1, -(-concurrency // self.size))
        self.memory_limit = memory_limit
        #: Live mode: keep one started worker that has not loaded the agent yet, so a reload after an
        #: edit only imports the agent (tens of milliseconds), not the interpreter and tui-eval.
        self.keep_spare = keep_spare
        self.workers: list[_Process] = []
        self._spare: asyncio.Task[_Process] | None = None
        self._job_ids = itertools.count(1)
        self._error: str | None = None
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._growing: asyncio.Task[None] | None = None
        #: Bumped by each restart: a worker started before it loaded the old code.
        self._generation = 0
        self._watchdog: asyncio.Task[None] | None = None
        self._solo: set[_Process] = set()
        self._background: set[asyncio.Future[Any]] = set()
        self._closed = False

    # ---- executor interface ------------------------------------------------------------------

    def source_paths(self) -> list[Path]:
        from ..agents.folder import source_files

        return source_files(Path(self.ref))

    async def start(self) -> str | None:
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if not self._started:
                self._started = True
                worker = await self._new_worker()
                if worker is not None:
                    self.workers.append(worker)
                if self.keep_spare:
                    # Not at once: the run this load is for comes first (a start-up takes a core).
                    asyncio.get_running_loop().call_later(SPARE_DELAY, self._prepare_spare)
            return self._error

    async def restart(self) -> str | None:
        """The agent's code changed: every worker is replaced (a fresh interpreter imports it anew). The
        old ones are stopped meanwhile, in the background; the warm spare, if any, takes over at once."""
        old, self.workers = self.workers, []
        for worker in old:
            self._in_background(worker.stop())
        # A worker still being started imported the old files: it is stopped when it is ready, never used.
        self._generation += 1
        self._growing = None
        self._error = None
        self._started = False
        return await self.start()

    def _in_background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        error = await self.start()
        if error is not None:
            return Inference(error=f"agent could not start a session: {error}")
        worker = await self._pick()
        if worker is None:
            return Inference(error=f"agent could not start a session: {self._error or 'no worker process'}")
        try:
            return await self._run_on(worker, job, judge, on_turn, solo=False)
        except _WorkerLost as lost:
            if not self.retry_after_crash:
                return Inference(actual=lost.actual, error=f"its worker died: {lost.cause} {lost.where()}; "
                                 "not run again (--no-retry-after-crash)")
        async with self._solo_slots:
            inference = await self._run_solo(job, judge, on_turn)
        inference.reruns_after_crash += 1
        return inference

    async def aclose(self) -> None:
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._growing is not None:
            await asyncio.wait([self._growing])  # a worker being started is stopped with the others
        workers = self.workers + list(self._solo)
        self.workers = []
        if self._spare is not None:
            spare = self._spare
            self._spare = None
            try:
                workers.append(await spare)
            except Exception:  # noqa: BLE001 - a spare that never started has nothing to stop
                log.debug("the spare worker had not started", exc_info=True)
        await asyncio.gather(*(w.stop() for w in workers), *self._background, return_exceptions=True)

    # ---- workers -----------------------------------------------------------------------------

    async def _spawn(self) -> _Process:
        worker = _Process(self)
        await worker.spawn()
        return worker

    def _prepare_spare(self) -> None:
        if self._spare is None and not self._closed:
            self._spare = asyncio.create_task(self._spawn())

    async def _new_worker(self, *, solo: bool = False) -> _Process | None:
        """A worker with the agent loaded (the spare if there is one), or None with `_error` set."""
        worker: _Process | None = None
        if self._spare is not None and not solo:
            spare, self._spare = self._spare, None
            try:
                worker = await spare
            except Exception:  # noqa: BLE001 - a spare that failed to start: start another
                log.warning("the spare worker failed to start", exc_info=True)
        if worker is None:
            try:
                worker = await self._spawn()
            except OSError as exc:
                self._error = f"cannot start a worker process: {exc}"
                return None
        error = await worker.load(self.ref)
        if error is not None:
            if not solo:
                self._error = error
            await worker.stop()
            return None
        if worker.name:
            self.name = worker.name
        self._ensure_watchdog()
        return worker

    async def _pick(self) -> _Process | None:
        """The live worker with the fewest cases in flight. The pool grows (in the background) once every
        worker has `per_worker` cases in flight, so a small run starts one process; a case waits for a
        new worker only when none is left."""
        live = [w for w in self.workers if not w.dead and not w.retiring]
        if not live:
            self._grow()
            assert self._growing is not None
            await asyncio.wait([self._growing])
            live = [w for w in self.workers if not w.dead and not w.retiring]
            return min(live, key=lambda w: len(w.jobs)) if live else None
        least = min(live, key=lambda w: len(w.jobs))
        if len(live) < self.size and len(least.jobs) >= self.per_worker:
            self._grow()
        return least

    def _grow(self) -> None:
        if self._growing is not None and not self._growing.done() or self._closed:
            return

        generation = self._generation

        async def grow() -> None:
            worker = await self._new_worker()
            if worker is not None:
                if self._closed or generation != self._generation:
                    await worker.stop()
                else:
                    self.workers.append(worker)

        self._growing = asyncio.create_task(grow())

    def lost(self, worker: _Process) -> None:
        """A worker ended: it takes no more cases; its replacement starts when a case needs one."""
        if worker in self.workers:
            self.workers.remove(worker)
            if not self._closed:
                log.warning("worker %d ended: %s", worker.id, worker.cause())
        self._solo.discard(worker)

    async def _run_on(self, worker: _Process, job: CaseJob, judge: JudgeClient | None, on_turn: OnTurn | None,
                      *, solo: bool) -> Inference:
        try:
            spec = spec_of(job)
        except CaseNotSent as exc:
            return Inference(error=str(exc))
        job_id = next(self._job_ids)
        future: asyncio.Future[Inference] = asyncio.get_running_loop().create_future()
        pending = _Pending(job=job, future=future, on_turn=on_turn, judge=judge, worker=worker, solo=solo)
        worker.jobs[job_id] = pending
        worker.send(RunCase(job_id, spec))
        try:
            return await future
        except asyncio.CancelledError:
            worker.jobs.pop(job_id, None)
            worker.send(CancelCase(job_id))
            raise
        finally:
            if worker.retiring and not worker.jobs and worker in self.workers:
                self.workers.remove(worker)
                self._in_background(worker.stop())

    async def _run_solo(self, job: CaseJob, judge: JudgeClient | None, on_turn: OnTurn | None) -> Inference:
        """Run a case alone in a fresh worker: if that worker dies too, this case is the culprit."""
        worker = await self._new_worker(solo=True)
        if worker is None:
            return Inference(error=f"agent could not start a session: {self._error or 'no worker process'}")
        self._solo.add(worker)
        try:
            return await self._run_on(worker, job, judge, on_turn, solo=True)
        except _WorkerLost as lost:
            where = lost.where()
            if worker.killed_because is not None and worker.killed_because.startswith("did not respond"):
                reason = (f"turn {max(lost.turn, 0) + 1} timed out after {job.turn_timeout:g} s "
                          f"({lost.cause})")
            else:
                reason = f"{lost.cause} {where}"
            return Inference(actual=lost.actual, error=reason)
        finally:
            self._solo.discard(worker)
            if not worker.dead:
                await worker.stop()

    # ---- the watchdog ------------------------------------------------------------------------

    def _ensure_watchdog(self) -> None:
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        """Kill a worker whose case is past its turn's deadline and has not said so itself: its event
        loop does not run (C code holding the GIL, a sync call on the loop)."""
        while not self._closed:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for worker in list(self.workers) + list(self._solo):
                if worker.dead or worker.killed_because is not None:
                    continue
                late = [p for p in worker.jobs.values() if p.clock.late(now)]
                if late:
                    timeout = late[0].job.turn_timeout
                    worker.kill(f"did not respond for {timeout:g} s after a turn's timeout; it was killed")
