"""A saved code diff (`<run_id>.code.diff`) in a scrollable view: every line literal, never markup."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..text import plain

log = logging.getLogger(__name__)

#: Lines shown at most (the saved diff is capped at 256 KiB already; this keeps the paint quick).
MAX_LINES = 5000


def diff_content(text: str, limit: int = MAX_LINES) -> Content:
    """Colour a unified diff by line kind; the text itself stays literal (control characters shown)."""
    lines = text.splitlines()
    out: list[Content] = []
    for line in lines[:limit]:
        if line.startswith(("+++", "---", "diff ", "index ")):
            style = "bold"
        elif line.startswith("+"):
            style = "$text-success"
        elif line.startswith("-"):
            style = "$text-error"
        elif line.startswith("@@"):
            style = "$text-accent"
        else:
            style = ""
        out.append(plain(line, style))
    if len(lines) > limit:
        out.append(Content.styled(f"… {len(lines) - limit:,} more lines in the file", "$text-muted italic"))
    return Content("\n").join(out)


class DiffScreen(Screen[None]):
    """One saved diff file; escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="diff.back"),
    ]

    DEFAULT_CSS = """
    #diff-body { border: round $accent; padding: 0 1; }
    """

    def __init__(self, path: Path, *, title: str = "Code diff") -> None:
        super().__init__(id="diff")
        self.path = path
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diff-body"):
            yield Static(id="diff-text")
        yield Footer()

    def on_mount(self) -> None:
        body = self.query_one("#diff-body", VerticalScroll)
        body.border_title = self.title_text
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("could not read the diff %s: %s", self.path, exc)
            content = plain(f"Could not read {self.path}: {exc}", "$text-error")
        else:
            content = diff_content(text) if text else Content.styled("(empty diff)", "$text-muted")
        self.query_one("#diff-text", Static).update(content)
        body.focus()
