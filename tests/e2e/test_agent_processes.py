"""What the local pool of worker processes promises beyond the executor contract (test_executor_contract.py
holds exits, signals and GIL-holding tools for both executors): no case waits for another's sync tools, a
hanging tool holds up no neighbour in its worker, and what a tool does to its own process's stdout, cwd,
environment and memory fails at most its own case; SIGTERM ends a run stuck in C code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_run import run_cli, saved_cases
from tests.support.hostile_agent import hostile_case, hostile_folder, tool_log

ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")


def test_cases_do_not_wait_for_each_others_sync_tools(tmp_path: Path) -> None:
    # 8 cases x 2 calls of a 1 s sync tool: on one shared loop they ran one after another (16 s) and the
    # queueing counted as tool latency.
    folder, evalset = hostile_folder(tmp_path, *(hostile_case(f"c{i}", "sleep", "sleep") for i in range(8)))
    code, out, err = run_cli("run", str(folder), str(evalset), "--workers", "2")
    assert code == 0, (out, err)
    calls = [line.split() for line in tool_log(tmp_path).read_text().splitlines()]
    assert len(calls) == 16
    starts = sorted(float(c[1]) for c in calls)
    # The first round of calls of all 8 cases started together, not a second apart.
    assert starts[7] - starts[0] < 0.9, starts
    for result in saved_cases(folder).values():
        for turn_timings in result["tool_timings"]:
            for timing in turn_timings:
                assert 0.9 < timing["seconds"] < 1.9, timing  # the tool's own time, not its wait


def test_a_hanging_tool_fails_its_case_and_frees_its_neighbours(tmp_path: Path) -> None:
    # One worker, four cases at once: only the hanging one times out.
    folder, evalset = hostile_folder(tmp_path, hostile_case("hang", "hang"),
                                     *(hostile_case(f"ok{i}", "sleep") for i in range(3)))
    code, out, err = run_cli("run", str(folder), str(evalset), "--turn-timeout", "3", "--workers", "1")
    assert code == 1, (out, err)
    cases = saved_cases(folder)
    assert cases["hang"]["error"] == "turn 1 timed out after 3 s"
    assert all(cases[f"ok{i}"]["status"] == 1 for i in range(3)), cases


def test_a_tool_closing_stdout_leaves_the_summary_and_reports_whole(tmp_path: Path) -> None:
    folder, evalset = hostile_folder(tmp_path, hostile_case("closer", "closeout"), hostile_case("after", "ok"))
    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", str(folder), str(evalset), "--json", str(out_json), "--workers", "1")
    assert code == 0, (out, err)
    assert "Total: 2 passed, 0 failed, 0 not evaluated" in out
    assert len(json.loads(out_json.read_text())[0]["eval_case_results"]) == 2


def test_a_tool_changing_cwd_and_environment_does_not_reach_later_cases(tmp_path: Path) -> None:
    folder, evalset = hostile_folder(tmp_path, hostile_case("chdir", "chdir", "ok"))
    code, out, err = run_cli("run", str(folder), str(evalset), "--workers", "1", "--concurrency", "1")
    assert code == 0, (out, err)
    lines = tool_log(tmp_path).read_text().splitlines()
    after = lines[-1].split()  # what, start, end, pid, poison=..., cwd
    assert after[0] == "ok" and after[-1] != "/" and after[4] == "poison=", lines


def test_a_memory_limit_turns_a_runaway_tool_into_its_case_failure(tmp_path: Path) -> None:
    folder, evalset = hostile_folder(tmp_path, hostile_case("hog", "oom"), hostile_case("fine", "ok"))
    code, out, err = run_cli("run", str(folder), str(evalset), "--agent-memory-limit", "1G")
    assert code == 1, (out, err)
    cases = saved_cases(folder)
    assert cases["hog"]["error"].startswith("MemoryError in tool act"), cases["hog"]["error"]
    assert cases["fine"]["status"] == 1


def test_sigterm_ends_a_run_stuck_in_a_gil_holding_tool_and_keeps_finished_cases(tmp_path: Path) -> None:
    folder, evalset = hostile_folder(tmp_path, hostile_case("ok0", "ok"), hostile_case("stuck", "regex"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset),
                             "--concurrency", "1", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        log = tool_log(tmp_path)
        while time.monotonic() < deadline and not (log.exists() and "ok" in log.read_text()):
            time.sleep(0.1)
        time.sleep(1.0)  # the stuck case is under way
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode not in (0, None), (out, err)  # never green: the run was cut short
    assert "Total: 1 passed" in out
    assert "TOOL SAYS HI" not in out + err
    cases = saved_cases(folder)
    assert cases["ok0"]["status"] == 1
