"""The tui-eval app: a thin shell that wires the engine process, the read model and the screens.

Start-up paints first and loads afterwards: the dashboard's own copy of the folder (`loader`) and the
engine process (`engine_link`, running `engine.service`) both start after the first frame. Everything
they produce arrives as typed records in one inbound queue; on a timer (and at once for a run starting
or stopping) the app pulls the read model (`readmodel`) and publishes what changed on the `changed`
signal, which the screens subscribe to. Screens post the Messages of `messages.py`; the handlers here
send the engine its commands, write edits (`edits`) and push screens.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, TypeVar

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.dom import DOMNode
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.signal import Signal
from textual.worker import Worker, WorkerState

from . import messages as msg
from .listing import CaseListing
from .ces_link import CesLink
from .commands import CaseCommands
from .keymap import UserKeymap, load_keymap
from .loader import FolderLoader
from .readmodel import SESSION, URGENT, Changes, ReadModel
from .screens.main import MainScreen
from .progress import RunState
from .textual_private import app_is_exiting, withdraw_notification
from .theme import TUI_EVAL_THEME, default_theme

if TYPE_CHECKING:  # pragma: no cover
    from .ces_jobs import CesTarget
    from ..engine.events import CaseKey
    from ..engine.feed import Wanted
    from ..engine.options import RunOptions
    from ..engine.runner import ResultSink
    from ..schema.results import CaseResult
    from .edits import Edit
    from .engine_link import EngineLink

log = logging.getLogger(__name__)

__all__ = ["SESSION", "EvalApp", "run_app"]

#: The screens redraw what changed this many times a second.
TICK_HZ = 8
#: Finished cases are stored in slices of at most STORE_BUDGET seconds, STORE_HZ times a second, and
#: FOLD_BUDGET seconds at each redraw: the rest wait, in order, so a key never waits behind a burst of
#: thousands of results (bench/README.md, "the dashboard with 100,000 cases").
STORE_HZ = 32
STORE_BUDGET = 0.003
FOLD_BUDGET = 0.003

#: The dashboard process's cyclic-GC thresholds once the folder is loaded (set by `run_app`).
UI_GC_THRESHOLD = (100_000, 50, 100)

_M = TypeVar("_M", bound=Message)
_App = TypeVar("_App", bound="EvalApp")


def _reported(handler: Callable[[_App, _M], None]) -> Callable[[_App, _M], None]:
    """A message handler whose exception is logged and shown as an error, not fatal to the dashboard."""

    @functools.wraps(handler)
    def wrapper(self: _App, message: _M) -> None:
        try:
            handler(self, message)
        except Exception as exc:  # noqa: BLE001 - reported to the user and logged with its traceback
            self.report_error(f"Could not handle {type(message).__name__}", exc)

    return wrapper


class EvalApp(App[int]):
    """Browse, run and judge ADK eval sets from the keyboard."""

    CSS_PATH = "app.tcss"
    TITLE = "tui-eval"
    COMMANDS = App.COMMANDS | {CaseCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    #: A run is in progress (screens hide run keys and show cancel).
    busy: var[bool] = var(False, init=False, bindings=True)
    #: The folder is loaded and the engine is up, so runs can start.
    ready: var[bool] = var(False, init=False, bindings=True)

    def __init__(
        self,
        path: str | Path = ".",
        *,
        agent: str | None = None,
        live: bool = False,
        watch: bool = True,
        theme: str | None = None,
        run_options: RunOptions | None = None,
        store: ResultSink | None = None,
        keymap: UserKeymap | None = None,
        clock: Callable[[], float] | None = None,
        num_runs: int = 1,
        ces: CesTarget | None = None,
        ces_endpoint: str | None = None,
        ces_app_version: str | None = None,
        on_loaded: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        #: Called once the folder is loaded (the entry point's heap policy hangs here).
        self.on_loaded = on_loaded
        self.catalog = CaseListing(Path(path).resolve())
        if clock is not None:
            self.catalog.clock = clock
        self.catalog.run_book.num_runs = num_runs
        self.agent_ref = agent
        self.watch_files = watch
        self.run_options = run_options
        self.store = store
        #: Saves re-run what they change (live mode); agent edits re-run their cases too.
        self.live = live
        self.agent_reruns = True
        #: The read model: the one inbound queue and its fold.
        self.model = ReadModel(self.catalog)
        self.model.cancel_engine = self._cancel_engine
        self.loader = FolderLoader(self.catalog.root, agent, self.model.inbox.put)
        #: The engine process (started after the first frame).
        self.engine: EngineLink | None = None
        #: What each pull of the read model changed; the screens subscribe (see `watch_changes`).
        self.changed: Signal[Changes] = Signal(self, "changed")
        #: The user's keymap (binding id -> keys); read from the keymap file unless given.
        self.user_keymap = keymap if keymap is not None else load_keymap()
        self._ui_loop: asyncio.AbstractEventLoop | None = None
        self._woken = False
        # Edits in flight: the case to redraw once written, and whether its result went stale.
        self._after_edit: dict[Worker[Any], tuple[CaseKey, bool]] = {}
        #: The "File not loaded" notice shown per file, withdrawn once the file loads again.
        self._load_notices: dict[Path, Any] = {}
        # The last error the pull loop reported, so a persistent fault is shown once, not 8 times a second.
        self._tick_error: str | None = None
        self._clashes_reported: set[str] = set()
        self._fetch_error: str | None = None
        #: The CES app shown beside the local eval sets (`tui-eval ces://...`), and runs in CES.
        self.ces = CesLink(self, ces, ces_endpoint, ces_app_version)
        self.register_theme(TUI_EVAL_THEME)
        self.theme = theme or default_theme()

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(self.catalog)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def run_state(self) -> RunState | None:
        return self.model.current

    def watch_changes(self, node: DOMNode, callback: Callable[[Changes], object]) -> None:
        """Call `callback` with each pull's changes while `node` is mounted; its errors are shown."""

        def guarded(changes: Changes) -> None:
            try:
                callback(changes)
            except Exception as exc:  # noqa: BLE001 - reported (the signal would only log it)
                self.report_error("Could not update the screen", exc)

        self.changed.subscribe(node, guarded)

    def on_mount(self) -> None:
        self._ui_loop = asyncio.get_running_loop()
        self._apply_keymap()
        self.set_interval(1 / TICK_HZ, self._tick, name="pull")
        self.set_interval(1 / STORE_HZ, self._store, name="store")
        # Load after the first frame is on screen.
        self.call_after_refresh(self._start)
        self.ces.start()

    def on_unmount(self) -> None:
        self.ces.close()
        if self.engine is not None:
            self.engine.close()

    async def action_quit(self) -> None:
        """Quit; during a run, ask first (finished cases are saved either way)."""
        from .edits import QUIT_DURING_RUN

        if self.model.busy and not isinstance(self.screen, _confirm_screen()):
            self._confirm(*QUIT_DURING_RUN, self._quit_now)
            return
        self._quit_now()

    def _quit_now(self) -> None:
        self.model.cancel()
        self.exit(0)

    def report_error(self, what: str, exc: BaseException) -> None:
        """Log an exception with its traceback and show it to the user as an error notification."""
        log.error("%s", what, exc_info=exc)
        self.notify(f"{type(exc).__name__}: {exc}", title=what, severity="error", markup=False, timeout=10)

    def _sync_status(self) -> None:
        """Push the read model's state down to the reactives the screens' bindings depend on."""
        self.busy = self.model.busy
        self.ready = not self.model.loading and self.engine is not None and self.model.engine_gone is None

    # ---- keymap ------------------------------------------------------------------------------

    def _apply_keymap(self) -> None:
        keymap = self.user_keymap
        for problem in keymap.problems:
            self.notify(problem, title="Keymap", severity="warning", markup=False, timeout=10)
        if not keymap.bindings:
            return
        self.set_keymap(keymap.bindings)
        # Checking ids imports every screen: done after the first frame, and only when there is a keymap.
        self.call_after_refresh(self._check_keymap_ids)

    def _check_keymap_ids(self) -> None:
        from .keymap import keymap_warnings

        unknown, clashes = keymap_warnings(self.user_keymap)
        if unknown is not None:
            log.warning("keymap: %s", unknown)
            self.notify(unknown, title="Keymap", severity="warning", markup=False, timeout=10)
        for clash in clashes:
            self._report_clash(clash)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:
        """Textual found a remapped key that another binding had (it asks on every key press)."""
        ids = ", ".join(sorted(b.id or b.action for b in clashed_bindings))
        self._report_clash(f"the keymap's keys replace {ids}")

    def _report_clash(self, text: str) -> None:
        if text in self._clashes_reported:
            return
        self._clashes_reported.add(text)
        log.warning("keymap: %s", text)
        self.notify(text, title="Keymap clash", severity="warning", markup=False, timeout=10)

    # ---- start-up: the dashboard's copy of the folder, and the engine process --------------------

    def _start(self) -> None:
        self.run_worker(self._load, thread=True, group="load", name="load", exclusive=True, exit_on_error=False)

    def _load(self) -> None:
        """Thread worker: read the folder and its saved results (the dashboard's own copy)."""
        from .worker_utils import current_worker_cancelled

        self.loader.load_all(cancelled=current_worker_cancelled)

    def _start_engine(self) -> None:
        """Thread worker, once the folder is loaded: start the engine process (it then reads the folder
        for itself). Not earlier: two processes reading a big folder at once slowed the first frame and
        the load on a shared machine (bench/README.md)."""
        from ..engine.feed import EngineConfig, EngineGone
        from .engine_link import EngineLink

        engine = EngineLink(EngineConfig(
            root=str(self.catalog.root), agent_ref=self.agent_ref, options=self.run_options, store=self.store,
            num_runs=self.catalog.run_book.num_runs, live=self.live, agent_reruns=self.agent_reruns,
            watch=self.watch_files, log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel())),
            self._from_engine)
        try:
            engine.start()
        except OSError as exc:  # the folder is shown all the same: runs are off, and the user is told why
            log.error("could not start the engine process", exc_info=exc)
            self.model.inbox.put(EngineGone(f"the engine process could not start: {exc}"))
        else:
            self.engine = engine
            self.model.set_fetcher(self._fetch)

    def _fetch(self, wanted: list[Wanted]) -> dict[Wanted, CaseResult]:
        """Full results of this session's runs, from the engine (which holds them); when it cannot send
        them, the user is told once why those cases show no detail."""
        from .engine_link import ResultsUnavailable

        engine = self.engine
        if engine is None:
            return {}
        try:
            return engine.fetch(wanted)
        except ResultsUnavailable as exc:
            text = f"This session's results cannot be shown: {exc}. Saved runs are in the history (h)."
            log.error("%s", text)
            if text != self._fetch_error:
                self._fetch_error = text
                self.notify(text, severity="error", markup=False)  # (thread-safe: it posts a message)
            return {}

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
        self._tick()

    def _loaded(self) -> None:
        """The dashboard's copy of the folder is loaded: the engine process starts and loads its own."""
        self.run_worker(self._start_engine, thread=True, group="engine", name="engine", exit_on_error=False)
        if self.on_loaded is not None:
            self.on_loaded()

    def _cancel_engine(self) -> None:
        if self.engine is not None:
            self.engine.cancel()

    def _reload_files(self, paths: list[Path]) -> None:
        """Thread worker: re-read files the engine re-read, into the dashboard's copy."""
        for path in dict.fromkeys(paths):
            self.loader.reload(path)

    # ---- the pull loop -----------------------------------------------------------------------

    def pull(self) -> None:
        """Fold everything waiting onto the screen now (the timer does this 8 times a second, in slices)."""
        self._pull(None)

    def _tick(self) -> None:
        """The pull timer."""
        self._pull(FOLD_BUDGET)

    def _store(self) -> None:
        """The store timer: a slice of the finished cases waiting (shown at the next pull)."""
        if self.model.backlog:
            try:
                self.model.store(STORE_BUDGET)
            except Exception as exc:  # noqa: BLE001 - reported like the pull loop's errors
                self._report_tick_error(exc)

    def _pull(self, budget: float | None) -> None:
        """Fold within `budget` seconds (None: all); an error is logged and shown (once), never swallowed."""
        stack = self.screen_stack
        # The timer can fire once more while the app shuts down and its screens are being removed.
        if app_is_exiting(self) or not self.is_running or not stack or not isinstance(stack[0], MainScreen) \
                or not stack[0].is_attached:
            return
        try:
            self._fold(stack[0], budget)
        except Exception as exc:  # noqa: BLE001 - reported (once per distinct error) and logged
            self._report_tick_error(exc)
        else:
            self._tick_error = None

    def _report_tick_error(self, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        if text != self._tick_error:
            self._tick_error = text
            self.report_error("Could not update the screen", exc)
        else:
            log.debug("pull loop failed again: %s", text)

    def _fold(self, main: MainScreen, budget: float | None) -> None:
        """Pull the read model and hand its changes to the screens."""
        changes = self.model.pull(budget)
        self._sync_status()
        if changes.loaded:
            self._loaded()
        if changes.reload:
            self.run_worker(partial(self._reload_files, changes.reload), thread=True, group="reload",
                            name="reload", exit_on_error=False)
        for text, severity in changes.messages:
            self.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]
        for path in changes.files.reloaded:
            file_state = self.catalog.file_state(path)
            notice = self._load_notices.pop(path, None)
            if notice is not None and file_state is not None and file_state.error is None:
                withdraw_notification(self, notice)  # the file loads again: its "not loaded" notice is out of date
        for path, error in changes.files.broke:
            from textual.notifications import Notification, Notify

            notice = Notification(self.catalog.error_text(error), "File not loaded", "warning", 8, markup=False)
            self._load_notices[path] = notice
            self.post_message(Notify(notice))
        if changes.phase:
            self.refresh_bindings()
        if changes:
            self.changed.publish(changes)

    # ---- live mode ---------------------------------------------------------------------------

    @on(msg.LiveToggled)
    @_reported
    def _live_toggled(self, message: msg.LiveToggled) -> None:
        self.set_live(message.on)

    @on(msg.AgentRerunsToggled)
    @_reported
    def _agent_reruns_toggled(self, message: msg.AgentRerunsToggled) -> None:
        self.set_agent_reruns(message.on)

    def _send_modes(self) -> None:
        if self.engine is not None:
            self.engine.set_modes(self.live, self.agent_reruns)

    def set_live(self, on: bool) -> None:
        self.live = on
        self._send_modes()
        self.main.refresh_topbar()
        self.notify("Live mode on: saving a file re-runs what it changed." if on else "Live mode off: saved files only reload.")

    def set_agent_reruns(self, on: bool) -> None:
        self.agent_reruns = on
        self._send_modes()
        self.main.refresh_topbar()
        self.notify("Agent edits re-run their cases (in live mode)." if on else "Agent edits no longer re-run cases.")

    # ---- runs --------------------------------------------------------------------------------

    @on(msg.RunRequested)
    @_reported
    def _run_requested(self, message: msg.RunRequested) -> None:
        self.start_run(message.label, keys=list(message.keys) if message.keys is not None else None,
                       files=list(message.files or ()))

    @on(msg.CancelRequested)
    @_reported
    def _cancel_requested(self, message: msg.CancelRequested) -> None:
        self.cancel_run()

    def start_run(self, label: str, *, keys: list[CaseKey] | None = None, files: list[Path] | None = None) -> bool:
        """Ask the engine to run cases (or whole files); False, with a notification, if it cannot now."""
        self._sync_status()
        if not self.ready or self.engine is None:
            why = self.model.engine_gone
            self.notify(f"Runs are off: {why}." if why else "Still loading the folder; try again in a moment.",
                        severity="warning", markup=False)
            return False
        if keys is None:
            keys = [self.catalog.key(p, c.eval_id) for p in files or [] for c in self.catalog.cases(p)]
        if not keys:
            self.notify("Nothing to run.", severity="warning")
            return False
        state = self.model.new_run(label)
        if state is None:
            self.notify("A run is in progress: x cancels it.", severity="warning")
            return False
        if not self.engine.run_cases(state.ticket, keys, label):
            state.finish("failed", "the engine process is gone")
        self._sync_status()
        return True

    @on(msg.FilesRewritten)
    @_reported
    def _files_rewritten(self, message: msg.FilesRewritten) -> None:
        paths = message.paths

        def work() -> None:
            for path in paths:
                self.reload_file(path)

        self.run_worker(work, thread=True, group="reload", name="reload rewritten files", exit_on_error=False)

    @on(msg.CesRunRequested)
    @_reported
    def _ces_run_requested(self, message: msg.CesRunRequested) -> None:
        self.ces.run(message.key)
        self._sync_status()

    def cancel_run(self) -> None:
        if self.model.busy:
            self.model.cancel()
            self.notify("Cancelling: finished cases are kept.")
            self._tick()

    # ---- workers -----------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            if worker.group in ("load", "engine"):
                # Now, not at the next tick (up to 1/TICK_HZ later): the folder shows as loaded and
                # the keys that need it turn on as soon as the loader is done and the engine started.
                self._tick()
            elif worker.group == "edit":
                after = self._after_edit.pop(worker, None)
                if after is not None:
                    self._edited(*after)
                self.notify(worker.name, markup=False)
            if worker.group == "ces":
                self._sync_status()
        elif event.state == WorkerState.ERROR:
            self._after_edit.pop(worker, None)
            titles = {"edit": "Edit not saved", "load": "Could not load the folder", "ces": "CES",
                      "reload": "Could not reload a file", "engine": "Could not start the engine"}
            if worker.error is not None:
                self.report_error(titles.get(worker.group, "Error"), worker.error)
            else:
                self.notify("unknown error", title=titles.get(worker.group, "Error"), severity="error", timeout=10)
            if worker.group == "ces":
                state = self.model.current
                if state is not None and state.active:
                    state.finish("failed", f"{type(worker.error).__name__}: {worker.error}")
                self._sync_status()

    # ---- navigation --------------------------------------------------------------------------

    @on(msg.OpenTurn)
    @_reported
    def _open_turn(self, message: msg.OpenTurn) -> None:
        self.open_turn(message.key, message.index)

    @on(msg.OpenHistory)
    @_reported
    def _open_history(self, message: msg.OpenHistory) -> None:
        from .screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.catalog))

    @on(msg.OpenTimeline)
    @_reported
    def _open_timeline(self, message: msg.OpenTimeline) -> None:
        from .screens.timeline import TimelineScreen

        if not isinstance(self.screen, TimelineScreen):
            self.push_screen(TimelineScreen(self.catalog))

    @on(msg.OpenCesHistory)
    @_reported
    def _open_ces_history(self, message: msg.OpenCesHistory) -> None:
        from .screens.ces_history import CesHistoryScreen

        self.push_screen(CesHistoryScreen(self.catalog, message.key))

    @on(msg.JumpTo)
    @_reported
    def _jump_to(self, message: msg.JumpTo) -> None:
        self.jump_to(message.key, message.turn)

    def open_turn(self, key: CaseKey, index: int) -> None:
        from .screens.turn import TurnScreen

        if isinstance(self.screen, TurnScreen):
            self.screen.show(key, index)
        else:
            self.push_screen(TurnScreen(self.catalog, key, index))

    def jump_to(self, key: CaseKey, turn: int | None = None) -> None:
        """Show a case in the browser, from anywhere."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.main.select_key(key, turn)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.user_keymap.bindings))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's, then every binding of the current screen and the app (the palette reaches every action)."""
        from .commands import binding_commands

        yield from super().get_system_commands(screen)
        yield from binding_commands(self, screen)

    # ---- edits -------------------------------------------------------------------------------

    @on(msg.EditRequested)
    @_reported
    def _edit_requested(self, message: msg.EditRequested) -> None:
        from .edits import edit_for

        edit = edit_for(self.catalog, message)
        if isinstance(edit, str):
            self.notify(edit, severity="warning")
            return
        self._confirm(edit.title, edit.body, partial(self._write, edit))

    def _confirm(self, title: str, body: Content, then: Callable[[], None]) -> None:
        from .screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(title, body), answered)

    def _write(self, edit: Edit) -> None:
        """Write a confirmed edit in a thread worker and re-read the file (here and, when it watches
        nothing, in the engine). Once written, the edited case redraws everywhere at once (tree, summary,
        turn view); with `stale` its result is dropped first, since it was scored against turns the file
        no longer has (a deleted turn stayed on screen, paired with the wrong actual)."""
        if edit.leave_screens:
            while len(self.screen_stack) > 1:
                self.pop_screen()

        def work() -> None:
            edit.change()
            self.loader.reload(edit.path)
            if not self.watch_files and self.engine is not None:
                self.engine.reload(edit.path)

        worker = self.run_worker(work, thread=True, group="edit", name=edit.done, exit_on_error=False)
        if edit.key is not None:
            self._after_edit[worker] = (edit.key, edit.stale)

    def reload_file(self, path: Path) -> None:
        """From a thread worker: re-read a file another part rewrote (a CES pull), here and in the engine."""
        self.loader.reload(path)
        if self.engine is not None:
            self.engine.reload(path)

    def _edited(self, key: CaseKey, stale: bool) -> None:
        """UI thread, after an edit was written: fold the reload and redraw the case on every screen."""
        if stale:
            self.catalog.set_result(key, None)
        else:
            # An accepted turn or case: its result was scored against the old expected turns.
            self.catalog.stale.add(key)
        self.pull()
        self.changed.publish(Changes(dirty={key}))


