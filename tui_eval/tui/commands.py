"""Command palette: jump to any case by name, and reach every action of the current screen."""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Any, Iterator

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from .messages import JumpTo
from .text import literal

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import SystemCommand
    from textual.screen import Screen

    from ..engine.events import CaseKey
    from .app import EvalApp

# Past this many cases the palette stops looking (it stays instant); at most MAX_SCORED are scored.
MAX_CANDIDATES = 50000
MAX_SCORED = 60


class CaseCommands(Provider):
    """`set › case` for every case; choosing one shows it in the browser."""

    app: EvalApp  # type: ignore[assignment]

    def _cases(self) -> Iterator[tuple[str, CaseKey]]:
        cat = self.app.listing
        n = 0
        for path in list(cat.files):
            state = cat.file_state(path)
            if state is None or state.eval_set is None:
                continue
            set_id = state.eval_set.eval_set_id
            for case in state.eval_set.eval_cases:
                n += 1
                if n > MAX_CANDIDATES:
                    return
                yield f"{literal(set_id)} › {literal(case.eval_id)}", cat.key(path, case.eval_id)

    async def discover(self) -> Hits:
        for i, (title, key) in enumerate(self._cases()):
            if i >= 20:
                break
            yield DiscoveryHit(Text(title), partial(self.app.post_message, JumpTo(key)), help="Show this case")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, key in _shortlist(query, self._cases()):
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, _highlight(matcher, title), partial(self.app.post_message, JumpTo(key)), text=title,
                          help="Show this case")


def _shortlist(query: str, cases: Iterator[tuple[str, CaseKey]]) -> list[tuple[str, CaseKey]]:
    """The candidates worth fuzzy-scoring: substring matches first, then in-order character matches,
    at most MAX_SCORED. Textual's fuzzy scorer is slow per title: thousands of cases took seconds a key."""
    needle = query.strip().lower()
    if not needle:
        return list(cases)[:MAX_SCORED]
    subsequence = re.compile(".*?".join(re.escape(c) for c in needle if not c.isspace()), re.IGNORECASE)
    substring: list[tuple[str, CaseKey]] = []
    in_order: list[tuple[str, CaseKey]] = []
    for title, key in cases:
        low = title.lower()
        if needle in low:
            substring.append((title, key))
            if len(substring) >= MAX_SCORED:
                break
        elif len(in_order) < MAX_SCORED and subsequence.search(title):
            in_order.append((title, key))
    return (substring + in_order)[:MAX_SCORED]


def _highlight(matcher: Matcher, title: str) -> Content:
    """The title with matched characters emphasised; unlike Matcher.highlight, never parsed as markup."""
    content = Content(title)
    _score, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize("bold underline", offset, offset + 1)
    return content


def binding_commands(app: EvalApp, screen: Screen[Any]) -> Iterator[SystemCommand]:
    """A palette command for every described binding of `screen` and the app that can run now, with its
    keys (as the user's keymap has them) and binding id; on the main screen, a metric filter per metric."""
    from textual.app import SystemCommand
    from textual.binding import Binding

    from .screens.main import MainScreen

    seen: set[str] = set()
    keymap = app.user_keymap.bindings
    for node in (screen, app):
        for binding in getattr(node, "BINDINGS", []):
            if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            if node is screen and screen.check_action(binding.action.split("(")[0], ()) is not True:
                continue
            key_list = (keymap.get(binding.id) if binding.id else None) or binding.key
            keys = ", ".join(app.get_key_display(Binding(k.strip(), binding.action)) for k in key_list.split(","))
            yield SystemCommand(binding.description, f"{keys} · {binding.id or binding.action}",
                                partial(app.run_action, binding.action, node))
    if isinstance(screen, MainScreen):
        for name in app.listing.metric_names():
            yield SystemCommand(f"Filter by metric: {name}", "show this metric's status and score",
                                partial(screen.set_metric, name))
