"""`tui-eval run ... | head -1`: a reader that stops reading ends the output quietly, not the run: no
traceback, history and --json still written, the run's own exit code."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


def test_a_closed_pipe_on_stdout_is_quiet_and_the_run_still_saves(tmp_path: Path) -> None:
    agent = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", agent, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    out_json = tmp_path / "out.json"
    # Three runs of nine cases in detail: far more than a pipe holds, so the writes after `head` left fail.
    command = [sys.executable, "-m", "tui_eval.cli", "run", str(agent), str(agent / "hello_world.evalset.json"),
               "--print-detailed-results", "--num-runs", "3", "--json", str(out_json)]
    script = f"{shlex.join(command)} | head -1; exit ${{PIPESTATUS[0]}}"
    env = {**os.environ, "TUI_EVAL_AGENT_MODE": "auto"}  # no key in tests: the demo agent's offline policy
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.startswith("=== hello_world / "), done.stdout
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 1  # hello_world has failing cases: the run's own verdict
    saved = list((agent / ".adk" / "eval_history").glob("*.evalset_result.json"))
    assert len(saved) == 3, saved  # one per run
    results = json.loads(out_json.read_text())
    assert len(results) == 3 and all(len(r["eval_case_results"]) == 9 for r in results)
