"""The dashboard's side of the engine process: it starts the engine once the folder is loaded, asks it for
runs, cancels, modes and reloads, and fetches the full results the screens show."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .readmodel import URGENT

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import Wanted
    from ..engine.options import RunOptions
    from ..engine.runner import ResultSink
    from .app import EvalApp
    from .chatlog import ChatLog
    from .engine_link import EngineLink
    from .readmodel import Changes

log = logging.getLogger(__name__)


class EngineControl:
    """Owned by the app; all methods but the thread workers' run on the UI thread."""

    def __init__(self, app: EvalApp, *, agent_ref: str | None, run_options: RunOptions | None,
                 store: ResultSink | None, watch: bool) -> None:
        self.app = app
        self.model = app.model
        self.listing = app.listing
        self.loader = app.loader
        self.agent_ref = agent_ref
        self.run_options = run_options
        self.store = store
        #: The engine watches the folder (else an edit tells it which file to re-read).
        self.watch = watch
        #: The engine process, once started.
        self.link: EngineLink | None = None
        self._ui_loop: asyncio.AbstractEventLoop | None = None
        self._woken = False
        self._fetch_error: str | None = None
        self._chat_tickets = 0
        self.model.cancel_engine = self._cancel_engine

    @property
    def pid(self) -> int | None:
        return self.link.pid if self.link is not None else None

    @property
    def ready(self) -> bool:
        """Runs can start: the folder is loaded and the engine is up."""
        return not self.model.loading and self.link is not None and self.model.engine_gone is None

    def close(self) -> None:
        if self.link is not None:
            self.link.close()

    def take(self, changes: Changes) -> None:
        """A pull's consumer: start the engine once the folder is loaded; re-read what the engine re-read."""
        if changes.loaded:
            self._ui_loop = asyncio.get_running_loop()
            self.app.jobs.start(self._start, group="engine", name="engine", failure="Could not start the engine",
                                then=self.app.pump.tick)  # the keys that need the engine turn on now
        if changes.reload:
            self.app.jobs.start(partial(self._reread, changes.reload), group="reload", name="reload",
                                failure="Could not reload a file")

    # ---- the engine process ------------------------------------------------------------------

    def _start(self) -> None:
        """Thread worker, once the folder is loaded: start the engine process (it then reads the folder
        for itself). Not earlier: two processes reading a big folder at once slowed the first frame and
        the load on a shared machine (bench/README.md)."""
        from ..engine.feed import EngineConfig, EngineGone
        from .engine_link import EngineLink

        app = self.app
        link = EngineLink(EngineConfig(
            root=str(self.listing.root), agent_ref=self.agent_ref, options=self.run_options, store=self.store,
            num_runs=self.listing.run_book.num_runs, live=app.live, agent_reruns=app.agent_reruns,
            watch=self.watch, log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel())),
            self._from_engine)
        try:
            link.start()
        except OSError as exc:  # the folder is shown all the same: runs are off, and the user is told why
            log.error("could not start the engine process", exc_info=exc)
            self.model.inbox.put(EngineGone(f"the engine process could not start: {exc}"))
        else:
            self.link = link
            self.model.set_fetcher(self.fetch)

    def _from_engine(self, records: list[Any]) -> None:
        """The engine link's reader thread: queue a batch; a run starting or stopping is shown at once."""
        self.model.inbox.put_many(records)
        loop = self._ui_loop
        if loop is not None and not self._woken and any(isinstance(r, URGENT) for r in records):
            self._woken = True
            try:
                loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the app's loop is closed: quitting
                pass

    def _wake(self) -> None:
        self._woken = False
        self.app.pump.tick()

    def fetch(self, wanted: list[Wanted]) -> None:
        """Ask the engine for full results of this session's runs (they arrive as a record; the views
        show "loading" meanwhile). When it cannot be asked, the user is told once why those cases show no
        detail. Any thread; never waits."""
        link = self.link
        if link is None:
            return
        if not link.request(wanted):
            text = ("This session's results cannot be shown: the engine process is gone. Saved runs are in the "
                    "history (h).")
            log.error("%s", text)
            if text != self._fetch_error:
                self._fetch_error = text
                self.app.notify(text, severity="error", markup=False)  # (thread-safe: it posts a message)

    def _cancel_engine(self) -> None:
        if self.link is not None:
            self.link.cancel()

    def set_modes(self, live: bool, agent_reruns: bool) -> None:
        if self.link is not None:
            self.link.set_modes(live, agent_reruns)

    # ---- runs --------------------------------------------------------------------------------

    def start_run(self, label: str, *, keys: list[CaseKey] | None = None, files: list[Path] | None = None) -> bool:
        """Ask the engine to run cases (or whole files); False, with a notification, if it cannot now."""
        app = self.app
        if not self.ready or self.link is None:
            why = self.model.engine_gone
            app.notify(f"Runs are off: {why}." if why else "Still loading the folder; try again in a moment.",
                       severity="warning", markup=False)
            return False
        if keys is None:
            keys = [self.listing.key(p, c.eval_id) for p in files or [] for c in self.listing.cases(p)]
        if not keys:
            app.notify("Nothing to run.", severity="warning")
            return False
        state = self.model.new_run(label)
        if state is None:
            app.notify("A run is in progress: x cancels it.", severity="warning")
            return False
        if not self.link.run_cases(state.ticket, keys, label):
            state.finish("failed", "the engine process is gone")
        app.sync_status()
        return True

    def cancel_run(self) -> None:
        if self.model.busy:
            self.model.cancel()
            self.app.notify("Cancelling: finished cases are kept.")
            self.app.pump.tick()

    # ---- files -------------------------------------------------------------------------------

    def play_chat(self, chat: ChatLog) -> None:
        """Play a chat's messages in the agent's worker processes; its turns come up as ChatTurn records."""
        model = self.app.model
        model.chats.pop(chat.ticket, None)
        self._chat_tickets += 1
        chat.play(self._chat_tickets)
        model.chats[chat.ticket] = chat
        app_name = Path(chat.agent_ref).name or "agent"
        if self.link is None or not self.link.chat(chat.ticket, chat.agent_ref, tuple(chat.messages), app_name):
            chat.playing = False
            chat.error = "the engine is not running"

    def skip_case(self, key: CaseKey) -> None:
        """Stop one running case, keeping the run going (it ends not evaluated, "skipped")."""
        if key not in self.app.listing.running:
            self.app.notify(f"{key.eval_id} is not running any more.", markup=False)
            return
        if self.link is None or not self.link.skip(key):
            self.app.notify("The engine is not running: nothing to skip.", severity="warning", markup=False)
            return
        self.app.notify(f"Skipping {key.eval_id}: it ends not evaluated (\"skipped\"); the run goes on.",
                        markup=False)

    def reload_edited(self, path: Path) -> None:
        """From a thread worker, after an edit: re-read the file here and, when it watches nothing, in the
        engine (a watching engine sees the write for itself)."""
        self.loader.reload(path)
        if not self.watch and self.link is not None:
            self.link.reload(path)

    def reload_everywhere(self, path: Path) -> None:
        """From a thread worker: re-read a file another part rewrote (a CES pull), here and in the engine."""
        self.loader.reload(path)
        if self.link is not None:
            self.link.reload(path)

    def reload_rewritten(self, paths: tuple[Path, ...]) -> None:
        """Files a screen rewrote (a CES pull from the history): re-read in a thread worker."""

        def work() -> None:
            for path in paths:
                self.reload_everywhere(path)

        self.app.jobs.start(work, group="reload", name="reload rewritten files", failure="Could not reload a file")

    def _reread(self, paths: list[Path]) -> None:
        """Thread worker: re-read files the engine re-read, into the dashboard's copy."""
        for path in dict.fromkeys(paths):
            self.loader.reload(path)
