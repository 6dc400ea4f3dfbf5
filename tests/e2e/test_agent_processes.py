"""What the local pool of worker processes promises beyond the executor contract (test_executor_contract.py
holds exits, signals and GIL-holding tools for both executors): no case waits for another's sync tools, a
hanging tool holds up no neighbour in its worker, and what a tool does to its own process's stdout, cwd,
environment and memory fails at most its own case (a worker out of memory is recycled, its cases run again
alone, and every re-run is said; --no-retry-after-crash fails them instead); a signal an agent sends the
engine is ignored; --workers is bounded; SIGTERM ends a run stuck in C code."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_run import run_cli, saved_cases
from tests.support.hostile_agent import alive, daemons, hostile_case, hostile_folder, tool_log

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


def test_a_worker_out_of_memory_is_recycled_and_only_the_culprit_fails(tmp_path: Path) -> None:
    # One worker, all cases in it at once: the runaway keeps what it took, so its neighbours' allocations (and
    # threads) failed in that worker too, each blamed "MemoryError in tool act". Now the worker is recycled and
    # its cases run again, each alone: only the runaway fails, and each re-run is said.
    folder, evalset = hostile_folder(tmp_path, hostile_case("hog", "hoard"),
                                     *(hostile_case(f"ok{i}", "alloc") for i in range(3)))
    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", str(folder), str(evalset), "--agent-memory-limit", "1G", "--workers", "1",
                             "--json", str(out_json))
    assert code == 1, (out, err)
    assert "Total: 3 passed, 1 failed, 0 not evaluated" in out, out
    cases = saved_cases(folder)
    assert cases["hog"]["error"].startswith("MemoryError in tool act"), cases["hog"]["error"]
    assert all(cases[f"ok{i}"]["status"] == 1 for i in range(3)), cases
    # The culprit ran twice (in the shared worker, then alone): the summary, --json and the record say so.
    assert cases["hog"]["reruns_after_crash"] == 1
    adk = {c["eval_id"]: c for c in json.loads(out_json.read_text())[0]["eval_case_results"]}
    assert adk["hog"]["reruns_after_crash"] == 1
    again = [line for line in out.splitlines() if line.startswith("Run again after their worker died:")]
    assert len(again) == 1 and "hog" in again[0], out
    for i in range(3):  # each healthy case either ran again (and says so) or came after the recycle
        rerun = cases[f"ok{i}"]["reruns_after_crash"]
        assert rerun in (0, 1) and (f"ok{i}" in again[0]) == (rerun == 1)
        assert adk[f"ok{i}"].get("reruns_after_crash", 0) == rerun


def test_with_no_retry_after_crash_the_cases_of_a_dead_worker_fail_as_such(tmp_path: Path) -> None:
    # Tools with side effects: a case is not run again because a neighbour took its worker down. The
    # neighbours hang, so they are in flight (in their first turn) whenever the culprit exits in its third.
    folder, evalset = hostile_folder(tmp_path, hostile_case("exit", "sleep", "sleep", "exit"),
                                     *(hostile_case(f"ok{i}", "hang") for i in range(2)))
    code, out, err = run_cli("run", str(folder), str(evalset), "--workers", "1", "--no-retry-after-crash")
    assert code == 1, (out, err)
    assert "Total: 0 passed, 3 failed, 0 not evaluated" in out, out
    cases = saved_cases(folder)
    assert cases["exit"]["error"].startswith("its worker died: the agent process exited with code 0 during turn 3; "
                                             "not run again (--no-retry-after-crash)"), cases["exit"]["error"]
    for eval_id in ("ok0", "ok1"):
        first_line = cases[eval_id]["error"].split("\n", 1)[0]
        assert first_line.startswith("its worker died: the agent process exited with code 0 "), first_line
        assert first_line.endswith("; not run again (--no-retry-after-crash)"), first_line
    assert all(c["reruns_after_crash"] == 0 for c in cases.values()), cases
    assert "Run again after their worker died" not in out
    # The culprit's two finished tool calls ran once each: nothing ran a second time.
    assert [line.split()[0] for line in tool_log(tmp_path).read_text().splitlines()] == ["sleep", "sleep"]


def test_a_workers_count_over_the_bound_is_capped_and_said(tmp_path: Path) -> None:
    from tui_eval.executors.pool import max_pool_size

    folder, evalset = hostile_folder(tmp_path, hostile_case("ok0", "ok"))
    code, out, err = run_cli("run", str(folder), str(evalset), "--workers", "100000")
    assert code == 0, (out, err)
    assert (f"--workers 100000 is more than this machine can use: {max_pool_size()} worker processes "
            "(four per core, at least 8)") in err, err


def test_processes_a_tool_left_behind_end_when_their_worker_is_replaced(tmp_path: Path) -> None:
    # Live mode after an edit: the old workers go, and with them what their agent started (here an orphan in
    # a session of its own, which no process group kill reaches).
    from tui_eval.agents.conversation import CaseJob
    from tui_eval.executors import ExecutorOptions, executor_for
    from tui_eval.schema.load import load_eval_set

    folder, evalset = hostile_folder(tmp_path, hostile_case("daemon", "daemon"))
    agent = executor_for(str(folder), ExecutorOptions("local"), live=True)
    job = CaseJob(str(evalset), "daemon", load_eval_set(evalset).eval_cases[0], 30.0)

    async def go() -> list[bool]:
        try:
            assert await agent.start() is None
            assert (await agent.infer(job)).error is None
            (started,) = daemons(tmp_path)
            before = alive(started)
            assert await agent.restart() is None
            deadline = time.monotonic() + 20  # the old worker is stopped in the background
            while alive(started) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return [before, alive(started)]
        finally:
            await agent.aclose()

    assert asyncio.run(go()) == [True, False]


def test_processes_a_tool_left_behind_end_when_the_engine_is_killed(tmp_path: Path) -> None:
    # `kill -9` of tui-eval itself (an OOM killer, a CI runner): nothing of the run can clean up, and the
    # orphan a tool started in a session of its own used to live on.
    folder, evalset = hostile_folder(tmp_path, hostile_case("daemon", "daemon", "hang"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not daemons(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        (started,) = daemons(tmp_path)
        assert alive(started)
        proc.kill()
        proc.wait(timeout=20)
        deadline = time.monotonic() + 20  # the worker's supervisor hears of it and ends the tree
        while alive(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(started)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_signal_sent_to_the_engine_from_inside_an_agent_is_ignored(tmp_path: Path) -> None:
    # A tool that SIGTERMs its parent, and one that finds the engine and SIGTERMs it: the run used to end
    # (exit 3, its neighbours not run, no case named). Now both are ignored, with the worker's cases named.
    folder, evalset = hostile_folder(tmp_path, hostile_case("parent", "killparent"),
                                     hostile_case("engine", "killengine"), hostile_case("ok0", "sleep", "sleep"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset), "--workers", "1"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Total: 3 passed, 0 failed, 0 not evaluated" in done.stdout
    (warning,) = [line for line in done.stderr.splitlines() if "ignored SIGTERM sent by pid" in line]
    # The case that sent it is named, in flight or among the last to end in that worker.
    assert "agent code cannot stop the run" in warning and "engine" in warning.split("(cases in flight:")[1], warning
    assert sorted(line.split()[0] for line in tool_log(tmp_path).read_text().splitlines()) == [
        "killengine", "killparent", "sleep", "sleep"]


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
