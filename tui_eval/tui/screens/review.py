"""Review mode: the judged metric verdicts that need a person (never reviewed, review stale, people and
judge disagreeing), one row each; `p` / `f` give a verdict (with a short reason), and the list moves on."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Static

from ...engine.reviews import agreement_by_metric, kappa_text
from ..messages import JumpTo, VerdictRequested
from ..text import plain, status_content
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ..app import EvalApp
    from ..readmodel import Changes
    from ..reviews import ReviewItem


class ReviewScreen(Screen[None]):
    app: EvalApp
    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "verdict('pass')", "Human: pass", id="review.pass"),
        Binding("f", "verdict('fail')", "Human: fail", id="review.fail"),
        Binding("enter", "show_case", "Show case", id="review.show", priority=True),
        Binding("escape", "app.pop_screen", "Back", id="review.back"),
    ]

    def __init__(self) -> None:
        super().__init__(id="review")
        self.items: list[ReviewItem] = []

    def compose(self) -> ComposeResult:
        yield Static(id="review-status")
        yield DataTable(id="review-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("case", "metric", "judge", "needs a person because")
        table.border_title = "Review: judged verdicts a person has not confirmed"
        self.app.watch_changes(self, self._changed)
        self.refill()
        table.focus()

    def _changed(self, changes: Changes) -> None:
        if changes.dirty:
            self.refill()

    def refill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        self.items = self.app.reviews.needing()
        table.clear()
        for item in self.items:
            table.add_row(plain(item.key.eval_id), plain(item.metric), status_content(item.judge), plain(item.why))
        if self.items:
            table.move_cursor(row=min(row, len(self.items) - 1))
        agreement = agreement_by_metric(self.app.listing.reviews.all())
        parts: list[Content | tuple[str, str] | str] = [
            (f"{len(self.items)} to review" if self.items else "Nothing left to review", "bold")]
        for a in agreement:
            parts.append(plain(f"   {a.metric}: n {a.n}, agree {a.raw:.0%}, κ {kappa_text(a.kappa)}", "$text-muted"))
        self.query_one("#review-status", Static).update(Content.assemble(*parts))

    def _item(self) -> ReviewItem | None:
        row = self.query_one(DataTable).cursor_row
        return self.items[row] if 0 <= row < len(self.items) else None

    def action_verdict(self, label: str) -> None:
        item = self._item()
        if item is not None:
            self.post_message(VerdictRequested(item.key, metric=item.metric, label=label))

    def action_show_case(self) -> None:
        item = self._item()
        if item is not None:
            self.post_message(JumpTo(item.key))
