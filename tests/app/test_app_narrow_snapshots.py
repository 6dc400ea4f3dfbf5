"""Snapshots at 80x24 with long ids (issue 32): the browser, the turn view, what if, history and compare
give up room (a cut id, a shorter label) before they cut a score, a status or a key.

Regenerate after checking the SVGs by eye: pytest tests/app/test_app_narrow_snapshots.py --snapshot-update
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.app.conftest import install_fixture, settle, wait_until

SMALL = (80, 24)
#: The travel set and its cases renamed to ids a real suite has (the saved runs say the same ids).
LONG_IDS = {
    "travel": "travel_booking_regression_suite_2026",
    "book_flight": "book_the_cheapest_flight_then_confirm",
    "weather_paris": "weather_in_paris_before_the_trip",
    "hotel_rubrics": "hotel_booking_judged_by_rubrics",
}


@pytest.fixture
def long_ids(tmp_path: Path) -> Path:
    """The app workspace, with the travel set and three of its cases under long ids everywhere (eval
    file, recording, saved runs)."""
    root = install_fixture("workspace", tmp_path / "ws")
    pattern = re.compile(r'"(' + "|".join(LONG_IDS) + r')"')
    for path in root.rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: json.dumps(LONG_IDS[m.group(1)]), text)
        if new != text:
            path.write_text(new, encoding="utf-8")
    return root


def before(*keys: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.2)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_browser_with_long_ids(snap_compare, long_ids: Path, make_app) -> None:
    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=before("down", "down", "enter", "down"))


def test_turn_view_with_long_ids(snap_compare, long_ids: Path, make_app) -> None:
    keys = ("down", "down", "enter", "down", "enter", "down", "down", "enter")
    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=before(*keys))


def test_whatif_at_80x24(snap_compare, long_ids: Path, make_app) -> None:
    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=before("W", "minus"))


async def _history(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("h")
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "entries", None))
    await pilot.pause(0.2)


async def _compare_travel(pilot: Any) -> None:
    """History, then the travel set's newest run compared with its earlier one."""
    from textual.widgets import DataTable

    await _history(pilot)
    table = pilot.app.screen.query_one(DataTable)
    row = next(i for i in range(table.row_count) if str(table.get_row_at(i)[2]).startswith("travel"))
    table.move_cursor(row=row)
    await pilot.press("enter")
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "changes", None))


def test_history_with_long_ids(snap_compare, long_ids: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await _history(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=run_before)


def test_compare_with_long_ids(snap_compare, long_ids: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await _compare_travel(pilot)
        await pilot.press("u")
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=run_before)


def test_turns_of_two_runs_at_80x24(snap_compare, long_ids: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await _compare_travel(pilot)
        await pilot.press("t")
        await wait_until(pilot, lambda: len(pilot.app.screen.query(".runs-diff-column")) > 0)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(long_ids), terminal_size=SMALL, run_before=run_before)
