"""Accepting actual turns as expected and deleting turns or cases: the file keeps everything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.conftest import settle
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import Content, FunctionCall, IntermediateData, Invocation
from tui_eval.tui.edits import EditError, accept_case, accept_turn, delete_case, delete_turn


def actual_turn(text: str = "new answer", calls: list[FunctionCall] | None = None) -> Invocation:
    return Invocation(
        user_content=Content.from_text("ignored: the file's user message stays"),
        invocation_id="actual-id",
        final_response=Content.from_text(text, "model"),
        intermediate_data=IntermediateData(tool_uses=calls or [FunctionCall(name="tool", args={"x": 1})]),
    )


def eval_file(tmp_path: Path) -> Path:
    data = {
        "eval_set_id": "s",
        "eval_cases": [
            {"eval_id": "a", "conversation": [
                {"invocationId": "a1", "userContent": {"role": "user", "parts": [{"text": "first"}]},
                 "finalResponse": {"role": "model", "parts": [{"text": "old"}]},
                 "intermediateData": {"toolUses": [], "toolResponses": [], "intermediateResponses": []},
                 "creation_timestamp": 12.5, "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "p"}}]},
                {"invocation_id": "a2", "user_content": {"role": "user", "parts": [{"text": "second"}]},
                 "final_response": None, "intermediate_data": {}},
            ], "session_input": {"app_name": "app", "user_id": "u", "state": {"k": 1}, "x_kept": "yes"},
             "custom": [1, 2]},
            {"eval_id": "b", "conversation": [
                {"invocation_id": "b1", "user_content": {"role": "user", "parts": [{"text": "only"}]},
                 "final_response": {"role": "model", "parts": [{"text": "b"}]}, "intermediate_data": {}}]},
        ],
    }
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps(data))
    return path


def test_accept_turn_replaces_only_response_and_tool_calls(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    accept_turn(path, "a", 0, actual_turn(), expect_user_text="first")
    data = json.loads(path.read_text())
    inv = data["eval_cases"][0]["conversation"][0]
    assert inv["invocationId"] == "a1"
    assert inv["userContent"]["parts"][0]["text"] == "first"
    assert inv["finalResponse"]["parts"][0]["text"] == "new answer"
    assert inv["intermediateData"]["tool_uses"] == [{"name": "tool", "args": {"x": 1}}]
    assert "final_response" not in inv and "intermediate_data" not in inv
    assert inv["creation_timestamp"] == 12.5 and inv["rubrics"][0]["rubric_id"] == "r"
    assert data["eval_cases"][0]["custom"] == [1, 2]
    assert data["eval_cases"][0]["session_input"]["x_kept"] == "yes"
    assert [c["eval_id"] for c in data["eval_cases"]] == ["a", "b"]
    assert data["eval_cases"][0]["conversation"][1]["invocation_id"] == "a2"
    # Still a valid eval set, and the new expectation is what the loader reads.
    loaded = load_eval_set(path)
    assert loaded.eval_cases[0].conversation[0].final_response.text == "new answer"
    assert [c.name for c in loaded.eval_cases[0].conversation[0].tool_calls] == ["tool"]


def test_accept_refuses_a_turn_changed_on_disk(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    before = path.read_text()
    with pytest.raises(EditError, match="changed on disk"):
        accept_turn(path, "a", 0, actual_turn(), expect_user_text="not what is there")
    with pytest.raises(EditError, match="no eval case 'zzz'"):
        accept_turn(path, "zzz", 0, actual_turn())
    with pytest.raises(EditError, match="no turn 3"):
        accept_turn(path, "a", 2, actual_turn())
    assert path.read_text() == before


def test_accept_case_needs_matching_turn_counts(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    with pytest.raises(EditError, match="accept turns one by one"):
        accept_case(path, "a", [actual_turn()], expected_turns=2)
    accept_case(path, "a", [actual_turn("one"), actual_turn("two")], expected_turns=2)
    conv = load_eval_set(path).eval_cases[0].conversation
    assert [t.final_response.text for t in conv] == ["one", "two"]
    assert [t.invocation_id for t in conv] == ["a1", "a2"]


def test_delete_turn_and_case_keep_the_rest(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    delete_turn(path, "a", 0, expect_user_text="first")
    data = json.loads(path.read_text())
    assert [t["invocation_id"] for t in data["eval_cases"][0]["conversation"]] == ["a2"]
    delete_case(path, "a")
    data = json.loads(path.read_text())
    assert [c["eval_id"] for c in data["eval_cases"]] == ["b"]
    with pytest.raises(EditError):
        delete_case(path, "a")


def test_legacy_files_are_edited_in_their_own_shape(tmp_path: Path) -> None:
    path = tmp_path / "old.test.json"
    path.write_text(json.dumps([
        {"query": "hi", "expected_tool_use": [], "reference": "hello", "extra": "kept"},
        {"query": "bye", "expected_tool_use": [{"tool_name": "t", "tool_input": {}}], "reference": "ciao"},
    ]))
    accept_turn(path, "old", 0, actual_turn("hey", [FunctionCall(name="greet", args={"who": "you"})]), expect_user_text="hi")
    rows = json.loads(path.read_text())
    assert rows[0] == {"query": "hi", "expected_tool_use": [{"tool_name": "greet", "tool_input": {"who": "you"}}],
                       "reference": "hey", "extra": "kept"}
    delete_turn(path, "old", 1)
    assert len(json.loads(path.read_text())) == 1
    with pytest.raises(EditError):
        delete_case(path, "old")


def test_a_broken_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "x.evalset.json"
    path.write_text('{"eval_set_id": "x", "eval_cases": [')
    with pytest.raises(EditError, match="not valid JSON"):
        delete_case(path, "a")
    assert path.read_text() == '{"eval_set_id": "x", "eval_cases": ['


# ---- through the app ----------------------------------------------------------------------------------


async def test_accept_turn_after_confirm(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        key = app.catalog.key(path, "book_flight")
        app.open_turn(key, 1)
        await pilot.pause()
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
        # The app reloaded the file; the turn view warns that the result predates the edit.
        assert app.catalog.case(key).conversation[1].final_response.text.startswith("Booked AZ 331 for 2")
        assert "the eval file changed since this result" in str(app.screen.query_one("#turn-response").render())


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
        assert app.catalog.result(app.catalog.key(path, "agent_crash")) is None
        assert "agent_crash" not in [n.data.key.eval_id for n in app.main.browser._case_nodes.values()]


async def test_accept_needs_a_result(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        key = app.catalog.key(workspace / "travel" / "travel.evalset.json", "agent_crash")
        app.accept_case(key)
        await pilot.pause()
        assert app.screen.id == "main"  # no confirm: nothing to accept


def test_an_edit_keeps_the_file_mode(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    path.chmod(0o640)
    delete_case(path, "b")
    assert path.stat().st_mode & 0o777 == 0o640
