"""The browser's search box: an Input whose keys (done, clear) show in the footer while it has focus."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input


class SearchInput(Input):
    """Search text; enter keeps the search and goes back to the tree, escape clears it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "submit", "Search done", id="search.done"),
        Binding("escape", "screen.clear_filters", "Clear search", id="search.clear"),
    ]
