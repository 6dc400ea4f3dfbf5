"""The history screen over hostile records (issue 23): a corrupt or hostile record is listed as unreadable
with its reason, the dashboard keeps working, and a path a record names is never followed out of its folder."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable, Static

from tests.app.conftest import settle, wait_until
from tui_eval.tui.screens.history import CompareScreen, HistoryScreen

HISTORY = Path("travel") / ".adk" / "eval_history"
NEWER = "travel_travel_1767229200.tui-eval.json"


def hostile(folder: Path, tag: str, **changes: object) -> None:
    record = folder / HISTORY / NEWER
    data = json.loads(record.read_text())
    (folder / HISTORY / NEWER.replace("travel_1767", f"{tag}_1767")).write_text(json.dumps({**data, **changes}))


async def test_h_lists_hostile_records_as_unreadable_and_shows_the_rest(workspace: Path, make_app) -> None:
    hostile(workspace, "time", creation_timestamp=1e308)
    hostile(workspace, "runid", run_id={"an": "object"})
    hostile(workspace, "counts", counts=["PASSED"])
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.query_one(DataTable).row_count == 3  # the three good runs
        status = str(screen.query_one("#history-status", Static).render())
        assert "3 unreadable run record(s)" in status
        assert "creation_timestamp" in status and "run_id: expected a string" in status
        assert "counts: expected an object of counts" in status


async def test_g_never_shows_a_file_outside_the_history_folder(workspace: Path, make_app) -> None:
    record = workspace / HISTORY / NEWER
    (record.parent / "run.code.diff").symlink_to("/etc/passwd")
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "code_diff_file": "run.code.diff"}))
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)
        table = app.screen.query_one(DataTable)
        row = next(i for i in range(table.row_count)
                   if str(table.get_row_at(i)[1]) == "2026-01-01 01:00:00" and str(table.get_row_at(i)[2]) == "travel")
        table.move_cursor(row=row)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        assert app.screen.diff_path is None
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)  # no diff screen opened
