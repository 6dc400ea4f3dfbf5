"""The whole of a turn's long texts (a reply of megabytes), in a line-API view that draws only what shows."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Log

from ..text import literal
from ..widgets.footer import KeyFooter

#: Characters of one screen line: a single line of megabytes is cut into lines this long (never wrapped whole).
LINE_CHARS = 2000


def text_lines(title: str, text: str) -> list[str]:
    """A titled block: the text's own lines, each cut into LINE_CHARS pieces, control characters shown."""
    out = [f"── {title} ({len(text):,} characters) ──"]
    for line in literal(text).split("\n"):
        if not line:
            out.append("")
        for start in range(0, len(line), LINE_CHARS):
            out.append(line[start:start + LINE_CHARS])
    out.append("")
    return out


class FullTextScreen(Screen[None]):
    """The expected and actual texts of a turn in full; escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="fulltext.back"),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, title: str, blocks: list[tuple[str, str]]) -> None:
        super().__init__(id="fulltext")
        self.title_text = title
        self.blocks = blocks

    def compose(self) -> ComposeResult:
        yield Log(id="fulltext-body", highlight=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        body = self.query_one(Log)
        body.border_title = self.title_text
        for title, text in self.blocks:
            # Log keeps lines and draws the visible ones: megabytes cost no wrapping up front.
            body.write_lines(text_lines(title, text), scroll_end=False)
        body.scroll_home(animate=False)
        body.focus()
