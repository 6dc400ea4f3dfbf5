"""Eval history under hostile input (issue 23): results are never lost to a file name, and a saved record
is data, never instructions. Every tui-eval here runs in a child bounded in time and memory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.bounded import python, tui_eval
from tests.support.evalfiles import case, dice_pair, turn, write_set

HISTORY = Path(".adk") / "eval_history"


def records(folder: Path) -> list[Path]:
    return sorted((folder / HISTORY).glob("*.tui-eval.json"))


def test_one_eval_set_twice_in_a_run_keeps_both_results(tmp_path: Path) -> None:
    """The README's `FILE:a FILE:b` form: two results with one eval_set_id in the same second."""
    golden, recorded = dice_pair(tmp_path)
    done = tui_eval("run", f"replay:{recorded}", f"{golden}:c_pass", f"{golden}:c_args", "-q", cwd=tmp_path)
    assert done.code == 1, done.err  # c_args fails
    saved = [line.split(": ", 1)[1] for line in done.out.splitlines() if line.startswith("Saved eval history")]
    assert len(saved) == 2 and len(set(saved)) == 2, done.out
    assert all(Path(p).is_file() for p in saved)
    kept = [json.loads(p.read_text()) for p in records(tmp_path)]
    assert sorted((r["counts"]["PASSED"], r["counts"]["FAILED"]) for r in kept) == [(0, 1), (1, 0)]
    assert sorted(c["eval_id"] for r in kept for c in r["cases"]) == ["c_args", "c_pass"]


