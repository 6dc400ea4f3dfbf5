"""The question before a session import: which ADK session file, and the new case's id."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ..text import plain


class ImportSessionScreen(ModalScreen[tuple[str, str] | None]):
    """Dismisses with (session file, case id or "") on enter, None on escape."""

    CSS_PATH = "../modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="import_session.cancel"),
    ]

    def __init__(self, eval_set: str) -> None:
        super().__init__()
        self.eval_set = eval_set

    def compose(self) -> ComposeResult:
        with Vertical(id="import-box"):
            yield Static(Content.assemble("Import an ADK session as a new case of ", plain(self.eval_set, "bold"),
                                          ("\n(adk api_server's GET …/sessions/{id} JSON, or a "
                                           "Session.model_dump_json())", "$text-muted")))
            yield Input(placeholder="session file (.json)", id="import-path")
            yield Input(placeholder="case id (empty: the session's id)", id="import-id")
            yield Static(Content.assemble(("enter", "bold"), " import   ", ("escape", "bold"), " cancel"),
                         id="import-keys")

    def on_mount(self) -> None:
        self.query_one("#import-box").border_title = "Import session"

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        path = self.query_one("#import-path", Input).value.strip()
        if not path:
            self.query_one("#import-path", Input).focus()
            self.notify("Type the session file's path first.", severity="warning", markup=False)
            return
        if event.input.id == "import-path" and not self.query_one("#import-id", Input).value:
            self.query_one("#import-id", Input).focus()
            return
        self.dismiss((path, self.query_one("#import-id", Input).value.strip()))

    def action_cancel(self) -> None:
        self.dismiss(None)
