"""`tui-eval watch` as a user runs it: initial summary, one line per re-run on save, Ctrl-C exits 0."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.flaky_agent import flaky_folder

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


def start_watch(folder: Path, cwd: Path, *flags: str) -> subprocess.Popen[str]:
    """`tui-eval watch FOLDER --debounce 0.1 FLAGS` with the demo agents offline, its output line-buffered."""
    env = dict(os.environ, TUI_EVAL_AGENT_MODE="offline", PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "watch", str(folder), "--debounce", "0.1", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
    )


class Lines:
    """The process's stdout, line by line, with a deadline on each wait."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.seen: list[str] = []
        self._q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} in:\n" + "\n".join(self.seen))


def test_watch_reruns_an_edited_case_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    folder = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    proc = start_watch(folder, tmp_path)
    lines = Lines(proc)
    try:
        lines.wait_for("4 passed, 5 failed, 0 not evaluated")
        lines.wait_for("watching")
        eval_file = folder / "hello_world.evalset.json"
        data = json.loads(eval_file.read_text())
        case = next(c for c in data["eval_cases"] if c["eval_id"] == "ten_sided_wording")
        n = case["conversation"][0]["intermediate_data"]["tool_responses"][0]["response"]["result"]
        case["conversation"][0]["final_response"]["parts"][0]["text"] = f"I rolled a 10-sided die and got {n}."
        eval_file.write_text(json.dumps(data, indent=2))
        line = lines.wait_for("re-ran")
        assert "ten_sided_wording" in line and "1 case(s): 1 passed, 0 failed" in line

        eval_file.write_text(json.dumps(data)[:100])  # half-saved
        lines.wait_for("keeping its last good version")

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        lines.wait_for("stopped watching")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (folder / ".adk" / "eval_history").is_dir()  # each run is saved as eval history


def test_watch_says_a_misspelt_criterion_instead_of_dropping_it(tmp_path: Path) -> None:
    """As `tui-eval run` (exit 2): a criterion naming no metric is an error line with a did-you-mean,
    and no case runs without it; fixing the config runs them."""
    folder = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    config = folder / "test_config.json"
    config.write_text('{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_scor": 0.8}}')
    proc = start_watch(folder, tmp_path)
    lines = Lines(proc)
    try:
        line = lines.wait_for("error:")
        assert "unknown metric(s) response_match_scor (did you mean 'response_match_score'?)" in line
        lines.wait_for("watching")
        assert not any("passed" in seen for seen in lines.seen)
        config.write_text('{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}')
        lines.wait_for("4 passed, 5 failed")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_watch_keeps_watching_a_folder_deleted_and_recreated(tmp_path: Path) -> None:
    folder = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    backup = tmp_path / "backup"
    shutil.copytree(folder, backup)
    proc = start_watch(folder, tmp_path)
    lines = Lines(proc)
    try:
        lines.wait_for("watching")
        shutil.rmtree(folder)
        lines.wait_for("is gone; waiting for it to come back", timeout=10)
        assert proc.poll() is None  # still running
        # made again as an editor or a checkout would: the folder first, then its files
        folder.mkdir()
        for path in sorted(backup.rglob("*")):
            target = folder / path.relative_to(backup)
            if path.is_dir():
                target.mkdir(exist_ok=True)
            else:
                shutil.copyfile(path, target)
        eval_file = folder / "hello_world.evalset.json"
        data = json.loads(eval_file.read_text())
        case = next(c for c in data["eval_cases"] if c["eval_id"] == "ten_sided_wording")
        n = case["conversation"][0]["intermediate_data"]["tool_responses"][0]["response"]["result"]
        case["conversation"][0]["final_response"]["parts"][0]["text"] = f"I rolled a 10-sided die and got {n}."
        eval_file.write_text(json.dumps(data, indent=2))
        # a save in the new folder is seen: the edited case re-runs and now passes
        deadline = time.monotonic() + 15
        while True:
            line = lines.wait_for("re-ran", timeout=max(0.1, deadline - time.monotonic()))
            if "ten_sided_wording" in line and "1 case(s): 1 passed, 0 failed" in line:
                break
            if "9 case(s)" in line and "5 passed, 4 failed" in line:  # the save was read by the re-scan
                break
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()



def test_watch_num_runs_says_k_of_n_per_case_on_every_run(tmp_path: Path) -> None:
    folder = flaky_folder(tmp_path)  # steady, broken, and flip, whose answer alternates per call
    eval_file = folder / "flaky.evalset.json"
    proc = start_watch(folder, tmp_path, "--num-runs", "2", "--concurrency", "1")
    lines = Lines(proc)
    try:
        # The first run: one repeat summary, not one block per repetition.
        lines.wait_for("3 case(s) x 2 runs: 1 flaky, 1 stable fail, 1 stable pass")
        flip = lines.wait_for(" flip ")
        assert "1/2 runs passed (flaky)" in flip and "✔✘" in flip, flip
        lines.wait_for("watching")
        # An edit re-runs the edited case twice and says k/N for it.
        data = json.loads(eval_file.read_text())
        edited = next(c for c in data["eval_cases"] if c["eval_id"] == "flip")
        edited["conversation"][0]["final_response"]["parts"][0]["text"] = "heads or tails"
        eval_file.write_text(json.dumps(data, indent=2))
        lines.wait_for("re-ran")
        line = lines.wait_for("flaky.evalset.json:flip")
        assert "runs passed" in line and "/2" in line, line
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


def test_watch_rejects_num_runs_below_one(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tui_eval.cli", "watch", str(tmp_path), "--num-runs", "0"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert "--num-runs must be at least 1" in proc.stderr, proc.stderr  # our message, not argparse's
    assert "Traceback" not in proc.stderr
