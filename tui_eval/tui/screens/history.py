"""Run history: every saved run, newest first, and a case-by-case comparison of two runs, regressions first."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, WorkerState

from ..messages import JumpTo
from ..text import STATUS_GLYPH, STATUS_WORD, fmt_score, literal, rich_style

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.store import CaseChange, HistoryEntry
    from ..app import EvalApp
    from ..catalog import Catalog

log = logging.getLogger(__name__)

# change kind -> theme variable of its colour (Rich Text cells cannot use CSS variables directly)
_KIND_VAR = {"regression": "error", "fixed": "success", "changed": "warning", "not run": "secondary",
             "unchanged": ""}
_STATUS_VAR = {1: "text-success", 2: "text-error", 3: "text-warning"}


def fmt_time(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _status_text(app: Any, status: Any) -> Text:
    if status is None:
        return Text("—", style="dim")
    value = int(status)
    return Text(f"{STATUS_GLYPH[value]} {STATUS_WORD[value]}",
                style=rich_style(app, _STATUS_VAR[value]))


class HistoryScreen(Screen[None]):
    """Saved runs of every eval set below the folder."""

    CSS_PATH = "../history.tcss"

    app: EvalApp
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="history.back"),
        Binding("enter", "compare", "Compare with previous", id="history.compare", priority=True),
        Binding("space", "mark", "Mark as base", id="history.mark"),
    ]

    def __init__(self, catalog: Catalog) -> None:
        super().__init__(id="history")
        self.catalog = catalog
        self.entries: dict[str, HistoryEntry] = {}
        self.base: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("Loading run history…", "$text-muted"), id="history-status")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.border_title = "Run history"
        table.add_column("", key="mark", width=1)
        table.add_column("when", key="when")
        table.add_column("eval set", key="set")
        table.add_column("✔", key="passed")
        table.add_column("✘", key="failed")
        table.add_column("–", key="ne")
        table.add_column("run", key="run")
        self.load_history()

    @work(thread=True, group="history", exclusive=True, exit_on_error=False)
    def load_history(self) -> list[HistoryEntry]:
        from ...engine.store import list_history
        from ..loader import history_dir_for

        ws = self.catalog.workspace
        dirs: dict[Path, None] = {}
        if ws is not None:
            for path in list(self.catalog.files):
                dirs.setdefault(history_dir_for(ws, path), None)
        entries: list[HistoryEntry] = []
        for directory in dirs:
            entries.extend(list_history(directory))
        entries.sort(key=lambda e: e.creation_timestamp, reverse=True)
        return entries

    @on(Worker.StateChanged)
    def _loaded(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "history":
            return
        status = self.query_one("#history-status", Static)
        if event.state == WorkerState.ERROR:
            log.error("could not read the run history", exc_info=event.worker.error)
            status.update(Content.styled(f"Could not read the history: {event.worker.error}", "$text-error"))
        elif event.state == WorkerState.SUCCESS:
            self.show_entries(event.worker.result or [])

    def show_entries(self, entries: list[HistoryEntry]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        self.entries = {}
        for e in entries:
            key = str(e.path)
            self.entries[key] = e
            run = Text(literal(e.run_id), style="dim")
            if e.cancelled:
                run.append(" cancelled", style=rich_style(self.app, "text-warning"))
            table.add_row(
                Text(""), Text(fmt_time(e.creation_timestamp)), Text(literal(e.eval_set_id)),
                Text(str(e.counts.get("PASSED", 0)), style=rich_style(self.app, "text-success")),
                Text(str(e.counts.get("FAILED", 0)), style=rich_style(self.app, "text-error")),
                Text(str(e.counts.get("NOT_EVALUATED", 0)), style=rich_style(self.app, "text-warning")), run, key=key,
            )
        hint = "enter compares a run with the one before it; space marks a base run to compare against"
        self.query_one("#history-status", Static).update(
            Content.styled(f"{len(entries)} saved runs. {hint}" if entries else "No saved runs yet: run something (r).", "$text-muted"))
        table.focus()

    def _selected(self) -> HistoryEntry | None:
        table = self.query_one(DataTable)
        if not self.entries or table.cursor_row < 0:
            return None
        row_key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        return self.entries.get(str(row_key.value))

    def action_mark(self) -> None:
        entry = self._selected()
        if entry is None:
            return
        table = self.query_one(DataTable)
        if self.base is not None and self.base in self.entries:
            table.update_cell(self.base, "mark", Text(""))
        key = str(entry.path)
        self.base = None if self.base == key else key
        if self.base is not None:
            table.update_cell(key, "mark", Text("●", style="bold"))

    def action_compare(self) -> None:
        after = self._selected()
        if after is None:
            return
        if self.base is not None and self.base != str(after.path):
            before = self.entries[self.base]
            if before.creation_timestamp > after.creation_timestamp:
                before, after = after, before
        else:
            older = [e for e in self.entries.values()
                     if e.eval_set_id == after.eval_set_id and e.creation_timestamp < after.creation_timestamp]
            if not older:
                self.notify("No earlier run of this eval set to compare with.", markup=False)
                return
            before = max(older, key=lambda e: e.creation_timestamp)
        self.app.push_screen(CompareScreen(self.catalog, before, after))


class CompareScreen(Screen[None]):
    """Two runs of an eval set, case by case: regressions first, then fixes, then the rest."""

    CSS_PATH = "../history.tcss"

    app: EvalApp
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="compare.back"),
        Binding("enter", "open_case", "Show case", id="compare.open", priority=True),
        Binding("u", "toggle_unchanged", "Hide unchanged", id="compare.unchanged"),
    ]

    def __init__(self, catalog: Catalog, before: HistoryEntry, after: HistoryEntry) -> None:
        super().__init__(id="compare")
        self.catalog = catalog
        self.before = before
        self.after = after
        self.changes: list[CaseChange] = []
        self.hide_unchanged = False

    def compose(self) -> ComposeResult:
        yield Static(id="compare-status")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.border_title = Content(
            f"{literal(self.after.eval_set_id)}: {fmt_time(self.before.creation_timestamp)} → "
            f"{fmt_time(self.after.creation_timestamp)}"
        )
        table.add_column("change", key="kind")
        table.add_column("case", key="case")
        table.add_column("before", key="before")
        table.add_column("after", key="after")
        table.add_column("scores", key="scores")
        self.query_one("#compare-status", Static).update(Content.styled("Comparing…", "$text-muted"))
        self.compare()

    @work(thread=True, group="compare", exclusive=True, exit_on_error=False)
    def compare(self) -> list[CaseChange]:
        from ...engine.store import compare_results, load_record

        _m1, before = load_record(self.before.path, with_turns=False)
        _m2, after = load_record(self.after.path, with_turns=False)
        return compare_results(before, after)

    @on(Worker.StateChanged)
    def _compared(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "compare":
            return
        status = self.query_one("#compare-status", Static)
        if event.state == WorkerState.ERROR:
            log.error("could not compare two runs", exc_info=event.worker.error)
            status.update(Content.styled(f"Could not compare: {event.worker.error}", "$text-error"))
        elif event.state == WorkerState.SUCCESS:
            self.changes = event.worker.result or []
            self.show_changes()

    def show_changes(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        kinds: dict[str, int] = {}
        for c in self.changes:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
            if self.hide_unchanged and c.kind == "unchanged":
                continue
            deltas = "; ".join(f"{name} {fmt_score(a)}→{fmt_score(b)}" for name, (a, b) in c.score_deltas.items())
            table.add_row(
                Text(c.kind, style=rich_style(self.app, _KIND_VAR.get(c.kind, ""), bold=c.kind == "regression")),
                Text(literal(c.eval_id)), _status_text(self.app, c.before), _status_text(self.app, c.after),
                Text(literal(deltas), style="dim"), key=c.eval_id,
            )
        summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: list(_KIND_VAR).index(kv[0])))
        self.query_one("#compare-status", Static).update(
            Content.styled((summary or "no cases") + ". enter shows a case in the browser.", "$text-muted"))
        table.focus()

    def action_toggle_unchanged(self) -> None:
        self.hide_unchanged = not self.hide_unchanged
        self.show_changes()

    def action_open_case(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        eval_id = str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        path = self._eval_file()
        if path is None:
            self.notify("That eval file is no longer loaded.", markup=False)
            return
        self.post_message(JumpTo(self.catalog.key(path, eval_id)))

    def _eval_file(self) -> Path | None:
        cat = self.catalog
        for path in cat.files:
            state = cat.file_state(path)
            if self.after.eval_file and Path(self.after.eval_file).name == path.name and state and state.eval_set \
                    and state.eval_set.eval_set_id == self.after.eval_set_id:
                return path
        for path in cat.files:
            state = cat.file_state(path)
            if state and state.eval_set and state.eval_set.eval_set_id == self.after.eval_set_id:
                return path
        return None
