"""The key bar (KeyFooter) draws what Textual's Footer draws, rebuilt only when that changes; and the
folder's first loaded frame is drawn as soon as the loader is done, not at the next pull tick."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import var
from textual.widgets import Footer

from tests.app.conftest import install_fixture
from tui_eval.tui import pump
from tui_eval.tui.textual_private import FooterKey
from tui_eval.tui.widgets.footer import KeyFooter


class Keys(App[None]):
    """Two keys; `beta` is shown disabled until `armed` is set."""

    BINDINGS = [Binding("a", "alpha", "Alpha"), Binding("b", "beta", "Beta", tooltip="the second key")]
    armed: var[bool] = var(False, bindings=True)

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer_type = footer

    def compose(self) -> ComposeResult:
        # The narrow footer (short labels, only keys that can act) is tested on its own below.
        yield KeyFooter(narrow_below=0) if self.footer_type is KeyFooter else self.footer_type()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return (True if self.armed else None) if action == "beta" else True

    def action_alpha(self) -> None:
        pass

    def action_beta(self) -> None:
        pass


def _keys(app: App[Any]) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


async def test_refreshes_that_change_nothing_keep_the_keys() -> None:
    app = Keys(KeyFooter)
    async with app.run_test() as pilot:
        await pilot.pause()
        before = _keys(app)
        assert [k.key for k in before if not k.has_class("-command-palette")] == ["a", "b"]
        for _ in range(3):
            app.screen.refresh_bindings()
            app.refresh_bindings()
        app.screen.focus_next()
        await pilot.pause()
        await pilot.pause()
        after = _keys(app)
        assert len(after) == len(before) and all(a is b for a, b in zip(after, before))


async def test_a_key_turned_on_is_redrawn() -> None:
    app = Keys(KeyFooter)
    async with app.run_test() as pilot:
        await pilot.pause()
        beta = next(k for k in _keys(app) if k.key == "b")
        assert beta.has_class("-disabled")
        app.armed = True
        await pilot.pause()
        await pilot.pause()
        beta = next(k for k in _keys(app) if k.key == "b")
        assert not beta.has_class("-disabled")
        assert beta.tooltip == "the second key"


def _screen(svg: str) -> str:
    return re.sub(r"terminal-\d+", "terminal", svg)


@pytest.mark.parametrize("compact", [False, True])
async def test_it_draws_what_textuals_footer_draws(compact: bool) -> None:
    """Textual's own Footer is the oracle: same screen, same key classes, compact or not, keys on or off."""
    shots = []
    for footer in (Footer, KeyFooter):
        app = Keys(footer)
        async with app.run_test(size=(60, 3)) as pilot:
            await pilot.pause()
            app.query_one(Footer).compact = compact
            await pilot.pause()
            first = (_screen(app.export_screenshot()), [sorted(k.classes) for k in _keys(app)])
            app.armed = True
            await pilot.pause()
            await pilot.pause()
            shots.append((first, (_screen(app.export_screenshot()), [sorted(k.classes) for k in _keys(app)])))
    assert shots[0] == shots[1]
    (_, classes_off), (_, classes_on) = shots[1]
    assert classes_off != classes_on  # `b` lost -disabled: the comparison saw a redraw


async def test_the_first_loaded_frame_does_not_wait_for_the_pull_tick(tmp_path: Path, make_app,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With the pull timer slowed to once in 1,000 s, the loader's end alone brings the folder on screen:
    every eval file in the tree, the top bar's count, the listing marked loaded."""
    monkeypatch.setattr(pump, "TICK_HZ", 0.001)
    folder = install_fixture("workspace", tmp_path / "ws")
    app = make_app(folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.listing.loaded
        files = len(app.listing.files)
        assert files >= 2
        assert len(app.main.browser.root.children) == files
        assert f"{files} eval files ·" in str(app.main.query_one("#topbar").render())
