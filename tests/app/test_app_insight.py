"""Issue 11 in the dashboard: --num-runs marks and run k of N, live tokens / est. cost / tool latency, trends,
the code change behind a compare with its saved diff, and the session timeline."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from textual.widgets import DataTable

from tests.app.conftest import settle, wait_until
from tests.app.test_app_browse import summary_text
from tests.support.flaky_agent import flaky_folder
from tui_eval.cli import build_parser
from tui_eval.engine.runner import RunOptions
from tui_eval.tui.screens.diff import DiffScreen
from tui_eval.tui.screens.history import CompareScreen, HistoryScreen
from tui_eval.tui.screens.timeline import TimelineScreen
from tui_eval.tui.screens.turn import TurnScreen
from tui_eval.tui.widgets.trends import CaseTrendRow, CaseTrends


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


def flaky_app(make_app, tmp_path: Path, **kwargs):
    root = tmp_path / "fw"
    flaky_folder(root)
    kwargs.setdefault("run_options", RunOptions(judge_cache=False, concurrency=1))
    return make_app(root, recording=None, **kwargs), root


async def open_flip(pilot) -> None:
    """From the folder's first line: expand the eval set and go to its third case, flip."""
    await pilot.press("enter", "down", "down", "down")


def test_dashboard_takes_num_runs() -> None:
    args = build_parser().parse_args(["open", "some/folder", "--num-runs", "3"])
    assert args.num_runs == 3
    assert build_parser().parse_args(["open"]).num_runs == 1


async def test_num_runs_shows_marks_and_drills_into_run_k(tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path, num_runs=4)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        # 3 cases x 4 runs; flip alternates pass / fail per call.
        assert "12/12 case runs (3 cases × 4)" in text_of(app, "#run-status")
        await open_flip(pilot)
        text = summary_text(app)
        assert "Case flip" in text and "runs  ✔✘✔✘ 2/4 flaky" in text
        await pilot.press("up")
        assert "runs  ✘✘✘✘ 0/4 stable fail" in summary_text(app)
        await pilot.press("up")
        assert "runs  ✔✔✔✔ 4/4 stable pass" in summary_text(app)
        # The turn view shows the latest repetition; k steps to run 1, 2, ...
        await pilot.press("down", "down", "enter", "down", "enter")
        assert isinstance(app.screen, TurnScreen)
        assert "run 4 of 4  ✔✘✔✘" in text_of(app, "#turn-title")
        assert "tails" in text_of(app, "#turn-response")
        await pilot.press("k")
        assert "run 1 of 4" in text_of(app, "#turn-title")
        assert "✔ passed" in text_of(app, "#turn-title")
        assert "tails" not in text_of(app, "#turn-response") and "heads" in text_of(app, "#turn-response")
        await pilot.press("k")
        assert "run 2 of 4" in text_of(app, "#turn-title") and "tails" in text_of(app, "#turn-response")


