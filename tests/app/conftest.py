"""App test fixtures: a copy of the fixture folder per test (saved runs in place), and an app factory.

Every app runs with a fixed theme and, unless a test says otherwise, without file watching, so
`pilot.app.workers.wait_for_complete()` returns once loading, runs and edits are done.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.paced_agent import paced_agent_source

FIXTURES = Path(__file__).parent / "fixtures"
#: 2026-01-02 00:00 UTC: a day after the fixture runs were saved.
FIXED_NOW = 1767312000.0


def install_fixture(name: str, dest: Path) -> Path:
    """Copy a fixture folder; each `_history` folder becomes the `.adk/eval_history` beside it."""
    shutil.copytree(FIXTURES / name, dest)
    for history in sorted(dest.rglob("_history")):
        target = history.parent / ".adk" / "eval_history"
        target.parent.mkdir(parents=True, exist_ok=True)
        history.rename(target)
    return dest


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved-run times print the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.fixture(autouse=True)
def _no_user_keymap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The developer's own keymap (~/.config/tui-eval/keymap.toml) never reaches a test."""
    monkeypatch.delenv("TUI_EVAL_KEYMAP", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The travel / smalltalk / broken folder with two saved travel runs and one smalltalk run."""
    return install_fixture("workspace", tmp_path / "ws")


@pytest.fixture
def markup_workspace(tmp_path: Path) -> Path:
    """Eval data, agent output and judge text full of Rich markup and escape sequences."""
    return install_fixture("markup", tmp_path / "markup")


@pytest.fixture
def make_app(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`make_app(folder, recording="all.recorded.json", **kwargs)`: an EvalApp replaying recorded turns."""
    from tui_eval.engine.runner import RunOptions
    from tui_eval.tui.app import EvalApp

    def make(folder: Path, recording: str | None = "all.recorded.json", **kwargs: Any) -> EvalApp:
        monkeypatch.chdir(folder)
        kwargs.setdefault("watch", False)
        kwargs.setdefault("theme", "tui-eval")
        kwargs.setdefault("run_options", RunOptions(judge_cache=False))
        # Saved results' ages ("23 h ago") are measured against a fixed day, so snapshots never age.
        kwargs.setdefault("clock", lambda: FIXED_NOW)
        agent = kwargs.pop("agent", None) or (f"replay:{recording}" if recording else None)
        return EvalApp(folder, agent=agent, **kwargs)

    return make


async def settle(pilot: Any, *, timeout: float = 20.0) -> None:
    """Wait for loading, runs (in the engine process) and edits to finish and their results to reach
    the screen."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause()
        await app.workers.wait_for_complete()
        app.pull()
        model = app.model
        # Full results a view asked the engine for are on their way until they arrive (or it is gone).
        asked = app.listing.results.waiting or app.listing.run_book.waiting
        if not model.loading and (model.engine_ready or model.engine_gone) and not model.busy \
                and not app.workers and not len(model.inbox) and not (asked and model.engine_ready):
            break
        if time.monotonic() > deadline:
            raise AssertionError("the dashboard did not settle in time")
        await pilot.pause(0.02)
    await pilot.pause()


async def full_result(pilot: Any, key: Any) -> Any:
    """A case's full result as a view gets it: asked for (a result of this session's runs comes from the
    engine, as a record), then read once it has arrived."""
    pilot.app.listing.result(key)
    await settle(pilot)
    return pilot.app.listing.result(key)


async def wait_until(pilot: Any, condition: Callable[[], object], timeout: float = 15.0) -> None:
    """Pause until a condition holds (for the file watcher, which is not a worker)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)
        pilot.app.pull()


async def run_all_until(pilot: Any, cases_done: int = 1) -> None:
    """Press R (run every case) and wait until the run has finished `cases_done` of them."""
    app = pilot.app
    await pilot.press("R")
    await wait_until(pilot, lambda: app.run_state is not None and app.run_state.cases_done >= cases_done)


def slow_agent_folder(root: Path, cases: int, delay: float) -> Path:
    """An agent folder with one eval set of `cases` one-turn cases, each answered after `delay` s."""
    import json

    folder = root / "slow"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(paced_agent_source(delay, "slow"))
    eval_set = {
        "eval_set_id": "slow",
        "eval_cases": [
            {"eval_id": f"case-{i:02d}", "conversation": [{
                "invocation_id": f"i{i}", "user_content": {"role": "user", "parts": [{"text": f"question {i}"}]},
                "final_response": {"role": "model", "parts": [{"text": f"answer {i}"}]},
                "intermediate_data": {"tool_uses": [], "tool_responses": [], "intermediate_responses": []}}]}
            for i in range(cases)
        ],
    }
    (folder / "slow.evalset.json").write_text(json.dumps(eval_set))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    return root


@pytest.fixture(autouse=True)
def _no_stray_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the user's theme choice nor agent mode leaks into the tests."""
    monkeypatch.delenv("TUI_EVAL_THEME", raising=False)
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    os.environ.pop("TEXTUAL", None)
