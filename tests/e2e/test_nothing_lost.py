"""Nothing lost (issue 33, item 3): each finished case is written through to the run's journal, so a
SIGKILL keeps it; history and `report` show the killed run as interrupted with its finished cases;
`--resume` runs only the rest and completes the record (refused when the criteria changed); Ctrl-C while
judges answer keeps every finished deterministic verdict; `--timeout` ends the run cleanly; a cancelled
run's JUnit marks unfinished cases skipped; `--rerun failed` re-runs just those; an empty selection exits 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

from tests.support.cli_run import run_cli
from tests.support.evalfiles import case, turn, write_set
from tests.support.fake_gemini import FakeGemini
from tui_eval.engine.journal import JOURNAL_SUFFIX
from tui_eval.engine.store import list_history, load_record

ROOT = str(Path(__file__).resolve().parents[2])

SLOW_AGENT = '''
"""Answers each turn with the expected reply after a pause, and logs each case it answers."""
import asyncio
import os

from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Invocation

LOG = {log!r}


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        await asyncio.sleep(float(os.environ.get("SLOW_AGENT_PAUSE", "0.2")))
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


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                **extra)


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _slow_agent(tmp_path: Path, cases: int) -> tuple[Path, Path, Path]:
    folder = tmp_path / "slow_agent"
    folder.mkdir()
    log = tmp_path / "turns.log"
    (folder / "agent.py").write_text(SLOW_AGENT.format(log=str(log)))
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    evalset = write_set(folder / "slow.evalset.json", "slow",
                        *(case(f"c{i:02d}", turn("hi", f"hello number {i}")) for i in range(cases)))
    return folder, evalset, log


def _answered(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_sigkill_keeps_finished_cases_and_resume_runs_only_the_rest(tmp_path: Path) -> None:
    folder, evalset, log = _slow_agent(tmp_path, 12)
    history = folder / ".adk" / "eval_history"
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset),
                             "--concurrency", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=tmp_path)
    try:
        _wait(lambda: len(_answered(log)) >= 4, 60, "four answered cases")
        proc.send_signal(signal.SIGKILL)  # no handler runs: only what was written through survives
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert [p.name for p in history.glob("*" + JOURNAL_SUFFIX)], "the journal is left behind"
    # The history lists the killed run as interrupted, with every case its journal holds.
    [entry] = list_history(history)
    assert entry.state == "interrupted" and entry.coverage == "interrupted"
    kept = sum(entry.counts.values())
    assert kept >= 3  # at least every case answered before the last one
    _meta, result = load_record(entry.path)
    assert {c.eval_id for c in result.case_results} <= set(_answered(log))
    # No partial ADK result file is written for it (adk web would list it as a result).
    assert not list(history.glob("*.evalset_result.json"))
    code, out, err = run_cli("report", str(entry.path))
    assert code == 0 and "interrupted" in out, out + err
    # A torn last line (a write the kill cut short) is tolerated.
    journal = next(history.glob("*" + JOURNAL_SUFFIX))
    with journal.open("ab") as fh:
        fh.write(b'{"file": "x", "rep": 1, "case": {"eval_')
    entry.path.unlink()
    [again] = list_history(history)
    assert sum(again.counts.values()) == kept

    # Changed agent code: the finished verdicts are not this agent's; the resume is refused, naming it.
    source = (folder / "agent.py").read_text()
    (folder / "agent.py").write_text(source + "\n# edited\n")
    code, out, err = run_cli("run", str(folder), str(evalset), "--resume")
    assert code == 2 and "agent code changed since it ran" in err, out + err
    (folder / "agent.py").write_text(source)
    # Changed criteria: the finished verdicts are not this run's; the resume is refused, naming it.
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    code, out, err = run_cli("run", str(folder), str(evalset), "--resume")
    assert code == 2 and "--resume" in err and "criteria:" in err, out + err
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))

    answered_before = len(_answered(log))
    os.environ["SLOW_AGENT_PAUSE"] = "0"
    try:
        code, out, err = run_cli("run", str(folder), str(evalset), "--resume", "--concurrency", "4")
    finally:
        del os.environ["SLOW_AGENT_PAUSE"]
    assert code == 0, out + err
    assert len(_answered(log)) - answered_before == 12 - kept  # only the unfinished cases ran
    [done] = list_history(history)
    assert done.run_id == entry.run_id and done.state == "finished" and sum(done.counts.values()) == 12
    assert not list(history.glob("*" + JOURNAL_SUFFIX))
    assert len(list(history.glob("*.evalset_result.json"))) == 1


def test_ctrl_c_while_judges_answer_keeps_the_deterministic_verdicts(tmp_path: Path) -> None:
    golden = write_set(tmp_path / "gate.evalset.json", "gate",
                       *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(3)))
    recorded = write_set(tmp_path / "recorded.json", "gate",
                         case("c0", turn("ask 0", "something else entirely")),
                         *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(1, 3)))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "response_match_score": 0.8, "final_response_match_v2": 0.5}}))
    server = FakeGemini(latency=60).start()  # the judges never answer in time
    xml = tmp_path / "out.xml"
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", f"replay:{recorded}", str(golden),
                                 "--no-judge-cache", "--junit", str(xml)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                env=_env(GOOGLE_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=server.base_url))
        try:
            _wait(lambda: server.in_flight >= 3, 60, "three judge calls in flight")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    finally:
        server.stop()
    # The wrong answer failed deterministically: a failure, exit 1, not 3; every case is kept.
    assert proc.returncode == 1, out + err
    assert "gate (" in out and "1 failed" in out and "2 passed" in out, out
    assert "the run was cancelled before the judge answered" in out
    [entry] = list_history(tmp_path / ".adk" / "eval_history")
    assert entry.state == "cancelled" and sum(entry.counts.values()) == 3
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "1"


def test_timeout_ends_the_run_cleanly_and_junit_marks_unfinished_cases_skipped(tmp_path: Path) -> None:
    folder, evalset, log = _slow_agent(tmp_path, 30)
    xml = tmp_path / "out.xml"
    started = time.monotonic()
    code, out, err = run_cli("run", str(folder), str(evalset), "--concurrency", "1", "--timeout", "3s",
                             "--junit", str(xml))
    assert time.monotonic() - started < 30
    assert code == 3, out + err
    assert "Result: exit 3 (incomplete): nothing failed, but the run reached --timeout 3s: unfinished cases " \
           "were not run" in out
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "30"
    skipped = [tc.get("name") for tc in suite.iterfind("testcase") if tc.find("skipped") is not None]
    finished = len(_answered(log))
    assert 0 < finished < 30 and len(skipped) >= 30 - finished
    assert all(tc.find("skipped").get("message") == "not run: the run was cancelled before this case finished"  # type: ignore[union-attr]
               for tc in suite.iterfind("testcase") if tc.get("name") in skipped)
    [entry] = list_history(folder / ".adk" / "eval_history")
    assert entry.state == "cancelled"


def test_rerun_failed_runs_just_those_and_says_when_there_is_nothing(tmp_path: Path) -> None:
    golden = write_set(tmp_path / "gate.evalset.json", "gate",
                       *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(4)))
    recorded = write_set(tmp_path / "recorded.json", "gate", case("c0", turn("ask 0", "something else entirely")),
                         *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(1, 4)))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    assert run_cli("run", f"replay:{recorded}", str(golden))[0] == 1
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--rerun", "failed")
    assert code == 1, out + err
    assert "gate (" in out and "0 passed, 1 failed" in out
    # An eval case edited since: only that one is stale.
    write_set(tmp_path / "gate.evalset.json", "gate", case("c0", turn("ask 0", "the answer is 0")),
              case("c1", turn("ask 1", "the answer is one")),
              *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(2, 4)))
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--rerun", "stale", "--no-save")
    assert sum(1 for line in out.splitlines() if line.startswith("gate (")) == 1, out + err
    total = next(line for line in out.splitlines() if line.startswith("Total: "))
    assert total.startswith("Total: ") and sum(int(w) for w in total.split() if w.isdigit()) == 1, total
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--rerun", "errored")
    assert code == 1, out + err  # nothing errored: the stored run's outcome stands
    assert "Nothing to re-run (--rerun errored): no case errored in run" in out
    assert "Result: exit 1 (failed): 1 case failed" in out


def test_an_empty_eval_set_or_selection_exits_2(tmp_path: Path) -> None:
    empty = write_set(tmp_path / "empty.evalset.json", "empty")
    code, out, err = run_cli("run", f"replay:{empty}", str(empty))
    assert code == 2 and "nothing to run" in err and "the eval set has no cases" in err, out + err
