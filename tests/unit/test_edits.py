"""Eval-file edits (accept actual turns as expected, delete turns or cases): the file keeps everything else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.evalfiles import turns_of
from tui_eval.schema.edits import EditError, accept_case, accept_turn, delete_case, delete_turn
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import Content, FunctionCall, IntermediateData, Invocation

ROOT = Path(__file__).resolve().parents[2]


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
    first = turns_of(loaded.eval_cases[0])[0]
    assert first.final_response is not None and first.final_response.text == "new answer"
    assert [c.name for c in first.tool_calls] == ["tool"]


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
    conv = turns_of(load_eval_set(path).eval_cases[0])
    assert [t.final_response.text if t.final_response else None for t in conv] == ["one", "two"]
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


def test_an_edit_keeps_the_file_mode(tmp_path: Path) -> None:
    path = eval_file(tmp_path)
    path.chmod(0o640)
    delete_case(path, "b")
    assert path.stat().st_mode & 0o777 == 0o640


# ---- minimal diffs --------------------------------------------------------------------------------


def _weather_set(final_response: object, tool_uses: list[object]) -> dict[str, object]:
    return {
        "eval_set_id": "w",
        "eval_cases": [{
            "eval_id": "paris",
            "conversation": [{
                "invocation_id": "t1",
                "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                "final_response": final_response,
                "intermediate_data": {"tool_uses": tool_uses, "tool_responses": [], "intermediate_responses": []},
                "creation_timestamp": 1712345678.123456,
            }],
        }],
    }


def _actual_with_run_ids(text: str) -> Invocation:
    """An actual turn as a run records it: tool calls carry the run's correlation ids."""
    return Invocation(
        user_content=Content.from_text("Weather in Paris?"),
        invocation_id="run-7",
        final_response=Content.from_text(text, "model"),
        intermediate_data=IntermediateData(tool_uses=[FunctionCall(name="get_weather", args={"city": "Paris"}, id="call-1-1-1")]),
    )


def test_accept_makes_a_minimal_diff(tmp_path: Path) -> None:
    """Indentation, trailing newline and key order stay; no tool-call id is invented."""
    path = tmp_path / "w.evalset.json"
    before = _weather_set({"role": "model", "parts": [{"text": "Rainy."}]}, [])
    path.write_text(json.dumps(before, indent=4) + "\n")
    accept_turn(path, "paris", 0, _actual_with_run_ids("Sunny, 21 degrees."), expect_user_text="Weather in Paris?")
    after = _weather_set({"role": "model", "parts": [{"text": "Sunny, 21 degrees."}]},
                         [{"name": "get_weather", "args": {"city": "Paris"}}])
    assert path.read_text() == json.dumps(after, indent=4) + "\n"
    assert "call-1-1-1" not in path.read_text()


def test_accepting_what_is_expected_changes_nothing(tmp_path: Path) -> None:
    """Re-accepting an unchanged turn leaves the file byte for byte, its own tool-call ids included."""
    path = tmp_path / "w.evalset.json"
    data = _weather_set({"role": "model", "parts": [{"text": "Sunny, 21 degrees."}]},
                        [{"id": "mine", "name": "get_weather", "args": {"city": "Paris"}}])
    text = json.dumps(data, indent="\t", ensure_ascii=False)  # tabs, no trailing newline
    path.write_text(text)
    accept_turn(path, "paris", 0, _actual_with_run_ids("Sunny, 21 degrees."))
    assert path.read_text() == text


def test_a_turn_without_an_expected_response_takes_its_user_message_layout(tmp_path: Path) -> None:
    path = tmp_path / "w.evalset.json"
    path.write_text(json.dumps(_weather_set(None, [])))  # one line, Python's default separators
    accept_turn(path, "paris", 0, _actual_with_run_ids("Sunny."))
    after = _weather_set({"role": "model", "parts": [{"text": "Sunny."}]},
                         [{"name": "get_weather", "args": {"city": "Paris"}}])
    assert path.read_text() == json.dumps(after)


def test_escaped_files_stay_escaped_and_numbers_stay_as_written(tmp_path: Path) -> None:
    path = tmp_path / "w.evalset.json"
    data = _weather_set({"role": "model", "parts": [{"text": "Il pleut à Paris."}]}, [])
    data["eval_cases"][0]["big"] = 2**70  # type: ignore[index]
    path.write_text(json.dumps(data, indent=2) + "\n")  # ensure_ascii: "\u00e0"
    accept_turn(path, "paris", 0, _actual_with_run_ids("Soleil à Paris."))
    text = path.read_text()
    assert "\\u00e0" in text and "à" not in text
    assert "1180591620717411303424" in text and '"creation_timestamp": 1712345678.123456' in text


def test_delete_keeps_the_layout_of_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "w.evalset.json"
    data = _weather_set({"role": "model", "parts": [{"text": "Rainy."}]}, [])
    second = json.loads(json.dumps(data["eval_cases"][0]))  # type: ignore[index]
    second["eval_id"] = "rome"
    data["eval_cases"].append(second)  # type: ignore[attr-defined]
    path.write_text(json.dumps(data, indent=4) + "\n")
    delete_case(path, "paris")
    data["eval_cases"].pop(0)  # type: ignore[attr-defined]
    assert path.read_text() == json.dumps(data, indent=4) + "\n"


