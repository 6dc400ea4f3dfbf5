"""Agent code runs in worker processes: no case waits for another's tools, and whatever a tool does to
its own process (exit, a signal, C code holding the GIL, its stdout, its memory) fails only its case."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.evalfiles import case, turn, write_set
from tui_eval.cli import main

ROOT = str(Path(__file__).resolve().parents[2])

HOSTILE = '''
"""A native agent whose one tool does to its own process what the user message asks."""
import ctypes
import os
import re
import signal
import sys
import time
from pathlib import Path

from tui_eval.agents.native import NativeAgent

LOG = os.environ.get("TOOL_LOG")


def act(what: str) -> str:
    """Do something."""
    start = time.time()
    if what == "exit":
        os._exit(0)
    if what == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "regex":
        re.match(r"(a+)+$", "a" * 64 + "b")  # catastrophic backtracking: C code that never lets go of the GIL
    if what == "hang":
        time.sleep(600)
    if what == "sleep":
        time.sleep(1.0)
    if what == "closeout":
        sys.stdout.close()
        os.close(1)
    if what == "oom":
        hog = bytearray(4 << 30)
        return str(len(hog))
    if what == "ok":
        print("TOOL SAYS HI")  # the worker's stdout: the engine's log, never the run's output
        print("TOOL SAYS HI", file=sys.stderr)
    if what == "chdir":
        os.chdir("/")
        os.environ["POISON"] = "1"
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"{what} {start} {time.time()} {os.environ.get('POISON', '')} {os.getcwd()}\\n")
    return "done"


def policy(turn):
    if not turn.results:
        return [("act", {"what": turn.user_text.split()[0]})]
    return "done"


root_agent = NativeAgent("hostile", "Do as told.", tools=[act], policy=policy)
'''


def _case(eval_id: str, *whats: str) -> dict:
    return case(eval_id, *(turn(w, "done", [("act", {"what": w})]) for w in whats))


def _folder(tmp_path: Path, *cases: dict) -> tuple[Path, Path]:
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "agent.py").write_text(HOSTILE)
    (folder / "__init__.py").write_text("from . import agent\n")
    return folder, write_set(folder / "hostile.evalset.json", "hostile", *cases)


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _record(folder: Path) -> dict[str, dict]:
    (path,) = (folder / ".adk" / "eval_history").glob("*.tui-eval.json")
    return {c["eval_id"]: c for c in json.loads(path.read_text())["cases"]}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    monkeypatch.setenv("TOOL_LOG", str(tmp_path / "tools.log"))


def test_cases_do_not_wait_for_each_others_sync_tools(tmp_path: Path) -> None:
    # 8 cases x 2 calls of a 1 s sync tool: on one shared loop they ran one after another (16 s) and the
    # queueing counted as tool latency.
    folder, evalset = _folder(tmp_path, *(_case(f"c{i}", "sleep", "sleep") for i in range(8)))
    code, out, err = _run("run", str(folder), str(evalset), "--workers", "2")
    assert code == 0, (out, err)
    calls = [line.split() for line in (tmp_path / "tools.log").read_text().splitlines()]
    assert len(calls) == 16
    starts = sorted(float(c[1]) for c in calls)
    # The first round of calls of all 8 cases started together, not a second apart.
    assert starts[7] - starts[0] < 0.9, starts
    for result in _record(folder).values():
        for turn_timings in result["tool_timings"]:
            for timing in turn_timings:
                assert 0.9 < timing["seconds"] < 1.9, timing  # the tool's own time, not its wait


@pytest.mark.parametrize(("what", "cause"), [
    ("exit", "the agent process exited with code 0 during turn 1"),
    ("segv", "the agent process was killed by SIGSEGV during turn 1"),
    ("sigkill", "the agent process was killed by SIGKILL"),
])
def test_a_tool_that_takes_its_process_down_fails_only_its_case(tmp_path: Path, what: str, cause: str) -> None:
    folder, evalset = _folder(tmp_path, _case("bad", what), *(_case(f"ok{i}", "ok") for i in range(3)))
    out_json, out_xml = tmp_path / "out.json", tmp_path / "out.xml"
    code, out, err = _run("run", str(folder), str(evalset), "--json", str(out_json), "--junit", str(out_xml))
    assert code == 1, (out, err)
    assert "Total: 3 passed, 1 failed, 0 not evaluated" in out
    cases = _record(folder)
    assert cases["bad"]["status"] == 2 and cause in cases["bad"]["error"]
    assert all(cases[f"ok{i}"]["status"] == 1 for i in range(3))
    assert len(json.loads(out_json.read_text())[0]["eval_case_results"]) == 4
    assert out_xml.read_text().count("<testcase") == 4


def test_a_tool_holding_the_gil_is_killed_at_the_deadline_and_only_its_case_fails(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, _case("stuck", "regex"), *(_case(f"ok{i}", "ok") for i in range(3)))
    t0 = time.monotonic()
    code, out, err = _run("run", str(folder), str(evalset), "--turn-timeout", "1", "--workers", "1")
    assert time.monotonic() - t0 < 60
    assert code == 1, (out, err)
    assert "Total: 3 passed, 1 failed, 0 not evaluated" in out
    cases = _record(folder)
    assert cases["stuck"]["error"].startswith("turn 1 timed out after 1 s")
    assert "killed" in cases["stuck"]["error"]


def test_a_hanging_tool_fails_its_case_and_frees_its_neighbours(tmp_path: Path) -> None:
    # One worker, four cases at once: only the hanging one times out.
    folder, evalset = _folder(tmp_path, _case("hang", "hang"), *(_case(f"ok{i}", "sleep") for i in range(3)))
    code, out, err = _run("run", str(folder), str(evalset), "--turn-timeout", "3", "--workers", "1")
    assert code == 1, (out, err)
    cases = _record(folder)
    assert cases["hang"]["error"] == "turn 1 timed out after 3 s"
    assert all(cases[f"ok{i}"]["status"] == 1 for i in range(3)), cases


def test_a_tool_closing_stdout_leaves_the_summary_and_reports_whole(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, _case("closer", "closeout"), _case("after", "ok"))
    out_json = tmp_path / "out.json"
    code, out, err = _run("run", str(folder), str(evalset), "--json", str(out_json), "--workers", "1")
    assert code == 0, (out, err)
    assert "Total: 2 passed, 0 failed, 0 not evaluated" in out
    assert len(json.loads(out_json.read_text())[0]["eval_case_results"]) == 2


def test_a_tool_changing_cwd_and_environment_does_not_reach_later_cases(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, _case("chdir", "chdir", "ok"))
    code, out, err = _run("run", str(folder), str(evalset), "--workers", "1", "--concurrency", "1")
    assert code == 0, (out, err)
    lines = (tmp_path / "tools.log").read_text().splitlines()
    after = lines[-1].split()
    assert after[0] == "ok" and after[-1] != "/" and "1" not in after[3:-1], lines


def test_a_memory_limit_turns_a_runaway_tool_into_its_case_failure(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, _case("hog", "oom"), _case("fine", "ok"))
    code, out, err = _run("run", str(folder), str(evalset), "--agent-memory-limit", "1G")
    assert code == 1, (out, err)
    cases = _record(folder)
    assert cases["hog"]["error"].startswith("MemoryError in tool act"), cases["hog"]["error"]
    assert cases["fine"]["status"] == 1


def test_sigterm_ends_a_run_stuck_in_a_gil_holding_tool_and_keeps_finished_cases(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, _case("ok0", "ok"), _case("stuck", "regex"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset),
                             "--concurrency", "1", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        log = tmp_path / "tools.log"
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
    cases = _record(folder)
    assert cases["ok0"]["status"] == 1
