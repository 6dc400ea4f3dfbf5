"""Issue 19 item 13: the headless faces say things once and blame no one wrongly."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_watch import Lines
from tui_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)


def _copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(DEMO / name, folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return folder


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_passing_case_says_its_gap_in_one_line_and_failures_keep_their_reasons(tmp_path: Path) -> None:
    support = _copy(tmp_path, "support")
    md = tmp_path / "report.md"
    code, out, err = _run("run", str(support), str(support / "support.evalset.json"), "--md", str(md), "--no-save")
    assert code == 1, out + err
    assert "note: 3 metrics will not be evaluated: no judge credentials" in err
    lines = out.splitlines()
    at = lines.index("  PASS refund_time: 1 of 4 metrics evaluated (not evaluated: hallucinations_v1, safety_v1, "
                     "rubric_based_final_response_quality_v1: no judge credentials)")
    assert lines[at + 1].startswith("  PASS ")  # not three "not evaluated" lines under it
    fail = lines.index("  FAIL password_reset: 1 of 4 metrics evaluated")
    assert "       hallucinations_v1: not evaluated (no judge credentials)" in lines[fail:fail + 6]
    # The Markdown headline keeps the caveat.
    assert "**5 of 7 case results passed, 5 with metrics not evaluated**" in md.read_text()


def test_an_unsafe_eval_set_id_is_one_error_line(tmp_path: Path) -> None:
    hello = _copy(tmp_path, "hello_world")
    data = json.loads((hello / "hello_world.evalset.json").read_text())
    data["eval_set_id"] = "../evil"
    (hello / "evil.evalset.json").write_text(json.dumps(data))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "tui_eval.cli", "run", str(hello), str(hello / "evil.evalset.json"), "-q"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: could not save eval history in "), proc.stderr
    assert str(hello.resolve() / ".adk" / "eval_history") in errors[0]
    assert "Traceback" not in proc.stderr


def test_ctrl_c_on_watch_blames_no_agent_code_for_our_own_thread(tmp_path: Path) -> None:
    hello = _copy(tmp_path, "hello_world")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # The console script's own entry point: it is the one that looks for threads left running.
    proc = subprocess.Popen([sys.executable, "-c", "from tui_eval.cli import entry; entry()", "watch", str(hello),
                             str(hello / "hello_world.evalset.json"), "--debounce", "0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    lines = Lines(proc)
    try:
        lines.wait_for("watching")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        lines.wait_for("stopped watching")
        rest = proc.stdout.read() if proc.stdout else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "left running by agent code" not in "\n".join(lines.seen) + rest


def test_watch_prints_the_same_case_block_as_run(tmp_path: Path) -> None:
    hello = _copy(tmp_path, "hello_world")
    eval_file = hello / "hello_world.evalset.json"
    code, out, _err = _run("run", str(hello), str(eval_file), "--no-save")
    at = out.splitlines().index("  FAIL check_then_roll")
    run_block = out.splitlines()[at + 1:at + 3]
    assert run_block[1].startswith("         ")  # the trajectory's reason under its metric line
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "watch", str(hello), str(eval_file),
                             "--debounce", "0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    lines = Lines(proc)
    try:
        lines.wait_for("watching")
        data = json.loads(eval_file.read_text())
        case = next(c for c in data["eval_cases"] if c["eval_id"] == "check_then_roll")
        case["conversation"][0]["creation_timestamp"] = 1750000001.0  # an edit that changes no verdict
        eval_file.write_text(json.dumps(data, indent=2))
        lines.wait_for("re-ran")
        lines.wait_for("FAIL hello_world.evalset.json:check_then_roll")
        block = [lines.wait_for(run_block[0].strip()), lines.wait_for(run_block[1].strip())]
        assert [b.strip() for b in block] == [r.strip() for r in run_block]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_with_num_runs_the_total_counts_case_runs(tmp_path: Path) -> None:
    hello = _copy(tmp_path, "hello_world")
    code, out, _err = _run("run", str(hello), str(hello / "hello_world.evalset.json"), "--num-runs", "3", "--no-save")
    assert code == 1
    # 9 cases run 3 times: 27 results, said as such (was "Total: 12 passed, 15 failed").
    assert "Total case runs (9 cases × 3 runs): 12 passed, 15 failed, 0 not evaluated" in out
    assert "\nTotal: " not in out
