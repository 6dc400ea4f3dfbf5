"""Browsing: eval sets > cases > turns with the latest saved status and score; filters, search, palette."""

from __future__ import annotations

from pathlib import Path

from tests.app.conftest import settle
from tui_eval.tui.widgets.browser import CaseEntry, EvalBrowser, SetEntry, TurnEntry
from tui_eval.tui.widgets.summary import Summary


def labels(app) -> list[str]:
    """Every visible tree line, as plain text."""
    tree = app.screen.query_one(EvalBrowser)
    out = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None:
            out.append(tree.render_label(node, tree.rich_style, tree.rich_style).plain)
    return out


def visible_cases(app) -> list[str]:
    """The eval ids of the case lines the tree shows."""
    tree = app.screen.query_one(EvalBrowser)
    out = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None and isinstance(node.data, CaseEntry):
            out.append(node.data.key.eval_id)
    return out


def summary_text(app) -> str:
    return str(app.screen.query_one(Summary).render())


async def test_files_stream_in_with_latest_saved_results(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        lines = labels(app)
        assert lines[0].startswith("▶ broken (0) ⚠ broken")
        assert lines[1].startswith("▶ smalltalk (2) ✔1 ✘1")
        assert lines[2].startswith("▶ travel (6) ✔2 ✘4")
        await pilot.press("down", "down", "enter")
        lines = labels(app)
        assert "✘ book_flight  0.50" in lines[3]
        assert "✔ hotel_rubrics  0.67" in lines[5]
        assert "agent error" in lines[8]
        await pilot.press("down")
        text = summary_text(app)
        assert "Case book_flight" in text
        assert "saved 2026-01-01 01:00" in text
        assert "tool_trajectory_avg_score 0.50 / 1" in text
        # Turns load when the case is expanded, each with its own status.
        await pilot.press("enter")
        lines = labels(app)
        assert "✔ 1. Find me a flight from Paris to Rome on 5 May." in lines[4]
        assert "✘ 2. Book the cheapest one." in lines[5]
        await pilot.press("down", "down")
        assert "Turn 2 of book_flight" in summary_text(app)
        assert "EXACT: other args: book_flight; extra: get_weather" in summary_text(app)


async def test_broken_file_is_flagged_with_its_error(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tree = app.screen.query_one(EvalBrowser)
        assert isinstance(tree.cursor_node.data, SetEntry)
        text = summary_text(app)
        assert "broken/broken.evalset.json:3:1" in text
        assert "invalid JSON" in text


async def test_failed_only_metric_and_search_filters(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        assert visible_cases(app) == ["farewell", "book_flight", "weather_paris", "transfer_order", "agent_crash"]
        assert not any("broken" in line for line in labels(app))  # no failed case in it
        assert "filter: failed only" in str(app.screen.query_one("#topbar").render())
        # By metric: failed on hallucinations_v1 only.
        metric_order = app.listing.metric_names()
        presses = metric_order.index("hallucinations_v1") + 1
        await pilot.press(*["m"] * presses)
        assert app.listing.filter.metric == "hallucinations_v1"
        assert visible_cases(app) == ["weather_paris"]
        assert any("✘ weather_paris  0.33" in line for line in labels(app))
        # Escape clears every filter.
        await pilot.press("escape")
        assert not app.listing.filter.active
        assert len(labels(app)) == 3
        # Search matches ids and user messages.
        await pilot.press("slash")
        await pilot.press(*"colosseum")
        await pilot.pause(0.3)
        assert visible_cases(app) == ["hotel_rubrics"]
        await pilot.press("enter")
        assert app.focused is app.screen.query_one(EvalBrowser)
        await pilot.press("escape")
        assert app.listing.filter.query == ""


async def test_palette_jumps_to_a_case_by_name(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"transfer")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        node = app.screen.query_one(EvalBrowser).cursor_node
        assert isinstance(node.data, CaseEntry)
        assert node.data.key.eval_id == "transfer_order"
        assert "Case transfer_order" in summary_text(app)


async def test_palette_reaches_actions_and_metric_filters(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Run", "Run all", "Run failed", "Failed only", "Search", "History", "Live", "Help", "Quit",
                      "Filter by metric: hallucinations_v1"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.press(*"failed only")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.listing.filter.failed_only


async def test_turn_node_opens_the_turn_view(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down", "enter", "down", "enter")
        assert app.screen.id == "turn"
        await pilot.press("escape")
        assert app.screen.id == "main"
        node = app.screen.query_one(EvalBrowser).cursor_node
        assert isinstance(node.data, TurnEntry)
