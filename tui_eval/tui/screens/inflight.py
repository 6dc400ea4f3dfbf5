"""The cases in flight (`i`): each with its turn now and its last tool call, growing as it answers; enter
shows one's live transcript, `k` skips a case without cancelling the run (it ends not evaluated,
"skipped")."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Static

from ..inflight import InFlight, in_flight
from ..messages import SkipRequested
from ..text import one_line, plain, status_content
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.events import CaseKey
    from ..app import EvalApp
    from ..readmodel import Changes


def _now(app: EvalApp) -> list[InFlight]:
    return in_flight(app.model.in_flight, app.listing.running)


class InFlightScreen(Screen[None]):
    app: EvalApp
    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "transcript", "Live transcript", id="inflight.open", priority=True),
        Binding("k", "skip", "Skip case", id="inflight.skip"),
        Binding("escape", "app.pop_screen", "Back", id="inflight.back"),
    ]

    def __init__(self) -> None:
        super().__init__(id="in-flight")
        self.cases: list[InFlight] = []

    def compose(self) -> ComposeResult:
        yield Static(id="in-flight-status")
        yield DataTable(id="in-flight-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("case", "turn", "last tool call")
        table.border_title = "Cases in flight"
        self.app.watch_changes(self, self._changed)
        self.refill()
        table.focus()

    def _changed(self, changes: Changes) -> None:
        if changes.in_flight or changes.run is not None:
            self.refill()

    def refill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        self.cases = _now(self.app)
        table.clear()
        for f in self.cases:
            table.add_row(plain(one_line(f.key.eval_id, 60)), str(f.turn), plain(one_line(f.last_call, 80)))
        if self.cases:
            table.move_cursor(row=min(row, len(self.cases) - 1))
        status = (f"{len(self.cases)} case(s) in flight" if self.cases else
                  "No case in flight" + ("" if self.app.busy else ": no run is going"))
        self.query_one("#in-flight-status", Static).update(Content.styled(status, "bold"))

    def _case(self) -> CaseKey | None:
        row = self.query_one(DataTable).cursor_row
        return self.cases[row].key if 0 <= row < len(self.cases) else None

    def action_transcript(self) -> None:
        key = self._case()
        if key is not None:
            self.app.push_screen(TranscriptScreen(key))

    def action_skip(self) -> None:
        key = self._case()
        if key is not None:
            self.post_message(SkipRequested(key))


class TranscriptScreen(Screen[None]):
    """One case's turns as they come, while it runs; then how it ended."""

    app: EvalApp
    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "skip", "Skip case", id="transcript.skip"),
        Binding("escape", "app.pop_screen", "Back", id="transcript.back"),
    ]

    def __init__(self, key: CaseKey) -> None:
        super().__init__(id="transcript")
        self.key = key

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="transcript-scroll"):
            yield Static(id="transcript-body")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#transcript-scroll").border_title = f"Live: {one_line(self.key.eval_id, 60)}"
        self.app.watch_changes(self, self._changed)
        self.redraw()

    def _changed(self, changes: Changes) -> None:
        if changes.in_flight or self.key in changes.dirty:
            self.redraw()

    def redraw(self) -> None:
        turns = self.app.model.in_flight.get(self.key, [])
        running = self.key in self.app.listing.running
        lines: list[Content] = []
        for t in turns:
            lines.append(Content.styled(f"turn {t.turn + 1}", "bold $text-accent"))
            lines.append(Content.assemble(("user      ", "$text-muted"), plain(t.user)))
            lines += [Content.assemble(("tool call ", "$text-muted"), plain(call)) for call in t.calls]
            lines.append(Content.assemble(("agent     ", "$text-muted"), plain(t.response)))
            lines.append(Content(""))
        if running:
            lines.append(Content.styled(f"◌ turn {len(turns) + 1} under way…  (k skips this case)", "$text-accent"))
        else:
            result = self.app.listing.results.summary(self.key)
            lines.append(Content.assemble("ended: ", status_content(result.status, word=True))
                         if result is not None else Content.styled("not running", "$text-muted"))
        self.query_one("#transcript-body", Static).update(Content("\n").join(lines))

    def action_skip(self) -> None:
        if self.key in self.app.listing.running:
            self.post_message(SkipRequested(self.key))
