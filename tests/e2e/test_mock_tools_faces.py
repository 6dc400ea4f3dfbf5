"""--mock-tools reaches every face: `run`, `watch`, the dashboard's command line and the pytest plugin
(the Python API is in tests/unit/test_mock_tools.py). The demo's dice agent runs offline; under strict
mocks, roll_twelve_in_words fails because its eval set recorded no roll_die(sides=6)."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_watch import Lines
from tui_eval.cli import build_parser, main

pytest_plugins = ["pytester"]

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
PLUGIN = ("-p", "tui_eval.pytest_plugin", "-p", "no:cacheprovider")
UNEXPECTED = "unexpected call roll_die(sides=6): no recorded response"


@pytest.fixture
def dice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    folder = tmp_path / "hello_world"
    shutil.copytree(DEMO / "hello_world", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return folder


def test_run_strict_and_fallback(dice: Path) -> None:
    target = f"{dice / 'hello_world.evalset.json'}:roll_twelve_in_words"
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", "--mock-tools", str(dice), target, "--no-save"], out, err) == 1
    assert UNEXPECTED in out.getvalue()
    out = io.StringIO()
    main(["run", str(dice), target, "--no-save", "--mock-tools=fallback"], out, err)
    assert "unexpected call" not in out.getvalue()


def test_watch_with_mock_tools(dice: Path, tmp_path: Path) -> None:
    env = dict(os.environ, TUI_EVAL_AGENT_MODE="offline", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "watch", "--mock-tools", str(dice), "--debounce", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )
    lines = Lines(proc)
    try:
        # Without mocks the demo is 4 passed, 5 failed (tests/e2e/test_watch.py).
        lines.wait_for("3 passed, 6 failed, 0 not evaluated")
        lines.wait_for("watching")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


def test_dashboard_takes_the_flag() -> None:
    parser = build_parser()
    assert parser.parse_args(["open", "--mock-tools=fallback", "x"]).mock_tools == "fallback"
    assert parser.parse_args(["open", "x"]).mock_tools is None
    # A bare --mock-tools before the path is strict and leaves the path alone.
    out, err = io.StringIO(), io.StringIO()
    assert main(["--mock-tools", "no/such/folder"], out, err) == 2
    assert err.getvalue().strip() == "error: no/such/folder: no such file or folder"
    assert main(["run", "--mock-tools=sometimes", "x"], out, io.StringIO()) == 2


def test_pytest_plugin(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    shutil.copytree(DEMO / "hello_world", pytester.path / "dice_agent",
                    ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    result = pytester.runpytest(*PLUGIN, "--tui-eval", "--tui-eval-mock-tools", "strict", "-k", "roll_twelve_in_words")
    result.assert_outcomes(failed=1)
    assert UNEXPECTED in result.stdout.str()
    pytester.makeini("[pytest]\ntui_eval_mock_tools = fallback\n")
    result = pytester.runpytest(*PLUGIN, "--tui-eval", "-k", "roll_twelve_in_words")
    assert "unexpected call" not in result.stdout.str()
