"""`tui-eval watch` and an agent that writes into its own folder (issue 23): a run's own writes are not
edits, so watch does not re-run for ever; a real edit afterwards still re-runs. The watcher is a child
process group, killed at the end whatever happens."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.test_watch import DEMO, Lines

WRITES_SCRATCH = '''

def _writes_into_its_folder(inner):
    def roll_die(sides: int, tool_context: ToolContext) -> int:
        """Roll a die and return the rolled result.

        Args:
            sides: The number of sides of the die.
        """
        import pathlib, time
        # As agents that generate code do: a new module in the agent's own folder, on every call.
        pathlib.Path(__file__).with_name("generated_tool.py").write_text(f"STAMP = {time.time()!r}\\n")
        return inner(sides, tool_context)
    return roll_die


roll_die = _writes_into_its_folder(roll_die)
'''


def test_watch_does_not_rerun_on_the_agents_own_writes(tmp_path: Path) -> None:
    folder = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    source = (folder / "agent.py").read_text()
    marker = "\ndef check_prime("
    assert marker in source
    (folder / "agent.py").write_text(source.replace(marker, WRITES_SCRATCH + marker, 1))
    env = dict(os.environ, TUI_EVAL_AGENT_MODE="offline", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "watch", str(folder), "--debounce", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
        start_new_session=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3)),
    )
    lines = Lines(proc)
    try:
        lines.wait_for("watching", timeout=60)
        assert (folder / "generated_tool.py").is_file()  # the agent did write during its run
        # Quiet for 4 s: with the old rule a re-run came every ~0.3 s, each writing history.
        time.sleep(4)
        history = list((folder / ".adk" / "eval_history").glob("*.tui-eval.json"))
        assert len(history) == 1, [p.name for p in history]
        # A real edit still re-runs (once).
        agent = folder / "agent.py"
        agent.write_text(agent.read_text() + "\n# edited\n")
        lines.wait_for("re-ran", timeout=60)
        time.sleep(3)
        history = list((folder / ".adk" / "eval_history").glob("*.tui-eval.json"))
        assert len(history) == 2, [p.name for p in history]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        lines.wait_for("stopped watching")  # every line read
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reruns = [line for line in lines.seen if "re-ran" in line]
    assert len(reruns) == 1, lines.seen
