"""Optional inputs and special files around a run (issue 23): a run's results are never lost to a price
file, a code-state hash or an eval file that cannot be read. Every run here is a child bounded in time and
memory, so a regression (a read that never ends) fails instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.app.conftest import slow_agent_folder
from tests.support.bounded import tui_eval
from tests.support.evalfiles import dice_pair

DEMO = Path(__file__).resolve().parents[2] / "demo_agents" / "hello_world"
HISTORY = Path(".adk") / "eval_history"


def assert_run_complete(done, folder: Path, junit: Path) -> None:
    assert not done.timed_out, "the run never ended"
    assert done.code == 1, done.err  # one case fails: the run itself went through
    assert "Total: 1 passed, 3 failed" in done.out
    assert "Saved eval history" in done.out
    assert junit.is_file() and "<testsuite" in junit.read_text()
    assert len(list((folder / HISTORY).glob("*.tui-eval.json"))) == 1
    assert "Traceback" not in done.err


@pytest.mark.parametrize("kind", ["utf16", "zero", "fifo", "huge"])
def test_a_price_file_that_cannot_be_read_is_a_warning_and_the_run_is_kept(tmp_path: Path, kind: str) -> None:
    golden, recorded = dice_pair(tmp_path)
    prices = tmp_path / "prices.json"
    if kind == "utf16":  # as PowerShell's `Out-File` writes it
        prices.write_text(json.dumps({"prices": {"m": {"prompt": 1, "output": 2}}}), encoding="utf-16")
    elif kind == "fifo":
        os.mkfifo(prices)
    elif kind == "huge":
        with prices.open("wb") as fh:
            fh.truncate(3 * 1024**3)  # sparse: 3 GiB of zeros, no disk used
    junit = tmp_path / "out.xml"
    env = {"TUI_EVAL_PRICES": "/dev/zero" if kind == "zero" else str(prices)}
    done = tui_eval("run", f"replay:{recorded}", str(golden), "--junit", str(junit), cwd=tmp_path, env=env,
                    timeout=60, memory=2 * 1024**3)
    assert_run_complete(done, tmp_path, junit)
    warnings = [line for line in done.err.splitlines() if "price table" in line]
    assert len(warnings) == 1, done.err
    expected = {"utf16": "UTF-16", "zero": "device", "fifo": "FIFO", "huge": "too large"}[kind]
    assert expected in warnings[0]


def agent_folder(tmp_path: Path) -> Path:
    """The hello_world demo agent, copied outside any git repository."""
    folder = tmp_path / "hello"
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return folder


def test_a_fifo_or_device_in_an_agent_folder_never_hangs_the_run(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path)
    os.mkfifo(folder / "notes.pipe")
    (folder / "zero.bin").symlink_to("/dev/zero")
    (folder / "loop.py").symlink_to(folder / "loop.py")
    done = tui_eval("run", str(folder), str(folder / "hello_world.evalset.json"), "-q", cwd=tmp_path,
                    timeout=90, memory=2 * 1024**3)
    assert not done.timed_out, "the run hung hashing the agent folder"
    assert done.code in (0, 1), done.err
    assert "Saved eval history" in done.out
    [record] = (folder / HISTORY).glob("*.tui-eval.json")
    files = json.loads(record.read_text())["code_state"]["agent_files"]
    assert "agent.py" in files and "notes.pipe" not in files and "zero.bin" not in files


def test_sigterm_ends_a_run_and_keeps_its_results(tmp_path: Path) -> None:
    """A FIFO in the agent folder once kept a cancelled run hashing for ever, deaf to SIGTERM and Ctrl-C."""
    folder = slow_agent_folder(tmp_path, cases=20, delay=1.0) / "slow"
    os.mkfifo(folder / "notes.pipe")
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder),
                             str(folder / "slow.evalset.json"), "-q", "--concurrency", "2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(4)  # some cases done, most still to come
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the run ignored SIGTERM")
    assert proc.returncode == 3, err.decode()  # nothing failed, but the run was cut short: incomplete
    assert b"Saved eval history" in out, err.decode()
    [record] = (folder / HISTORY).glob("*.tui-eval.json")
    assert json.loads(record.read_text())["cancelled"] is True
