"""Run history: every saved run newest first; comparing two runs puts regressions first."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from tests.app.conftest import settle, wait_until
from tui_eval.tui.screens.history import CompareScreen, HistoryScreen
from tui_eval.tui.widgets.browser import CaseEntry, EvalBrowser


def rows(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def open_history(app, pilot) -> None:
    await pilot.press("h")
    await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)


async def test_history_lists_runs_newest_first(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        table = app.screen.query_one(DataTable)
        listed = rows(table)
        assert [r[1] for r in listed] == ["2026-01-01 01:00:00", "2026-01-01 01:00:00", "2026-01-01 00:00:00"]
        assert sorted(r[2] for r in listed[:2]) == ["smalltalk", "travel"]
        assert listed[2][2:6] == ["travel", "2", "4", "0"]


async def test_compare_latest_with_previous_regressions_first(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        travel_row = next(i for i, r in enumerate(rows(table)) if r[2] == "travel")
        table.move_cursor(row=travel_row)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        listed = rows(app.screen.query_one(DataTable))
        assert listed[0][:4] == ["regression", "book_flight", "✔ passed", "✘ failed"]
        assert "tool_trajectory_avg_score 1.00→0.50" in listed[0][4]
        assert listed[1][:4] == ["fixed", "hotel_rubrics", "✘ failed", "✔ passed"]
        # A case that failed in both runs says so (the same words as `tui-eval run --baseline`).
        assert {r[0] for r in listed[2:]} == {"unchanged", "still failing"}
        assert all(r[2:4] == ["✘ failed", "✘ failed"] for r in listed[2:] if r[0] == "still failing")
        # u hides the unchanged ones (a case still failing stays: it is still news); enter shows the case.
        await pilot.press("u")
        kept = rows(app.screen.query_one(DataTable))
        assert [r[0] for r in kept] == ["regression", "fixed", "still failing", "still failing", "still failing"]
        assert all(r[4] == "same scores" for r in kept[2:]), kept
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.id == "main"
        node = app.main.query_one(EvalBrowser).cursor_node
        assert isinstance(node.data, CaseEntry) and node.data.key.eval_id == "book_flight"


async def test_compare_two_marked_runs_and_nothing_earlier(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        listed = rows(table)
        older = next(i for i, r in enumerate(listed) if r[1] == "2026-01-01 00:00:00")
        newer = next(i for i, r in enumerate(listed) if r[2] == "travel" and i != older)
        table.move_cursor(row=older)
        await pilot.press("enter")  # the oldest run: nothing before it
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("space")
        assert rows(table)[older][0] == "●"
        table.move_cursor(row=newer)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        assert rows(app.screen.query_one(DataTable))[0][:2] == ["regression", "book_flight"]


async def test_a_new_run_appears_in_the_history(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # smalltalk
        await pilot.press("r")
        await settle(pilot)
        await open_history(app, pilot)
        listed = rows(app.screen.query_one(DataTable))
        assert len(listed) == 4 and listed[0][2] == "smalltalk"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        assert {r[0] for r in rows(app.screen.query_one(DataTable))} <= {"unchanged", "still failing"}
