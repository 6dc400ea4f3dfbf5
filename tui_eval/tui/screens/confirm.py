"""A yes/no question before anything is written to the user's files."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True on y / enter, False on n / escape."""

    CSS_PATH = "../modals.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, body: Content) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.body, id="confirm-body")
            yield Static(Content.assemble(("y", "bold $text-success"), " yes   ", ("n", "bold $text-error"), " no"),
                         id="confirm-keys")

    def on_mount(self) -> None:
        self.query_one("#confirm-box").border_title = self.title_text

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def confirm(app: App[Any], title: str, body: Content, then: Callable[[], None]) -> None:
    """Ask a yes/no question; `then` runs on yes."""

    def answered(yes: bool | None) -> None:
        if yes:
            then()

    app.push_screen(ConfirmScreen(title, body), answered)