# ---- atomic writes: permissions without touching the umask at import -------------------------------------


def _python(code: str, umask: int, cwd: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", f"import os; os.umask({umask:#o}); {code}"], check=True, env=env, cwd=cwd)


def test_a_new_file_gets_what_open_would_give(tmp_path: Path) -> None:
    code = ("from pathlib import Path; from tui_eval.schema.fileio import atomic_write; "
            "atomic_write(Path('new.json'), b'{}'); open('plain.json', 'w').close()")
    _python(code, 0o027, tmp_path)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == (tmp_path / "plain.json").stat().st_mode & 0o777


def test_importing_the_writer_leaves_the_umask_alone(tmp_path: Path) -> None:
    code = ("calls = []; real = os.umask; os.umask = lambda m: calls.append(m) or real(m); "
            "import tui_eval.schema.fileio, tui_eval.schema.edits, tui_eval.engine.store; "
            "assert calls == [], calls")
    _python(code, 0o022, tmp_path)


def test_windows_line_ends_and_a_byte_order_mark_stay(tmp_path: Path) -> None:
    path = tmp_path / "w.evalset.json"
    data = _weather_set({"role": "model", "parts": [{"text": "Rainy."}]}, [])
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(data, indent=2).replace("\n", "\r\n") + "\r\n").encode())
    accept_turn(path, "paris", 0, _actual_with_run_ids("Sunny."))
    after = _weather_set({"role": "model", "parts": [{"text": "Sunny."}]},
                         [{"name": "get_weather", "args": {"city": "Paris"}}])
    assert path.read_bytes() == b"\xef\xbb\xbf" + (json.dumps(after, indent=2).replace("\n", "\r\n") + "\r\n").encode()


# ---- set_criterion: the what-if view's write (issue 21, part 5) ------------------------------------


def test_set_criterion_changes_only_that_value(tmp_path: Path) -> None:
    from tui_eval.schema.edits import set_criterion

    config = tmp_path / "test_config.json"
    text = ('{\n  "criteria": {\n    "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"},\n'
            '    "response_match_score": 0.8,\n    "final_response_match_v2": {\n      "threshold": 0.8,\n'
            '      "judge_model_options": {"num_samples": 3}\n    }\n  }\n}\n')
    config.write_text(text)
    set_criterion(config, "tool_trajectory_avg_score", threshold=0.5, match_type="IN_ORDER")
    set_criterion(config, "response_match_score", threshold=0.75)
    set_criterion(config, "final_response_match_v2", threshold=0.6)
    assert config.read_text() == (text.replace('{"threshold": 1.0, "match_type": "EXACT"}',
                                               '{"threshold": 0.5, "match_type": "IN_ORDER"}')
                                  .replace('"response_match_score": 0.8', '"response_match_score": 0.75')
                                  .replace('"threshold": 0.8,\n      "judge', '"threshold": 0.6,\n      "judge'))
    # A number criterion that gets a match type becomes an object in place; an object without the key gets it first.
    compact = tmp_path / "compact.json"
    compact.write_text('{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": {"x": 1}}}')
    set_criterion(compact, "tool_trajectory_avg_score", match_type="ANY_ORDER")
    set_criterion(compact, "response_match_score", threshold=0.7)
    assert compact.read_text() == ('{"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": '
                                   '"ANY_ORDER"}, "response_match_score": {"threshold": 0.7, "x": 1}}}')
    with pytest.raises(EditError, match="no criterion 'safety_v1'"):
        set_criterion(compact, "safety_v1", threshold=0.5)


def test_set_criterion_keeps_a_byte_order_mark_and_never_overwrites_a_broken_config(tmp_path: Path) -> None:
    from tui_eval.schema.edits import set_criterion

    config = tmp_path / "test_config.json"
    config.write_bytes(b'\xef\xbb\xbf{"criteria": {"response_match_score": 0.8}}\r\n')
    set_criterion(config, "response_match_score", threshold=0.5)
    assert config.read_bytes() == b'\xef\xbb\xbf{"criteria": {"response_match_score": 0.5}}\r\n'
    broken = tmp_path / "broken.json"
    broken.write_text('{"criteria": {"response_match_score": 0.8')
    with pytest.raises(EditError, match=r"broken.json: the file is not valid JSON right now \(.*\); fix it first"):
        set_criterion(broken, "response_match_score", threshold=0.5)
    assert broken.read_text() == '{"criteria": {"response_match_score": 0.8'
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"criteria": {"caf\xe9": 0.8}}')
    with pytest.raises(EditError, match="latin.json: the file is not UTF-8"):
        set_criterion(latin, "caf\xe9", threshold=0.5)
    assert latin.read_bytes() == b'{"criteria": {"caf\xe9": 0.8}}'
