"""The session's undo puts a file back byte for byte (BOM, CRLF, odd spacing), refuses once the file
changed since, and takes back an import that created the eval set; a case edit is checked and written in
place."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tui_eval.schema.edits import EditError, UndoStack, add_case, case_json, delete_case, replace_case

ODD = ('\ufeff{"eval_set_id" :"s",\r\n "eval_cases":[ {"evalId":"a","conversation":[],"extra":1},\r\n'
       '  {"eval_id":"b","conversation":[]}]}\r\n\r\n')


def test_undo_restores_every_byte_of_an_oddly_written_file(tmp_path: Path) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_bytes(ODD.encode("utf-8"))
    undo = UndoStack()
    undo.record(path, "delete a", partial(delete_case, path, "a"))
    undo.record(path, "delete b", partial(delete_case, path, "b"))
    assert json.loads(path.read_bytes().decode("utf-8-sig"))["eval_cases"] == []
    assert undo.undo().label == "delete b"
    assert undo.undo().label == "delete a"
    assert path.read_bytes() == ODD.encode("utf-8")
    with pytest.raises(EditError, match="nothing to undo"):
        undo.undo()


def test_undo_refuses_when_the_file_changed_since_and_keeps_the_edit_undoable(tmp_path: Path) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_bytes(ODD.encode("utf-8"))
    undo = UndoStack()
    undo.record(path, "delete a", partial(delete_case, path, "a"))
    edited = path.read_bytes()
    path.write_bytes(edited + b" ")
    with pytest.raises(EditError, match=r"cannot undo delete a: .* changed since"):
        undo.undo()
    assert path.read_bytes() == edited + b" " and len(undo) == 1
    path.write_bytes(edited)  # the other change taken back: now it can be undone
    undo.undo()
    assert path.read_bytes() == ODD.encode("utf-8")


def test_undoing_an_import_that_made_the_eval_set_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "new.evalset.json"
    undo = UndoStack()
    new_case = {"eval_id": "c", "conversation": [], "creation_timestamp": 3.0}
    undo.record(path, "import", partial(add_case, path, new_case, eval_set_id="new"))
    data = json.loads(path.read_text())
    assert data["eval_set_id"] == "new" and data["eval_cases"] == [new_case]
    undo.undo()
    assert not path.exists()


def test_a_case_edit_is_checked_and_written_in_place(tmp_path: Path) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_bytes(ODD.encode("utf-8"))
    before = case_json(path, "b")
    assert json.loads(before) == {"eval_id": "b", "conversation": []}
    with pytest.raises(EditError, match="the edited case"):
        replace_case(path, "b", before, '{"eval_id": "b", "conversation": [], "conversation_scenario": '
                                        '{"starting_prompt": "x", "conversation_plan": "y"}}')
    with pytest.raises(EditError, match="case id 'a' is taken"):
        replace_case(path, "b", before, '{"eval_id": "a", "conversation": []}')
    with pytest.raises(EditError, match="changed in .* while it was being edited"):
        replace_case(path, "b", before.replace("[]", "[ ]") + " ", '{"eval_id": "b2", "conversation": []}')
    assert path.read_bytes() == ODD.encode("utf-8")
    assert replace_case(path, "b", before, '{"eval_id": "b2", "conversation": []}') == "b2"
    text = path.read_bytes().decode("utf-8-sig")
    assert text.endswith("\r\n\r\n") and '"extra":1' in text
    assert [c.get("eval_id", c.get("evalId")) for c in json.loads(text)["eval_cases"]] == ["a", "b2"]
