"""The in-app case editor: one case as JSON in a TextArea, for terminals that cannot hand themselves to
$EDITOR (`textual serve`, a headless driver) or when no editor is set. Saving checks the case first; an
error is shown above the text, which stays as typed."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static, TextArea

from ..text import plain
from ..widgets.footer import KeyFooter


class CaseEditorScreen(Screen[str | None]):
    """Dismisses with the edited text once it reads as an eval case, or None (escape: nothing written)."""

    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="case_editor.save", priority=True),
        Binding("escape", "cancel", "Cancel", id="case_editor.cancel", priority=True),
    ]

    def __init__(self, eval_id: str, where: str, text: str, error: str | None = None) -> None:
        super().__init__(id="case-editor")
        self.eval_id = eval_id
        self.where = where
        self.text = text
        self.error = error

    def compose(self) -> ComposeResult:
        yield Static(Content.assemble("Case ", plain(self.eval_id, "bold"), " of ", plain(self.where, "bold"),
                                      ("   ctrl+s saves (checked first) · escape leaves the file as it was",
                                       "$text-muted")), id="case-editor-title")
        yield Static(id="case-editor-error", markup=False)
        yield TextArea(self.text, id="case-editor-text", show_line_numbers=True, soft_wrap=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.show_error(self.error)
        self.query_one(TextArea).focus()

    def show_error(self, error: str | None) -> None:
        box = self.query_one("#case-editor-error", Static)
        box.update(Content(error or ""))
        box.set_class(not error, "-hidden")

    @property
    def edited(self) -> str:
        return self.query_one(TextArea).text

    def action_save(self) -> None:
        from ...schema.edits import EditError, check_case_text

        try:
            check_case_text(self.edited)
        except EditError as exc:
            self.show_error(f"Not saved: {exc}")
            return
        self.dismiss(self.edited)

    def action_cancel(self) -> None:
        self.dismiss(None)
