"""Command palette: jump to any case by name, and reach every action of the current screen."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Iterator

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from .text import literal

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from .app import EvalApp

# Past this many cases the palette stops scoring candidates for one query (it stays instant).
MAX_CANDIDATES = 20000


class CaseCommands(Provider):
    """`set › case` for every case; choosing one shows it in the browser."""

    app: EvalApp  # type: ignore[assignment]

    def _cases(self) -> Iterator[tuple[str, CaseKey]]:
        cat = self.app.catalog
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
            yield DiscoveryHit(Text(title), partial(self.app.jump_to, key), help="Show this case")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, key in self._cases():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, _highlight(matcher, title), partial(self.app.jump_to, key), text=title,
                          help="Show this case")


def _highlight(matcher: Matcher, title: str) -> Content:
    """The title with matched characters emphasised; unlike Matcher.highlight, never parsed as markup."""
    content = Content(title)
    _score, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize("bold underline", offset, offset + 1)
    return content
