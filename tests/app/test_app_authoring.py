"""Writing cases from the dashboard (Pilot): a case edited as JSON in the in-app editor (the test driver
cannot suspend, as under `textual serve`), a session file imported with `I`, and `z` taking any edit back
byte for byte. The real $EDITOR, with the dashboard suspended, is tests/e2e/test_editor_tmux.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.conftest import settle, wait_until


@pytest.fixture(autouse=True)
def _no_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)


async def _on_book_flight(pilot) -> None:
    await settle(pilot)
    await pilot.press("down", "down", "enter", "down")  # the travel set, open; its first case
    assert pilot.app.main.selected.key.eval_id == "book_flight"


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_the_in_app_editor_checks_saves_in_place_and_z_restores_the_bytes(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    original = path.read_bytes()
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await _on_book_flight(pilot)
        await pilot.press("E")
        assert app.screen.id == "case-editor"
        text = app.screen.query_one("#case-editor-text").text
        assert json.loads(text)["eval_id"] == "book_flight" and text.startswith('{\n  "eval_id": "book_flight",')

        # Not JSON any more: not saved, the error above the text, the text as typed, the file untouched.
        await pilot.press("x", "ctrl+s")
        assert app.screen.id == "case-editor"
        error = str(app.screen.query_one("#case-editor-error").render())
        assert error.startswith("Not saved: the edited case:1:1: invalid JSON"), error
        assert app.screen.query_one("#case-editor-text").text == "x" + text
        assert path.read_bytes() == original

        # Valid JSON that is not an eval case (no eval_id): the JSON path of the fault.
        await pilot.press("backspace", "down", "right", "right", "right", "X", "ctrl+s")
        error = str(app.screen.query_one("#case-editor-error").render())
        assert error.startswith("Not saved: the edited case: missing required key") and "eval" in error, error
        assert path.read_bytes() == original

        # Put the key back and rename the case: saved in place, every other byte of the file kept.
        await pilot.press("backspace", "end", "left", "left", "_", "v", "2", "ctrl+s")
        await settle(pilot)
        assert app.screen.id == "main"
        data = json.loads(path.read_text())
        assert [c["eval_id"] for c in data["eval_cases"]][:2] == ["book_flight_v2", "weather_paris"]
        before = json.loads(original)
        assert data["eval_cases"][0]["conversation"] == before["eval_cases"][0]["conversation"]
        assert data["eval_cases"][1:] == before["eval_cases"][1:] and data["description"] == before["description"]
        assert "Saved case book_flight_v2" in _messages(app)
        assert app.main.selected.key.eval_id == "book_flight_v2"

        await pilot.press("z")
        await settle(pilot)
        assert path.read_bytes() == original
        assert "Undone: edit of case book_flight" in _messages(app)
        await pilot.press("z")
        await settle(pilot)
        assert "Nothing to undo: no accept, delete, edit or import in this session." in _messages(app)


async def test_escape_leaves_the_file_as_it_was(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    original = path.read_bytes()
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await _on_book_flight(pilot)
        await pilot.press("E", "x", "escape")
        await settle(pilot)
        assert app.screen.id == "main" and path.read_bytes() == original


async def test_undo_takes_back_a_delete_and_refuses_once_the_file_changed(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    original = path.read_bytes()
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await _on_book_flight(pilot)
        await pilot.press("D", "y")
        await settle(pilot)
        assert b'"book_flight"' not in path.read_bytes()
        await pilot.press("z")
        await settle(pilot)
        assert path.read_bytes() == original
        assert "Undone: Deleted case book_flight" in _messages(app)

        await pilot.press("D", "y")
        await settle(pilot)
        deleted = path.read_bytes()
        changed = deleted.replace(b'"Flights, weather and hotels"', b'"Flights and hotels"')
        path.write_bytes(changed)  # another program saved the file since
        await pilot.press("z")
        await settle(pilot)
        assert path.read_bytes() == changed  # refused: that change is kept
        [warning] = [n for n in app._notifications if n.title == "Not undone"]
        assert warning.message.startswith("cannot undo Deleted case ") and "changed since" in warning.message


def _session(tmp: Path, session_id: str = "chat-42") -> Path:
    session = {"id": session_id, "appName": "travel", "userId": "ana", "state": {"x": 1}, "events": [
        {"invocationId": "e-1", "author": "user", "timestamp": 5.0,
         "content": {"role": "user", "parts": [{"text": "Weather in Rome?"}]}},
        {"invocationId": "e-1", "author": "travel_agent",
         "content": {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "get_weather",
                                                                    "args": {"city": "Rome"}}}]}},
        {"invocationId": "e-1", "author": "travel_agent",
         "content": {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "get_weather",
                                                                        "response": {"sky": "clear"}}}]}},
        {"invocationId": "e-1", "author": "travel_agent",
         "content": {"role": "model", "parts": [{"text": "Clear skies in Rome."}]}},
    ]}
    path = tmp / "session.json"
    path.write_text(json.dumps(session))
    return path


async def test_i_imports_a_session_into_the_highlighted_set_and_z_takes_it_back(
    workspace: Path, make_app, tmp_path: Path
) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    original = path.read_bytes()
    session = _session(tmp_path)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await _on_book_flight(pilot)
        await pilot.press("I")
        assert app.screen.__class__.__name__ == "ImportSessionScreen"
        await pilot.press(*str(session), "enter", *"rome_weather", "enter")
        await settle(pilot)
        assert app.screen.id == "main"
        data = json.loads(path.read_text())
        new = data["eval_cases"][-1]
        assert new["eval_id"] == "rome_weather"
        assert new["session_input"] == {"app_name": "travel", "user_id": "ana", "state": {}}
        assert new["conversation"][0]["invocation_id"] == "e-1"
        assert new["conversation"][0]["final_response"]["parts"][0]["text"] == "Clear skies in Rome."
        assert json.loads(original)["eval_cases"] == data["eval_cases"][:-1]
        # The new case shows in the tree, highlighted, once the rewritten file is read back.
        await wait_until(pilot, lambda: getattr(getattr(app.main.selected, "key", None), "eval_id", None)
                         == "rome_weather")
        assert any(m.startswith("Imported session chat-42 as case rome_weather (1 turn(s))") for m in _messages(app))

        await pilot.press("z")
        await settle(pilot)
        assert path.read_bytes() == original


async def test_a_file_that_is_not_a_session_is_one_error_and_the_set_is_untouched(
    workspace: Path, make_app, tmp_path: Path
) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    original = path.read_bytes()
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await _on_book_flight(pilot)
        await pilot.press("I", *str(path), "enter", "enter")  # the eval set itself, not a session
        await settle(pilot)
        [error] = [n for n in app._notifications if n.severity == "error"]
        assert error.title == "Session not imported (the eval set was not changed)"
        assert "this is an eval set, not an ADK session" in error.message
        assert path.read_bytes() == original
        await pilot.press("z")  # nothing was written, so nothing to undo
        await settle(pilot)
        assert "Nothing to undo: no accept, delete, edit or import in this session." in _messages(app)
