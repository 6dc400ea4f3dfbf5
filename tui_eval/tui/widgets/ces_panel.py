"""The turn view's CES section: the last CES result a pulled case keeps, for this turn; hidden otherwise.

Kept light: the CES models and their rendering (widgets/ces_result.py) are imported only when a case
that came from CES is shown, so the turn view of any other case pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...schema.ces.caseview import CES_KEY  # (the light module: it imports no CES model)


class CesTurnPanel(Vertical):
    """Title and body of a case's CES result; `display` is False for a case that did not come from CES."""

    def compose(self) -> ComposeResult:
        yield Static(id="ces-turn-title")
        yield Static(id="ces-turn-result")

    def show_case(self, extra: Mapping[str, Any] | None, index: int, *, scenario: bool) -> bool:
        """Show the CES result of a case (its `model_extra`); False, and hidden, if it is no CES case."""
        if not extra or CES_KEY not in extra:
            self.display = False
            return False
        from .ces_result import case_panel

        shown = case_panel(extra, index, scenario=scenario)
        self.display = shown is not None
        if shown is None:
            return False
        title, body = shown
        self.query_one("#ces-turn-title", Static).update(title)
        self.query_one("#ces-turn-result", Static).update(body)
        return True
