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
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from ..textual_private import FooterKey, FooterLabel, KeyGroup


_FIRST = ("app.help", "app.quit")


class KeyFooter(Footer):
    """A Footer that recomposes once per burst of binding refreshes, and only if its keys changed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._drawn: Hashable | None = None
        self._pending = False
        # Footer's own flag for this is private (`_bindings_ready`); compose below reads this one.
        self._keys_ready = False

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
        return keys, palette
