"""The whole of a turn's long texts (a reply of megabytes), in a line-API view that draws only what shows."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Log

from ..text import literal
from ..widgets.footer import KeyFooter

#: Characters of one line at most: a single line of megabytes is cut into lines no longer than this.
LINE_CHARS = 2000


def text_lines(title: str, text: str, width: int = LINE_CHARS) -> list[str]:
    """A titled block: the text's own lines wrapped to `width` (after a space where there is one in the
    second half of the line; the space stays at the end, so the lines joined are the text), control
    characters shown."""
    width = max(1, min(width, LINE_CHARS))
    out = [f"── {title} ({len(text):,} characters) ──"]
    for line in literal(text).split("\n"):
        if not line:
            out.append("")
        while line:
            if len(line) <= width:
                out.append(line)
                break
            space = line.rfind(" ", width // 2, width)
            cut = space + 1 if space >= 0 else width
            out.append(line[:cut])
            line = line[cut:]
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
        # Wrapped to the screen (less the border and the scroll bar): no line to scroll sideways through.
        width = max(20, self.app.size.width - 3)
        for title, text in self.blocks:
            # Log keeps lines and draws the visible ones: megabytes are cut into lines, never laid out.
            body.write_lines(text_lines(title, text, width), scroll_end=False)
        body.scroll_home(animate=False)
        body.focus()
