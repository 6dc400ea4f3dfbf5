"""The UI's handle on the engine: a LiveSession in its own loop, the run in progress, live mode.

Runs, re-runs, re-scores and file watching all happen in the engine loop (see `host`). Engine events
are folded into a RunState (plain state) from that thread; the UI pulls it on its timer.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .host import EngineHost
from .state import Inbox, RunState

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.live import LiveSession


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
        self._reload_stop: asyncio.Event | None = None
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
            self.host.submit(self._watch_forever())

    def close(self) -> None:
        """Stop watching, cancel runs, release agents, stop the loop. Safe to call twice."""
        if self.host is None or self._closing:
            return
        self._closing = True
        self.host.stop(before=self._aclose())

    async def _aclose(self) -> None:
        assert self.session is not None
        if self._reload_stop is not None:
            self._reload_stop.set()
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
            state.set_canceller(lambda: host.call(session.cancel))

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
        was = self.live
        self.live = on
        if self.host is not None and was != on:
            self.host.call(self._switch_mode, was)

    def set_agent_reruns(self, on: bool) -> None:
        self.agent_reruns = on
        if self.host is not None and self.session is not None:
            self.host.call(self._apply_agent_reruns)

    def _apply_agent_reruns(self) -> None:
        assert self.session is not None
        self.session.rerun_on_agent_change = self.agent_reruns and self.live

    def _switch_mode(self, was_live: bool) -> None:
        assert self.session is not None
        if was_live:
            self.session.stop()
        elif self._reload_stop is not None:
            self._reload_stop.set()

    def reload(self, path: Path) -> None:
        """Reload one file now, in the engine loop, and wait for it (from a thread worker)."""
        assert self.host is not None and self.session is not None
        session = self.session

        async def reload() -> None:
            session.workspace.reload(path)

        self.host.submit(reload()).result(30)

    # ---- the engine loop ---------------------------------------------------------------------

    async def _watch_forever(self) -> None:
        """Watch files until closed: the LiveSession's loop when live, else reload-only."""
        assert self.session is not None
        session = self.session
        while not self._closing:
            self.watch_ready.clear()
            try:
                if self.live:
                    session.rerun_on_agent_change = self.agent_reruns
                    ready = asyncio.Event()
                    waiter = asyncio.ensure_future(self._signal_ready(ready))
                    try:
                        await session.watch(ready=ready)
                    finally:
                        waiter.cancel()
                else:
                    session.rerun_on_agent_change = False
                    self._reload_stop = asyncio.Event()
                    await self._reload_only(self._reload_stop)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the watcher died (a folder vanished...): say so, try again later
                self.inbox.push_message(f"file watching stopped: {type(exc).__name__}: {exc}", "error")
                await asyncio.sleep(2)

    async def _signal_ready(self, ready: asyncio.Event) -> None:
        await ready.wait()
        self.watch_ready.set()

    async def _reload_only(self, stop: asyncio.Event) -> None:
        """Reload saved eval files and configs without running anything; agent edits mark the agent stale."""
        from watchfiles import awatch

        assert self.session is not None
        session = self.session
        async for changes in awatch(*session.watch_paths(), watch_filter=lambda _c, p: session.relevant(p),
                                    stop_event=stop, step=20, rust_timeout=200, debounce=150,
                                    yield_on_timeout=True):
            self.watch_ready.set()
            sources: list[Path] = []
            for path in sorted({Path(p).resolve() for _c, p in changes}):
                kind = session.workspace.classify(path)
                if kind in ("eval", "config"):
                    session.workspace.reload(path)
                elif path.suffix == ".py" or kind == "agent":
                    sources.append(path)
            if sources:
                await session.handle_changes(sources)

    # ---- engine events (engine thread) -------------------------------------------------------

    def on_event(self, event: Any) -> None:
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
        elif isinstance(event, ev.Log):
            if event.level in ("warning", "error"):
                self.inbox.push_message(event.message, "warning")
        else:
            state = self._current
            if state is not None:
                state.apply(event)
            elif isinstance(event, ev.RunError):
                self.inbox.push_message(event.message, "error")
