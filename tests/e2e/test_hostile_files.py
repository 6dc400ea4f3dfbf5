"""Eval files and arguments a user or a teammate can plausibly have (issue 23): read as ADK reads them,
refused with one plain line otherwise. Every run is a child bounded in time and memory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.bounded import python, tui_eval
from tests.support.evalfiles import case, dice_pair, turn, write_set

ADK_LOADS = """
import sys
from google.adk.evaluation.eval_set import EvalSet
e = EvalSet.model_validate_json(open(sys.argv[1], encoding="utf-8").read())
print(e.creation_timestamp, e.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].args)
"""


def test_nan_and_infinity_load_as_adk_loads_them(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    text = golden.read_text()
    data = json.loads(text)
    data["creation_timestamp"] = float("nan")
    data["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"] = {
        "sides": float("inf"), "bias": float("-inf")}
    golden.write_text(json.dumps(data))  # the stdlib writes NaN, Infinity, -Infinity
    assert "NaN" in golden.read_text() and "-Infinity" in golden.read_text()
    adk = python(ADK_LOADS, str(golden))
    assert adk.code == 0 and adk.out.split()[0] == "nan", adk.err  # the reference accepts the file
    done = tui_eval("run", f"replay:{recorded}", str(golden), "-q", "--no-save", cwd=tmp_path)
    assert done.code == 1, done.err
    assert "golden (" in done.out and "error" not in done.err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_an_eval_file_in_utf16_names_its_encoding(tmp_path: Path, encoding: str) -> None:
    golden, recorded = dice_pair(tmp_path)
    golden.write_text(golden.read_text(), encoding=encoding)
    done = tui_eval("run", f"replay:{recorded}", str(golden), cwd=tmp_path)
    assert done.code == 2
    lines = done.err.strip().splitlines()
    name = "UTF-32" if "32" in encoding else "UTF-16"
    assert len(lines) == 1 and f"is {name} encoded: save it as UTF-8" in lines[0], done.err


def test_a_test_config_that_is_a_folder_is_an_error(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    (tmp_path / "test_config.json").mkdir()
    done = tui_eval("run", f"replay:{recorded}", str(golden), cwd=tmp_path)
    assert done.code == 2
    assert "test_config.json: cannot read file: it is a folder" in done.err


@pytest.mark.parametrize("value", ["-1", "0", "nan", "-inf"])
def test_a_turn_timeout_that_is_not_a_positive_number_is_refused(tmp_path: Path, value: str) -> None:
    golden, recorded = dice_pair(tmp_path)
    done = tui_eval("run", f"replay:{recorded}", str(golden), f"--turn-timeout={value}", cwd=tmp_path)
    assert done.code == 2 and "--turn-timeout" in done.err and "more than 0 seconds" in done.err
    assert not (tmp_path / ".adk").exists()


def test_a_folder_with_an_eval_file_linked_to_itself_is_one_clear_error(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    (tmp_path / "loop.evalset.json").symlink_to("loop.evalset.json")
    done = tui_eval("run", f"replay:{recorded}", str(tmp_path), cwd=tmp_path)
    assert done.code == 2
    assert "Traceback" not in done.err
    assert "loop.evalset.json: cannot read file: symlink loop" in done.err


def test_an_eval_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 2 GiB eval file once segfaulted the parser under a 4 GB cap (MemoryError under 1.5 GB)."""
    golden, recorded = dice_pair(tmp_path)
    big = tmp_path / "big.evalset.json"
    with big.open("wb") as fh:
        fh.truncate(2 * 1024**3)  # sparse: no disk used
    done = tui_eval("run", f"replay:{recorded}", str(big), cwd=tmp_path, timeout=60, memory=1536 * 1024**2)
    assert not done.timed_out
    assert done.code == 2, done.err
    assert "Traceback" not in done.err
    assert "big.evalset.json: cannot read file: it is too large (2.00 GB; files up to 256.0 MB are read" in done.err
    # The limit is documented and can be raised or lowered.
    small = tui_eval("run", f"replay:{recorded}", str(golden), cwd=tmp_path, env={"TUI_EVAL_MAX_FILE_MB": "0.001"})
    assert small.code == 2 and "too large" in small.err


def test_migrate_of_a_fifo_is_one_clear_error(tmp_path: Path) -> None:
    fifo = tmp_path / "old.test.json"
    os.mkfifo(fifo)
    done = tui_eval("migrate", str(fifo), cwd=tmp_path, timeout=30)
    assert not done.timed_out, "migrate blocked on a FIFO"
    assert done.code == 2 and "old.test.json: cannot read file: it is a FIFO" in done.err
