"""Eval, agent and judge text full of Rich markup and escape sequences renders literally and harmlessly."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.app.conftest import full_result, settle, wait_until
from tui_eval.tui.text import literal, plain
from tui_eval.tui.widgets.browser import EvalBrowser

EVIL = "[/oops] [bold red]not bold[/] \x1b[31mred?\x1b[0m \x07 [link=https://example.com]x[/link] $accent"
SHOWN = literal(EVIL)


def test_literal_makes_control_characters_visible() -> None:
    assert literal("a\x1b[31mb\x07c\td\ne\x9b") == "a␛[31mb␇c\td\ne\\x9b"
    assert str(plain("[/oops]")) == "[/oops]"


async def test_markup_and_escapes_render_literally(markup_workspace: Path, make_app) -> None:
    app = make_app(markup_workspace, recording="markup.recorded.json")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        tree = app.main.query_one(EvalBrowser)
        await pilot.press("enter")
        lines = [tree.render_label(tree.get_node_at_line(i), tree.rich_style, tree.rich_style).plain
                 for i in range(tree.last_line + 1)]
        assert lines[0].startswith("▼ markup (2)")
        assert any("[/oops]" in line for line in lines)
        assert any("[bold]case" in line for line in lines)
        summary = str(app.main.summary.render())
        assert "Eval set [bold red]markup" in summary and SHOWN in summary and "[/]" in summary
        await pilot.press("down")
        assert "Case [/oops]" in str(app.main.summary.render())
        await pilot.press("enter", "down")
        assert "turn 1 of [/oops]".lower() in str(app.main.summary.render()).lower()
        await pilot.press("enter")
        screen = app.screen
        assert screen.id == "turn"
        assert str(screen.query_one("#turn-user", Static).render()) == SHOWN
        response = str(screen.query_one("#turn-response", Static).render())
        assert "expected " + SHOWN in response and "actual " + SHOWN in response
        cells = [str(c.render()) for c in screen.query("#trajectory-grid > .cell")]
        assert any('[b]tool[/b]([x]="[/y]", esc="\\u001b[2J")' in c for c in cells)
        assert any("[/extra]()" in c for c in cells)
        assert '["[x]"] "[/y]" → "[/z]"' in str(screen.query_one("#trajectory-args", Static).render())
        halluc = str(screen.query_one("#turn-hallucinations", Static).render())
        assert f"rationale: {SHOWN}" in halluc and f"excerpt: {SHOWN}" in halluc
        judges = str(screen.query_one("#turn-judges", Static).render())
        assert "[/r]" in judges and SHOWN in judges
        problems = str(screen.query_one("#turn-problems", Static).render())
        assert SHOWN in problems
        # Nothing on screen is an escape sequence or styled by the data's markup.
        screenshot = app.export_screenshot()
        assert "\x1b" not in screenshot and "\x07" not in screenshot
        assert "[/oops]" in screenshot.replace("&#160;", " ")
        await pilot.press("escape", "h")
        await wait_until(pilot, lambda: app.screen.id == "history" and app.screen.entries)
        assert "[/run]" in app.export_screenshot()


async def test_markup_in_notifications_and_run_errors(markup_workspace: Path, make_app) -> None:
    app = make_app(markup_workspace, recording="missing[/x].json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        key = app.listing.key(markup_workspace / "markup.evalset.json", "[/oops]")
        assert "missing[/x].json" in (await full_result(pilot, key)).error
        assert app.main.browser.select_key(key)
        await pilot.pause()
        assert "missing[/x].json" in str(app.main.summary.render())
        # The agent's load error was also shown as a notification, literally.
        assert any("missing[/x].json" in str(n.message) for n in app._notifications)
