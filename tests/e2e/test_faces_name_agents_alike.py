"""Every face reads an agent argument by one rule (engine.setup): an agent folder, its `__init__.py` or
`agent.py`, or `replay:PATH`, named by `--agent` or first among the positional arguments."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tui_eval
from tests.e2e.test_cli_output_pipe import running
from tests.e2e.test_watch import Lines
from tui_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
COUNTS = "4 passed, 5 failed, 0 not evaluated"  # hello_world's offline verdicts


@pytest.fixture
def apart(tmp_path: Path) -> tuple[Path, Path]:
    """hello_world's agent folder, and its eval set (with its config) in a folder of its own: the agent
    is only found when named."""
    agent = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", agent, ignore=shutil.ignore_patterns(".adk", "__pycache__", "*.json"))
    evals = tmp_path / "evals"
    evals.mkdir()
    for name in ("hello_world.evalset.json", "test_config.json"):
        shutil.copy(DEMO / "hello_world" / name, evals / name)
    return agent, evals / "hello_world.evalset.json"


def test_run_watch_and_the_api_take_the_agent_as_its_init_file(apart: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    agent, evalset = apart
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", "--agent", str(agent / "__init__.py"), str(evalset), "--no-save"], out, err) == 1
    assert COUNTS in out.getvalue(), out.getvalue() + err.getvalue()
    record = tui_eval.evaluate(agent / "__init__.py", evalset, raise_on_failure=False)
    assert sum(c.status.name == "PASSED" for r in record.results for c in r.case_results) == 4

    env = dict(os.environ, TUI_EVAL_AGENT_MODE="offline", PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "tui_eval.cli", "watch", "--agent", str(agent / "__init__.py"), str(evalset),
               "--debounce", "0.1"]
    with running(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=agent.parent) as proc:
        lines = Lines(proc)
        lines.wait_for(COUNTS, timeout=60)
        lines.wait_for("watching")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
