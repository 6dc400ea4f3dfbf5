"""This session's timeline: every run (a save in live mode, a key) newest first, and the cases it flipped."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from ..text import plain
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ..listing import CaseListing
    from ..runbook import TimelineEntry

#: Cases named under an entry at most (the rest are counted).
MAX_NAMED = 5


def entry_lines(entry: TimelineEntry) -> list[Content]:
    """`agent flaky: agent.py  14:02 → 2 cases broke, 1 fixed`, then the cases by name."""
    when = time.strftime("%H:%M", time.localtime(entry.finished_at))
    style = "$text-error" if entry.broke else "$text-success" if entry.fixed else "$text-muted"
    note = "" if entry.phase == "finished" else f" ({entry.phase})"
    lines = [Content.assemble(plain(entry.label, "bold"), (f"  {when}", "$text-muted"), " → ",
                              (entry.summary(), style), (f" · {entry.ran} ran{note}", "$text-muted"))]
    for glyph, keys, kstyle in (("✘ broke", entry.broke, "$text-error"), ("✔ fixed", entry.fixed, "$text-success")):
        for key in keys[:MAX_NAMED]:
            lines.append(Content.assemble((f"    {glyph} ", kstyle), plain(key.eval_id)))
        if len(keys) > MAX_NAMED:
            lines.append(Content.styled(f"    … {len(keys) - MAX_NAMED} more", "$text-muted"))
    return lines


class TimelineScreen(Screen[None]):
    """The run book's timeline; it redraws when a run finishes while it is open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="timeline.back"),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, listing: CaseListing) -> None:
        super().__init__(id="timeline")
        self.listing = listing
        self._shown = -1

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="timeline-body"):
            yield Static(id="timeline-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        body = self.query_one("#timeline-body", VerticalScroll)
        body.border_title = "Session timeline (newest first)"
        self.redraw()
        self.set_interval(0.5, self.redraw, name="timeline")
        body.focus()

    def redraw(self) -> None:
        timeline = self.listing.run_book.timeline
        stamp = id(timeline[0]) if timeline else 0
        if stamp == self._shown:
            return
        self._shown = stamp
        if not timeline:
            content = Content.styled("No runs yet in this session. In live mode (l) every save that re-runs cases "
                                     "adds a line here, with the cases it broke or fixed.", "$text-muted italic")
        else:
            lines: list[Content] = []
            for entry in timeline:
                lines.extend(entry_lines(entry))
            content = Content("\n").join(lines)
        self.query_one("#timeline-text", Static).update(content)
