"""The turn view names the tool calls a --mock-tools run answered from the recorded responses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import settle
from tests.app.test_app_turn import open_turn, text_of


def _mark_mocked(workspace: Path) -> None:
    """The newest saved travel run, as if book_flight's second turn ran with --mock-tools=fallback:
    get_weather answered from the record, book_flight run for real."""
    record = workspace / "travel" / ".adk" / "eval_history" / "travel_travel_1767229200.tui-eval.json"
    data = json.loads(record.read_text())
    case = next(c for c in data["cases"] if c["eval_id"] == "book_flight")
    case["tool_timings"][1] = [
        {"name": "get_weather", "seconds": 0.0001, "call_id": None, "mocked": True},
        {"name": "book_flight", "seconds": 0.2, "call_id": None, "mocked": False},
    ]
    record.write_text(json.dumps(data))


async def test_mocked_calls_are_named_in_the_trajectory_title(workspace: Path, make_app) -> None:
    _mark_mocked(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "book_flight", 1)
        assert text_of(screen, "#trajectory-title") == "Tool trajectory  mocked: get_weather (recorded responses)"
        await pilot.press("p")  # the first turn ran its tools for real
        assert text_of(screen, "#trajectory-title") == "Tool trajectory"
