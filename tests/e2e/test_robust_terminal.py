"""Terminal safety: eval, agent and judge text is printed literally, never acted on by the terminal."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.e2e.test_watch import Lines
from tests.support.evalfiles import case, turn, write_set
from tui_eval.cli import main

ROOT = str(Path(__file__).resolve().parents[2])
TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
CLEAR = "\x1b[2J"
RAW = (TITLE, CLIPBOARD, CLEAR, "\r", "\x1b", "\x07", "\x9b", "\u202e")


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for bad in RAW:
            assert bad not in text, f"raw {bad!r} reached the terminal in:\n{text!r}"


def _nasty_pair(folder: Path) -> tuple[Path, Path]:
    hostile = f"ok{TITLE} then{CLIPBOARD} and{CLEAR} over\rwrite \u202eevil\x9b"
    golden = write_set(
        folder / "golden.evalset.json",
        "golden",
        case(f"c{CLEAR}one", turn(f"prompt {TITLE}", f"expected {hostile}", [("t", {"a": CLEAR})])),
        case("c_missing\x1b[31m", turn("hi", "hello")),
    )
    recorded = write_set(
        folder / "recorded.evalset.json",
        "recorded",
        case(f"c{CLEAR}one", turn(f"prompt {TITLE}", f"actual {hostile}", [("t", {"a": TITLE})])),
    )
    return golden, recorded


def test_run_output_and_junit_never_carry_raw_control_characters(tmp_path: Path) -> None:
    golden, recorded = _nasty_pair(tmp_path)
    junit = tmp_path / "out.xml"
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", f"replay:{recorded}", str(golden), "--print-detailed-results", "--no-save",
                 "--junit", str(junit)], out, err)
    assert code == 1, err.getvalue()
    _assert_clean(out.getvalue(), err.getvalue())
    # Shown literally, as visible escapes.
    assert "\\x1b]0;pwned\\x07" in out.getvalue()
    assert "over\\rwrite" in out.getvalue()
    tree = ET.parse(junit)  # well-formed whatever the ids and texts held
    names = [tc.get("name") for tc in tree.getroot().iter("testcase")]
    assert len(names) == 2 and all("\x1b" not in (n or "") for n in names)


def test_junit_stays_well_formed_with_control_characters_in_every_field(tmp_path: Path) -> None:
    bad_id = "set\x01\x02\x1b\x0b\x0c\ufffe"
    golden = write_set(tmp_path / "golden.evalset.json", bad_id,
                       case("c\x00\x1f\x7f", turn("p\x08", "r\x1b")))
    recorded = write_set(tmp_path / "recorded.evalset.json", "rec",
                         case("c\x00\x1f\x7f", turn("p\x08", "other\x1b\x03")))
    junit = tmp_path / "out.xml"
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", f"replay:{recorded}", str(golden), "--no-save", "--junit", str(junit)], out, err)
    assert code == 1, err.getvalue()
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name", "").startswith("set")
    _assert_clean(out.getvalue(), err.getvalue())
    assert "\x00" not in out.getvalue() and "\x01" not in out.getvalue()


def test_a_newline_in_an_eval_set_id_cannot_forge_summary_lines(tmp_path: Path) -> None:
    forged = "golden\nTotal: 99 passed, 0 failed, 0 not evaluated"
    golden = write_set(tmp_path / "golden.evalset.json", forged, case("c1", turn("hi", "hello")))
    recorded = write_set(tmp_path / "recorded.evalset.json", "rec", case("c1", turn("hi", "bye now")))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", f"replay:{recorded}", str(golden), "--no-save"], out, err)
    assert code == 1, err.getvalue()
    totals = [line for line in out.getvalue().splitlines() if line.startswith("Total:")]
    assert totals == ["Total: 0 passed, 1 failed, 0 not evaluated"], out.getvalue()


def test_error_lines_escape_control_characters(tmp_path: Path) -> None:
    bad = tmp_path / f"bad{TITLE}.evalset.json"
    bad.write_text("{not json")
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "replay:" + str(bad), str(bad)], out, err)
    assert code == 2
    assert "error:" in err.getvalue()
    _assert_clean(out.getvalue(), err.getvalue())


def test_watch_prints_hostile_text_literally(tmp_path: Path) -> None:
    golden, recorded = _nasty_pair(tmp_path)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "watch", f"replay:{recorded}", str(golden), "--debounce", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )
    lines = Lines(proc)
    try:
        lines.wait_for("watching")
        data = json.loads(golden.read_text())
        data["eval_cases"][0]["conversation"][0]["final_response"]["parts"][0]["text"] += f" more{CLEAR}\r"
        golden.write_text(json.dumps(data))
        lines.wait_for("re-ran")
        time.sleep(0.3)
        golden.write_text("{broken" + TITLE)
        lines.wait_for("keeping its last good version")
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=20)
    _assert_clean("\n".join(lines.seen), rest or "")
