"""Issue 28 in the dashboard: a run uses the code on disk, and a stale result says so in every view."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.app.conftest import full_result, settle, wait_until
from tests.app.test_app_browse import labels, summary_text
from tui_eval.engine.runner import RunOptions

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
OLD_GREETING = "Hi! I can roll dice of any size and check whether numbers are prime."


def _hello(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    shutil.copytree(DEMO / "hello_world", root / "hello_world", ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return root


def _greet_with(root: Path, text: str) -> None:
    agent = root / "hello_world" / "agent.py"
    agent.write_text(agent.read_text().replace(f'return "{OLD_GREETING}"', f'return "{text}"'))


def _line(app, eval_id: str) -> str:
    return next(line for line in labels(app) if f" {eval_id}" in line)


async def _stale_everywhere_then_S(pilot, app, eval_id: str, reason: str) -> None:
    """Every result of hello_world is stale: each tree row, the file's count, and the summary of `eval_id`
    says why; S re-runs exactly those, and then nothing is stale."""
    assert "9 stale" in labels(app)[0], labels(app)
    assert all(line.endswith("stale") for line in labels(app)[1:10]), labels(app)
    app.main.browser.select_key(next(k for k in app.listing.all_keys() if k.eval_id == eval_id))
    await pilot.pause()
    assert f"⚠ stale: {reason} since it ran" in summary_text(app)
    await pilot.press("S")
    await settle(pilot)
    await wait_until(pilot, lambda: not app.listing.stale)
    assert not any("stale" in line for line in labels(app))
    assert app.run_state is not None and app.run_state.label == "Run 9 stale"


async def test_a_save_then_R_at_once_runs_the_saved_code(tmp_path: Path, make_app) -> None:
    root = _hello(tmp_path)
    # No file watcher: the engine never hears of the save, as when R comes before the watcher's report.
    # One case at a time: the pool never grows a second worker, whose load could straddle the save (the
    # pool's restart does not yet drop a worker still growing: reported to the executors' owner).
    app = make_app(root, recording=None, run_options=RunOptions(judge_cache=False, concurrency=1))
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("right")
        assert "✔ greeting" in _line(app, "greeting")
        _greet_with(root, "Hello there.")
        await pilot.press("R")
        await settle(pilot)
        key = next(k for k in app.listing.all_keys() if k.eval_id == "greeting")
        result = await full_result(pilot, key)
        assert result is not None and result.actual[0].final_response.text == "Hello there."
        assert "✘ greeting" in _line(app, "greeting"), labels(app)
        assert "stale" not in _line(app, "greeting")


async def test_stale_shows_in_the_tree_the_counts_and_the_summary_and_S_runs_exactly_those(
        tmp_path: Path, make_app) -> None:
    root = _hello(tmp_path)
    # live off: a save marks, it does not run; one case at a time, as above
    app = make_app(root, recording=None, watch=True, run_options=RunOptions(judge_cache=False, concurrency=1))
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.model.watch_ready)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("right")
        assert not any("stale" in line for line in labels(app))
        _greet_with(root, "Hello there.")
        await wait_until(pilot, lambda: "stale" in _line(app, "greeting"))
        await _stale_everywhere_then_S(pilot, app, "greeting", "agent code changed")
        assert "✘ greeting" in _line(app, "greeting")  # the code on disk ran


async def test_accept_under_num_runs_writes_the_run_on_screen_and_names_it(tmp_path: Path, make_app) -> None:
    import json

    from tests.app.test_app_insight import flaky_app, open_flip, text_of
    from tui_eval.tui.screens.turn import TurnScreen

    app, root = flaky_app(make_app, tmp_path, num_runs=4)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await open_flip(pilot)
        await pilot.press("enter", "down", "enter")
        assert isinstance(app.screen, TurnScreen)
        assert "run 4 of 4" in text_of(app, "#turn-title") and "tails" in text_of(app, "#turn-response")
        await pilot.press("k")  # run 1: heads (the latest, run 4, said tails)
        assert "run 1 of 4" in text_of(app, "#turn-title") and "heads" in text_of(app, "#turn-response")
        await pilot.press("a")
        body = str(app.screen.query_one("#confirm-body").render())
        assert "Make the actual turn 1 of case flip (run 1 of 4) the expected one" in body, body
        assert "response  heads" in body
        await pilot.press("y")
        await settle(pilot)
        data = json.loads((root / "flaky" / "flaky.evalset.json").read_text())
        flip = next(c for c in data["eval_cases"] if c["eval_id"] == "flip")
        assert flip["conversation"][0]["final_response"]["parts"][0]["text"] == "heads"


async def test_a_written_whatif_shows_the_new_configuration_and_marks_what_it_changed_stale(
        tmp_path: Path, make_app) -> None:
    from textual.widgets import Static

    from tests.app.test_app_whatif import rows
    from tui_eval.tui.screens.whatif import WhatIfScreen

    root = _hello(tmp_path)
    config = root / "hello_world" / "test_config.json"
    app = make_app(root, recording=None)  # live off: the write marks, it does not re-score
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)

        def status() -> str:
            return str(app.screen.query_one("#whatif-status", Static).render())

        await pilot.press("W")
        await wait_until(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await settle(pilot)  # the results it shows arrive from the engine
        await pilot.press("m", *["minus"] * 10)  # response_match_score 0.8 → 0.3
        assert "response_match_score: threshold 0.3  (configured: 0.8)" in status()
        assert [r[:2] for r in rows(app)] == [["pass", "ten_sided_wording"]]
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("y")
        await wait_until(pilot, lambda: '"response_match_score": 0.3' in config.read_text())
        # the screen shows the configuration the file now has, and that every result scored under the
        # old one is stale
        await wait_until(pilot, lambda: "as configured  (configured: 0.3)" in status())
        await wait_until(pilot, lambda: "⚠ 9 of these results are stale" in status())
        await pilot.press("escape")
        await pilot.press("right")
        await _stale_everywhere_then_S(pilot, app, "ten_sided_wording", "criteria changed")
        assert "✔ ten_sided_wording" in _line(app, "ten_sided_wording")  # scored with the new threshold


async def test_a_written_whatif_in_live_mode_rescores_at_once(tmp_path: Path, make_app) -> None:
    from tui_eval.tui.screens.whatif import WhatIfScreen

    root = _hello(tmp_path)
    config = root / "hello_world" / "test_config.json"
    app = make_app(root, recording=None, live=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("W")
        await wait_until(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await settle(pilot)  # the results it shows arrive from the engine
        await pilot.press("m", *["minus"] * 10)
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("y")
        await wait_until(pilot, lambda: '"response_match_score": 0.3' in config.read_text())
        key = next(k for k in app.listing.all_keys() if k.eval_id == "ten_sided_wording")
        await wait_until(pilot, lambda: app.listing.case_status(key) == 1)  # re-scored: passed
        await settle(pilot)
        assert not app.listing.stale


async def test_saved_results_whose_files_changed_are_stale_from_the_start_also_under_w(
        tmp_path: Path, make_app) -> None:
    import io

    from textual.widgets import Static

    from tui_eval.cli import main
    from tui_eval.tui.screens.causes import CausesScreen

    root = _hello(tmp_path)
    folder = root / "hello_world"
    import asyncio

    code = await asyncio.to_thread(main, ["run", str(folder), str(folder / "hello_world.evalset.json"), "-q"],
                                   io.StringIO(), io.StringIO())
    assert code == 1
    _greet_with(root, "Hello there.")  # edited after the saved run
    app = make_app(root, recording=None)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: len(app.listing.stale) == 9)
        await pilot.press("right")
        assert "9 stale" in labels(app)[0]
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, CausesScreen))
        await wait_until(pilot, lambda: "⚠ 5 of these results are stale" in str(
            app.screen.query_one("#causes-status", Static).render()))


async def test_history_and_compare_mark_the_newest_runs_stale_results(tmp_path: Path, make_app) -> None:
    import asyncio
    import io

    from textual.widgets import DataTable, Static

    from tui_eval.cli import main
    from tui_eval.tui.screens.history import CompareScreen, HistoryScreen

    root = _hello(tmp_path)
    folder = root / "hello_world"
    for _ in range(2):
        code = await asyncio.to_thread(main, ["run", str(folder), str(folder / "hello_world.evalset.json"), "-q"],
                                       io.StringIO(), io.StringIO())
        assert code == 1
    _greet_with(root, "Hello there.")  # edited after both runs
    app = make_app(root, recording=None)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and len(app.screen.entries) == 2)
        # the newest run says how many of its results are stale; the older one is history
        runs = [str(app.screen.query_one(DataTable).get_row_at(i)[-1]) for i in range(2)]
        assert runs[0].endswith(" 9 stale") and "stale" not in runs[1], runs
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        status = str(app.screen.query_one("#compare-status", Static).render())
        assert "⚠ 9 of the later run's results are stale against the files now (agent code changed)" in status
        table = app.screen.query_one(DataTable)
        assert all(str(table.get_row_at(i)[1]).endswith("  stale") for i in range(table.row_count))
