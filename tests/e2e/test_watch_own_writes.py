"""`tui-eval watch` and an agent that writes into its own folder (issues 23 and 28): every save is taken
(none is dropped for having been made during a run), and the agent's own writes re-run it only while its
runs keep changing its files fewer than SELF_WRITE_LIMIT times in a row; then its live re-runs pause with
a notice, and a real edit still re-runs it, once. Each step waits for a line the watcher prints (no
sleeps): the count of runs is fixed by the rule, not by timing. The watcher is a child process group,
killed at the end whatever happens."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_watch import DEMO, Lines
from tui_eval.engine.own_writes import SELF_WRITE_LIMIT

WRITES_SCRATCH = '''

def _writes_into_its_folder(inner):
    def roll_die(sides: int, tool_context: ToolContext) -> int:
        """Roll a die and return the rolled result.

        Args:
            sides: The number of sides of the die.
        """
        import pathlib, time
        # As agents that generate code do: a new module in the agent's own folder, on every call.
        pathlib.Path(__file__).with_name("generated_tool.py").write_text(f"STAMP = {time.perf_counter_ns()!r}\\n")
        return inner(sides, tool_context)
    return roll_die


roll_die = _writes_into_its_folder(roll_die)
'''


def _history(folder: Path) -> list[Path]:
    return list((folder / ".adk" / "eval_history").glob("*.tui-eval.json"))


def test_watch_pauses_an_agent_that_keeps_rewriting_itself_and_reruns_a_real_edit(tmp_path: Path) -> None:
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
        notice = lines.wait_for("changed its own files", timeout=120)
        assert "live re-runs of it are paused" in notice
        lines.wait_for("watching", timeout=60)
        assert (folder / "generated_tool.py").is_file()  # the agent did write during its runs
        # The first run and the re-runs its own writes caused, then no more.
        assert len(_history(folder)) == SELF_WRITE_LIMIT
        # A real edit re-runs it (once: its run writes again, and it stays paused).
        agent = folder / "agent.py"
        agent.write_text(agent.read_text() + "\n# edited\n")
        lines.wait_for("re-ran", timeout=60)
        assert len(_history(folder)) == SELF_WRITE_LIMIT + 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        lines.wait_for("stopped watching")  # every line read
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reruns = [line for line in lines.seen if "re-ran" in line]
    assert len(reruns) == 1, lines.seen
    assert len(_history(folder)) == SELF_WRITE_LIMIT + 1
