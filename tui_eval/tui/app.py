"""The tui-eval app: a thin shell that wires the engine process, the read model and the screens.

Start-up paints first and loads afterwards: the dashboard's own copy of the folder (`loader`) and then
the engine process (`engine_control`) start after the first frame. Everything they produce arrives as
typed records in the read model's one inbound queue (`readmodel`); the pull loop (`pump`) folds it on a
timer, hands each pull's changes to the app's consumers and publishes them on the `changed` signal,
which the screens subscribe to. Screens post the Messages of `messages.py`; the handlers here hand
them to the part that owns them: runs to `engine_control`, edits to `edits`, CES to `ces_link`, and
screens to the screen stack. Background work goes through `jobs`, which shows every failure.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, TypeVar

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.signal import Signal
from textual.worker import Worker

from . import messages as msg
from .ces_link import CesLink
from .commands import CaseCommands
from .authoring import Authoring
from .edits import EditControl
from .engine_control import EngineControl
from .jobs import Jobs
from .keymap import KeymapNotices, UserKeymap, load_keymap
from .listing import CaseListing
from .loader import FolderLoader
from .notices import Notices
from .pump import Pump
from .readmodel import SESSION, Changes, ReadModel
from .reviews import ReviewControl
from .screens.main import MainScreen
from .progress import RunState
from .theme import TUI_EVAL_THEME, default_theme

if TYPE_CHECKING:  # pragma: no cover
    from .ces_jobs import CesTarget
    from ..engine.events import CaseKey
    from ..engine.options import RunOptions
    from ..engine.runner import ResultSink

log = logging.getLogger(__name__)

__all__ = ["SESSION", "EvalApp", "run_app"]

#: The dashboard process's cyclic-GC thresholds once the folder is loaded (set by `run_app`).
UI_GC_THRESHOLD = (10_000, 500, 100)

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
    #: Saves re-run what they change (live mode).
    live: var[bool] = var(False, init=False)
    #: In live mode, agent edits re-run their cases too.
    agent_reruns: var[bool] = var(True, init=False)

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
        self.listing = CaseListing(Path(path).resolve())
        if clock is not None:
            self.listing.clock = clock
        self.listing.run_book.num_runs = num_runs
        self.agent_ref = agent
        self.set_reactive(EvalApp.live, live)
        #: The read model: the one inbound queue and its fold.
        self.model = ReadModel(self.listing)
        self.loader = FolderLoader(self.listing.root, agent, self.model.inbox.put)
        #: What each pull of the read model changed; the screens subscribe (see `watch_changes`).
        self.changed: Signal[Changes] = Signal(self, "changed")
        #: The user's keymap (binding id -> keys); read from the keymap file unless given.
        self.user_keymap = keymap if keymap is not None else load_keymap()
        self.keymap_notices = KeymapNotices(self, self.user_keymap)
        self.jobs = Jobs(self)
        #: The engine process: runs, cancels, modes, reloads and full results.
        self.engine = EngineControl(self, agent_ref=agent, run_options=run_options, store=store, watch=watch)
        self.edits = EditControl(self)
        self.authoring = Authoring(self)
        self.reviews = ReviewControl(self)
        self.notices = Notices(self)
        self.pump = Pump(self, self.model, [self._show_status, self.engine.take, self.notices.take], self.changed)
        #: The CES app shown beside the local eval sets (`tui-eval ces://...`), and runs in CES.
        self.ces = CesLink(self, ces, ces_endpoint, ces_app_version)
        self.register_theme(TUI_EVAL_THEME)
        self.theme = theme or default_theme()

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(self.listing)

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
        self.keymap_notices.apply()
        self.pump.start()
        # Load after the first frame is on screen.
        self.call_after_refresh(self._start_loading)
        self.ces.start()

    def on_unmount(self) -> None:
        self.ces.close()
        self.engine.close()

    def _start_loading(self) -> None:
        from .worker_utils import current_worker_cancelled

        self.jobs.start(functools.partial(self.loader.load_all, cancelled=current_worker_cancelled), group="load",
                        name="load", failure="Could not load the folder", exclusive=True,
                        then=self.pump.tick)  # the folder shows as loaded now, not at the next tick

    def pull(self) -> None:
        """Fold everything waiting onto the screen now."""
        self.pump.pull()

    def sync_status(self) -> None:
        """Push the read model's state down to the reactives the screens' bindings depend on."""
        self.busy = self.model.busy
        self.ready = self.engine.ready

    def _show_status(self, changes: Changes) -> None:
        """A pull's first consumer."""
        self.sync_status()
        if changes.loaded and self.on_loaded is not None:
            self.on_loaded()
        if changes.loaded:
            # People's verdicts kept in the saved runs: read once the folder is known (summary, review).
            self.reviews.load(self.reviews.histories(), then=self.main.summary.refresh_entry)
        if changes.phase:
            self.refresh_bindings()

    def report_error(self, what: str, exc: BaseException) -> None:
        """Log an exception with its traceback and show it to the user as an error notification."""
        log.error("%s", what, exc_info=exc)
        self.notify(f"{type(exc).__name__}: {exc}", title=what, severity="error", markup=False, timeout=10)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.jobs.settle(event)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:
        self.keymap_notices.clashed(clashed_bindings)

    async def action_quit(self) -> None:
        """Quit; during a run, ask first (finished cases are saved either way)."""
        from .edits import QUIT_DURING_RUN
        from .screens.confirm import ConfirmScreen, confirm

        if self.model.busy and not isinstance(self.screen, ConfirmScreen):
            confirm(self, *QUIT_DURING_RUN, self._quit_now)
            return
        self._quit_now()

    def _quit_now(self) -> None:
        self.model.cancel()
        self.exit(0)

    # ---- modes -------------------------------------------------------------------------------

    def watch_live(self) -> None:
        self.engine.set_modes(self.live, self.agent_reruns)

    def watch_agent_reruns(self) -> None:
        self.engine.set_modes(self.live, self.agent_reruns)

    @on(msg.LiveToggled)
    @_reported
    def _live_toggled(self, message: msg.LiveToggled) -> None:
        self.live = message.on
        self.notify("Live mode on: saving a file re-runs what it changed." if message.on
                    else "Live mode off: saved files only reload.")

    @on(msg.AgentRerunsToggled)
    @_reported
    def _agent_reruns_toggled(self, message: msg.AgentRerunsToggled) -> None:
        self.agent_reruns = message.on
        self.notify("Agent edits re-run their cases (in live mode)." if message.on
                    else "Agent edits no longer re-run cases.")

    # ---- runs, edits, files: handed to their owners ------------------------------------------

    @on(msg.RunRequested)
    @_reported
    def _run_requested(self, message: msg.RunRequested) -> None:
        self.engine.start_run(message.label, keys=list(message.keys) if message.keys is not None else None,
                              files=list(message.files or ()))

    @on(msg.CancelRequested)
    @_reported
    def _cancel_requested(self, message: msg.CancelRequested) -> None:
        self.engine.cancel_run()

    @on(msg.CesRunRequested)
    @_reported
    def _ces_run_requested(self, message: msg.CesRunRequested) -> None:
        self.ces.run(message.key)

    @on(msg.EditRequested)
    @_reported
    def _edit_requested(self, message: msg.EditRequested) -> None:
        self.edits.request(message)

    @on(msg.CaseEditRequested)
    @_reported
    def _case_edit_requested(self, message: msg.CaseEditRequested) -> None:
        self.authoring.edit_case(message.key)

    @on(msg.UndoRequested)
    @_reported
    def _undo_requested(self, message: msg.UndoRequested) -> None:
        self.edits.undo()

    @on(msg.ImportSessionRequested)
    @_reported
    def _import_session_requested(self, message: msg.ImportSessionRequested) -> None:
        self.authoring.ask_session(message.eval_file)

    @on(msg.ChatPlay)
    @_reported
    def _chat_play(self, message: msg.ChatPlay) -> None:
        self.engine.play_chat(message.chat)

    @on(msg.ChatSave)
    @_reported
    def _chat_save(self, message: msg.ChatSave) -> None:
        from .authoring import save_chat

        save_chat(self, message.chat, message.eval_file, message.eval_id)

    @on(msg.SkipRequested)
    @_reported
    def _skip_requested(self, message: msg.SkipRequested) -> None:
        self.engine.skip_case(message.key)

    @on(msg.VerdictRequested)
    @_reported
    def _verdict_requested(self, message: msg.VerdictRequested) -> None:
        key = message.key
        history = self.reviews.history_of(key)
        self.reviews.load({history} if history is not None else set(), then=functools.partial(
            self.reviews.ask, key, message.turn, message.metric, message.label))

    @on(msg.OpenReview)
    @_reported
    def _open_review(self, message: msg.OpenReview) -> None:
        from .screens.review import ReviewScreen

        def show() -> None:
            self.push_screen(ReviewScreen())

        self.reviews.load(self.reviews.histories(), then=show)

    @on(msg.FilesRewritten)
    @_reported
    def _files_rewritten(self, message: msg.FilesRewritten) -> None:
        self.engine.reload_rewritten(message.paths)

    # ---- navigation --------------------------------------------------------------------------

    @on(msg.OpenTurn)
    @_reported
    def _open_turn(self, message: msg.OpenTurn) -> None:
        self.open_turn(message.key, message.index)

    @on(msg.OpenHistory)
    @_reported
    def _open_history(self, message: msg.OpenHistory) -> None:
        from .screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.listing))

    @on(msg.OpenTimeline)
    @_reported
    def _open_timeline(self, message: msg.OpenTimeline) -> None:
        from .screens.timeline import TimelineScreen

        if not isinstance(self.screen, TimelineScreen):
            self.push_screen(TimelineScreen(self.listing))

    @on(msg.OpenCesHistory)
    @_reported
    def _open_ces_history(self, message: msg.OpenCesHistory) -> None:
        from .screens.ces_history import CesHistoryScreen

        self.push_screen(CesHistoryScreen(self.listing, message.key))

    @on(msg.JumpTo)
    @_reported
    def _jump_to(self, message: msg.JumpTo) -> None:
        self.jump_to(message.key, message.turn)

    def open_turn(self, key: CaseKey, index: int) -> None:
        from .screens.turn import TurnScreen

        if isinstance(self.screen, TurnScreen):
            self.screen.show(key, index)
        else:
            self.push_screen(TurnScreen(self.listing, key, index))

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


def run_app(path: str | Path = ".", *, agent: str | None = None, mouse: bool = True, live: bool = False,
            num_runs: int = 1, ces: CesTarget | None = None, ces_endpoint: str | None = None,
            ces_app_version: str | None = None, mock_tools: str | None = None,
            executor: str = "local") -> int:
    """Open the dashboard on a folder (the `tui-eval [PATH]` entry point).

    The entry point owns the process, so its heap policy is here (figures: bench/README.md, "The young
    generation"): the cyclic GC stays off while the folder loads, the loaded folder is then frozen out
    of later collections, and the older generations are collected rarely (UI_GC_THRESHOLD)."""
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