def _confirm_screen() -> type[Screen[Any]]:
    from .screens.confirm import ConfirmScreen

    return ConfirmScreen


def run_app(path: str | Path = ".", *, agent: str | None = None, mouse: bool = True, live: bool = False,
            num_runs: int = 1, ces: CesTarget | None = None, ces_endpoint: str | None = None,
            ces_app_version: str | None = None, mock_tools: str | None = None,
            executor: str = "local") -> int:
    """Open the dashboard on a folder (the `tui-eval [PATH]` entry point).

    The entry point owns the process, so its heap policy is here (figures: bench/README.md, "GC"): the
    cyclic GC stays off while the folder loads, and the loaded folder is then frozen out of later
    collections."""
    import gc

    run_options = None
    if mock_tools is not None or executor != "local":
        # --mock-tools: every run of this dashboard answers tools from the records; --executor: where
        # agent code runs.
        from ..engine.options import RunOptions

        run_options = RunOptions(mock_tools=mock_tools, executor=executor)

    def settle_heap() -> None:
        gc.freeze()
        gc.set_threshold(*UI_GC_THRESHOLD)
        gc.enable()

    gc.disable()
    app = EvalApp(path, agent=agent, live=live, num_runs=num_runs, ces=ces, ces_endpoint=ces_endpoint,
                  ces_app_version=ces_app_version, run_options=run_options, on_loaded=settle_heap)
    try:
        app.run(mouse=mouse)
    finally:
        gc.enable()
    return app.return_code or 0
