"""Textual's private API, as the package (tui/textual_private.py) and the tests use it, against the
pinned Textual: each use works as written, so an upgrade that moves or changes one fails here by name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.notifications import Notification
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Footer, Label, Tree

import tui_eval
from tui_eval.tui import textual_private
from tui_eval.tui.textual_private import (FooterKey, FooterLabel, KeyGroup, add_tree_nodes, app_is_exiting,
                                          tree_node_label, withdraw_notification)


def test_the_footer_pieces_are_where_the_package_imports_them_from() -> None:
    from textual.widgets import _footer

    assert (FooterKey, FooterLabel, KeyGroup) == (_footer.FooterKey, _footer.FooterLabel, _footer.KeyGroup)
    assert issubclass(FooterKey, Widget) and issubclass(FooterLabel, Label) and issubclass(KeyGroup, Widget)
    # widgets/footer.py builds keys with these arguments, and sets `compact` on each key.
    params = inspect.signature(FooterKey.__init__).parameters
    for name in ("key", "key_display", "description", "action", "disabled", "tooltip", "classes"):
        assert name in params, name
    assert isinstance(FooterKey.__dict__["compact"], Reactive)
    # KeyFooter takes over the footer's rebuild by overriding this hook (Footer subscribes it on mount).
    assert list(inspect.signature(Footer.bindings_changed).parameters) == ["self", "screen"]


async def test_adding_many_tree_nodes_at_once_gives_what_adding_them_one_by_one_gives() -> None:
    items = [(Text(f"case {i}"), i, i % 2 == 0) for i in range(100)]

    class Trees(App[None]):
        def compose(self) -> ComposeResult:
            yield Tree("fast", id="fast")
            yield Tree("plain", id="plain")

    app = Trees()
    async with app.run_test() as pilot:
        fast, plain = app.query_one("#fast", Tree), app.query_one("#plain", Tree)
        fast.root.expand()
        plain.root.expand()
        await pilot.pause()
        assert fast.last_line == plain.last_line == 0
        added = add_tree_nodes(fast, fast.root, items)
        # None would mean the Tree's helpers are gone and the browser silently took the slow path.
        assert added is not None and len(added) == 100
        for label, data, expand in items:
            plain.root.add(label, data, allow_expand=expand)
        await pilot.pause()
        assert [(str(n.label), n.data, n.allow_expand) for n in fast.root.children] == \
            [(str(n.label), n.data, n.allow_expand) for n in plain.root.children]
        assert [n.parent for n in added] == [fast.root] * 100
        assert fast.last_line == plain.last_line == 100
        assert fast.get_node_at_line(42) is added[41]
        label = tree_node_label(added[7])
        assert isinstance(label, Text) and label.plain == "case 7" and label is added[7].label


async def test_one_notification_is_withdrawn_and_exiting_is_seen_before_the_app_stops() -> None:
    app = App[None]()
    async with app.run_test() as pilot:
        app.notify("stale", title="one")
        app.notify("current", title="two")
        await pilot.pause()
        stale = next(n for n in app._notifications if n.message == "stale")
        withdraw_notification(app, stale)
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["current"]
        assert not app_is_exiting(app)
        app.exit()
        assert app_is_exiting(app) and app.is_running


async def test_the_private_app_state_the_tests_read_is_there() -> None:
    """tests/* read `App._notifications`; tests/support/screen_text.py renders a screen through
    `Screen._compositor.render_update(full=True, screen_stack=App._background_screens)`."""
    app = App[None]()
    async with app.run_test() as pilot:
        app.notify("hello", title="greeting", severity="warning")
        await pilot.pause()
        shown = list(app._notifications)
        assert [(n.title, n.message, n.severity) for n in shown] == [("greeting", "hello", "warning")]
        assert all(isinstance(n, Notification) for n in shown)
        assert isinstance(app._background_screens, list)
        params = inspect.signature(app.screen._compositor.render_update).parameters
        assert "full" in params and "screen_stack" in params


def test_no_other_module_of_the_package_imports_textual_private_modules() -> None:
    package = Path(tui_eval.__file__).parent
    private_import = re.compile(r"^\s*(from|import)\s+textual\.[\w.]*\._", re.MULTILINE)
    found = [str(p.relative_to(package)) for p in sorted(package.rglob("*.py"))
             if p != Path(textual_private.__file__) and private_import.search(p.read_text())]
    assert found == []