async def test_single_runs_show_no_marks_and_no_run_key(tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await open_flip(pilot)
        assert "runs  " not in summary_text(app)
        await pilot.press("enter", "down", "enter")
        assert isinstance(app.screen, TurnScreen)
        assert app.screen.check_action("cycle_repetition", ()) is False
        assert "run 1 of" not in text_of(app, "#turn-title")


async def test_run_panel_and_summary_show_tokens_cost_and_tool_latency(tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path, num_runs=4)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        panel = text_of(app, "#run-insight")
        # 12 turns, each one model call of 100 prompt + 20 output (10 cached) tokens.
        assert "agent 1,440 tok (in 1,200 · out 240 · cached 120) · est. $" in panel
        # 12 lookup calls alternating 0.1 s ok / 0.3 s error: mean 0.20, p95 (nearest rank 12 of 12) 0.30.
        assert "tools lookup 12× 6✘ 0.20s p95 0.30s" in panel
        assert all(len(line) <= 78 for line in panel.splitlines()) and len(panel.splitlines()) == 2
        await open_flip(pilot)
        text = summary_text(app)
        # The latest result of flip (its 4th call): one call, 120 tokens, one lookup that answered an error.
        assert "agent 120 tok (in 100 · out 20 · cached 10) · est. $" in text
        row = next(line for line in text.splitlines() if line.strip().startswith("lookup"))
        assert row.split() == ["lookup", "1", "0", "1", "0.30s", "0.30s"]
        await pilot.press("enter", "down")  # flip's turn 1: its own tokens
        assert "Turn 1 of flip" in summary_text(app)
        assert "agent 120 tok (in 100 · out 20 · cached 10) · est. $" in summary_text(app)


def shown_trends(trends: CaseTrends) -> dict[str, list[float]]:
    """name -> sparkline values of the trend rows on screen."""
    return {row.label.strip(): list(row.data or []) for row in trends.query(CaseTrendRow) if row.display}


async def test_case_and_set_trends_from_saved_runs(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down")  # travel: two saved full runs, 2 of 6 passed each time
        trends = app.main.query_one(CaseTrends)
        await wait_until(pilot, lambda: trends.display and shown_trends(trends))
        assert shown_trends(trends) == {"pass rate": [2 / 6, 2 / 6]}
        await pilot.press("enter", "down")  # book_flight: passed, then failed its trajectory
        await wait_until(pilot, lambda: "Trend ✔✘" in str(trends.query_one("#trends-title").render()))
        data = shown_trends(trends)
        assert data["tool_trajectory_avg_score"] == [1.0, 0.5]
        assert data["response_match_score"] == pytest.approx([0.9, 0.9])
        assert len(data) == 4  # at most four metrics


async def test_history_shows_duration_coverage_and_pass_rate(workspace: Path, make_app) -> None:
    record = next((workspace / "travel" / ".adk" / "eval_history").glob("*1767229200.tui-eval.json"))
    data = json.loads(record.read_text())
    data.update(duration=125.4, coverage="failures")
    record.write_text(json.dumps(data))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        travel = [r for r in rows if r[2] == "travel"]
        assert "failures" in travel[0][7] and travel[0][6] == "2m05s"
        assert travel[1][6] == "—"  # a record that did not say how long it took
        # Pass rate over full runs only: the failures-only run is left out of travel's trend.
        sparks = {str(row.query_one(".trend-name").render()).strip(): row.values
                  for row in app.screen.query(".trend-row")}
        assert sparks == {"smalltalk": [0.5], "travel": [2 / 6]}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


async def test_compare_names_the_code_change_and_opens_the_saved_diff(tmp_path: Path, make_app) -> None:
    app, root = flaky_app(make_app, tmp_path)
    agent = root / "flaky" / "agent.py"
    (root / ".gitignore").write_text(".adk/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "flaky agent")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        # An uncommitted edit, with text that would be markup if it were rendered as such.
        agent.write_text(agent.read_text() + "# [bold red]not markup[/]\n")
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and len(app.screen.entries) == 2)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        code = text_of(app, "#compare-code-text")
        assert "agent files changed (not committed)" in code and "agent.py" in code
        assert "g shows the later run's uncommitted diff" in code
        await pilot.press("g")
        assert isinstance(app.screen, DiffScreen)
        diff = text_of(app, "#diff-text")
        assert "+# [bold red]not markup[/]" in diff and "agent.py" in diff
        await pilot.press("escape")
        assert isinstance(app.screen, CompareScreen)


async def test_compare_of_old_records_says_the_code_state_is_unknown(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.entries)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=next(i for i in range(table.row_count) if str(table.get_row_at(i)[2]) == "travel"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        assert "code state unknown" in text_of(app, "#compare-code-text")
        assert app.screen.check_action("open_diff", ()) is False
        await pilot.press("g")
        assert isinstance(app.screen, CompareScreen)


async def test_timeline_lists_runs_newest_first_with_flips(tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        assert isinstance(app.screen, TimelineScreen)
        assert "No runs yet" in text_of(app, "#timeline-text")
        await pilot.press("escape")
        for _ in range(3):  # flip: passes, fails, passes
            await pilot.press("R")
            await settle(pilot)
        await pilot.press("t")
        lines = text_of(app, "#timeline-text").splitlines()
        heads = [line for line in lines if line.startswith("Run all")]
        assert len(heads) == 3
        assert "1 fixed · 3 ran" in heads[0] and "1 case broke · 3 ran" in heads[1] and "no case changed" in heads[2]
        assert lines[1].strip() == "✔ fixed flip"


async def test_live_saves_add_timeline_entries_with_the_cases_they_flipped(tmp_path: Path, make_app) -> None:
    app, root = flaky_app(make_app, tmp_path, watch=True, live=True)
    agent = root / "flaky" / "agent.py"
    source = agent.read_text()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.model.watch_ready)
        await pilot.press("R")  # flip passes (its first call says heads)
        await wait_until(pilot, lambda: len(app.listing.run_book.timeline) == 1 and not app.busy, timeout=30)
        # Saved with a bug: flip always says tails. The live re-run breaks it.
        agent.write_text(source.replace('"heads" if n % 2 else "tails"', '"tails"'))
        await wait_until(pilot, lambda: len(app.listing.run_book.timeline) == 2 and not app.busy, timeout=30)
        # Saved again, fixed.
        agent.write_text(source)
        await wait_until(pilot, lambda: len(app.listing.run_book.timeline) == 3, timeout=30)
        await pilot.press("t")
        lines = text_of(app, "#timeline-text").splitlines()
        heads = [line for line in lines if not line.startswith(" ")]
        assert heads[0].startswith("agent flaky: agent.py") and "→ 1 fixed · 3 ran" in heads[0]
        assert heads[1].startswith("agent flaky: agent.py") and "→ 1 case broke · 3 ran" in heads[1]
        assert heads[2].startswith("Run all") and "→ no case changed" in heads[2]
        assert lines[1].strip() == "✔ fixed flip" and lines[3].strip() == "✘ broke flip"
