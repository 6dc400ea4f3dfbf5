"""Snapshots of the main screens at 80x24 and 120x40 (fixed theme, saved results, no clocks or blinking).

Regenerate after checking the SVGs by eye: pytest tests/app/test_app_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from tests.app.conftest import settle, wait_until

SMALL, LARGE = (80, 24), (120, 40)


def before(*keys: str, settle_after: bool = False) -> Callable[[Any], Any]:
    """A run_before that waits for the folder to load, presses keys, and clears any toast."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
        if settle_after:
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


BOOK_FLIGHT = ("down", "down", "enter", "down")
BOOK_FLIGHT_TURN_2 = (*BOOK_FLIGHT, "enter", "down", "down", "enter")
WEATHER_TURN = ("down", "down", "enter", "down", "down", "enter", "down", "enter")
HOTEL_TURN = ("down", "down", "enter", "down", "down", "down", "enter", "down", "enter")
TRANSFER_TURN = ("down", "down", "enter", "down", "down", "down", "down", "enter", "down", "enter")


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_main_screen(snap_compare, workspace: Path, make_app, size: tuple[int, int]) -> None:
    keys = BOOK_FLIGHT if size == SMALL else (*BOOK_FLIGHT, "enter", "down", "down")
    assert snap_compare(make_app(workspace), terminal_size=size, run_before=before(*keys))


def test_main_screen_failed_only(snap_compare, workspace: Path, make_app) -> None:
    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=before("f", "down"))


def test_main_screen_after_a_run_ansi_theme(snap_compare, workspace: Path, make_app) -> None:
    app = make_app(workspace, theme="ansi-dark")
    assert snap_compare(app, terminal_size=SMALL, run_before=before("R", settle_after=True))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_turn_failing_trajectory(snap_compare, workspace: Path, make_app, size: tuple[int, int]) -> None:
    keys = BOOK_FLIGHT_TURN_2 if size == LARGE else (*BOOK_FLIGHT_TURN_2, "pagedown")
    assert snap_compare(make_app(workspace), terminal_size=size, run_before=before(*keys))


def test_turn_match_types(snap_compare, workspace: Path, make_app) -> None:
    assert snap_compare(make_app(workspace), terminal_size=LARGE, run_before=before(*TRANSFER_TURN, "m", "m"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x40"])
def test_turn_hallucinations(snap_compare, workspace: Path, make_app, size: tuple[int, int]) -> None:
    keys = (*WEATHER_TURN, "s", "end") if size == SMALL else (*WEATHER_TURN, "s", "end")
    assert snap_compare(make_app(workspace), terminal_size=size, run_before=before(*keys))


def test_turn_rubric_verdicts(snap_compare, workspace: Path, make_app) -> None:
    assert snap_compare(make_app(workspace), terminal_size=LARGE, run_before=before(*HOTEL_TURN, "end"))


async def open_history(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("h")
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "entries", None))


def test_history(snap_compare, workspace: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await open_history(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(workspace), terminal_size=LARGE, run_before=run_before)


def test_compare(snap_compare, workspace: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await open_history(pilot)
        from textual.widgets import DataTable

        table = pilot.app.screen.query_one(DataTable)
        row = next(i for i in range(table.row_count) if str(table.get_row_at(i)[2]) == "travel")
        table.move_cursor(row=row)
        await pilot.press("enter")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "changes", None))
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=run_before)


def test_help(snap_compare, workspace: Path, make_app) -> None:
    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=before("question_mark"))


def test_confirm_accept_turn(snap_compare, workspace: Path, make_app) -> None:
    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=before(*BOOK_FLIGHT_TURN_2, "a"))


def test_markup_renders_literally(snap_compare, markup_workspace: Path, make_app) -> None:
    app = make_app(markup_workspace, recording="markup.recorded.json")
    assert snap_compare(app, terminal_size=LARGE, run_before=before("enter", "down", "enter", "down", "enter"))
