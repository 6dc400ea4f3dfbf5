"""The tui-eval app: owns the catalog and the background work, and pulls their state onto the screen at 8 Hz.

Start-up paints first and loads afterwards: the folder is scanned, eval files parsed and saved results
read in a thread worker that streams into the browser, so the first frame never waits on the data.
"""

from __future__ import annotations

import threading
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
from .state import FileNews, Inbox, RunState
from .text import one_line, plain
from .theme import TUI_EVAL_THEME, default_theme

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from .runs import AgentLoader, RunGroup

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
        agent_loader: AgentLoader | None = None,
        run_options: Any = None,
        store: Any = None,
    ) -> None:
        super().__init__()
        self.catalog = Catalog(Path(path).resolve())
        self.agent_ref = agent
        self.live = live
        self.agent_reruns = True
        self.watch = watch
        self.inbox = Inbox()
        self.run_state: RunState | None = None
        self.agent_loader = agent_loader
        self.run_options = run_options
        self.store = store
        # One owner at a time mutates the Workspace: the loader, the watcher or an edit.
        self.ws_lock = threading.Lock()
        self._stop_watch = threading.Event()
        self._pending_live: dict[str, Any] = {}
        self.register_theme(TUI_EVAL_THEME)
        self.theme = theme or default_theme()

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(self.catalog)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_mount(self) -> None:
        self.set_interval(1 / TICK_HZ, self._tick, name="pull")
        # Load after the first frame is on screen.
        self.call_after_refresh(self._start_loading)

    def on_unmount(self) -> None:
        self._stop_background()

    def _stop_background(self) -> None:
        self._stop_watch.set()
        if self.run_state is not None and self.run_state.active:
            self.run_state.cancel()

    async def action_quit(self) -> None:
        self._stop_background()
        self.exit(0)

    # ---- loading and watching ----------------------------------------------------------------

    def _start_loading(self) -> None:
        self.run_worker(self._load, thread=True, group="load", name="load", exit_on_error=False)

    def _load(self) -> None:
        from ..engine.workspace import Workspace
        from .loader import load_workspace
        from .worker_utils import current_worker_cancelled

        workspace = Workspace(self.catalog.root, agent_ref=self.agent_ref)
        self.catalog.workspace = workspace
        try:
            load_workspace(workspace, self.inbox, self.ws_lock, cancelled=current_worker_cancelled)
        finally:
            self.inbox.loading = False

    def _start_watching(self) -> None:
        from .loader import watch_workspace

        workspace = self.catalog.workspace
        if workspace is None or self._stop_watch.is_set():
            return
        self.run_worker(
            partial(watch_workspace, workspace, self.inbox, self.ws_lock, self._stop_watch),
            thread=True, group="watch", name="watch", exit_on_error=False,
        )

    # ---- the pull loop -----------------------------------------------------------------------

    def pull(self) -> None:
        """Pull producer state onto the screen now (the timer does this 8 times a second)."""
        self._tick()

    def _tick(self) -> None:
        """Drain producer state into the widgets: at most TICK_HZ redraws a second, however busy the run."""
        main = self.main
        files, results, messages = self.inbox.drain()
        dirty: set[CaseKey] = set()
        files_changed = False
        for news in files:
            files_changed |= self._apply_file_news(news, dirty)
        for key, result, origin in results:
            if self.catalog.results.origin(key) != SESSION:
                self.catalog.results.put(key, result, origin)
                dirty.add(key)
        for text, severity in messages:
            self.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]
        state = self.run_state
        if state is not None:
            snap = state.drain()
            main.run_panel.show(snap)
            for key, result in snap.finished:
                self.catalog.results.put(key, result, SESSION)
                dirty.add(key)
            if snap.running != self.catalog.running:
                dirty |= snap.running ^ self.catalog.running
                self.catalog.running = snap.running
            if not state.active and self._pending_live:
                self._start_pending_live()
        if files_changed:
            main.files_changed()
        if dirty:
            for screen in self.screen_stack:
                refresh = getattr(screen, "refresh_keys", None)
                if refresh is not None:
                    refresh(dirty)
        if files or self.inbox.loading:
            main.refresh_topbar()

    def _apply_file_news(self, news: FileNews, dirty: set[CaseKey]) -> bool:
        cat = self.catalog
        loading = news.initial
        if news.error and not loading:
            self.notify(cat.error_text(news.error), title="File not loaded", severity="warning",
                        markup=False, timeout=8)
        if news.kind == "eval":
            main = self.main
            if news.removed:
                cat.remove_file(news.path)
                main.browser.remove_file(news.path)
                return True
            state = cat.file_state(news.path)
            if state is None:
                return False
            if not cat.add_file(news.path):
                main.browser.reload_file(news.path)
            keys = [cat.key(news.path, eval_id) for eval_id in news.changed_cases]
            for key in keys:
                if cat.case(key) is None:
                    cat.results.forget(key)
            dirty.update(keys)
            if self.live and not loading and news.error is None and keys:
                existing = [k for k in keys if cat.case(k) is not None]
                if existing:
                    self._queue_live("rerun", existing)
            return True
        if news.kind == "config":
            self.main.summary.refresh_entry()
            if self.live and not loading and news.error is None and news.criteria_changed:
                self._queue_live("rescore", self._config_keys(news.path))
            return False
        if news.kind == "agent" and self.live and self.agent_reruns and news.agent_dir is not None:
            ws = cat.workspace
            if ws is not None:
                files = ws.eval_files_of_agent(news.agent_dir)
                self._queue_live("rerun", [cat.key(p, c.eval_id) for p in files for c in cat.cases(p)])
        return False

    # ---- live mode ---------------------------------------------------------------------------

    def set_live(self, on: bool) -> None:
        self.live = on
        self.main.refresh_topbar()
        self.notify("Live mode on: saved edits re-run what changed." if on else "Live mode off.")

    def set_agent_reruns(self, on: bool) -> None:
        self.agent_reruns = on
        self.main.refresh_topbar()
        self.notify("Agent edits re-run their cases." if on else "Agent edits no longer re-run cases.")

    def _config_keys(self, config_path: Path) -> list[CaseKey]:
        ws = self.catalog.workspace
        if ws is None:
            return []
        return [self.catalog.key(p, c.eval_id) for p in ws.eval_files_of_config(config_path) for c in self.catalog.cases(p)]

    def _queue_live(self, kind: str, keys: list[CaseKey]) -> None:
        pending = self._pending_live.setdefault(kind, {})
        for key in keys:
            pending[key] = None
        if self.run_state is None or not self.run_state.active:
            self._start_pending_live()

    def _start_pending_live(self) -> None:
        pending, self._pending_live = self._pending_live, {}
        rerun = list(pending.get("rerun", {}))
        rescore = [k for k in pending.get("rescore", {}) if k not in set(rerun)]
        inferences = {}
        for key in rescore:
            result = self.catalog.result(key)
            if result is not None and result.actual and result.error is None:
                inferences[key] = result.actual
        if rerun or inferences:
            self.start_run("Live re-run" if rerun else "Live re-score", keys=rerun + list(inferences),
                           inferences=inferences)

    # ---- runs --------------------------------------------------------------------------------

    def start_run(
        self,
        label: str,
        *,
        keys: list[CaseKey] | None = None,
        files: list[Path] | None = None,
        inferences: dict[CaseKey, Any] | None = None,
    ) -> bool:
        """Plan and start a run in a thread worker. False (with a notification) if it cannot start now."""
        if self.run_state is not None and self.run_state.active:
            self.notify("A run is in progress: x cancels it.", severity="warning")
            return False
        if self.catalog.workspace is None or self.inbox.loading:
            self.notify("Still loading the folder; try again in a moment.", severity="warning")
            return False
        try:
            groups = self._groups(keys, files, inferences or {})
        except Exception as exc:  # a broken config or a file that went away: say so, run nothing
            self.notify(str(exc), title="Cannot run", severity="error", markup=False)
            return False
        if not groups:
            self.notify("Nothing to run.", severity="warning")
            return False
        from .runs import default_agent_loader, execute_groups

        state = self.run_state = RunState(label)
        self.main.run_panel.reset()
        self.run_worker(
            partial(execute_groups, groups, state, agent_loader=self.agent_loader or default_agent_loader,
                    options=self.run_options, store=self.store),
            thread=True, group="run", name=label, exit_on_error=False,
        )
        self.main.refresh_bindings()
        return True

    def _groups(self, keys: list[CaseKey] | None, files: list[Path] | None, inferences: dict[CaseKey, Any]) -> list[RunGroup]:
        from .runs import RunGroup

        ws = self.catalog.workspace
        assert ws is not None
        by_agent: dict[str | None, list[Any]] = {}
        if keys is not None:
            for key in keys:
                ref = None if key in inferences else ws.agent_for(Path(key.eval_file))
                by_agent.setdefault(ref, []).append(key)
        else:
            for path in files or []:
                state = ws.eval_files.get(path)
                if state is not None and state.eval_set is not None:
                    by_agent.setdefault(ws.agent_for(path), []).append(path)
        groups = []
        for ref, items in by_agent.items():
            if keys is not None:
                plan = ws.plan_for(keys=items)
                group_inferences = {k: inferences[k] for k in items if k in inferences}
            else:
                plan = ws.plan_for(files=items)
                group_inferences = {}
            if plan.targets:
                groups.append(RunGroup(ref, plan, group_inferences))
        return groups

    def cancel_run(self) -> None:
        if self.run_state is not None and self.run_state.active:
            self.run_state.cancel()
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
                if self.watch:
                    self._start_watching()
            elif worker.group == "edit":
                self.notify(worker.name, markup=False)
            if worker.group == "run":
                self.main.refresh_bindings()
        elif event.state == WorkerState.ERROR:
            error = f"{type(worker.error).__name__}: {worker.error}" if worker.error else "unknown error"
            titles = {"run": "Run failed", "edit": "Edit not saved", "load": "Could not load the folder",
                      "watch": "File watching stopped"}
            self.notify(error, title=titles.get(worker.group, "Error"), severity="error", markup=False, timeout=10)
            if worker.group == "load":
                self.inbox.loading = False
            if worker.group == "run":
                self.main.refresh_bindings()

    # ---- navigation --------------------------------------------------------------------------

    def open_turn(self, key: CaseKey, index: int) -> None:
        from .screens.turn import TurnScreen

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

    def _run_action_on(self, node: Any, action: str) -> None:
        self.run_action(action, node)

    # ---- edits -------------------------------------------------------------------------------

    def _confirm(self, title: str, body: Content, then: Callable[[], None]) -> None:
        from .screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(title, body), answered)

    def _edit(self, done: str, path: Path, change: Callable[[], None]) -> None:
        """Write an edit in a thread worker, then reload the file (the watcher would too, but maybe later)."""
        from .loader import news_of

        def work() -> None:
            change()
            if not self.watch or self._stop_watch.is_set():
                with self.ws_lock:
                    news = news_of(self.catalog.workspace.reload(path))  # type: ignore[union-attr]
                self.inbox.push_file(news)

        self.run_worker(work, thread=True, group="edit", name=done, exit_on_error=False)

    def _turn_texts(self, key: CaseKey, index: int) -> tuple[str | None, str]:
        case = self.catalog.case(key)
        expected = case.conversation[index] if case and case.conversation and index < len(case.conversation) else None
        return (expected.user_content.text if expected is not None else None), self.catalog.relpath(Path(key.eval_file))

    def accept_turn(self, key: CaseKey, index: int) -> None:
        from .edits import accept_turn

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
        from .edits import accept_case

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
        from .edits import delete_turn

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
        from .edits import delete_case

        rel = self.catalog.relpath(Path(key.eval_file))
        body = Content.assemble("Delete case ", plain(key.eval_id, "bold"), " from ", plain(rel, "bold"), "?")
        path = Path(key.eval_file)

        def then() -> None:
            while len(self.screen_stack) > 1:
                self.pop_screen()
            self._edit(f"Deleted case {key.eval_id}", path, partial(delete_case, path, key.eval_id))

        self._confirm("Delete case", body, then)


def run_app(path: str | Path = ".", *, agent: str | None = None, mouse: bool = True, live: bool = False) -> int:
    """Open the dashboard on a folder (the `tui-eval [PATH]` entry point)."""
    app = EvalApp(path, agent=agent, live=live)
    app.run(mouse=mouse)
    return app.return_code or 0
