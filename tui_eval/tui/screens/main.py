"""The main screen: the eval browser, the summary of what is highlighted, the run panel and search."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static, Tree

from ..messages import (
    AgentRerunsToggled,
    CancelRequested,
    CaseEditRequested,
    CesRunRequested,
    EditKind,
    EditRequested,
    ImportSessionRequested,
    LiveToggled,
    OpenCesHistory,
    OpenHistory,
    OpenTimeline,
    OpenTurn,
    OpenReview,
    RunRequested,
    UndoRequested,
    VerdictRequested,
)
from ..text import plain
from ..widgets.browser import CaseEntry, Entry, EvalBrowser, MoreEntry, SetEntry, TurnEntry
from ..widgets.footer import KeyFooter
from ..widgets.run_panel import RunPanel
from ..widgets.summary import Summary

if TYPE_CHECKING:  # pragma: no cover
    from textual.widgets import Input

    from ...engine.events import CaseKey
    from ..app import EvalApp
    from ..listing import CaseListing
    from ..readmodel import Changes
    from .whatif import WhatIfState


_FOOTER_FIRST = ("app.help", "app.quit")


class MainScreen(Screen[None]):
    """Browse eval files > cases > turns, start and watch runs, filter and search."""

    app: EvalApp
    #: Below 100 columns the tree widens to half the screen (app.tcss): its rows keep status and score.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (100, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run_selection", "Run", id="run.selection", tooltip="Run the highlighted file or case"),
        Binding("R", "run_all", "Run all", id="run.all"),
        Binding("F", "run_failed", "Run failed", id="run.failed"),
        Binding("S", "run_stale", "Run stale", show=False, id="run.stale",
                tooltip="Re-run exactly the cases whose results are stale"),
        Binding("x", "cancel_run", "Cancel", id="run.cancel"),
        Binding("i", "in_flight", "Cases in flight", show=False, id="run.in_flight"),
        # Hidden unless the dashboard is on a CES app (check_action): other footers stay as they were.
        Binding("C", "ces_run", "Run in CES", id="ces.run"),
        Binding("f", "toggle_failed", "Failed only", id="filter.failed"),
        Binding("m", "cycle_metric", "Metric", id="filter.metric"),
        Binding("slash", "search", "Search", id="filter.search"),
        Binding("s", "cycle_order", "Sort: file order, worst score, slowest", show=False, id="browser.sort"),
        Binding("y", "copy", "Copy as JSON", show=False, id="browser.copy"),
        Binding("escape", "clear_filters", "Clear filters", show=False, id="filter.clear"),
        Binding("o", "open_turn", "Open turn", show=False, id="turn.open"),
        Binding("a", "accept", "Accept as expected", show=False, id="edit.accept"),
        Binding("d", "delete", "Delete", show=False, id="edit.delete"),
        # The turn view's whole-case keys work here too, on the highlighted case or the case of a turn.
        Binding("A", "accept_whole_case", "Accept whole case", show=False, id="browser.accept_case"),
        Binding("D", "delete_whole_case", "Delete whole case", show=False, id="browser.delete_case"),
        Binding("E", "edit_case", "Edit case (JSON)", show=False, id="edit.in_editor"),
        Binding("z", "undo", "Undo last edit", show=False, id="edit.undo"),
        Binding("I", "import_session", "Import an ADK session", show=False, id="edit.import_session"),
        Binding("V", "verdict", "Your verdict (pass/fail)", show=False, id="review.verdict"),
        Binding("P", "review", "Review mode", show=False, id="review.open"),
        Binding("T", "chat", "Talk to the agent", show=False, id="chat.open"),
        Binding("h", "history", "History", id="history.open"),
        Binding("t", "timeline", "Timeline", show=False, id="timeline.open"),
        Binding("w", "causes", "Failures by cause", show=False, id="causes.open"),
        Binding("W", "whatif", "What if (threshold, match type)", show=False, id="whatif.open"),
        Binding("l", "toggle_live", "Live", id="live.toggle"),
        Binding("L", "toggle_agent_reruns", "Re-run on agent edits", show=False, id="live.agent_reruns"),
        Binding("c", "ces_history", "CES history", show=False, id="ces.history"),
    ]

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The footer's keys with the app's help and quit first: it lists the screen's keys before the
        app's, and at 80 columns the app's fell off its end."""
        bindings = super().active_bindings
        first = {k: v for k, v in bindings.items() if v.binding.id in _FOOTER_FIRST}
        return {**first, **{k: v for k, v in bindings.items() if k not in first}}

    def __init__(self, listing: CaseListing) -> None:
        super().__init__(id="main")
        self.listing = listing
        self._search_timer: Timer | None = None
        self._resort_timer: Timer | None = None
        # The what-if settings last until the dashboard closes (never written unless asked).
        self._whatif_state: WhatIfState | None = None
        #: A case to show once its file is listed again (a case just written into it: an import, a chat).
        self._pending_select: tuple[CaseKey, int | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="topbar")
        with Horizontal(id="body"):
            yield EvalBrowser(self.listing, id="browser")
            with VerticalScroll(id="summary-scroll"):
                yield Summary(self.listing, id="summary")
        yield RunPanel(id="run-panel")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.app.watch_changes(self, self.show_changes)
        # Watch the cursor rather than wait for NodeHighlighted: the summary then changes in the same
        # frame as the cursor (the message arrives a frame later, doubling key-to-paint latency).
        self.watch(self.browser, "cursor_line", self._cursor_moved, init=False)
        self._title_browser()
        self.query_one("#summary-scroll").border_title = "Summary"
        self.summary.show(None)
        self.refresh_topbar()
        for mode in ("live", "agent_reruns"):  # the top bar says which modes are on
            self.watch(self.app, mode, self._modes_changed, init=False)

    # ---- parts -------------------------------------------------------------------------------

    # The browser and summary are composed once and never replaced: looked up once, not per cursor move.
    @cached_property
    def browser(self) -> EvalBrowser:
        return self.query_one(EvalBrowser)

    @cached_property
    def summary(self) -> Summary:
        return self.query_one(Summary)

    @property
    def run_panel(self) -> RunPanel:
        return self.query_one(RunPanel)

    @property
    def selected(self) -> Entry:
        node = self.browser.cursor_node
        return node.data if node is not None else None

    def refresh_topbar(self) -> None:
        app = self.app
        cat = self.listing
        parts: list[Content | tuple[str, str] | str] = [("tui-eval ", "bold $text-accent"), plain(cat.relpath(cat.root) if cat.root.is_file() else cat.root.name or str(cat.root))]
        if cat.filter.active:
            # Right after the folder: at 80 columns the end of the bar is cut off, and the filter is what
            # explains a tree with cases missing.
            # A long metric name is shortened in the middle so the bar's other parts still fit 80 columns.
            parts.append((f"  filter: {cat.filter.describe(metric_width=26)}", "$text-warning"))
        if app.model.loading:
            parts.append((f"  loading… {len(cat.files)} eval files", "$text-muted"))
        else:
            ws = cat.workspace
            if app.agent_ref:
                agents = "agent " + cat.display_agent(app.agent_ref)
            else:
                n = len(ws.agent_dirs) if ws is not None else 0
                agents = f"{n} agent{'s' if n != 1 else ''}"
            if not cat.filter.active:  # else the filter needs the room (the tree shows the files anyway)
                parts.append((f"  {len(cat.files)} eval file{'' if len(cat.files) == 1 else 's'} · ", "$text-muted"))
                parts.append(plain(agents, "$text-muted"))
        if not app.saving:
            parts.append(("  not saved", "$text-warning"))  # --no-save: this session stays out of history
        parts.append(("  live on" if app.live else "  live off", "$text-success" if app.live else "$text-muted"))
        if app.live and not app.agent_reruns:
            parts.append((" (no agent re-runs)", "$text-muted"))
        parts.append(("  ? help", "$text-muted"))
        self.query_one("#topbar", Static).update(Content.assemble(*parts))

    def keys_changed(self) -> None:
        """The keymap is in effect: the run panel and the summary name its keys."""
        from ..widgets.run_panel import NAMED_KEYS

        self.run_panel.use_keys({i: self.app.keys_in(f"{{{i}}}") for i in NAMED_KEYS})
        self.summary.refresh_entry()

    def cannot_act(self, action: str, parameters: tuple[object, ...]) -> str | None:
        """Why a key of this screen cannot act now (see `check_action`), as a short notice."""
        keys = self.app.keys_in
        if action in ("run_selection", "run_all", "run_failed"):
            if self.app.busy:
                return keys("A run is going: {run.cancel} cancels it, or wait for it to end.")
            return "Still starting: runs can start once the folder is loaded."
        if action == "cancel_run":
            return "No run to cancel."
        if action == "open_turn":
            return keys("{turn.open} opens a turn: highlight one (→ lists a case's turns).")
        if action in ("accept", "delete"):
            entry = self.selected
            if isinstance(entry, (CaseEntry, TurnEntry)):
                return keys("Nothing to accept: this case has no result yet ({run.selection} runs it).")
            verb = "accepts" if action == "accept" else "deletes"
            key = keys("{edit.accept}" if action == "accept" else "{edit.delete}")
            return f"{key} {verb} a case or a turn: highlight one."
        if action == "ces_run" and self.app.busy and (self.app.ces.target is not None or self._ces_case()):
            return keys("A run is going: {run.cancel} cancels it, or wait for it to end.")
        return None

    def _modes_changed(self, _on: bool) -> None:
        self.refresh_topbar()

    # ---- browser events ----------------------------------------------------------------------

    def _cursor_moved(self, _line: int) -> None:
        node = self.browser.cursor_node
        entry = node.data if node is not None else None
        if entry != self.summary.entry:
            self.summary.show(entry)
            # Another selection starts at its top, not where the last one was scrolled to.
            self.query_one("#summary-scroll").scroll_home(animate=False)

    @on(Tree.NodeSelected, "#browser")
    def _selected(self, event: Tree.NodeSelected[Entry]) -> None:
        if isinstance(event.node.data, TurnEntry):
            self.post_message(OpenTurn(event.node.data.key, event.node.data.index))
        elif isinstance(event.node.data, MoreEntry):
            self.browser.show_more(event.node)

    def refresh_keys(self, keys: set[CaseKey]) -> None:
        """New results or running state for these cases: repaint their lines and the summary."""
        if not keys:
            return
        self.browser.refresh_keys(keys)
        if self.listing.order != "file" and self._resort_timer is None:
            # Sorted by score or duration: new results move cases, at most once a second.
            self._resort_timer = self.set_timer(1.0, self._resort)
        entry = self.summary.entry
        if isinstance(entry, (CaseEntry, TurnEntry)) and entry.key in keys:
            self.summary.refresh_entry()
        elif isinstance(entry, SetEntry) and any(str(entry.path) == k.eval_file for k in keys):
            self.summary.refresh_entry()

    def _resort(self) -> None:
        self._resort_timer = None
        if self.listing.order != "file":
            self.browser.rebuild(keep_open=True)

    def show_changes(self, changes: Changes) -> None:
        """Redraw what a pull of the read model changed (the app publishes it on its timer)."""
        delta = changes.files
        for path in delta.removed:
            self.browser.remove_file(path)
        for path in delta.reloaded:
            self.browser.reload_file(path)
        pending = self._pending_select
        if pending is not None and Path(pending[0].eval_file) in {*delta.reloaded, *delta.added}:
            self._pending_select = None
            self.browser.select_key(pending[0], turn=pending[1])
        if changes.new_run:
            self.run_panel.reset()
        if changes.run is not None:
            self.run_panel.show(changes.run, self.listing.run_book.num_runs)
        if changes.run is not None or changes.insight or changes.new_run:
            self.run_panel.show_insight(self.listing.run_book)
        if changes.in_flight:
            from ..inflight import in_flight

            self.run_panel.show_in_flight(in_flight(self.app.model.in_flight, self.listing.running))
        if delta.added or delta.removed:
            self.files_changed()
        elif delta.configs_changed or delta.reloaded or changes.timeline or changes.loaded:
            self.summary.refresh_entry()
        self.refresh_keys(changes.dirty)
        if delta or changes.loaded:
            self.refresh_topbar()

    def files_changed(self) -> None:
        self.browser.sync_files()
        if self.summary.entry is None and self.browser.cursor_node is not None:
            self.summary.show(self.browser.cursor_node.data)
        else:
            self.summary.refresh_entry()

    # ---- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.app.busy
        if action == "cancel_run":
            return running  # hidden from the footer unless a run is going
        if action == "ces_run":
            # Shown when the dashboard is on a CES app; on a pulled folder it works on a CES case.
            if self.app.ces.target is None and not self._ces_case():
                return False
            return None if running else True
        if action in ("run_selection", "run_all", "run_failed", "run_stale"):
            return None if running or not self.app.ready else True
        if action in ("accept", "delete", "open_turn"):
            entry = self.selected
            if action == "open_turn":
                return isinstance(entry, TurnEntry) or None
            if action == "accept":
                return isinstance(entry, (CaseEntry, TurnEntry)) and entry.key in self.listing.results or None
            return isinstance(entry, (CaseEntry, TurnEntry)) or None
        return True

    def action_run_selection(self) -> None:
        entry = self.selected
        if isinstance(entry, SetEntry):
            self.post_message(RunRequested(f"Run {entry.path.name}", files=(entry.path,)))
        elif isinstance(entry, (CaseEntry, TurnEntry)):
            self.post_message(RunRequested(f"Run {entry.key.eval_id}", keys=(entry.key,)))

    def action_run_all(self) -> None:
        self.post_message(RunRequested("Run all", files=tuple(self.listing.files)))

    def action_run_failed(self) -> None:
        keys = self.listing.failed_keys()
        if not keys:
            self.notify("No failed cases to run.")
            return
        self.post_message(RunRequested(f"Run {len(keys)} failed", keys=tuple(keys)))

    def action_in_flight(self) -> None:
        from .inflight import InFlightScreen

        self.app.push_screen(InFlightScreen())

    def action_run_stale(self) -> None:
        """Exactly the cases whose results are stale (their code, case, criteria, tools or judge changed)."""
        keys = self.listing.stale_keys()
        if not keys:
            self.notify("No stale results: every result matches the files on disk.")
            return
        self.post_message(RunRequested(f"Run {len(keys)} stale", keys=tuple(keys)))

    def action_cancel_run(self) -> None:
        self.post_message(CancelRequested())

    def action_toggle_failed(self) -> None:
        """failed only → (with --num-runs and flaky cases) flaky only → everything."""
        f = self.listing.filter
        if f.failed_only:
            f.failed_only = False
            f.flaky_only = self.listing.run_book.num_runs > 1 and any(
                self.listing.flaky(k) is not None for k in self.listing.run_book.repeats)
        elif f.flaky_only:
            f.flaky_only = False
        else:
            f.failed_only = True
        self.apply_filter()

    def action_cycle_metric(self) -> None:
        names = self.listing.metric_names()
        if not names:
            self.notify("No metrics yet: run something first.")
            return
        current = self.listing.filter.metric
        cycle = [None, *names]
        self.set_metric(cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else None)

    def action_copy(self) -> None:
        """The highlighted case as its eval file has it, or the highlighted turn as the agent answered it
        (else as expected), as JSON on the clipboard (OSC 52: works over SSH where the terminal allows)."""
        import json

        entry = self.selected
        data: object = None
        what = ""
        if isinstance(entry, CaseEntry):
            case = self.listing.case(entry.key)
            if case is not None:
                data, what = case.to_dict(), f"case {entry.key.eval_id}"
        elif isinstance(entry, TurnEntry):
            result = self.listing.result(entry.key)
            case = self.listing.case(entry.key)
            if result is not None and entry.index < len(result.actual):
                data, what = result.actual[entry.index].to_dict(), f"actual turn {entry.index + 1} of {entry.key.eval_id}"
            elif case is not None and case.conversation and entry.index < len(case.conversation):
                data, what = case.conversation[entry.index].to_dict(), f"expected turn {entry.index + 1} of {entry.key.eval_id}"
        if data is None:
            self.notify("y copies a case or a turn: highlight one.", markup=False)
            return
        text = json.dumps(data, ensure_ascii=False, indent=2)
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied {what} as JSON ({len(text):,} characters).", markup=False)

    def action_cycle_order(self) -> None:
        from ..listing import CASE_ORDER_WORDS

        order = self.listing.cycle_order()
        self._title_browser()
        self.browser.rebuild(keep_open=True)
        self.notify(self.app.keys_in(f"Cases sorted: {CASE_ORDER_WORDS[order]} ({{browser.sort}} changes it)."),
                    markup=False, timeout=3)

    def _title_browser(self) -> None:
        # The tree's title says what its numbers are when they are not the file's order of scores.
        order = self.listing.order
        self.browser.border_title = {"file": "Eval sets", "score": "Eval sets · worst score first",
                                     "duration": "Eval sets · slowest first"}[order]

    def set_metric(self, name: str | None) -> None:
        self.listing.filter.metric = name
        self.apply_filter()

    def apply_filter(self) -> None:
        self.browser.rebuild()
        self.refresh_topbar()
        node = self.browser.cursor_node
        self.summary.show(node.data if node is not None else None)

    def _search_input(self) -> Any:
        found = self.query("#search")
        return found.first() if found else None

    def action_search(self) -> None:
        search = self._search_input()
        if search is None:
            # Imported and mounted on first use: one widget less to load before the first frame.
            from ..widgets.search import SearchInput

            search = SearchInput(placeholder=self.app.keys_in(
                "search ids, messages, responses, tools, arguments, plans ({search.done}: done, {search.clear}: clear)",
                MainScreen, SearchInput), id="search")
            self.mount(search, before=self.run_panel)
        search.remove_class("-hidden")
        search.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "search":
            return
        if self._search_timer is not None:
            self._search_timer.stop()
        # Debounced: a 5,000-case tree is not rebuilt on every keystroke.
        self._search_timer = self.set_timer(0.15, lambda: self._set_query(event.value))

    def _set_query(self, value: str) -> None:
        if value != self.listing.filter.query:
            self.listing.filter.query = value
            self.apply_filter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        self._set_query(event.value)
        if not event.value:
            event.input.add_class("-hidden")
        self.browser.focus()

    def action_clear_filters(self) -> None:
        search = self._search_input()
        had = self.listing.filter.active or (search is not None and not search.has_class("-hidden"))
        if search is not None:
            search.value = ""
            search.add_class("-hidden")
        if self._search_timer is not None:
            self._search_timer.stop()
        self.listing.filter.failed_only = False
        self.listing.filter.flaky_only = False
        self.listing.filter.metric = None
        self.listing.filter.query = ""
        if had:
            self.apply_filter()
        self.browser.focus()

    def action_open_turn(self) -> None:
        entry = self.selected
        if isinstance(entry, TurnEntry):
            self.post_message(OpenTurn(entry.key, entry.index))

    def action_accept(self) -> None:
        entry = self.selected
        if isinstance(entry, TurnEntry):
            self.post_message(EditRequested(EditKind.ACCEPT_TURN, entry.key, entry.index))
        elif isinstance(entry, CaseEntry):
            self.post_message(EditRequested(EditKind.ACCEPT_CASE, entry.key))

    def action_delete(self) -> None:
        entry = self.selected
        if isinstance(entry, TurnEntry):
            self.post_message(EditRequested(EditKind.DELETE_TURN, entry.key, entry.index))
        elif isinstance(entry, CaseEntry):
            self.post_message(EditRequested(EditKind.DELETE_CASE, entry.key))

    def action_accept_whole_case(self) -> None:
        self._whole_case(EditKind.ACCEPT_CASE, self.app.keys_in("{browser.accept_case} accepts a whole case"))

    def action_delete_whole_case(self) -> None:
        self._whole_case(EditKind.DELETE_CASE, self.app.keys_in("{browser.delete_case} deletes a whole case"))

    def _whole_case(self, kind: EditKind, what: str) -> None:
        entry = self.selected
        if isinstance(entry, (CaseEntry, TurnEntry)):
            self.post_message(EditRequested(kind, entry.key))
        else:
            self.notify(f"{what}: highlight a case or one of its turns (here or in the turn view).", markup=False)

    def action_edit_case(self) -> None:
        entry = self.selected
        if isinstance(entry, (CaseEntry, TurnEntry)):
            self.post_message(CaseEditRequested(entry.key))
        else:
            self.notify("E edits a case as JSON: highlight a case or one of its turns.", markup=False)

    def action_verdict(self) -> None:
        entry = self.selected
        if isinstance(entry, TurnEntry):
            self.post_message(VerdictRequested(entry.key, turn=entry.index))
        elif isinstance(entry, CaseEntry):
            self.post_message(VerdictRequested(entry.key))
        else:
            self.notify("V gives your verdict on a case or a turn: highlight one.", markup=False)

    def action_chat(self) -> None:
        entry = self.selected
        path = (entry.path if isinstance(entry, SetEntry) else self.listing.path_of(entry.key)
                if isinstance(entry, (CaseEntry, TurnEntry)) else None)
        ws = self.listing.workspace
        agent = ws.agent_for(path) if ws is not None and path is not None else None
        if path is None or agent is None or agent.startswith("replay:"):
            self.notify("T talks to an eval set's agent: highlight an eval set (or a case) that has one.",
                        markup=False)
            return
        from .chat import ChatScreen

        self.app.push_screen(ChatScreen(agent, path))

    def action_review(self) -> None:
        self.post_message(OpenReview())

    def action_undo(self) -> None:
        self.post_message(UndoRequested())

    def action_import_session(self) -> None:
        entry = self.selected
        if isinstance(entry, SetEntry):
            self.post_message(ImportSessionRequested(entry.path))
        elif isinstance(entry, (CaseEntry, TurnEntry)):
            self.post_message(ImportSessionRequested(self.listing.path_of(entry.key)))
        else:
            self.notify("I imports a session into an eval set: highlight one.", markup=False)

    def _ces_case(self) -> CaseKey | None:
        from ..widgets.browser import ces_marker_of

        entry = self.selected
        if isinstance(entry, (CaseEntry, TurnEntry)) and ces_marker_of(self.listing, entry.key) is not None:
            return entry.key
        return None

    def action_ces_run(self) -> None:
        entry = self.selected
        key = self._ces_case()
        if key is None and isinstance(entry, (CaseEntry, TurnEntry)) and self.app.ces.target is not None:
            self.notify("This case did not come from CES: C on a file runs all of the CES app.", markup=False)
            return
        self.post_message(CesRunRequested(key))

    def action_ces_history(self) -> None:
        key = self._ces_case()
        if key is None:
            self.notify(self.app.keys_in("{ces.history} shows the CES results of a case pulled from CES: highlight one."),
                        markup=False)
            return
        self.post_message(OpenCesHistory(key))

    def action_history(self) -> None:
        self.post_message(OpenHistory())

    def action_timeline(self) -> None:
        self.post_message(OpenTimeline())

    def action_causes(self) -> None:
        from .causes import CausesScreen

        self.app.push_screen(CausesScreen(self.listing))

    def action_whatif(self) -> None:
        from .whatif import WhatIfScreen, WhatIfState

        state = self._whatif_state
        if state is None:
            state = self._whatif_state = WhatIfState()
        self.app.push_screen(WhatIfScreen(self.listing, state))

    def action_toggle_live(self) -> None:
        self.post_message(LiveToggled(not self.app.live))

    def action_toggle_agent_reruns(self) -> None:
        self.post_message(AgentRerunsToggled(not self.app.agent_reruns))

    def select_key(self, key: CaseKey, turn: int | None = None) -> None:
        """Show a case in the browser (clearing filters that hide it)."""
        self._pending_select = None
        if not self.browser.select_key(key, turn=turn):
            self.action_clear_filters()
            if not self.browser.select_key(key, turn=turn):
                # Not listed yet: the file that now holds it is re-read and listed a moment later.
                self._pending_select = (key, turn)
        self.browser.focus()
