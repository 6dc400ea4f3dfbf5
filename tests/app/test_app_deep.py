"""The turn view at 80×24 on the tabletop demo (a google-adk game master and its AgentTool dice agent, run
offline): the trajectory as a tree with the sub-agent's calls, the time waterfall, the session state diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.app.conftest import settle
from tests.support.screen_text import screen_text
from tui_eval.tui.screens.turn import TurnScreen

DEMO = Path(__file__).resolve().parents[2] / "demo_agents" / "tabletop"


@pytest.fixture
def tabletop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    folder = tmp_path / "games" / "tabletop"
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return folder.parent


def text_of(screen: TurnScreen, selector: str) -> str:
    # Calls keep their arguments whole with no-break spaces; compare them as spaces.
    return str(screen.query_one(selector, Static).render()).replace("\xa0", " ")


async def _open(app, pilot, eval_id: str, index: int = 0) -> TurnScreen:
    key = app.listing.key(app.listing.root / "tabletop" / "tabletop.evalset.json", eval_id)
    app.open_turn(key, index)
    await pilot.pause()
    assert isinstance(app.screen, TurnScreen)
    return app.screen


async def _run_all(app, pilot) -> None:
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot, timeout=60)
    assert app.run_state is not None and app.run_state.cases_done == 4


async def test_turn_view_shows_the_sub_agents_calls_as_a_tree(tabletop: Path, make_app) -> None:
    app = make_app(tabletop, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _run_all(app, pilot)
        screen = await _open(app, pilot, "twenty_in_words")
        tree = text_of(screen, "#turn-tree").splitlines()
        assert tree[0].startswith('game_master › dice_agent(request="roll a twenty-sided die")  ')
        assert tree[0].endswith(" s")  # the call's own time
        assert tree[2].startswith("  └ dice_agent › roll_die(sides=6)")
        assert tree[3].strip() == "← {\"result\": 5}"
        assert any(line.startswith("game_master › keep_score(player=\"Ben\")") for line in tree)
        # The deep trajectory diff, under its own match type, shows the wrong argument of the inner call.
        deep = screen.query_one("#deep-trajectory")
        assert deep.display
        head = str(deep.query_one("#trajectory-head", Static).render())
        assert "[EXACT* ✘]" in head
        args = str(deep.query_one("#trajectory-args", Static).render())
        assert "dice_agent › roll_die sides 20 → 6" in args
        # ADK's own trajectory, above, judged only the top-level calls: it passed.
        assert "[EXACT* ✔]" in text_of(screen, "#trajectory-head")
        # The event trace shows the inner call under the AgentTool call.
        await pilot.press("e")
        trace = text_of(screen, "#turn-trace")
        assert "game_master calls dice_agent(" in trace and "└ dice_agent calls roll_die(sides=6) ← {\"result\": 5}" in trace


async def test_case_summary_and_turn_view_show_the_session_state_key_by_key(tabletop: Path, make_app) -> None:
    from tui_eval.tui.widgets.summary import Summary

    app = make_app(tabletop, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _run_all(app, pilot)
        await pilot.press("f", "down", "down")  # failures only: twenty_in_words, then forgot_bonus
        await pilot.pause()
        summary = str(app.screen.query_one(Summary).render())
        assert "Case forgot_bonus" in summary and "session state" in summary
        assert "✔ last_roll" in summary and "✘ scores" in summary
        screen = await _open(app, pilot, "forgot_bonus")
        lines = text_of(screen, "#turn-state").splitlines()
        assert lines[0].split() == ["key", "expected", "actual"]
        assert [line.split()[:2] for line in lines[1:]] == [["✔", "last_roll"], ["✘", "scores"]]
        assert '{"Cara": 7}' in lines[2] and '{"Cara": 5}' in lines[2]
        screen.query_one("#turn-state").scroll_visible(animate=False)
        await pilot.pause()
        assert "✘ scores" in screen_text(app)
        # Accepting the case writes the state the run left as the expected one.
        await pilot.press("A")
        await pilot.pause()
        assert 'final session state {"last_roll": 5, "scores": {"Cara": 5}}' in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        data = json.loads((tabletop / "tabletop" / "tabletop.evalset.json").read_text())
        case = next(c for c in data["eval_cases"] if c["eval_id"] == "forgot_bonus")
        assert case["final_session_state"] == {"last_roll": 5, "scores": {"Cara": 5}}


async def test_turn_view_shows_where_the_time_went_at_80_columns(tabletop: Path, make_app) -> None:
    app = make_app(tabletop, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _run_all(app, pilot)
        screen = await _open(app, pilot, "score_a_roll")
        bar, legend = text_of(screen, "#turn-time").splitlines()
        assert len(bar) <= 74  # one line in the turn pane at 80 columns
        assert bar.split(" s ", 1)[0].replace(".", "").isdigit()
        # The slowest tool by name with the dice agent's roll inside it, model and framework time; at 80
        # columns the quicker keep_score is counted, not named.
        assert len(legend) <= 74
        assert legend.startswith("■ model ") and "■ dice_agent " in legend and " inside)" in legend
        assert "+1 more" in legend and "■ framework " in legend
        screen.query_one("#turn-time").scroll_visible(animate=False)
        await pilot.pause()
        assert "■ dice_agent" in screen_text(app)


def test_a_slow_tool_takes_the_waterfall_at_a_glance() -> None:
    from tui_eval.schema.model import Content, Invocation, ToolTiming
    from tui_eval.tui.widgets.trajectory import waterfall_lines

    inv = Invocation(user_content=Content.from_text("hi"), duration=2.0, model_duration=0.2, tool_duration=1.7,
                     tool_timings=[ToolTiming(name="lookup_order", seconds=1.6, call_id="a"),
                                   ToolTiming(name="greet", seconds=0.1, call_id="b")])
    bar, legend = (str(line) for line in waterfall_lines(inv, 74))
    assert bar.startswith("2.00 s ") and len(bar) == 74
    cells = bar[len("2.00 s "):]
    # model 0.2 s, lookup_order 1.6 s, greet 0.1 s, framework 0.1 s of 2.0 s, over 67 cells.
    assert cells.startswith("model")
    assert "lookup_order" in cells and cells.index("lookup_order") < 10
    assert legend == "■ model 0.20  ■ lookup_order 1.60  ■ greet 0.10  ■ framework 0.10"


async def test_history_rescores_a_run_and_compares_it(tabletop: Path, make_app) -> None:
    from tests.app.conftest import wait_until
    from tui_eval.tui.screens.history import CompareScreen, HistoryScreen

    app = make_app(tabletop, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _run_all(app, pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        [saved] = history.entries.values()
        for py in (tabletop / "tabletop").glob("*.py"):
            py.unlink()  # a re-score runs no agent code
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), timeout=60)
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        assert compare.before.run_id == saved.run_id and compare.after.run_id != saved.run_id
        assert len(history.entries) == 2