def test_two_files_with_one_eval_set_id_keep_both_results(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    twin = write_set(tmp_path / "twin.evalset.json", "golden",
                     case("c_pass", turn("roll a 6 sided die", "You rolled a 4.", [("roll_die", {"sides": 6})])))
    done = tui_eval("run", f"replay:{recorded}", str(golden), str(twin), "-q", cwd=tmp_path)
    assert done.code == 1, done.err
    files = {json.loads(p.read_text())["eval_file"] for p in records(tmp_path)}
    assert files == {str(golden), str(twin)}
    assert len(list((tmp_path / HISTORY).glob("*.evalset_result.json"))) == 2


def test_control_characters_in_an_eval_set_id_never_reach_a_file_name(tmp_path: Path) -> None:
    hostile = "evil\x1b]0;owned\x07\nline\u202eexe"
    recorded = write_set(tmp_path / "recorded.evalset.json", hostile,
                         case("c1", turn("hi", "hello")))
    done = tui_eval("run", f"replay:{recorded}", str(recorded), cwd=tmp_path)
    assert done.code == 0, done.err
    names = [p.name for p in (tmp_path / HISTORY).iterdir()]
    assert len(names) == 2
    for name in names:
        assert name.isprintable() and "\u202e" not in name, name
        assert "evil%1B]0;owned%07%0Aline%u202Eexe_" in name
    # The printed path is one literal line; the record keeps the id as it was.
    assert "\x1b" not in done.out and "\u202e" not in done.out and "\x07" not in done.out
    saved = [line for line in done.out.splitlines() if line.startswith("Saved eval history")]
    assert len(saved) == 1 and "evil%1B" in saved[0]
    assert json.loads(records(tmp_path)[0].read_text())["eval_set_id"] == hostile


def test_an_unsaveable_id_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    recorded = write_set(tmp_path / "recorded.evalset.json", "../escape", case("c1", turn("hi", "hello")))
    done = tui_eval("run", f"replay:{recorded}", str(recorded), cwd=tmp_path)
    assert done.code == 2
    assert "Traceback" not in done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    # One line, naming where the history would have gone.
    assert len(lines) == 1 and lines[0].startswith(f"error: could not save eval history in {tmp_path}"), done.err
    assert "'../escape'" in lines[0]


# ---- hostile records ----------------------------------------------------------------------------


def saved_run(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A real saved run; returns (folder, its record, the record's JSON)."""
    golden, recorded = dice_pair(tmp_path)
    done = tui_eval("run", f"replay:{recorded}", str(golden), "-q", cwd=tmp_path)
    assert done.code == 1, done.err
    [record] = records(tmp_path)
    return tmp_path, record, json.loads(record.read_text())


def hostile_copy(record: Path, data: dict, tag: str, **changes: object) -> Path:
    path = record.with_name(record.name.replace("golden", f"golden{tag}"))
    path.write_text(json.dumps({**data, **changes}))
    return path


SCAN = """
import sys
from pathlib import Path
from tui_eval.engine.store import scan_history, load_record, RecordError
entries, bad = scan_history(Path(sys.argv[1]))
print("OK", *sorted(e.path.name for e in entries))
for u in bad:
    print("BAD", u.path.name, "|", u.reason)
for e in entries:
    load_record(e.path)
print("LOADED")
"""


def test_hostile_records_are_listed_as_unreadable_with_the_reason(tmp_path: Path) -> None:
    folder, record, data = saved_run(tmp_path)
    history = record.parent
    os.mkfifo(history / "pipe.evalset_result.json")
    (history / "passwd.evalset_result.json").symlink_to("/etc/passwd")
    hostile_copy(record, data, "time", creation_timestamp=1e308)
    hostile_copy(record, data, "runid", run_id={"an": "object"})
    hostile_copy(record, data, "zero", adk_file="/dev/zero")
    hostile_copy(record, data, "up", code_diff_file="../../../etc/passwd")
    # File names inside the folder that are not regular files, or lead out of it: never followed.
    fifo = hostile_copy(record, data, "fifo", adk_file="pipe.evalset_result.json")
    link = hostile_copy(record, data, "link", adk_file="passwd.evalset_result.json")
    (history / "gone.tui-eval.json").write_bytes(b"\x00\xff not json")
    done = python(SCAN, str(history), timeout=60, memory=2 * 1024**3)
    assert not done.timed_out, "reading hostile records hung"
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    listed = lines[0].split()[1:]
    assert sorted(listed) == sorted([record.name, fifo.name, link.name])
    bad = {line.split(" | ")[0].split()[1]: line.split(" | ")[1] for line in lines if line.startswith("BAD")}
    assert len(bad) == 5
    assert any("creation_timestamp" in why for name, why in bad.items() if "goldentime" in name)
    assert any("run_id: expected a string" in why for name, why in bad.items() if "goldenrunid" in name)
    assert any("'/dev/zero' is not a file name" in why for name, why in bad.items() if "goldenzero" in name)
    assert any("code_diff_file" in why for name, why in bad.items() if "goldenup" in name)
    assert any("not valid JSON" in why for name, why in bad.items() if name == "gone.tui-eval.json")
    assert lines[-1] == "LOADED"
    # The FIFO and the symlink out were refused, said why, and the record loaded without turns.
    assert "is not a regular file; not read" in done.err
    assert "leads outside its history folder" in done.err


@pytest.mark.parametrize("change", [{"creation_timestamp": 1e308}, {"run_id": {"an": "object"}},
                                    {"adk_file": "/dev/zero"}, {"cases": [{"eval_id": 3}]},
                                    {"insight": {"num_runs": "many"}}])
def test_report_on_a_hostile_record_is_one_clear_error(tmp_path: Path, change: dict) -> None:
    folder, record, data = saved_run(tmp_path)
    bad = hostile_copy(record, data, "x", **change)
    done = tui_eval("report", str(bad), timeout=60, memory=2 * 1024**3)
    assert done.code == 2, (done.out, done.err)
    assert "Traceback" not in done.err
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot read this run record:"), done.err
    assert bad.name in lines[0]


DIFF = """
import sys
from pathlib import Path
from tui_eval.tui.screens.diff import find_run_diff
found = find_run_diff([Path(sys.argv[1])], sys.argv[2])
print("PATH", found.path)
print("WHY", found.reason)
"""


@pytest.mark.parametrize("target", ["/etc/passwd", "fifo", "/dev/zero"])
def test_a_code_diff_file_outside_the_folder_or_special_is_never_shown(tmp_path: Path, target: str) -> None:
    folder, record, data = saved_run(tmp_path)
    link = record.parent / "x.code.diff"
    if target == "fifo":
        os.mkfifo(link)
    else:
        link.symlink_to(target)
    record.write_text(json.dumps({**data, "code_diff_file": link.name}))
    done = python(DIFF, str(record), data["eval_file"], timeout=60, memory=2 * 1024**3)
    assert done.code == 0, done.err
    assert done.out.splitlines()[0] == "PATH None"
    assert "cannot be shown" in done.out


@pytest.mark.parametrize("flag", ["--md", "--html"])
def test_report_never_writes_over_its_own_record(tmp_path: Path, flag: str) -> None:
    folder, record, data = saved_run(tmp_path)
    before = record.read_bytes()
    done = tui_eval("report", str(record), flag, str(record), timeout=60)
    assert done.code == 2 and "is the run record" in done.err, done.err
    assert record.read_bytes() == before
