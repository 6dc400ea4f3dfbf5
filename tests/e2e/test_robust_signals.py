"""Signals and leftovers: SIGTERM is a cancel, Ctrl-C works in CPU-bound runs, killed writes are cleaned."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.evalfiles import case, turn, write_set
from tui_eval.cli import main

ROOT = str(Path(__file__).resolve().parents[2])
HOUR_AGO = time.time() - 3600

SLOW_AGENT = '''
"""Answers each turn with the expected reply after a short pause, and logs each finished turn."""
import asyncio

from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Invocation

LOG = {log!r}


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        await asyncio.sleep(0.15)
        expected = self.case.conversation[index]
        with open(LOG, "a") as fh:
            fh.write(self.case.eval_id + "\\n")
        return Invocation(user_content=user_content, invocation_id=expected.invocation_id,
                          final_response=expected.final_response, intermediate_data=expected.intermediate_data)


class Slow(Agent):
    async def new_session(self, case, ctx):
        return Session(case)


root_agent = Slow()
'''


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_sigterm_cancels_like_ctrl_c_keeping_finished_cases(tmp_path: Path) -> None:
    folder = tmp_path / "slow_agent"
    folder.mkdir()
    log = tmp_path / "turns.log"
    (folder / "agent.py").write_text(SLOW_AGENT.format(log=str(log)))
    (folder / "__init__.py").write_text("from . import agent\n")
    evalset = write_set(folder / "slow.evalset.json", "slow",
                        *(case(f"c{i:02d}", turn("hi", "hello")) for i in range(60)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset), "--concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )
    try:
        _wait(lambda: log.exists() and len(log.read_text().split()) >= 3, 60, "three finished turns")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Nothing failed, but the run was cancelled: incomplete, exit 3 (issue 21), and the summary says so.
    assert proc.returncode == 3, (proc.returncode, out, err)
    assert "Result: exit 3 (incomplete): nothing failed, but the run was cancelled" in out
    total = next(line for line in out.splitlines() if line.startswith("Total:"))
    assert "cancelled" in total
    passed = int(total.split()[1])
    # With one case at a time, the third logged turn means the first two cases were scored and kept;
    # the third may still be scoring when the signal lands.
    assert 2 <= passed < 60
    saved = list((folder / ".adk" / "eval_history").glob("*.evalset_result.json"))
    assert len(saved) == 1
    assert len(json.loads(saved[0].read_text())["eval_case_results"]) == passed


def test_ctrl_c_stops_a_cpu_bound_replay_of_100k_cases_within_seconds(tmp_path: Path) -> None:
    one = {"invocation_id": "t", "user_content": {"role": "user", "parts": [{"text": "roll a die"}]},
           "final_response": {"role": "model", "parts": [{"text": "You rolled a four."}]},
           "intermediate_data": {"tool_uses": [{"name": "roll", "args": {"sides": 6}}]}}
    big = tmp_path / "big.evalset.json"
    big.write_text(json.dumps({"eval_set_id": "big", "eval_cases": [
        {"eval_id": f"c{i}", "conversation": [one]} for i in range(100_000)]}))
    # A temp file a killed save left behind: the run removes it when it starts, which tells this test
    # the run (not the loading before it) is under way.
    history = tmp_path / ".adk" / "eval_history"
    history.mkdir(parents=True)
    marker = history / ".old.evalset_result.json.abcd1234.tmp"
    marker.write_text("half")
    os.utime(marker, (HOUR_AGO, HOUR_AGO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "run", f"replay:{big}", str(big), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
    )
    try:
        _wait(lambda: not marker.exists() or proc.poll() is not None, 180, "the run to start")
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, (proc.returncode, out, err)  # cancelled with nothing failed: incomplete
    assert "cancelled" in out
    assert waited < 10, f"Ctrl-C took {waited:.1f} s to stop the run"


def _pair(folder: Path) -> tuple[Path, Path]:
    golden = write_set(folder / "golden.evalset.json", "golden", case("c1", turn("hi", "hello")))
    recorded = write_set(folder / "recorded.evalset.json", "rec", case("c1", turn("hi", "hello")))
    return golden, recorded


def test_leftover_temp_files_of_a_killed_write_are_removed_by_the_next_run(tmp_path: Path) -> None:
    golden, recorded = _pair(tmp_path)
    history = tmp_path / ".adk" / "eval_history"
    history.mkdir(parents=True)
    old = history / ".app_golden_1.evalset_result.json.k2j4_9zq.tmp"
    fresh = history / ".app_golden_2.tui-eval.json.aaaabbbb.tmp"  # maybe another writer's, right now
    other = history / ".keep-me.tmp"  # not an atomic-write name
    old_json = tmp_path / ".out.json.x1y2z3w4.tmp"
    for p in (old, fresh, other, old_json):
        p.write_text("half")
    for p in (old, other, old_json):
        os.utime(p, (HOUR_AGO, HOUR_AGO))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", f"replay:{recorded}", str(golden), "--json", str(tmp_path / "out.json")], out, err)
    assert code == 0, err.getvalue()
    assert not old.exists() and not old_json.exists()
    assert fresh.exists() and other.exists()
