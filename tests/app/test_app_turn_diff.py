"""Issue 11 item 4: the turn view opens the code diff saved with the run its result came from (`g`)."""

from __future__ import annotations

from pathlib import Path

from tests.app.conftest import settle, slow_agent_folder, wait_until
from tests.app.test_app_insight import _git, flaky_app, open_flip, text_of
from tui_eval.engine.runner import RunOptions
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.turn import TurnScreen

MARKER = "# [bold red]not markup[/]"


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def open_flip_turn(pilot) -> None:
    await open_flip(pilot)
    await pilot.press("enter", "down", "enter")  # flip's turn 1
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, TurnScreen))


def git_folder(make_app, tmp_path: Path):
    app, root = flaky_app(make_app, tmp_path)
    (root / ".gitignore").write_text(".adk/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "flaky agent")
    return app, root


async def test_turn_view_says_a_clean_run_saved_no_diff_and_opens_a_dirty_runs_diff(tmp_path: Path, make_app) -> None:
    app, root = git_folder(make_app, tmp_path)
    agent = root / "flaky" / "agent.py"
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # committed code: a clean tree
        await settle(pilot)
        await open_flip_turn(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: any("the tree was clean" in t for t in toasts(app)))
        assert "no code diff saved for this run (the tree was clean)" in " ".join(toasts(app))
        assert isinstance(app.screen, TurnScreen)
        app.clear_notifications()
        await pilot.press("escape")
        # An uncommitted edit (text that would be markup if it were rendered as such), then a new run.
        agent.write_text(agent.read_text() + MARKER + "\n")
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("enter")  # the cursor is still on flip's turn 1
        await wait_until(pilot, lambda: isinstance(app.screen, TurnScreen))
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        diff = text_of(app, "#diff-text")
        assert "+" + MARKER in diff and "agent.py" in diff
        run_id = next(p.name for p in (root / "flaky" / ".adk" / "eval_history").glob("*.code.diff"))
        assert isinstance(app.screen, DiffScreen) and app.screen.path.name == run_id
        await pilot.press("escape")
        assert isinstance(app.screen, TurnScreen)


async def test_turn_view_opens_the_diff_of_a_saved_result_from_history(tmp_path: Path, make_app) -> None:
    app, root = git_folder(make_app, tmp_path)
    agent = root / "flaky" / "agent.py"
    agent.write_text(agent.read_text() + MARKER + "\n")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
    # A new session: flip's shown result is the saved one, loaded from the history.
    again = make_app(root, recording=None, run_options=RunOptions(judge_cache=False, concurrency=1))
    async with again.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_flip_turn(pilot)
        assert "saved" in again.listing.results.origin(again.screen.key)
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(again.screen, DiffScreen))
        assert "+" + MARKER in text_of(again, "#diff-text")


async def test_turn_view_says_a_result_of_a_running_run_is_not_saved_yet(tmp_path: Path, make_app) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=1000, delay=0.5)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await wait_until(pilot, lambda: any(k.eval_id == "case-00" for k in app.listing.results.keys()))
        assert app.run_state.active
        await pilot.press("enter", "down", "enter", "down", "enter")  # the first case's turn 1
        await wait_until(pilot, lambda: isinstance(app.screen, TurnScreen))
        await pilot.press("g")
        await wait_until(pilot, lambda: any("not saved yet" in t for t in toasts(app)))
        assert isinstance(app.screen, TurnScreen)
        await pilot.press("escape")
        await pilot.press("x")
