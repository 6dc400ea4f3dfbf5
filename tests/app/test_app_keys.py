"""Keyboard-only: every action is a Binding with a description and an id; help; --no-mouse; themes."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.dom import DOMNode

from tests.app.conftest import settle
from tui_eval.tui.app import EvalApp
from tui_eval.tui.screens.confirm import ConfirmScreen
from tui_eval.tui.screens.help import HelpScreen
from tui_eval.tui.screens.history import CompareScreen, HistoryScreen
from tui_eval.tui.screens.main import MainScreen
from tui_eval.tui.screens.turn import TurnScreen
from tui_eval.tui.theme import default_theme
from tui_eval.tui.widgets.browser import EvalBrowser

OWNERS: list[type[DOMNode]] = [EvalApp, MainScreen, TurnScreen, HistoryScreen, CompareScreen, HelpScreen, ConfirmScreen, EvalBrowser]


@pytest.mark.parametrize("owner", OWNERS, ids=lambda o: o.__name__)
def test_every_binding_has_a_description_and_an_id(owner: type[DOMNode]) -> None:
    ids = []
    for binding in owner.BINDINGS:
        assert isinstance(binding, Binding)
        assert binding.description, binding
        assert binding.id, binding
        ids.append(binding.id)
    assert len(ids) == len(set(ids))


def test_binding_ids_are_unique_across_screens() -> None:
    bindings = [b for owner in OWNERS for b in owner.BINDINGS]
    assert all(isinstance(b, Binding) for b in bindings)
    ids = [b.id for b in bindings if isinstance(b, Binding)]
    assert len(ids) == len(set(ids))


async def test_help_screen_lists_flows_and_keys(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-body Static").render())
        for words in ("Browse eval sets", "Run all", "Match type", "Accept turn", "Compare with previous", "Quit"):
            assert words in text
        await pilot.press("escape")
        assert app.screen.id == "main"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)


async def test_footer_shows_cancel_only_while_running(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        assert app.main.check_action("cancel_run", ()) is False
        assert app.main.check_action("run_all", ()) is True
        app.model.new_run("pretend")
        app.pull()  # engine state reaches the screens through the pull loop (the app's `busy`)
        assert app.main.check_action("cancel_run", ()) is True
        assert app.main.check_action("run_all", ()) is None  # shown, disabled
        app.model.current.finish("finished")


async def test_keys_are_refused_while_loading(tmp_path: Path, make_app) -> None:
    (tmp_path / "empty").mkdir()
    app = make_app(tmp_path / "empty", recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "No eval files found" in str(app.main.summary.render())
        assert not app.engine.start_run("nothing", files=[])


def test_run_app_passes_no_mouse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tui_eval.cli import main
    from tui_eval.tui import app as app_module

    seen: dict[str, object] = {}

    def fake_run(self: EvalApp, *, mouse: bool = True, **kwargs: object) -> None:
        seen.update(mouse=mouse, live=self.live, agent=self.agent_ref, root=self.listing.root)

    monkeypatch.setattr(app_module.EvalApp, "run", fake_run)
    assert main([str(tmp_path), "--no-mouse", "--live", "--agent", "replay:x.json"]) == 0
    assert seen == {"mouse": False, "live": True, "agent": "replay:x.json", "root": tmp_path.resolve()}
    assert main([str(tmp_path)]) == 0
    assert seen["mouse"] is True and seen["live"] is False


@pytest.mark.parametrize(
    ("env", "theme"),
    [
        ({"TERM": "xterm-256color"}, "tui-eval"),
        ({"COLORTERM": "truecolor", "TERM": "xterm"}, "tui-eval"),
        ({"TERM": "linux"}, "ansi-dark"),
        ({"TERM": "xterm"}, "ansi-dark"),
        ({"TERM": "xterm-256color", "TUI_EVAL_THEME": "nord"}, "nord"),
    ],
)
def test_sixteen_colour_terminals_get_the_ansi_theme(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], theme: str) -> None:
    for name in ("TERM", "COLORTERM", "TUI_EVAL_THEME", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert default_theme() == theme
