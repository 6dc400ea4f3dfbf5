"""The dashboard's failures-by-cause view (issue 21, part 4): w on the browser groups the latest results
of the demo agents (saved runs judged by a scripted judge on 127.0.0.1) by cause, each with its count;
enter opens a cause to its cases and enter on a case shows it in the browser."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Tree

from tests.app.conftest import settle, wait_until
from tests.support.demo_judge import demo_judge
from tests.support.fake_gemini import FakeGemini
from tests.support.screen_text import screen_text
from tui_eval.cli import main
from tui_eval.tui.screens.causes import CausesScreen
from tui_eval.tui.widgets.browser import CaseEntry, EvalBrowser

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


@pytest.fixture
def judged_demo(tmp_path: Path, gemini_env: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo agents with a saved run of hello_world and support (judged by the fake)."""
    dest = tmp_path / "demo"
    shutil.copytree(DEMO, dest, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    gemini_env.responder = demo_judge()
    for agent in ("hello_world", "support"):
        code = main(["run", str(dest / agent), str(dest / agent / f"{agent}.evalset.json"), "-q"],
                    io.StringIO(), io.StringIO())
        assert code == 1
    return dest


def groups(app) -> list[str]:
    tree = app.screen.query_one(Tree)
    return [node.label.plain for node in tree.root.children]


async def test_w_groups_failures_by_cause_and_opens_a_case(judged_demo: Path, make_app) -> None:
    app = make_app(judged_demo, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, CausesScreen) and app.screen.groups)
        assert groups(app) == [
            "4 response below 0.8",
            "1 arg order_id differs in get_order_status",
            "1 arg sides differs in roll_die",
            "1 calls out of order",
            "1 extra call create_ticket",
            "1 extra call roll_die",
            "1 judge: unsupported sentences",
            "1 missing call check_prime",
            "1 missing call search_knowledge_base",
            "1 rubric 'grounded' failed",
        ]
        assert "10 causes, 8 failing cases." in screen_text(app)
        # enter opens the first cause to its cases; down, enter shows that case in the browser.
        await pilot.press("enter")
        await pilot.pause()
        tree = app.screen.query_one(Tree)
        first = tree.root.children[0]
        assert first.is_expanded
        assert [n.label.plain for n in first.children] == [
            "✘ roll_and_check_prime  hello_world", "✘ roll_twelve_in_words  hello_world",
            "✘ prime_of_my_own_roll  hello_world", "✘ ten_sided_wording  hello_world"]
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: app.screen.id == "main")
        node = app.main.query_one(EvalBrowser).cursor_node
        assert isinstance(node.data, CaseEntry) and node.data.key.eval_id == "roll_twelve_in_words"


async def test_the_view_is_in_the_help_and_the_palette(judged_demo: Path, make_app) -> None:
    from tui_eval.tui.screens.help import binding_sections

    app = make_app(judged_demo, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Failures by cause"] == "w · causes.open"
        browser = dict(binding_sections())["Browser"]
        assert any(isinstance(b, Binding) and b.id == "causes.open" and b.description == "Failures by cause"
                   for b in browser)
        await pilot.press("question_mark")
        await pilot.pause()
        from textual.widgets import Static

        help_text = "\n".join(str(w.render()) for w in app.screen.query(Static))
        # Each row: the keys, what it does, the binding id a keymap names.
        assert "  w             Failures by cause  causes.open\n" in help_text
        assert "Failures by cause\n  esc           Back  causes.back\n  e             Expand all  causes.expand\n" in help_text
