"""The dashboard's engine in a process of its own: `python -m tui_eval.engine.service --fd N`.

It owns a LiveSession (the workspace, the file watcher, runs, scoring, saving) on an asyncio loop, reads
commands (`engine.feed`) from a socket on a thread of its own and sends typed records back on the same
socket, a batch at a time. The dashboard's process then never shares a GIL with scoring or agent code.

- A cancel sets the runs' stop flags from the command thread at once (`LiveSession.request_stop` is
  thread-safe), so no further case starts even while the loop scores flat out; the loop then cancels
  the cases under way, and their finished cases are saved.
- A finished case goes up as its summary; the engine keeps its full result (the latest run's, each
  repetition) and sends it when the face asks (`Fetch`), from the command thread, so a face showing a
  case never waits for the run's scoring. Pickling every result for a face that shows a few was much
  of a replay run's time in this process (figures: bench/README.md).
- Records are batched: a batch goes up when it is FLUSH_SECONDS old or holds a record the face shows at
  once (a run starting, stopping, ending). A face that reads slowly slows the engine (the socket's
  back-pressure); it never blocks the face.
- The dashboard going away in any way (quit, crash, SIGKILL) closes the socket: the engine then stops
  its runs, saves what finished and exits (after CLOSE_GRACE seconds at most).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import pickle
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import orjson

from . import events as ev
from .feed import (
    Cancel,
    CaseBegun,
    Chat,
    ChatEnded,
    ChatTurn,
    CaseDone,
    Close,
    EngineConfig,
    EngineReady,
    Fetch,
    Fetched,
    FilesChanged,
    MetricsScored,
    Reload,
    RunBegan,
    RunCases,
    Skip,
    TurnDone,
    RunEnded,
    RunOver,
    SetModes,
    WatchReady,
    Wanted,
    cases_done,
    pack,
    summarize,
)

if TYPE_CHECKING:  # pragma: no cover
    from multiprocessing.connection import Connection

    from ..schema.results import CaseResult
    from .live import LiveSession

log = logging.getLogger(__name__)

#: Seconds a record waits at most before its batch goes up (the dashboard folds at 8 Hz).
FLUSH_SECONDS = 0.05
#: Records in one batch at most.
BATCH_MAX = 2000
#: Seconds the engine may take to save and close once the dashboard is gone, before it exits anyway.
CLOSE_GRACE = 60.0
#: The engine process's cyclic-GC thresholds once the folder is loaded (set by its entry point, `main`).
ENGINE_GC_THRESHOLD = (10_000, 10_000, 100)
#: Seconds before a failed file watcher is started again.
WATCH_RETRY_SECONDS = 2.0

_URGENT = (RunBegan, RunOver, RunEnded, ev.CasesStopped, ev.RunFinished, ev.RunStarted, ev.RunError,
           EngineReady, WatchReady, FilesChanged)


class EngineService:
    """One LiveSession driven by commands; everything it says goes to `send` as batches of records."""

    def __init__(self, config: EngineConfig, send: Callable[[list[Any]], None],
                 on_loaded: Callable[[], None] | None = None) -> None:
        self.config = config
        self._send = send
        #: Called once the folder and its saved results are loaded (the entry point's heap policy).
        self.on_loaded = on_loaded
        self._out: list[Any] = []
        self._scored: dict[str, int] = {}
        self._oldest = 0.0
        self.session: LiveSession | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[Any] = []
        self._runs: dict[int, asyncio.Future[Any]] = {}
        self._stop_runs = False
        self._closing: asyncio.Event | None = None
        self._seen: dict[Path, tuple[Any, Any]] = {}
        self._gone = False
        # Each case's results in the latest run that finished it: (that run's number, repetition -> result).
        # Written on the loop; read by the command thread (`fetch`): single dict operations only.
        self._kept: dict[ev.CaseKey, tuple[int, dict[int, CaseResult]]] = {}
        # Cases whose start went up and whose end has not.
        self._started: set[ev.CaseKey] = set()
        self._run_number = 0
        # Chats being played (`Chat`), by ticket.
        self._chats: dict[int, asyncio.Future[None]] = {}

    # ---- records up (loop thread) --------------------------------------------------------------

    def on_event(self, event: ev.Event) -> None:
        """The session's event sink: each engine event becomes a record (or a count) in the batch."""
        if isinstance(event, ev.MetricProgress):
            self._scored[event.metric_name] = self._scored.get(event.metric_name, 0) + 1
            self._maybe_flush()
            return
        if isinstance(event, ev.InvocationInferred):
            # The finished case carries its turns; the in-flight view gets a bounded summary of each turn
            # of a case still running when the batch goes up (made then: most turns of a fast run never are).
            self.put(event)
            return
        if isinstance(event, ev.CaseFinished):
            self._keep(event.key, event.repetition, event.result)
            record: Any = CaseDone(event.key, summarize(event.result), event.repetition)
        elif isinstance(event, ev.CaseStarted):
            record = CaseBegun(event.key)
        elif isinstance(event, ev.LiveRunStarted):
            self._run_number += 1
            self._report_files()
            record = RunBegan(event.reason, event.rescore)
        elif isinstance(event, ev.LiveRunFinished):
            record = RunOver(event.reason, event.rescore)
        elif isinstance(event, (ev.CasesRemoved, ev.FileProblem, ev.AgentStale)):
            if isinstance(event, ev.CasesRemoved):
                for key in event.keys:
                    self._kept.pop(key, None)
            self._report_files()
            record = event
        else:
            record = event
        if isinstance(record, ev.RunStarted) and self._stop_runs and self.session is not None:
            self.session.request_stop()  # a cancel came while this run was being set up
        self.put(record)

    def _keep(self, key: ev.CaseKey, repetition: int, result: CaseResult) -> None:
        kept = self._kept.get(key)
        if kept is None or kept[0] != self._run_number:
            kept = self._kept[key] = (self._run_number, {})
        kept[1][repetition] = result

    def fetch(self, wanted: tuple[Wanted, ...]) -> tuple[tuple[Wanted, bytes | None], ...]:
        """Any thread: the wanted results, pickled (None for one the engine does not hold)."""
        out = []
        for key, repetition in wanted:
            kept = self._kept.get(key)
            result = kept[1].get(repetition) if kept is not None else None
            out.append(((key, repetition), pack(result) if result is not None else None))
        return tuple(out)

    def put(self, record: Any) -> None:
        if not self._out:
            self._oldest = time.monotonic()
        self._out.append(record)
        if isinstance(record, _URGENT):
            self.flush()
        else:
            self._maybe_flush()

    def _maybe_flush(self) -> None:
        if (self._out or self._scored) and (len(self._out) >= BATCH_MAX
                                            or time.monotonic() - self._oldest >= FLUSH_SECONDS):
            self.flush()

    def flush(self) -> None:
        if self._scored:
            self._out.append(MetricsScored(self._scored))
            self._scored = {}
        if not self._out or self._gone:
            self._out.clear()
            return
        batch, self._out = self._fold_finished(self._out), []
        self._oldest = time.monotonic()
        try:
            self._send(batch)
        except OSError as exc:  # the dashboard is gone: stop, save what finished, exit
            log.info("the dashboard went away (%s): closing", exc)
            self._gone = True
            self.close()

    def _fold_finished(self, out: list[Any]) -> list[Any]:
        """The batch's finished cases as one CasesDone (where the first of them stood), without the starts
        of cases that finish later in the same batch: a face folds thousands of them in one step."""
        done = [r for r in out if type(r) is CaseDone]
        if not done:
            self._started.update(r.key for r in out if type(r) is CaseBegun)
            return [_turn_done(r) if type(r) is ev.InvocationInferred else r for r in out]
        # A start is told only if the case has not finished again by the end of the batch.
        finishing: set[ev.CaseKey] = set()
        told = [True] * len(out)
        for i in range(len(out) - 1, -1, -1):
            kind = type(out[i])
            if kind is CaseDone:
                finishing.add(out[i].key)
            elif (kind is CaseBegun or kind is ev.InvocationInferred) and out[i].key in finishing:
                told[i] = False  # (a turn of a case that ends in this batch: nobody watches it in flight)
        ended = tuple(key for key in finishing if key in self._started)
        self._started.difference_update(ended)
        folded: list[Any] = []
        for record, keep in zip(out, told):
            kind = type(record)
            if kind is CaseDone:
                if done:
                    folded.append(cases_done(done, ended))
                    done = []
            elif keep:
                if kind is CaseBegun:
                    self._started.add(record.key)
                folded.append(_turn_done(record) if kind is ev.InvocationInferred else record)
        return folded

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            self._report_files()
            if self._out and time.monotonic() - self._oldest >= FLUSH_SECONDS or self._scored:
                self.flush()

    def _identities(self) -> dict[Path, tuple[Any, Any]]:
        assert self.session is not None
        ws = self.session.workspace
        seen: dict[Path, tuple[Any, Any]] = {p: (s.eval_set, s.error) for p, s in list(ws.eval_files.items())}
        seen.update({p: (s.config, s.error) for p, s in list(ws.configs.items())})
        return seen

    def _report_files(self) -> None:
        """Tell the face which files the engine re-read since the last look (it reloads its own copy)."""
        if self.session is None:
            return
        now = self._identities()
        old = self._seen
        changed = [p for p, ids in now.items() if old.get(p) is None or any(a is not b for a, b in zip(ids, old[p]))]
        changed += [p for p in old if p not in now]
        self._seen = now
        if changed:
            self.put(FilesChanged(tuple(str(p) for p in changed)))

    # ---- commands (any thread, then the loop) ----------------------------------------------------

    def stop_now(self) -> None:
        """From the command thread, at once: the runs in progress start no further case."""
        if self.session is not None:
            self.session.request_stop()

    def handle(self, command: Any) -> None:
        """In the loop: one command (kept for later while the folder loads)."""
        if isinstance(command, Close):
            self.close()
        elif isinstance(command, Cancel):
            self._cancel()
        elif self.session is None:
            self._pending.append(command)
        elif isinstance(command, RunCases):
            self._runs[command.ticket] = asyncio.ensure_future(self._run(command))
        elif isinstance(command, SetModes):
            self.session.rerun = command.live
            self.session.rerun_on_agent_change = command.agent_reruns
        elif isinstance(command, Chat):
            self._chats[command.ticket] = asyncio.ensure_future(self._chat(command))
        elif isinstance(command, Skip):
            if not self.session.skip(command.key):
                log.info("skip: case %s is not running (it finished meanwhile?)", command.key)
        elif isinstance(command, Reload):
            # As a watched save: re-read, mark what it makes stale and (live) re-run or re-score it.
            asyncio.ensure_future(self._reload(Path(command.path)))
        else:
            log.error("unknown command %r", command)

    async def _reload(self, path: Path) -> None:
        assert self.session is not None
        try:
            await self.session.handle_changes([path])
        finally:
            self._seen = self._identities()  # the face re-read it already

    def _cancel(self) -> None:
        self._stop_runs = True
        for command in [c for c in self._pending if isinstance(c, RunCases)]:
            self._pending.remove(command)
            self.put(RunEnded(command.ticket))
        if self.session is None:
            return
        self.session.request_stop()
        self.session.cancel()
        if not self.session.runs:
            # No case runs: the runs asked for are waiting for the session (a live re-run holds it).
            for task in self._runs.values():
                task.cancel()

    async def _chat(self, command: Chat) -> None:
        """Play a chat's messages with its agent, in the executor that runs its cases, turn by turn up."""
        from ..agents.conversation import CaseJob
        from ..schema.model import Content, EvalCase, Invocation, SessionInput

        assert self.session is not None
        error: str | None = None
        try:
            executor = await self.session.agent(command.agent_ref)
            case = EvalCase(eval_id=f"chat-{command.ticket}",
                            conversation=[Invocation(user_content=Content.from_text(m)) for m in command.messages],
                            session_input=SessionInput(app_name=command.app_name, user_id=command.user_id))
            job = CaseJob(str(Path(command.agent_ref) / "chat"), case.eval_id, case,
                          self.session.options.turn_timeout, mock_tools=None)

            def on_turn(index: int, invocation: Invocation) -> None:
                self.put(ChatTurn(command.ticket, index, orjson.dumps(invocation.to_wire())))

            inference = await executor.infer(job, on_turn=on_turn)
            error = inference.error
        except asyncio.CancelledError:
            error = "stopped"
        except Exception as exc:  # told to the chat (and logged): the dashboard goes on
            log.exception("chat %s failed", command.ticket)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._chats.pop(command.ticket, None)
        self.put(ChatEnded(command.ticket, error))
        self.flush()

    async def _run(self, command: RunCases) -> None:
        assert self.session is not None
        error = None
        try:
            await self.session.run_keys(command.keys, command.label)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # reported to the face as the run's failure, with the traceback logged
            log.exception("run %r failed", command.label)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._runs.pop(command.ticket, None)
            if not self._runs:
                self._stop_runs = False
        self.put(RunEnded(command.ticket, error))

    # ---- life ------------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Load the folder, then run commands until `close`."""
        from .live import LiveSession
        from .options import RunOptions
        from .saved import latest_saved_results
        from .store import ResultStore

        self.loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        ticker = asyncio.ensure_future(self._ticker())
        cfg = self.config
        session = LiveSession(
            Path(cfg.root), agent_ref=cfg.agent_ref, options=cfg.options or RunOptions(),
            store=cfg.store if cfg.store is not None else ResultStore(), on_event=self.on_event,
            rerun=cfg.live, rerun_on_agent_change=cfg.agent_reruns, num_runs=cfg.num_runs)
        await session.start(run=False)
        # Saved inferences let a config edit re-score without running the agent.
        session.results.update({key: result for key, result, *_ in latest_saved_results(session.workspace)})
        await session.restale()  # a saved result whose files changed since is stale from the first frame
        self.session = session
        self._seen = self._identities()
        if self.on_loaded is not None:
            self.on_loaded()
        self.put(EngineReady())
        watcher = asyncio.ensure_future(self._watch()) if cfg.watch else None
        pending, self._pending = self._pending, []
        for command in pending:
            self.handle(command)
        try:
            await self._closing.wait()
        finally:
            session.stop()
            session.request_stop()
            session.cancel()
            # The runs save what finished before they end.
            if self._runs:
                await asyncio.gather(*self._runs.values(), return_exceptions=True)
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            await session.aclose()
            ticker.cancel()
            self.flush()

    def close(self) -> None:
        if self._closing is not None:
            self._closing.set()

    async def _watch(self) -> None:
        assert self.session is not None
        ready = asyncio.Event()

        async def tell() -> None:
            await ready.wait()
            self.put(WatchReady())

        waiter = asyncio.ensure_future(tell())
        try:
            await self.session.watch(ready=ready, retry_after=WATCH_RETRY_SECONDS)
        finally:
            waiter.cancel()


