"""The key bar at the bottom of every screen: Textual's Footer, rebuilt only when what it shows changes.

Textual's Footer rebuilds all its keys (a dozen widgets, each styled anew) on every bindings refresh of
its screen, and a screen refreshes its bindings on each focus change, screen resume and binding-bound
reactive, whether or not a key, label or enabled state changed. At start-up three rebuilds came right
after the first frame, all showing the same keys, while the folder's loader thread waited for the
GIL behind them. Here a burst of refreshes rebuilds at most once, and not at all if the keys are the
same; and a rebuild takes a fraction of the time (bench/README.md), because its keys are created with
the footer's `compact` already set rather than bound to it.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any, Hashable

from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from ..textual_private import FooterKey, FooterLabel, KeyGroup


_FIRST = ("app.help", "app.quit")
#: Below 100 columns (narrow) a key's label is its short word here, and neighbours with the same word
#: share it (`r R F Run`): at 80 columns every shown key of every screen then fits, and `?` has the rest.
NARROW_LABELS: dict[str, str] = {
    "run.selection": "Run", "run.all": "Run", "run.failed": "Run", "run.cancel": "Cancel",
    "filter.failed": "Failed", "history.open": "History", "ces.run": "CES",
    "turn.next": "Turn", "turn.prev": "Turn", "turn.match_type": "Match", "turn.sentence_next": "Sentence",
    "edit.accept_turn": "Accept", "turn.repetition": "Run k", "turn.ces_history": "CES", "turn.full_text": "Text",
    "history.compare": "Compare", "history.mark": "Base",
    "compare.open": "Show", "compare.unchanged": "Unchanged", "compare.diff": "Diff", "compare.turns": "Turns",
    "whatif.match_type": "Match", "whatif.up": "Threshold", "whatif.down": "Threshold",
    "causes.expand": "Expand", "search.done": "Done", "search.clear": "Clear",
}


class KeyFooter(Footer):
    """A Footer that recomposes once per burst of binding refreshes, and only if its keys changed."""

    def __init__(self, *, narrow_below: int = 100, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: Below this many columns the footer is narrow: compact, short labels, only keys that can act.
        self.narrow_below = narrow_below
        self.narrow = False
        self._drawn: Hashable | None = None
        self._pending = False
        # Footer's own flag for this is private (`_bindings_ready`); compose below reads this one.
        self._keys_ready = False

    def on_resize(self) -> None:
        # Narrow below 100 columns: at 80 the last third of a screen's keys fell off the end.
        narrow = self.size.width < self.narrow_below
        if narrow != self.narrow:
            self.narrow = narrow
            self.compact = narrow
            if self._keys_ready and self.is_attached and not self._pending:
                self._pending = True
                self.call_after_refresh(self._recompose_if_changed)

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._keys_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        shown = self.shown_keys()
        if shown == self._drawn:
            return
        self._drawn = shown
        await self.recompose()

    def compose(self) -> ComposeResult:
        """What Footer.compose yields, but each key is created with the footer's `compact` set: bound
        to it instead (as Footer does), every key restyled itself twice while mounting."""
        if not self._keys_ready:
            return
        active = self.screen.active_bindings
        by_action: dict[str, tuple[Binding, bool, str]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action.setdefault(binding.action, (binding, enabled, tooltip))
        # Help and quit first on every screen: the footer lists a screen's keys before the app's, and at
        # 80 columns the app's fell off its end (the turn view showed neither).
        entries_in_order = sorted(by_action.values(), key=lambda entry: entry[0].id not in _FIRST)
        if self.narrow:
            # Below 100 columns only the keys that can act now (a key pressed when it cannot says why).
            yield from self._narrow([entry for entry in entries_in_order if entry[1]])
            yield from self._palette(active)
            return
        for group, members in groupby(entries_in_order, lambda entry: entry[0].group):
            entries = list(members)
            if group is not None and len(entries) > 1:
                with KeyGroup(classes="-compact" if group.compact else ""):
                    for binding, enabled, tooltip in entries:
                        yield self._key(binding, "", enabled, tooltip or binding.description, "-grouped")
                yield FooterLabel(group.description)
            else:
                for binding, enabled, tooltip in entries:
                    yield self._key(binding, binding.description, enabled, tooltip)
        yield from self._palette(active)

    def _narrow(self, entries: list[tuple[Binding, bool, str]]) -> ComposeResult:
        """The keys with their short labels, neighbours with the same label sharing it."""
        def label(entry: tuple[Binding, bool, str]) -> str:
            return NARROW_LABELS.get(entry[0].id or "", entry[0].description)

        for word, members in groupby(entries, label):
            group = list(members)
            if len(group) > 1:
                with KeyGroup(classes="-narrow"):
                    for binding, enabled, tooltip in group:
                        yield self._key(binding, "", enabled, tooltip or binding.description, "-grouped")
                yield FooterLabel(word)
            else:
                binding, enabled, tooltip = group[0]
                yield self._key(binding, word, enabled, tooltip or binding.description)

    def _palette(self, active: dict[str, ActiveBinding]) -> ComposeResult:
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, _tooltip = found
                # Not tied to the footer's `compact` (as in Footer): it keeps FooterKey's own default.
                yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                                binding.action, classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)

    def watch_compact(self, compact: bool) -> None:
        for key in self.query(FooterKey):
            if not key.has_class("-command-palette"):
                key.compact = compact

    def _key(self, binding: Binding, description: str, enabled: bool, tooltip: str, classes: str = "") -> Widget:
        if self.compact:
            classes += " -compact"
        key = FooterKey(binding.key, self.app.get_key_display(binding), description, binding.action,
                        disabled=not enabled, tooltip=tooltip, classes=classes)
        # Set, not bound: FooterKey's own watcher would not run for it, hence the class above.
        key.set_reactive(FooterKey.compact, self.compact)
        return key

    def shown_keys(self) -> Hashable:
        """Everything Footer.compose draws, as a value: each shown binding (key, its display, label,
        action, group, enabled, tooltip) in order, then the command palette's key if it is shown."""
        app = self.app
        active = self.screen.active_bindings

        def entry(binding: Binding, enabled: bool, tooltip: str) -> Hashable:
            group = binding.group
            return (binding.key, app.get_key_display(binding), binding.description, binding.action,
                    None if group is None else (group.description, group.compact), enabled, tooltip,
                    binding.tooltip)

        keys = tuple(entry(binding, enabled, tooltip)
                     for _node, binding, enabled, tooltip in active.values() if binding.show)
        palette = None
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            found = active.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                palette = entry(found[1], found[2], found[3])
        return keys, palette, self.narrow
