"""The UI's handle on the engine: a LiveSession in its own loop, the run in progress, live mode.

Runs, re-runs, re-scores and file watching all happen in the engine loop (see `host`); file watching is
the engine's one watch loop (`LiveSession.watch`), which the bridge only starts and switches between
re-run and reload-only. Engine events are folded into a RunState (plain state) from that thread; the UI
pulls it on its timer.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING

from .host import EngineHost
from .state import Inbox, RunState

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey, Event
    from ..engine.live import LiveEvent, LiveSession

log = logging.getLogger(__name__)

#: Seconds before a failed file watcher (a watched folder vanished...) is started again.
WATCH_RETRY_SECONDS = 2.0


class SessionBridge:
    """Owns the LiveSession and its loop; `current` is the state of the run in progress (or the last one)."""

    def __init__(self, inbox: Inbox, *, live: bool = False, agent_reruns: bool = True) -> None:
        self.inbox = inbox
        self.session: LiveSession | None = None
        self.host: EngineHost | None = None
        self.live = live
        self.agent_reruns = agent_reruns
        self.watching = False
        self._lock = threading.Lock()
        self._current: RunState | None = None
        self._closing = False
        #: Set once the current file watcher is up (tests wait on it before saving files).
        self.watch_ready = threading.Event()

    # ---- set-up and tear-down ----------------------------------------------------------------

    def attach(self, session: LiveSession) -> None:
        """Adopt a loaded session and start its loop (call once the initial load is done)."""
        self.session = session
        self.host = EngineHost().start()

    def start_watching(self) -> None:
        if self.host is not None and not self.watching:
            self.watching = True
            self.host.submit(self._watch())

    def close(self) -> None:
        """Stop watching, cancel runs, release agents, stop the loop. Safe to call twice."""
        if self.host is None or self._closing:
            return
        self._closing = True
        self.host.stop(before=self._aclose())

    async def _aclose(self) -> None:
        assert self.session is not None
        self.session.stop()
        self.session.cancel()
        await self.session.aclose()

    # ---- runs (UI thread) --------------------------------------------------------------------

    @property
    def current(self) -> RunState | None:
        return self._current

    @property
    def busy(self) -> bool:
        state = self._current
        return state is not None and state.active

    def new_run(self, label: str) -> RunState | None:
        """A state for an explicit run about to start; None if a run is in progress."""
        with self._lock:
            if self._current is not None and self._current.active:
                return None
            state = self._current = RunState(label)
        self._arm(state)
        return state

    def _arm(self, state: RunState) -> None:
        host, session = self.host, self.session
        if host is not None and session is not None:

            def cancel() -> None:
                # At once, from this thread: no further case starts, even while the engine's loop is
                # busy; then, in the loop, the cases under way are cancelled.
                session.request_stop()
                host.call(session.cancel)

            state.set_canceller(cancel)

    def run_keys(self, state: RunState, keys: list[CaseKey], label: str) -> None:
        """Run cases in the engine loop and wait for the end (call from a thread worker, never the UI)."""
        assert self.host is not None and self.session is not None
        host = self.host
        future = host.submit(self.session.run_keys(keys, label))
        try:
            while True:
                try:
                    future.result(timeout=0.25)
                    break
                except FutureTimeout:
                    # Quitting stops the loop: never keep this worker thread (and so the exit) waiting.
                    if self._closing and not host.running:
                        break
        finally:
            if state.active:
                state.finish("cancelled" if state.cancel_requested else "finished")

    def cancel(self) -> None:
        state = self._current
        if state is not None and state.active:
            state.cancel()

    # ---- live mode (UI thread) ---------------------------------------------------------------

    def set_live(self, on: bool) -> None:
        """Live on: saves re-run what they change; off: saves only reload. The watcher keeps running."""
        self.live = on
        if self.host is not None and self.session is not None:
            self.host.call(self._apply_mode)

    def set_agent_reruns(self, on: bool) -> None:
        self.agent_reruns = on
        if self.host is not None and self.session is not None:
            self.host.call(self._apply_mode)

    def _apply_mode(self) -> None:
        """In the engine thread: the session's re-run switches follow the UI's toggles."""
        assert self.session is not None
        self.session.rerun = self.live
        self.session.rerun_on_agent_change = self.agent_reruns

    def reload(self, path: Path) -> None:
        """Reload one file now, in the engine loop, and wait for it (from a thread worker)."""
        assert self.host is not None and self.session is not None
        session = self.session

        async def reload() -> None:
            session.workspace.reload(path)

        self.host.submit(reload()).result(30)

    # ---- the engine loop ---------------------------------------------------------------------

    async def _watch(self) -> None:
        """Run the engine's watch loop until closed; a watcher that fails is reported and restarted."""
        assert self.session is not None
        self._apply_mode()
        ready = asyncio.Event()
        waiter = asyncio.ensure_future(self._signal_ready(ready))
        try:
            await self.session.watch(ready=ready, retry_after=WATCH_RETRY_SECONDS)
        finally:
            waiter.cancel()

    async def _signal_ready(self, ready: asyncio.Event) -> None:
        await ready.wait()
        self.watch_ready.set()

    # ---- engine events (engine thread) -------------------------------------------------------

    def on_event(self, event: Event | LiveEvent) -> None:
        """Fold one engine or live-loop event into plain state. Called in the engine thread."""
        from ..engine import events as ev
        from ..engine import live

        if isinstance(event, live.LiveRunStarted):
            with self._lock:
                state = self._current
                if state is None or not state.active or state.claimed:
                    state = self._current = RunState(event.reason if not event.rescore else f"re-score: {event.reason}")
                    fresh = True
                else:
                    fresh = False
                state.claimed = True
            if fresh:
                self._arm(state)
            state.mark_running()
        elif isinstance(event, live.LiveRunFinished):
            state = self._current
            if state is not None and state.active:
                state.finish("cancelled" if state.cancel_requested else "finished")
        elif isinstance(event, live.AgentReloaded):
            if event.error:
                self.inbox.push_message(f"agent {event.ref} could not be loaded: {event.error}", "error")
        elif isinstance(event, live.AgentStale):
            self.inbox.push_message(
                f"{Path(event.path).name} changed: the agent reloads before its next run "
                "(live re-runs on agent edits are off)")
        elif isinstance(event, live.CasesRemoved):
            self.inbox.push_removed(list(event.keys))
        elif isinstance(event, live.FileProblem):
            pass  # the browser flags broken files itself (it polls the workspace)
        elif isinstance(event, live.WatchFailed):
            self.inbox.push_message(f"file watching stopped: {event.message}; retrying in {event.retry_after:g} s",
                                    "error")
        elif isinstance(event, ev.Log):
            if event.level in ("warning", "error"):
                self.inbox.push_message(event.message, "warning")
        else:
            state = self._current
            if state is not None:
                state.apply(event)
            elif isinstance(event, ev.RunError):
                self.inbox.push_message(event.message, "error")