def _turn_done(event: ev.InvocationInferred) -> TurnDone:
    return TurnDone.of(event.key, event.index, event.invocation)


def _read_commands(conn: Connection, service: EngineService, loop: asyncio.AbstractEventLoop,
                   send: Callable[[list[Any]], None]) -> None:
    """The command thread: a cancel stops the runs from here at once, and a fetch is answered from here;
    everything else goes to the loop. The socket closing (the dashboard is gone, however it went) is a
    close."""
    while True:
        try:
            command = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            command = Close()
        if isinstance(command, Fetch):
            try:
                send([Fetched(command.ticket, service.fetch(command.wanted))])
            except OSError as exc:  # the dashboard is gone: the next read says so
                log.info("could not answer a fetch: %s", exc)
            continue
        if isinstance(command, Cancel):
            service.stop_now()
        if isinstance(command, Close):
            service.stop_now()
            timer = threading.Timer(CLOSE_GRACE, _give_up)
            timer.daemon = True
            timer.start()
        try:
            loop.call_soon_threadsafe(service.handle, command)
        except RuntimeError:  # the loop is closed: the engine is exiting anyway
            return
        if isinstance(command, Close):
            return


def _give_up() -> None:
    log.error("the engine did not close within %.0f s of the dashboard going away: exiting", CLOSE_GRACE)
    logging.shutdown()
    os._exit(1)


