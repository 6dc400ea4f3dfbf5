"""Accepting actual turns as expected and deleting turns or cases, through the dashboard (Pilot).

The file-level guarantees of the edits themselves are tested in tests/unit/test_edits.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import settle
from tui_eval.tui.messages import EditKind, EditRequested


async def open_turn_2_of_book_flight(pilot, path: Path):
    """Once the folder is loaded, the turn view on book_flight's second turn; its key."""
    await settle(pilot)
    key = pilot.app.listing.key(path, "book_flight")
    pilot.app.open_turn(key, 1)
    await pilot.pause()
    return key


async def test_accept_turn_after_confirm(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        key = await open_turn_2_of_book_flight(pilot, path)
        before = path.read_text()
        await pilot.press("a")
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        body = str(app.screen.query_one("#confirm-body").render())
        assert "Make the actual turn 2 of case book_flight the expected one in travel/travel.evalset.json?" in body
        assert "get_weather, book_flight" in body
        await pilot.press("n")  # no: nothing written
        await settle(pilot)
        assert path.read_text() == before
        await pilot.press("a", "y")
        await settle(pilot)
        data = json.loads(path.read_text())
        inv = data["eval_cases"][0]["conversation"][1]
        assert inv["invocation_id"] == "bf-2"
        assert inv["final_response"]["parts"][0]["text"] == "Booked AZ 331 for 2 passengers. Confirmation code QX7T2."
        assert [c["name"] for c in inv["intermediate_data"]["tool_uses"]] == ["get_weather", "book_flight"]
        assert data["description"] == "Flights, weather and hotels"
        # The app reloaded the file; the turn view shows the new expected text at once and marks the
        # result, scored against the old one, stale.
        assert app.listing.case(key).conversation[1].final_response.text.startswith("Booked AZ 331 for 2")
        response = str(app.screen.query_one("#turn-response").render())
        assert response.startswith("expected\nBooked AZ 331 for 2 passengers. Confirmation code QX7T2.\n"), response
        assert "⚠ stale: eval case changed since this result was computed" in response


async def test_delete_case_from_the_browser(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter")
        await pilot.press(*["down"] * 6)  # agent_crash
        await pilot.press("d")
        assert "Delete case agent_crash from travel/travel.evalset.json?" in str(app.screen.query_one("#confirm-body").render())
        await pilot.press("y")
        await settle(pilot)
        ids = [c["eval_id"] for c in json.loads(path.read_text())["eval_cases"]]
        assert ids == ["book_flight", "weather_paris", "hotel_rubrics", "transfer_order", "judge_down"]
        assert app.listing.result(app.listing.key(path, "agent_crash")) is None
        assert "agent_crash" not in [n.data.key.eval_id for n in app.main.browser._case_nodes.values()]


async def test_accept_needs_a_result(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        key = app.listing.key(workspace / "travel" / "travel.evalset.json", "agent_crash")
        app.main.post_message(EditRequested(EditKind.ACCEPT_CASE, key))
        await pilot.pause()
        assert app.screen.id == "main"  # no confirm: nothing to accept
        assert any("No actual turns to accept" in n.message for n in app._notifications)


async def test_an_edit_that_cannot_be_written_is_shown_as_not_saved(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        key = await open_turn_2_of_book_flight(pilot, path)
        await pilot.press("a")
        path.unlink()  # gone between the question and the answer
        await pilot.press("y")
        await settle(pilot)
        failures = [n for n in app._notifications if n.severity == "error"]
        assert [n.title for n in failures] == ["Edit not saved"], failures
        assert "travel.evalset.json" in failures[0].message
        assert not path.exists()  # nothing written in its place
        assert not any(n.message.startswith("Accepted") for n in app._notifications)
        assert app.is_running
