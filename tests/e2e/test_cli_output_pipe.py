"""`tui-eval run ... | head -1`: a reader that stops reading ends the output quietly, not the run: no
traceback, history and --json still written, the run's own exit code."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


@contextlib.contextmanager
def running(command: list[str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """A process for the length of the block; killed on the way out if it has not ended by then."""
    proc = subprocess.Popen(command, text=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture
def hello(tmp_path: Path) -> Path:
    """A copy of the hello_world demo agent (with its eval set), so its history is the test's own."""
    return Path(shutil.copytree(DEMO / "hello_world", tmp_path / "hello_world",
                                ignore=shutil.ignore_patterns(".adk", "__pycache__")))


def test_a_closed_pipe_on_stdout_is_quiet_and_the_run_still_saves(hello: Path, tmp_path: Path) -> None:
    agent = hello
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


def test_watch_stops_quietly_once_the_reader_of_its_output_has_gone(hello: Path, tmp_path: Path) -> None:
    folder = hello
    env = {**os.environ, "TUI_EVAL_AGENT_MODE": "offline", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "tui_eval.cli", "watch", str(folder), "--debounce", "0.1"]
    with running(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        while "watching" not in proc.stdout.readline():  # the initial run is over
            pass
        proc.stdout.close()  # as `head -1` does once it has its line
        # The next line watch prints (a re-run after a save) finds nobody reading: watch stops.
        eval_file = folder / "hello_world.evalset.json"
        eval_file.write_text(eval_file.read_text().replace("greeting", "greeting_again", 1))
        assert proc.wait(timeout=60) == 0
        stderr = proc.stderr.read()
        assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_watch_piped_to_head_ends_by_itself_exit_0(hello: Path, tmp_path: Path) -> None:
    """`tui-eval watch … | head -1` with no save after it: the reader left while nothing was printed,
    and watch stops anyway (it used to wait for the next save)."""
    command = [sys.executable, "-m", "tui_eval.cli", "watch", str(hello), "--debounce", "0.1"]
    script = f"{shlex.join(command)} | head -1; exit ${{PIPESTATUS[0]}}"
    env = {**os.environ, "TUI_EVAL_AGENT_MODE": "offline"}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


def test_ces_show_piped_to_head_is_quiet(tmp_path: Path) -> None:
    from tests.support.fake_ces import golden_evaluation

    source = tmp_path / "ces.json"
    # Many cases: far more output than a pipe holds once head has its line.
    goldens = [{**golden_evaluation(), "name": f"{golden_evaluation()['name']}{i}", "displayName": f"case {i}"}
               for i in range(3000)]
    source.write_text(json.dumps(goldens))
    eval_file = tmp_path / "app.evalset.json"
    cli = [sys.executable, "-m", "tui_eval.cli"]
    subprocess.run([*cli, "ces", "import", str(source), "-o", str(eval_file)], check=True, capture_output=True)
    script = f"{shlex.join([*cli, 'ces', 'show', str(eval_file)])} | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.count("\n") == 1, done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 0
