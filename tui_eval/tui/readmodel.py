"""The dashboard's read model: one inbound queue of typed records, folded into the listing on the UI thread.

Producers (the engine link's reader thread, the folder loader, reload workers) only `put` records into
the `Inbox`. The app's timer calls `ReadModel.pull(budget)`, which applies every waiting record to plain
state (the listing's files and results, the run in progress) and returns the `Changes` the screens
redraw from. Finished cases are stored a slice at a time, within the budget, so keys never wait behind
a burst of 100,000 results. Nothing here imports Textual: it is tested without a screen.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from itertools import repeat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Union

from ..engine import events as ev
from ..engine import feed
from .chatlog import ChatLog
from .listing import CaseListing, WorkspaceDelta
from .loader import FileLoaded, FolderOpened, LoadDone, Notice, ResultLoaded
from .latest import Fetcher, Finished, held
from .progress import RunSnapshot, RunState

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey

log = logging.getLogger(__name__)

#: The origin of this session's results (the summary shows it where a saved result shows its date).
SESSION = "this session"
#: Results stored per slice; storing stops between slices once its budget is spent.
FOLD_CHUNK = 50

#: Records the screen should show at once rather than at the next tick (a run starting, stopping).
URGENT = (feed.Fetched, feed.RunBegan, feed.RunOver, feed.RunEnded, feed.EngineGone, ev.CasesStopped, ev.RunFinished,
          ev.RunStarted, feed.ChatTurn, feed.ChatEnded)


#: What the read model folds: the engine's records (its events among them) and the folder loader's.
Inbound = Union[feed.Record, FileLoaded, FolderOpened, LoadDone, Notice, ResultLoaded]


def _stored(item: tuple[Any, ...]) -> tuple[Any, ...]:
    """A case of a CasesDone as the store takes it: ("run", CaseKey, Finished, repetition)."""
    _run, (eval_file, eval_id), summary, repetition = item
    return "run", ev.CaseKey(eval_file, eval_id), Finished(feed.summary_of(summary), held(repetition)), repetition


class Inbox:
    """The one inbound queue: any thread puts records, the UI thread takes them all at once."""

    def __init__(self) -> None:
        self._queue: deque[Inbound] = deque()

    def put(self, record: Inbound) -> None:
        self._queue.append(record)

    def put_many(self, records: list[Inbound]) -> None:
        self._queue.extend(records)

    def take(self) -> list[Inbound]:
        queue = self._queue
        return [queue.popleft() for _ in range(len(queue))]

    def __len__(self) -> int:
        return len(self._queue)


@dataclass(slots=True)
class Changes:
    """What one pull changed, for the screens to redraw."""

    #: Cases whose result, running state or file changed.
    dirty: set[CaseKey] = field(default_factory=set)
    files: WorkspaceDelta = field(default_factory=WorkspaceDelta)
    #: Files the engine re-read: the app reloads the dashboard's copy of them.
    reload: list[Path] = field(default_factory=list)
    #: (text, severity) lines for the user.
    messages: list[tuple[str, str]] = field(default_factory=list)
    #: A new run became the current one (the run panel starts afresh).
    new_run: bool = False
    #: The current run's state, when it changed.
    run: RunSnapshot | None = None
    #: The run's phase changed (keys that depend on it come and go).
    phase: bool = False
    #: The run book (tokens, cost, latency) took finished cases.
    insight: bool = False
    #: A run's timeline entry was made (the summary shows the last run).
    timeline: bool = False
    #: The start-up scan just ended.
    loaded: bool = False
    #: A case in flight answered a turn, or the cases in flight changed.
    in_flight: bool = False
    #: A chat's play answered a turn or ended.
    chat: bool = False

    def __bool__(self) -> bool:
        return bool(self.dirty or self.files or self.reload or self.messages or self.new_run or self.run
                    or self.phase or self.insight or self.timeline or self.loaded or self.in_flight
                    or self.chat)


class ReadModel:
    """The listing, the run in progress and the engine's state, folded from the inbox. UI thread only."""

    def __init__(self, listing: CaseListing, inbox: Inbox | None = None) -> None:
        self.listing = listing
        self.inbox = inbox or Inbox()
        #: The run in progress, or the last one.
        self.current: RunState | None = None
        #: True until the start-up scan (files and saved results) is done.
        self.loading = True
        #: Chats with agents (screens/chat.py), by ticket of their current play.
        self.chats: dict[int, ChatLog] = {}
        #: The turns each case in flight has answered so far (what the in-flight view shows).
        self.in_flight: dict[CaseKey, list[feed.TurnDone]] = {}
        #: The engine loaded the folder (commands sent before wait for that).
        self.engine_ready = False
        #: Why the engine is gone, if it is.
        self.engine_gone: str | None = None
        #: The engine's file watcher is up.
        self.watch_ready = False
        #: Told to stop the engine's runs when the user cancels (the app sends the command).
        self.cancel_engine: Callable[[], None] | None = None
        self._ticket = 0
        self._shown_run: RunState | None = None
        self._shown_phase: str | None = None
        self._shown_version = -1
        # ("run", key, finished, repetition) and ("saved", key, finished, origin, saved_at), not stored yet.
        self._backlog: deque[tuple[Any, ...]] = deque()
        self._runs_in_backlog = 0
        # What changed between two pulls (a run switch, results stored by `store`): told at the next pull.
        self._switched = Changes()

    def set_fetcher(self, fetcher: Fetcher | None) -> None:
        """Where full results of this session's runs come from (the engine holds them)."""
        self.listing.results.fetcher = fetcher
        self.listing.run_book.fetcher = fetcher

    # ---- runs ----------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        state = self.current
        return state is not None and state.active

    def new_run(self, label: str) -> RunState | None:
        """A state for a run about to start; None if a run is in progress."""
        if self.busy:
            return None
        self._ticket += 1
        state = RunState(label, self._ticket)
        self._switch_to(state)
        return state

    def cancel(self) -> None:
        state = self.current
        if state is not None and state.active:
            state.cancel()

    @property
    def backlog(self) -> int:
        """Results received but not stored yet."""
        return len(self._backlog)

    # ---- the fold --------------------------------------------------------------------------------

    def pull(self, budget: float | None = None) -> Changes:
        """Apply every waiting record, then store finished cases for `budget` seconds at most (None:
        all of them); say what changed."""
        changes, self._switched = self._switched, Changes()
        for record in self.inbox.take():
            self._apply(record, changes)
        cat = self.listing
        delta = changes.files = cat.poll()
        for path in delta.reloaded:
            # Every case of a re-read file redraws (its cases' texts may have changed), and results of
            # cases the file no longer has are dropped.
            name = str(path)
            for key in [k for k in cat.results.keys() if k.eval_file == name]:
                if cat.case(key) is None:
                    cat.set_result(key, None)
                changes.dirty.add(key)
            changes.dirty.update(cat.key(path, c.eval_id) for c in cat.cases(path))
        state = self.current
        self._store(changes, None if budget is None else time.perf_counter() + budget)
        if state is not None:
            snap = state.drain()
            if snap.version != self._shown_version:
                self._shown_version = snap.version
                changes.run = snap
            if snap.running != cat.running:
                changes.dirty |= snap.running ^ cat.running
                cat.running = snap.running
                for key in [k for k in self.in_flight if k not in cat.running]:
                    del self.in_flight[key]
                changes.in_flight = True
            if snap.phase != self._shown_phase:
                self._shown_phase = snap.phase
                changes.phase = True
            if snap.phase in ("finished", "cancelled", "failed") and not self._runs_in_backlog:
                if cat.run_book.finish(snap.phase, cat.clock(), snap.saved) is not None:  # once per run
                    changes.timeline = True
        return changes

    def store(self, budget: float) -> None:
        """Store waiting finished cases for `budget` seconds at most, between pulls (the next pull tells
        what they changed): a run's results go in in small slices, so a key never waits behind many."""
        if self._backlog:
            self._store(self._switched, time.perf_counter() + budget)

    def _switch_to(self, state: RunState) -> None:
        """A new run becomes current: the last one's cases still waiting belong to its book, stored first."""
        changes = self._switched
        if self.cancel_engine is not None:
            state.set_canceller(self.cancel_engine)
        self.current = state
        if self._runs_in_backlog:
            self._store(changes, None, runs_only=True)
            last = self._shown_run
            if last is not None:
                snap = last.drain()
                if snap.phase in ("finished", "cancelled", "failed"):
                    self.listing.run_book.finish(snap.phase, self.listing.clock(), snap.saved)
        self._shown_run = state
        self._shown_version = -1
        self.listing.run_book.start(state.label)
        changes.new_run = True

    def _store(self, changes: Changes, deadline: float | None, *, runs_only: bool = False) -> None:
        cat = self.listing
        backlog = self._backlog
        book = cat.run_book
        while backlog:
            chunk = [backlog.popleft() for _ in range(min(FOLD_CHUNK, len(backlog)))]
            if runs_only:
                keep = [item for item in chunk if item[0] != "run"]
                chunk = [item for item in chunk if item[0] == "run"]
            runs = [item if type(item[1]) is not tuple else _stored(item) for item in chunk if item[0] == "run"]
            if runs:
                # Before the results are stored: the book reads the results they replace (broke / fixed).
                book.feed([(key, finished) for _k, key, finished, _r in runs], [rep for *_x, rep in runs],
                          cat.results.summary)
                self._runs_in_backlog -= len(runs)
                changes.insight = True
            if runs:
                finished = [(key, fin) for _k, key, fin, _r in runs]
                cat.put_finished(finished, SESSION)
                changes.dirty.update([key for key, _f in finished])
            for item in chunk:
                if item[0] == "saved" and cat.results.origin(item[1]) != SESSION:
                    cat.set_result(item[1], item[2], item[3], item[4])
                    changes.dirty.add(item[1])
            if runs_only:
                backlog.extendleft(reversed(keep))
                if not self._runs_in_backlog:
                    return
                continue
            if deadline is not None and time.perf_counter() >= deadline:
                return

    def _apply(self, record: Inbound, changes: Changes) -> None:
        """One record: O(1), except a file's (its copy is swapped in)."""
        cat = self.listing
        if type(record) is feed.CaseDone:  # one case (the engine sends batches): taken as a batch of one
            record = feed.cases_done([record], ended=(record.key,))
        if type(record) is feed.CasesDone:
            state = self.current
            if state is not None:
                state.apply(record)
            # Plain keys and summaries until stored (`_stored`): taking a batch costs no Python call per case.
            self._backlog.extend(zip(repeat("run"), record.keys, record.summaries, record.repetitions))
            self._runs_in_backlog += len(record.keys)
        elif type(record) is feed.CaseBegun or type(record) is feed.MetricsScored:
            if self.current is not None:
                self.current.apply(record)
            if type(record) is feed.CaseBegun:
                self.in_flight[record.key] = []
                changes.in_flight = True
        elif type(record) is feed.TurnDone:
            self.in_flight.setdefault(record.key, []).append(record)
            changes.in_flight = True
        elif isinstance(record, ResultLoaded):
            self._backlog.append(("saved", record.key, Finished(record.summary, record.result), record.origin,
                                  record.saved_at))
        elif isinstance(record, FileLoaded):
            self._file_loaded(record)
        elif isinstance(record, FolderOpened):
            if cat.workspace is None:
                cat.workspace = record.workspace
        elif isinstance(record, LoadDone):
            self.loading = False
            cat.loaded = True
            changes.loaded = True
        elif isinstance(record, Notice):
            changes.messages.append((record.text, record.severity))
        elif isinstance(record, feed.RunBegan):
            state = self.current
            if state is None or not state.active or state.claimed:
                # A live re-run the engine started itself (a save): a state of its own.
                self._ticket += 1
                state = RunState(record.reason if not record.rescore else f"re-score: {record.reason}", self._ticket)
                self._switch_to(state)
                switched, self._switched = self._switched, Changes()
                changes.dirty |= switched.dirty
                changes.new_run = True
                changes.insight |= switched.insight
                changes.timeline |= switched.timeline
            state.claimed = True
            state.mark_running()
        elif isinstance(record, feed.RunOver):
            state = self.current
            if state is not None and state.active and state.claimed:
                state.finish("cancelled" if state.cancel_requested else "finished")
        elif isinstance(record, (feed.ChatTurn, feed.ChatEnded)):
            chat = self.chats.get(record.ticket)
            if chat is not None and chat.take(record):
                changes.chat = True
        elif isinstance(record, feed.RunEnded):
            state = self.current
            if state is not None and state.ticket == record.ticket and state.active:
                if record.error:
                    state.finish("failed", record.error)
                else:
                    state.finish("cancelled" if state.cancel_requested else "finished")
        elif type(record) is feed.Fetched:
            arrived = [(wanted, feed.unpack(payload) if payload is not None else None)
                       for wanted, payload in record.results]
            cat.run_book.arrived(arrived)
            changes.dirty.update(cat.results.arrived(arrived))
        elif isinstance(record, feed.FilesChanged):
            changes.reload.extend(Path(p) for p in record.paths)
        elif isinstance(record, feed.EngineReady):
            self.engine_ready = True
        elif isinstance(record, feed.WatchReady):
            self.watch_ready = True
        elif isinstance(record, feed.EngineGone):
            self.set_fetcher(None)  # what it held is gone with it: no view says "loading" for ever
            self.engine_ready = False
            self.engine_gone = record.message
            changes.messages.append((f"{record.message}: runs are off until the dashboard restarts", "error"))
            state = self.current
            if state is not None and state.active:
                state.finish("failed", record.message)
        else:
            self._apply_live(record, changes)

    def _apply_live(self, record: feed.Record, changes: Changes) -> None:
        if isinstance(record, ev.AgentReloaded):
            if record.error:
                changes.messages.append((f"agent {record.ref} could not be loaded: {record.error}", "error"))
        elif isinstance(record, ev.AgentStale):
            changes.messages.append((f"{Path(record.path).name} changed: the agent reloads before its next run "
                                     "(live re-runs on agent edits are off)", "information"))
        elif isinstance(record, ev.StaleChanged):
            for key, reasons in record.stale:
                self.listing.mark_stale(key, reasons)
                changes.dirty.add(key)
            for key in record.fresh:
                self.listing.mark_stale(key, ())
                changes.dirty.add(key)
        elif isinstance(record, ev.AgentPaused):
            changes.messages.append((record.message, "warning"))
        elif isinstance(record, ev.CasesRemoved):
            for key in record.keys:
                self.listing.set_result(key, None)
                changes.dirty.add(key)
        elif isinstance(record, ev.FileProblem):
            pass  # the browser flags broken files itself (from the dashboard's copy of the file)
        elif isinstance(record, ev.WatchFailed):
            changes.messages.append((f"file watching stopped: {record.message}; retrying in {record.retry_after:g} s",
                                     "error"))
        elif isinstance(record, ev.Log):
            if record.level in ("warning", "error"):
                changes.messages.append((record.message, "warning"))
        else:
            state = self.current
            if state is not None:
                state.apply(record)
            elif isinstance(record, ev.RunError):
                changes.messages.append((record.message, "error"))

    def _file_loaded(self, record: FileLoaded) -> None:
        ws = self.listing.workspace
        if ws is None:
            return
        ws.agent_dirs = set(record.agent_dirs)
        if record.kind == "eval":
            if record.state is None:
                ws.eval_files.pop(record.path, None)
            else:
                ws.eval_files[record.path] = record.state  # type: ignore[assignment]
                eval_set = record.state.eval_set  # type: ignore[union-attr]
                if eval_set is not None and record.index is not None:
                    self.listing.adopt_index(record.path, eval_set.eval_cases, record.index)
        elif record.state is None:
            ws.configs.pop(record.path, None)
        else:
            ws.configs[record.path] = record.state  # type: ignore[assignment]