def settle_heap() -> None:
    """The folder is loaded (with the cyclic GC off): keep it out of every later collection, then
    collect again, far less often than Python's default (a run keeps every finished case alive)."""
    gc.freeze()
    gc.set_threshold(*ENGINE_GC_THRESHOLD)
    gc.enable()


def main(argv: list[str] | None = None) -> int:
    from multiprocessing.connection import Connection

    from ..logging_setup import configure_logging, default_log_file

    parser = argparse.ArgumentParser(description="the dashboard's engine process (started by the dashboard)")
    parser.add_argument("--fd", type=int, required=True, help="the socket to the dashboard")
    args = parser.parse_args(argv)
    # This process is an entry point, so its heap policy is set here (figures: bench/README.md).
    gc.disable()
    conn = Connection(args.fd)
    config: EngineConfig = pickle.loads(conn.recv_bytes())
    configure_logging(config.log_level, default_log_file())
    lock = threading.Lock()

    def send(batch: list[Any]) -> None:
        data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
        with lock:
            conn.send_bytes(data)

    service = EngineService(config, send, on_loaded=settle_heap)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=_read_commands, args=(conn, service, loop, send), name="engine-commands",
                         daemon=True).start()
        await service.serve()

    try:
        asyncio.run(serve())
    except Exception:
        log.exception("the engine failed")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    code = main()
    logging.shutdown()
    # Agent code may leave threads running: the dashboard is gone, nothing is left to wait for.
    os._exit(code)
