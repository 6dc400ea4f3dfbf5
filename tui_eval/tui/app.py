"""The tui-eval app: owns the catalog and the background work, and pulls their state onto the screen at 8 Hz.

Start-up paints first and loads afterwards: the folder is scanned, eval files parsed and saved results
read in a thread worker that streams into the browser, so the first frame never waits on the data.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from .catalog import Catalog
from .commands import CaseCommands
from .screens.main import MainScreen
from .session import SessionBridge
from .state import Inbox, RunState
from .text import one_line, plain
from .theme import TUI_EVAL_THEME, default_theme

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey

SESSION = "this session"
TICK_HZ = 8


class EvalApp(App[int]):
    """Browse, run and judge ADK eval sets from the keyboard."""

    CSS_PATH = "app.tcss"
    TITLE = "tui-eval"
    COMMANDS = App.COMMANDS | {CaseCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

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
    ) -> None:
        super().__init__()
        self.catalog = Catalog(Path(path).resolve())
        self.agent_ref = agent
        self.watch = watch
        self.inbox = Inbox()
        self.bridge = SessionBridge(self.inbox, live=live)
        self.run_options = run_options
        self.store = store
        # What the screen last showed, so a tick redraws only what changed.
        self._shown_run: RunState | None = None
        self._shown_phase: str | None = None
        self._shown_loading: bool | None = None
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
        self.set_interval(1 / TICK_HZ, self._tick, name="pull")
        # Load after the first frame is on screen.
        self.call_after_refresh(self._start_loading)

    def on_unmount(self) -> None:
        self.bridge.close()
        _gc_for_run(False)

    async def action_quit(self) -> None:
        self.bridge.cancel()
        self.exit(0)

    # ---- loading -----------------------------------------------------------------------------

    def _start_loading(self) -> None:
        self.run_worker(self._load, thread=True, group="load", name="load", exit_on_error=False)

    def _load(self) -> None:
        """Thread worker: the LiveSession, its workspace streamed in file by file, then saved results."""
        from ..engine.live import LiveSession
        from ..engine.runner import RunOptions
        from ..engine.store import ResultStore
        from .loader import load_latest_results, load_workspace
        from .worker_utils import current_worker_cancelled

        try:
            session = LiveSession(
                self.catalog.root,
                agent_ref=self.agent_ref,
                options=self.run_options or RunOptions(),
                store=self.store if self.store is not None else ResultStore(),
                on_event=self.bridge.on_event,
                rerun_on_agent_change=self.bridge.agent_reruns,
            )
            self.catalog.workspace = session.workspace
            load_workspace(session.workspace, cancelled=current_worker_cancelled)
            # Saved inferences let a config edit re-score without running the agent.
            session.results.update(load_latest_results(session.workspace, self.inbox, current_worker_cancelled))
            if not current_worker_cancelled():
                self.bridge.attach(session)
                if self.watch:
                    self.bridge.start_watching()
        finally:
            self.inbox.loading = False

    # ---- the pull loop -----------------------------------------------------------------------

    def pull(self) -> None:
        """Pull producer state onto the screen now (the timer does this 8 times a second)."""
        self._tick()

    def _tick(self) -> None:
        """Drain producer state into the widgets: at most TICK_HZ redraws a second, however busy the run."""
        stack = self.screen_stack
        # The timer can fire once more while the app shuts down and its screens are being removed.
        if self._exit or not self.is_running or not stack or not isinstance(stack[0], MainScreen) \
                or not stack[0].is_attached:
            return
        main = stack[0]
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
        for path, error in delta.broke:
            self.notify(cat.error_text(error), title="File not loaded", severity="warning", markup=False, timeout=8)
        results, removed, messages = self.inbox.drain()
        for key, result, origin in results:
            if cat.results.origin(key) != SESSION:
                cat.set_result(key, result, origin)
                dirty.add(key)
        for key in removed:
            cat.set_result(key, None)
            dirty.add(key)
        for text, severity in messages:
            self.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]
        state = self.bridge.current
        if state is not None:
            if state is not self._shown_run:
                self._shown_run = state
                main.run_panel.reset()
            snap = state.drain()
            main.run_panel.show(snap)
            for key, result in snap.finished:
                cat.set_result(key, result, SESSION)
                dirty.add(key)
            if snap.running != cat.running:
                dirty |= snap.running ^ cat.running
                cat.running = snap.running
            if snap.phase != self._shown_phase:
                self._shown_phase = snap.phase
                self.refresh_bindings()
                _gc_for_run(state.active)
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
                if cat.loaded:
                    _settle_heap()
            main.refresh_topbar()

    # ---- live mode ---------------------------------------------------------------------------

    def set_live(self, on: bool) -> None:
        self.bridge.set_live(on)
        self.main.refresh_topbar()
        self.notify("Live mode on: saving a file re-runs what it changed." if on else "Live mode off: saved files only reload.")

    def set_agent_reruns(self, on: bool) -> None:
        self.bridge.set_agent_reruns(on)
        self.main.refresh_topbar()
        self.notify("Agent edits re-run their cases (in live mode)." if on else "Agent edits no longer re-run cases.")

    # ---- runs --------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The folder is loaded and the engine is up."""
        return not self.inbox.loading and self.bridge.host is not None

    def start_run(self, label: str, *, keys: list[CaseKey] | None = None, files: list[Path] | None = None) -> bool:
        """Start a run of cases (or whole files) in the engine; False, with a notification, if it cannot now."""
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
        self.run_worker(partial(self.bridge.run_keys, state, keys, label), thread=True, group="run", name=label,
                        exit_on_error=False)
        self.refresh_bindings()
        return True

    def cancel_run(self) -> None:
        if self.bridge.busy:
            self.bridge.cancel()
            self.notify("Cancelling: finished cases are kept.")

    def metric_names(self) -> list[str]:
        names = dict.fromkeys(self.catalog.results.metric_names())
        ws = self.catalog.workspace
        if ws is not None:
            for state in list(ws.configs.values()):
                if state.config is not None:
                    names.update(dict.fromkeys(state.config.criteria))
        return list(names)

    # ---- workers -----------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            if worker.group == "load":
                self.main.refresh_topbar()
                self.refresh_bindings()
            elif worker.group == "edit":
                self.notify(worker.name, markup=False)
            if worker.group == "run":
                self.refresh_bindings()
        elif event.state == WorkerState.ERROR:
            error = f"{type(worker.error).__name__}: {worker.error}" if worker.error else "unknown error"
            titles = {"run": "Run failed", "edit": "Edit not saved", "load": "Could not load the folder",
                      "watch": "File watching stopped"}
            self.notify(error, title=titles.get(worker.group, "Error"), severity="error", markup=False, timeout=10)
            if worker.group == "run":
                state = self.bridge.current
                if state is not None and state.active:
                    state.finish("failed", error)
                self.refresh_bindings()

    # ---- navigation --------------------------------------------------------------------------

    def open_turn(self, key: CaseKey, index: int) -> None:
        from .screens.turn import TurnScreen

        if isinstance(self.screen, TurnScreen):
            self.screen.show(key, index)
        else:
            self.push_screen(TurnScreen(key, index))

    def open_history(self) -> None:
        from .screens.history import HistoryScreen

        self.push_screen(HistoryScreen())

    def jump_to(self, key: CaseKey, turn: int | None = None) -> None:
        """Show a case in the browser, from anywhere."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.main.select_key(key, turn)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every binding of the current screen and the app, so the palette reaches every action."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for node in (screen, self):
            for binding in getattr(node, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                    continue
                seen.add(binding.action)
                if node is screen and screen.check_action(binding.action.split("(")[0], ()) is not True:
                    continue
                keys = ", ".join(self.get_key_display(Binding(k.strip(), binding.action)) for k in binding.key.split(","))
                yield SystemCommand(binding.description, f"{keys} · {binding.id or binding.action}",
                                    partial(self._run_action_on, node, binding.action))
        if isinstance(screen, MainScreen):
            for name in self.metric_names():
                yield SystemCommand(f"Filter by metric: {name}", "show this metric's status and score",
                                    partial(screen.set_metric, name))

    async def _run_action_on(self, node: Any, action: str) -> None:
        await self.run_action(action, node)

    # ---- edits -------------------------------------------------------------------------------

    def _confirm(self, title: str, body: Content, then: Callable[[], None]) -> None:
        from .screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(title, body), answered)

    def _edit(self, done: str, path: Path, change: Callable[[], None]) -> None:
        """Write an edit in a thread worker; the watcher reloads the file (or we do, when not watching)."""

        def work() -> None:
            change()
            if not self.bridge.watching:
                self.bridge.reload(path)

        self.run_worker(work, thread=True, group="edit", name=done, exit_on_error=False)

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
        calls = ", ".join(c.name for c in actual.tool_calls) or "none"
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
            partial(accept_turn, path, key.eval_id, index, actual, user)))

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
            f"Accepted case {key.eval_id}", path, partial(accept_case, path, key.eval_id, list(result.actual), expected_turns)))

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
            f"Deleted turn {index + 1} of {key.eval_id}", path, partial(delete_turn, path, key.eval_id, index, user)))

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


def _settle_heap() -> None:
    """Move what is loaded now (eval sets, results) out of the cyclic GC's way: a full collection over
    a big workspace otherwise stalls both threads for 100+ ms in the middle of a run."""
    import gc

    gc.collect()
    gc.freeze()


def _gc_for_run(running: bool) -> None:
    """No cyclic GC while a run streams (a full collection stalls the UI and the engine alike for
    30-150 ms); collect and freeze what is left once it ends."""
    import gc

    if running:
        gc.disable()
    elif not gc.isenabled():
        gc.enable()
        _settle_heap()


def run_app(path: str | Path = ".", *, agent: str | None = None, mouse: bool = True, live: bool = False) -> int:
    """Open the dashboard on a folder (the `tui-eval [PATH]` entry point)."""
    app = EvalApp(path, agent=agent, live=live)
    app.run(mouse=mouse)
    return app.return_code or 0
