"""The tui-eval app: owns the catalog and the background work, and pulls their state onto the screen at 8 Hz.

Start-up paints first and loads afterwards: the folder is scanned, eval files parsed and saved results
read in a thread worker that streams into the browser, so the first frame never waits on the data.

The app is the one controller: screens and widgets post the Messages of `messages.py` and the handlers
here start runs, write edits and push screens; data flows back down through the catalog, the app's
`busy` / `ready` reactives (which refresh every screen's bindings) and the screens' refresh methods.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import sys
import time
from collections import deque
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Literal, TypeVar

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.dom import DOMNode
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from . import messages as msg
from .catalog import Catalog
from .ces_link import CesLink
from .commands import CaseCommands
from .keymap import UserKeymap, load_keymap
from .screens.main import MainScreen
from .session import SessionBridge
from .state import Inbox, RunSnapshot, RunState, UiPriority
from .text import one_line, plain
from .theme import TUI_EVAL_THEME, default_theme

if TYPE_CHECKING:  # pragma: no cover
    from ..ces.dashboard import CesTarget
    from ..engine.events import CaseKey, Event
    from ..engine.live import LiveEvent

log = logging.getLogger(__name__)

SESSION = "this session"
TICK_HZ = 8
#: Results folded onto the screen per tick at most: a replay run finishes thousands of cases between two
#: ticks, and folding them all at once kept keys waiting; the rest wait for the next tick (in order).
FOLD_PER_TICK = 4000
#: Finished cases are also folded for at most this long per tick (in chunks of FOLD_CHUNK): a CPU-bound
#: run in the engine thread holds the GIL half the time, so a count alone let one tick take hundreds of
#: milliseconds and keys waited behind it (bench/tui_scale.py: a key not painted within 5 s).
FOLD_BUDGET = 0.012
FOLD_CHUNK = 200

#: Seconds after a key during which the pull timer's ticks pause the engine too (see _take_priority).
KEYS_RECENT = 1.0
#: The GIL switch interval the dashboard's entry point sets (seconds; Python's default is 0.005).
SWITCH_INTERVAL = 0.001

_M = TypeVar("_M", bound=Message)
HeapPhase = Literal["run", "settled"]


def _reported(handler: Callable[[EvalApp, _M], None]) -> Callable[[EvalApp, _M], None]:
    """A message handler whose exception is logged and shown as an error, not fatal to the dashboard."""

    @functools.wraps(handler)
    def wrapper(self: EvalApp, message: _M) -> None:
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

    #: A run is in progress (screens hide run keys and show cancel). Set from the engine's state.
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
        run_options: Any = None,
        store: Any = None,
        keymap: UserKeymap | None = None,
        on_heap_phase: Callable[[HeapPhase], None] | None = None,
        clock: Callable[[], float] | None = None,
        num_runs: int = 1,
        ces: CesTarget | None = None,
        ces_endpoint: str | None = None,
        ces_app_version: str | None = None,
    ) -> None:
        super().__init__()
        self.catalog = Catalog(Path(path).resolve())
        if clock is not None:
            self.catalog.clock = clock
        self.catalog.run_book.num_runs = num_runs
        self.agent_ref = agent
        self.watch_files = watch
        self.inbox = Inbox()
        #: Held while a key is handled and painted during a run: the engine thread pauses meanwhile.
        self.priority = UiPriority()
        self._last_key = float("-inf")  # when the last key came during a run
        self.bridge = SessionBridge(self.inbox, live=live)
        self.run_options = run_options
        self.store = store
        #: The user's keymap (binding id -> keys); read from the keymap file unless given.
        self.user_keymap = keymap if keymap is not None else load_keymap()
        #: Told when the heap settles (folder loaded, run over) or starts churning (a run streams): the
        #: entry point's GC policy hangs here, so the app itself never touches process-wide state.
        self.on_heap_phase = on_heap_phase
        # What the screen last showed, so a tick redraws only what changed.
        self._shown_run: RunState | None = None
        self._shown_phase: str | None = None
        self._shown_loading: bool | None = None
        # Finished cases and loaded results not folded yet (see FOLD_PER_TICK).
        # (case, result, repetition): the run book and the catalog fold them together, a slice a tick.
        self._finished_backlog: deque[tuple[CaseKey, Any, int]] = deque()
        self._loaded_backlog: deque[tuple[CaseKey, Any, str, float | None]] = deque()
        # Edits in flight: the case to redraw once written, and whether its result went stale.
        self._after_edit: dict[Worker[Any], tuple[CaseKey, bool]] = {}
        #: The "File not loaded" notice shown per file, withdrawn once the file loads again.
        self._load_notices: dict[Path, Any] = {}
        # The last error the pull loop reported, so a persistent fault is shown once, not 8 times a second.
        self._tick_error: str | None = None
        self._clashes_reported: set[str] = set()
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
    def live(self) -> bool:
        return self.bridge.live

    @property
    def agent_reruns(self) -> bool:
        return self.bridge.agent_reruns

    @property
    def run_state(self) -> RunState | None:
        return self.bridge.current

    def on_mount(self) -> None:
        self._apply_keymap()
        self.set_interval(1 / TICK_HZ, self._tick, name="pull")
        # Load after the first frame is on screen.
        self.call_after_refresh(self._start_loading)
        self.ces.start()

    def on_unmount(self) -> None:
        self.ces.close()
        self.bridge.close()

    async def action_quit(self) -> None:
        """Quit; during a run, ask first (finished cases are saved either way)."""
        if self.bridge.busy and not isinstance(self.screen, _confirm_screen()):
            body = Content.assemble(
                "A run is in progress. Quitting cancels it; ",
                ("finished cases are kept", "bold"), " in the history either way.",
            )
            self._confirm("Quit during a run?", body, self._quit_now)
            return
        self._quit_now()

    def _quit_now(self) -> None:
        self.bridge.cancel()
        self.exit(0)

    def report_error(self, what: str, exc: BaseException) -> None:
        """Log an exception with its traceback and show it to the user as an error notification."""
        log.error("%s", what, exc_info=exc)
        self.notify(f"{type(exc).__name__}: {exc}", title=what, severity="error", markup=False, timeout=10)

    def watch_busy(self, busy: bool) -> None:
        if self.on_heap_phase is not None:
            self.on_heap_phase("run" if busy else "settled")

    def _sync_status(self) -> None:
        """Push the engine's state down to the reactives the screens' bindings depend on."""
        self.busy = self.bridge.busy
        self.ready = not self.inbox.loading and self.bridge.host is not None

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
        from .screens.help import binding_sections

        sections = [[b for b in bindings if isinstance(b, Binding)] for _title, bindings in binding_sections()]
        known = [b.id for bindings in sections for b in bindings if b.id]
        unknown = self.user_keymap.unknown_ids(known)
        if unknown:
            from .keymap import did_you_mean

            named = ", ".join(f"{u}{did_you_mean(u, known)}" for u in unknown)
            text = f"{self.user_keymap.path}: unknown binding ids {named} (the help screen, ?, lists the ids)"
            log.warning("keymap: %s", text)
            self.notify(text, title="Keymap", severity="warning", markup=False, timeout=10)
        for clash in self.user_keymap.clashes(sections):
            self._report_clash(f"{clash}: the keymap's binding wins")

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

    # ---- loading -----------------------------------------------------------------------------

    def _start_loading(self) -> None:
        self.run_worker(self._load, thread=True, group="load", name="load", exclusive=True, exit_on_error=False)

    def _load(self) -> None:
        """Thread worker: the LiveSession, its workspace streamed in file by file, then saved results."""
        from ..engine.live import LiveSession
        from ..engine.options import RunOptions
        from ..engine.store import ResultStore
        from .loader import load_latest_results, load_workspace
        from .worker_utils import current_worker_cancelled

        try:
            session = LiveSession(
                self.catalog.root,
                agent_ref=self.agent_ref,
                options=self.run_options or RunOptions(),
                store=self.store if self.store is not None else ResultStore(),
                on_event=self._engine_event,
                rerun_on_agent_change=self.bridge.agent_reruns,
                num_runs=self.catalog.run_book.num_runs,
            )
            self.catalog.workspace = session.workspace
            load_workspace(session.workspace, cancelled=current_worker_cancelled)
            self.catalog.index_cases()
            # Saved inferences let a config edit re-score without running the agent.
            session.results.update(load_latest_results(session.workspace, self.inbox, current_worker_cancelled))
            if not current_worker_cancelled():
                self.bridge.attach(session)
                if self.watch_files:
                    self.bridge.start_watching()
        finally:
            self.inbox.loading = False

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and self.bridge.busy:
            self._last_key = time.monotonic()
            self._take_priority()
        await super().on_event(event)

    def _take_priority(self) -> None:
        """Pause the engine thread until the screen has been painted (see UiPriority): on a key during a
        run, and on each tick for KEYS_RECENT seconds after one (5 ms of folding took 40-90 ms of wall
        time beside a scoring engine, and a key waited behind it). While nobody types, the run keeps its
        full pace; while keys come, it scores 850-1,200 cases/s instead of 1,200-1,450. bench/tui_scale.py,
        100,000 cases on the shared 2-core machine (load 4-5), two rounds each: keys p95 122-140 ms and
        max 192-233 ms, against 399-435 ms and 0.5-1.1 s before (with the catalog's per-key lookups
        cached too: p95 99-100 ms, max 129-134 ms)."""
        if not self.priority.held:
            self.priority.hold()
            self.call_after_refresh(self.priority.release)

    def _engine_event(self, event: Event | LiveEvent) -> None:
        """Engine thread: fold an event into plain state, first waiting while the UI has the priority."""
        self.priority.wait()
        self.bridge.on_event(event)

    # ---- the pull loop -----------------------------------------------------------------------

    def pull(self) -> None:
        """Pull all producer state onto the screen now (the timer does this 8 times a second, in slices)."""
        self._tick()
        while self._finished_backlog or self._loaded_backlog:
            before = len(self._finished_backlog) + len(self._loaded_backlog)
            self._tick()
            if len(self._finished_backlog) + len(self._loaded_backlog) >= before:
                break  # the tick could not fold (the app is shutting down)

    def _tick(self) -> None:
        """The pull timer: an error while folding engine state is logged and shown (once), never swallowed."""
        stack = self.screen_stack
        # The timer can fire once more while the app shuts down and its screens are being removed.
        if self._exit or not self.is_running or not stack or not isinstance(stack[0], MainScreen) \
                or not stack[0].is_attached:
            return
        if self.bridge.busy and time.monotonic() - self._last_key < KEYS_RECENT:
            self._take_priority()  # the user is at the keyboard: a key must not wait behind this tick
        try:
            self._fold(stack[0])
        except Exception as exc:  # noqa: BLE001 - reported (once per distinct error) and logged
            text = f"{type(exc).__name__}: {exc}"
            if text != self._tick_error:
                self._tick_error = text
                self.report_error("Could not update the screen", exc)
            else:
                log.debug("pull loop failed again: %s", text)
        else:
            self._tick_error = None

    def _fold(self, main: MainScreen) -> None:
        """Drain producer state into the widgets: at most TICK_HZ redraws a second, however busy the run."""
        cat = self.catalog
        dirty: set[CaseKey] = set()
        delta = cat.poll()
        for path in delta.removed:
            main.browser.remove_file(path)
        for path in delta.reloaded:
            main.browser.reload_file(path)
            for case_key in [k for k in cat.results.keys() if k.eval_file == str(path)]:
                if cat.case(case_key) is None:
                    cat.set_result(case_key, None)
                dirty.add(case_key)
        for path in delta.reloaded:
            file_state = cat.file_state(path)
            notice = self._load_notices.pop(path, None)
            if notice is not None and file_state is not None and file_state.error is None:
                self._unnotify(notice)  # the file loads again: its "not loaded" notice is out of date
        for path, error in delta.broke:
            from textual.notifications import Notification, Notify

            notice = Notification(cat.error_text(error), "File not loaded", "warning", 8, markup=False)
            self._load_notices[path] = notice
            self.post_message(Notify(notice))
        results, removed, messages = self.inbox.drain()
        self._loaded_backlog.extend(results)
        for _ in range(min(FOLD_PER_TICK, len(self._loaded_backlog))):
            key, result, origin, saved_at = self._loaded_backlog.popleft()
            if cat.results.origin(key) != SESSION:
                cat.set_result(key, result, origin, saved_at)
                dirty.add(key)
        for key in removed:
            cat.set_result(key, None)
            dirty.add(key)
        for text, severity in messages:
            self.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]
        state = self.bridge.current
        if state is not None:
            if state is not self._shown_run:
                last = self._shown_run
                if last is not None and self._finished_backlog:
                    # A new run came before the last one's cases were all folded: they belong to its book.
                    self._fold_finished(main, last.drain(), dirty, deadline=None)
                self._shown_run = state
                main.run_panel.reset()
                cat.run_book.start(state.label)
            snap = state.drain()
            main.run_panel.show(snap)
            self._fold_finished(main, snap, dirty, deadline=time.perf_counter() + FOLD_BUDGET)
            if snap.running != cat.running:
                dirty |= snap.running ^ cat.running
                cat.running = snap.running
            if snap.phase != self._shown_phase:
                self._shown_phase = snap.phase
                self.refresh_bindings()
        self._sync_status()
        if delta.added or delta.removed:
            main.files_changed()
        elif delta.configs_changed or delta.reloaded:
            main.summary.refresh_entry()
        if dirty:
            for screen in self.screen_stack:
                refresh = getattr(screen, "refresh_keys", None)
                if refresh is not None:
                    refresh(dirty)
        if delta or self.inbox.loading != self._shown_loading:
            if self.inbox.loading != self._shown_loading:
                self._shown_loading = self.inbox.loading
                cat.loaded = not self.inbox.loading
                main.summary.refresh_entry()
                if cat.loaded and self.on_heap_phase is not None:
                    # After the "loaded" frame is painted: a full collection over a big folder takes a while.
                    self.call_after_refresh(self.on_heap_phase, "settled")
            main.refresh_topbar()

    def _fold_finished(self, main: MainScreen, snap: RunSnapshot, dirty: set[CaseKey],
                       deadline: float | None) -> None:
        """Fold a run's finished cases into the run book and the catalog, a slice at a time until the
        deadline (None: all of them); the run's timeline entry once every one is folded."""
        cat = self.catalog
        backlog = self._finished_backlog
        reps = snap.repetitions
        backlog.extend((key, result, reps[i] if i < len(reps) else 1) for i, (key, result) in enumerate(snap.finished))
        folded = 0
        while backlog and (deadline is None or folded < FOLD_PER_TICK):
            chunk = [backlog.popleft() for _ in range(min(FOLD_CHUNK, len(backlog)))]
            # Before the results are stored: the book reads the results they replace (broke / fixed).
            # In the same slices as the catalog: a 100k-case run once fed it 7 s of cases in one tick.
            cat.run_book.feed([(key, result) for key, result, _ in chunk], [rep for _, _, rep in chunk], cat.result)
            for key, result, _ in chunk:
                cat.set_result(key, result, SESSION)
                dirty.add(key)
            folded += len(chunk)
            if deadline is not None and time.perf_counter() >= deadline:
                break
        main.run_panel.show_insight(cat.run_book)
        if snap.phase in ("finished", "cancelled", "failed") and not backlog:
            if cat.run_book.finish(snap.phase, cat.clock(), snap.saved) is not None:  # once per run
                main.summary.refresh_entry()

    # ---- live mode ---------------------------------------------------------------------------

    @on(msg.LiveToggled)
    @_reported
    def _live_toggled(self, message: msg.LiveToggled) -> None:
        self.set_live(message.on)

    @on(msg.AgentRerunsToggled)
    @_reported
    def _agent_reruns_toggled(self, message: msg.AgentRerunsToggled) -> None:
        self.set_agent_reruns(message.on)

    def set_live(self, on: bool) -> None:
        self.bridge.set_live(on)
        self.main.refresh_topbar()
        self.notify("Live mode on: saving a file re-runs what it changed." if on else "Live mode off: saved files only reload.")

    def set_agent_reruns(self, on: bool) -> None:
        self.bridge.set_agent_reruns(on)
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
        """Start a run of cases (or whole files) in the engine; False, with a notification, if it cannot now."""
        self._sync_status()
        if not self.ready:
            self.notify("Still loading the folder; try again in a moment.", severity="warning")
            return False
        if keys is None:
            keys = [self.catalog.key(p, c.eval_id) for p in files or [] for c in self.catalog.cases(p)]
        if not keys:
            self.notify("Nothing to run.", severity="warning")
            return False
        state = self.bridge.new_run(label)
        if state is None:
            self.notify("A run is in progress: x cancels it.", severity="warning")
            return False
        # A named group, not exclusive: the bridge already refuses a second run while one is going.
        self.run_worker(partial(self.bridge.run_keys, state, keys, label), thread=True, group="run", name=label,
                        exit_on_error=False)
        self._sync_status()
        return True

    @on(msg.CesRunRequested)
    @_reported
    def _ces_run_requested(self, message: msg.CesRunRequested) -> None:
        self.ces.run(message.key)
        self._sync_status()

    def cancel_run(self) -> None:
        if self.bridge.busy:
            self.bridge.cancel()
            self.notify("Cancelling: finished cases are kept.")

    # ---- workers -----------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            if worker.group == "load":
                # Now, not at the next tick (up to 1/TICK_HZ later): the folder shows as loaded and
                # the keys that need it turn on as soon as the loader is done.
                self._tick()
            elif worker.group == "edit":
                after = self._after_edit.pop(worker, None)
                if after is not None:
                    self._edited(*after)
                self.notify(worker.name, markup=False)
            if worker.group in ("run", "ces"):
                self._sync_status()
        elif event.state == WorkerState.ERROR:
            self._after_edit.pop(worker, None)
            titles = {"run": "Run failed", "edit": "Edit not saved", "load": "Could not load the folder",
                      "ces": "CES"}
            if worker.error is not None:
                self.report_error(titles.get(worker.group, "Error"), worker.error)
            else:
                self.notify("unknown error", title=titles.get(worker.group, "Error"), severity="error", timeout=10)
            if worker.group in ("run", "ces"):
                state = self.bridge.current
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
        """Every binding of the current screen and the app, so the palette reaches every action."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        keymap = self.user_keymap.bindings
        for node in (screen, self):
            for binding in getattr(node, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                    continue
                seen.add(binding.action)
                if node is screen and screen.check_action(binding.action.split("(")[0], ()) is not True:
                    continue
                key_list = (keymap.get(binding.id) if binding.id else None) or binding.key
                keys = ", ".join(self.get_key_display(Binding(k.strip(), binding.action)) for k in key_list.split(","))
                yield SystemCommand(binding.description, f"{keys} · {binding.id or binding.action}",
                                    partial(self._run_action_on, node, binding.action))
        if isinstance(screen, MainScreen):
            for name in self.catalog.metric_names():
                yield SystemCommand(f"Filter by metric: {name}", "show this metric's status and score",
                                    partial(screen.set_metric, name))

    async def _run_action_on(self, node: Any, action: str) -> None:
        await self.run_action(action, node)

    # ---- edits -------------------------------------------------------------------------------

    @on(msg.EditRequested)
    @_reported
    def _edit_requested(self, message: msg.EditRequested) -> None:
        kind = message.kind
        if kind is msg.EditKind.ACCEPT_TURN:
            self.accept_turn(message.key, message.index)
        elif kind is msg.EditKind.ACCEPT_CASE:
            self.accept_case(message.key)
        elif kind is msg.EditKind.DELETE_TURN:
            self.delete_turn(message.key, message.index)
        else:
            self.delete_case(message.key)

    def _confirm(self, title: str, body: Content, then: Callable[[], None]) -> None:
        from .screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(title, body), answered)

    def _edit(self, done: str, path: Path, change: Callable[[], None], *,
              key: CaseKey | None = None, stale: bool = False) -> None:
        """Write an edit in a thread worker; the watcher reloads the file (or we do, when not watching).

        Once written, the edited case redraws everywhere at once (tree, summary, turn view); with `stale`
        its result is dropped first, since it was scored against turns the file no longer has (a deleted
        turn stayed on screen, paired with the wrong actual)."""

        def work() -> None:
            change()
            if not self.bridge.watching:
                self.bridge.reload(path)

        worker = self.run_worker(work, thread=True, group="edit", name=done, exit_on_error=False)
        if key is not None:
            self._after_edit[worker] = (key, stale)

    def _edited(self, key: CaseKey, stale: bool) -> None:
        """UI thread, after an edit was written: fold the reload and redraw the case on every screen."""
        if stale:
            self.catalog.set_result(key, None)
        else:
            # An accepted turn or case: its result was scored against the old expected turns.
            self.catalog.stale.add(key)
        self.pull()
        for screen in self.screen_stack:
            refresh = getattr(screen, "refresh_keys", None)
            if refresh is not None:
                refresh({key})

    def _turn_texts(self, key: CaseKey, index: int) -> tuple[str | None, str]:
        case = self.catalog.case(key)
        expected = case.conversation[index] if case and case.conversation and index < len(case.conversation) else None
        return (expected.user_content.text if expected is not None else None), self.catalog.relpath(Path(key.eval_file))

    def accept_turn(self, key: CaseKey, index: int) -> None:
        from ..schema.edits import accept_turn

        result = self.catalog.result(key)
        if result is None or index >= len(result.actual):
            self.notify("No actual turn to accept: run the case first.", severity="warning")
            return
        user, rel = self._turn_texts(key, index)
        if user is None:
            self.notify("The eval file has no such turn any more.", severity="warning")
            return
        actual = result.actual[index]
        calls = ", ".join(c.name or "(unnamed)" for c in actual.tool_calls) or "none"
        body = Content("\n").join([
            Content.assemble("Make the actual turn ", (f"{index + 1}", "bold"), " of case ", plain(key.eval_id, "bold"),
                             " the expected one in ", plain(rel, "bold"), "?"),
            Content(""),
            Content.assemble(("response  ", "$text-muted"), plain(one_line(actual.final_response.text if actual.final_response else "", 200))),
            Content.assemble(("tool calls ", "$text-muted"), plain(one_line(calls, 200))),
            Content(""),
            Content.styled("The file is rewritten atomically; invocation ids, the user message and every other key are kept.", "$text-muted"),
        ])
        path = Path(key.eval_file)
        self._confirm("Accept turn", body, lambda: self._edit(
            f"Accepted turn {index + 1} of {key.eval_id}", path,
            partial(accept_turn, path, key.eval_id, index, actual, user), key=key))

    def accept_case(self, key: CaseKey) -> None:
        from ..schema.edits import accept_case

        result = self.catalog.result(key)
        case = self.catalog.case(key)
        if result is None or not result.actual or case is None:
            self.notify("No actual turns to accept: run the case first.", severity="warning")
            return
        expected_turns = len(case.conversation or [])
        rel = self.catalog.relpath(Path(key.eval_file))
        body = Content("\n").join([
            Content.assemble("Make all ", (f"{len(result.actual)}", "bold"), " actual turns of case ", plain(key.eval_id, "bold"),
                             " the expected ones in ", plain(rel, "bold"), "?"),
            Content(""),
            Content.styled("The file is rewritten atomically; invocation ids, user messages and every other key are kept.", "$text-muted"),
        ])
        path = Path(key.eval_file)
        self._confirm("Accept case", body, lambda: self._edit(
            f"Accepted case {key.eval_id}", path, partial(accept_case, path, key.eval_id, list(result.actual), expected_turns),
            key=key))

    def delete_turn(self, key: CaseKey, index: int) -> None:
        from ..schema.edits import delete_turn

        user, rel = self._turn_texts(key, index)
        if user is None:
            self.notify("The eval file has no such turn.", severity="warning")
            return
        body = Content("\n").join([
            Content.assemble("Delete turn ", (f"{index + 1}", "bold"), " of case ", plain(key.eval_id, "bold"), " from ", plain(rel, "bold"), "?"),
            Content.assemble(("user  ", "$text-muted"), plain(one_line(user, 200))),
        ])
        path = Path(key.eval_file)
        self._confirm("Delete turn", body, lambda: self._edit(
            f"Deleted turn {index + 1} of {key.eval_id}", path, partial(delete_turn, path, key.eval_id, index, user),
            key=key, stale=True))

    def delete_case(self, key: CaseKey) -> None:
        from ..schema.edits import delete_case

        rel = self.catalog.relpath(Path(key.eval_file))
        body = Content.assemble("Delete case ", plain(key.eval_id, "bold"), " from ", plain(rel, "bold"), "?")
        path = Path(key.eval_file)

        def then() -> None:
            while len(self.screen_stack) > 1:
                self.pop_screen()
            self._edit(f"Deleted case {key.eval_id}", path, partial(delete_case, path, key.eval_id))

        self._confirm("Delete case", body, then)


def _confirm_screen() -> type[Screen[Any]]:
    from .screens.confirm import ConfirmScreen

    return ConfirmScreen


#: Young objects above which settling freezes the heap without collecting it first. A full collection
#: runs on the UI thread: after a 20,000-case replay run (1.2 million young objects, 2,140 of them cyclic
#: garbage) it took 1.5 s, after 100,000 cases several seconds, and the run panel's last frame and every
#: key waited behind it. Freezing instead keeps that run's few cycles for good (a few hundred KB).
COLLECT_AT_MOST = 250_000


def _gc_policy(phase: HeapPhase) -> None:
    """The dashboard process's cyclic-GC policy: no collections while a run streams (a full one stalls
    the UI and the engine alike), then collect once, if that is quick, and freeze what is left (the
    loaded eval sets and results) so later collections skip it."""
    if phase == "run":
        gc.disable()
        return
    young = gc.get_count()[0]
    if young <= COLLECT_AT_MOST:
        gc.collect()
    else:
        log.debug("heap settled with %d young objects: frozen without a full collection", young)
    gc.freeze()
    gc.enable()


def run_app(path: str | Path = ".", *, agent: str | None = None, mouse: bool = True, live: bool = False,
            num_runs: int = 1, ces: CesTarget | None = None, ces_endpoint: str | None = None,
            ces_app_version: str | None = None, mock_tools: str | None = None,
            executor: str = "local") -> int:
    """Open the dashboard on a folder (the `tui-eval [PATH]` entry point).

    The entry point owns the process, so the GC policy and the GIL switch interval are set here.
    GC policy, bench/tui_latency.py, A/B on a shared 2-core machine (load ~6), two rounds each:
    key-to-paint during a run p95 83 / 101 ms and max 185 / 228 ms with it, against 92 / 133 ms and
    335 / 311 ms without (TUI_EVAL_NOGC=1 turns it off).
    TUI_EVAL_DEFAULT_SWITCH=1 keeps Python's 5 ms switch interval (see SWITCH_INTERVAL).
    """
    policy = None if os.environ.get("TUI_EVAL_NOGC") else _gc_policy
    if policy is None:
        gc.enable()  # (the entry point kept it off while the dashboard imported)
    switch_interval = sys.getswitchinterval()
    if not os.environ.get("TUI_EVAL_DEFAULT_SWITCH"):
        # The engine thread scores CPU-bound (a replay run) while the UI thread hands the GIL back at
        # every select, terminal write and syscall, then waits up to the switch interval (5 ms) to get
        # it again: a key crosses dozens of such waits. At 1 ms, bench/tui_scale.py with 20,000 cases on
        # the shared 2-core machine (load 4-5, before keys paused the engine for good), two rounds each:
        # keys p50 43-51 ms against 67-106 ms at 5 ms (p95 195-219 against 175-314 ms: noisy); a
        # CPU-bound thread beside a Path.resolve() loop: resolve p95 0.2 ms against 27 ms.
        sys.setswitchinterval(SWITCH_INTERVAL)
    run_options = None
    if mock_tools is not None or executor != "local":
        # --mock-tools: every run of this dashboard answers tools from the records; --executor: where
        # agent code runs.
        from ..engine.options import RunOptions

        run_options = RunOptions(mock_tools=mock_tools, executor=executor)
    app = EvalApp(path, agent=agent, live=live, on_heap_phase=policy, num_runs=num_runs,
                 ces=ces, ces_endpoint=ces_endpoint, ces_app_version=ces_app_version, run_options=run_options)
    if policy is not None:
        # The start-up load builds every eval set's models (small, acyclic objects), which the cyclic
        # GC would rescan again and again: no collections until the loaded folder settles (the app
        # then collects once and freezes). Loading bench/.data/cases_5000 (tui.loader.load_workspace,
        # CPU): 0.96-0.97 s with the GC on, 0.37-0.38 s with it off.
        policy("run")
    try:
        app.run(mouse=mouse)
    finally:
        gc.enable()  # quitting during a run leaves it off
        sys.setswitchinterval(switch_interval)
    return app.return_code or 0
