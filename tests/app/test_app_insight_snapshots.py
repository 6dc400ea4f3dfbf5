"""Snapshots at 80x24 of issue 11's views: marks and live usage, run k of N, history trends, compare's code
change and its diff, the session timeline.

Regenerate after checking the SVGs by eye: pytest tests/app/test_app_insight_snapshots.py --snapshot-update
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.app.conftest import settle, wait_until
from tests.app.test_app_insight import flaky_app
from tests.app.test_app_snapshots import SMALL, open_history

DIFF = """diff --git a/travel/agent.py b/travel/agent.py
--- a/travel/agent.py
+++ b/travel/agent.py
@@ -1,3 +1,4 @@
 def book_flight(origin, destination):
-    return {"status": "booked"}
+    # [bold red]not markup[/] \x1b[31m
+    return {"status": "pending"}
"""


def keys(*pressed: str, runs: int = 0) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for _ in range(runs):
            await pilot.press("R")
            await settle(pilot)
        for key in pressed:
            await pilot.press(key)
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


def test_marks_and_live_usage(snap_compare, tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path, num_runs=4)
    assert snap_compare(app, terminal_size=SMALL, run_before=keys("enter", "down", "down", "down", runs=1))


def test_turn_run_k_of_n(snap_compare, tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path, num_runs=4)
    assert snap_compare(app, terminal_size=SMALL,
                        run_before=keys("enter", "down", "down", "down", "enter", "down", "enter", "k", "k", runs=1))


def test_timeline(snap_compare, tmp_path: Path, make_app) -> None:
    app, _root = flaky_app(make_app, tmp_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=keys("t", runs=3))


def test_history_trends(snap_compare, workspace: Path, make_app) -> None:
    async def run_before(pilot: Any) -> None:
        await open_history(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=run_before)


def _code_states(workspace: Path) -> None:
    """Give the two saved travel runs code states: same commit, agent.py edited and not committed, a diff saved."""
    history = workspace / "travel" / ".adk" / "eval_history"
    for stamp, digest in (("1767225600", "a" * 64), ("1767229200", "b" * 64)):
        record = history / f"travel_travel_{stamp}.tui-eval.json"
        data = json.loads(record.read_text())
        data["code_state"] = {"repo_root": None, "commit": "0123456789abcdef", "dirty": True, "diff_sha256": digest,
                              "agent_dir": str(workspace / "travel"), "agent_sha256": digest,
                              "agent_files": {"agent.py": digest, "tools.py": "c" * 64}}
        if stamp == "1767229200":
            data["code_diff_file"] = "20260101-010000-latest.code.diff"
            (history / data["code_diff_file"]).write_text(DIFF)
        record.write_text(json.dumps(data))


async def _compare_travel(pilot: Any) -> None:
    await open_history(pilot)
    from textual.widgets import DataTable

    table = pilot.app.screen.query_one(DataTable)
    table.move_cursor(row=next(i for i in range(table.row_count) if str(table.get_row_at(i)[2]) == "travel"))
    await pilot.press("enter")
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "changes", None))


def test_compare_code_change(snap_compare, workspace: Path, make_app) -> None:
    _code_states(workspace)

    async def run_before(pilot: Any) -> None:
        await _compare_travel(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=run_before)


def test_code_diff(snap_compare, workspace: Path, make_app) -> None:
    _code_states(workspace)

    async def run_before(pilot: Any) -> None:
        await _compare_travel(pilot)
        await pilot.press("g")
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(workspace), terminal_size=SMALL, run_before=run_before)
