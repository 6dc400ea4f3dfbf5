"""Runs: everything, a file, a case, the failures; per-metric progress; cancel keeps what finished."""

from __future__ import annotations

import time
from pathlib import Path

from tests.app.conftest import full_result, run_all_until, settle, slow_agent_folder
from tui_eval.tui.widgets.browser import EvalBrowser
from tui_eval.tui.widgets.run_panel import MetricBar, RunPanel
from textual.widgets import ProgressBar

SESSION = "this session"


def bars(app) -> dict[str, tuple[float, float | None]]:
    """Each metric bar's progress and total (on its ProgressBar, mounted or about to be)."""
    return {bar.metric: (bar.bar.progress, bar.bar.total) for bar in app.main.query(MetricBar)}


async def test_run_everything_fills_one_bar_per_metric(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        state = app.run_state
        assert state is not None and state.phase == "finished"
        assert state.cases_total == 8 and state.cases_done == 8
        # travel has four metrics over 6 cases (7 turns; agent_crash has none scored), smalltalk two.
        progress = bars(app)
        assert set(progress) == {"tool_trajectory_avg_score", "response_match_score", "hallucinations_v1",
                                 "rubric_based_final_response_quality_v1"}
        for done, total in progress.values():
            assert done == total and total > 0
        status = str(app.main.query_one("#run-status").render())
        assert "8/8 cases" in status and "finished" in status
        # The session's results replace the saved ones; judges have no credentials here.
        key = app.listing.key(workspace / "travel" / "travel.evalset.json", "weather_paris")
        assert app.listing.results.origin(key) == SESSION
        halluc = (await full_result(pilot, key)).metric("hallucinations_v1")
        assert halluc.status == 3 and "credentials" in (halluc.reason or "")
        # History was written beside the eval file (replay agent).
        assert len(list((workspace / "travel" / ".adk" / "eval_history").glob("*.tui-eval.json"))) == 3


async def test_run_selected_case_only(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down")  # travel > book_flight
        await pilot.press("r")
        await settle(pilot)
        assert app.run_state.cases_total == 1
        key = app.listing.key(workspace / "travel" / "travel.evalset.json", "book_flight")
        assert app.listing.results.origin(key) == SESSION
        other = app.listing.key(workspace / "travel" / "travel.evalset.json", "weather_paris")
        assert app.listing.results.origin(other).startswith("saved")


async def test_run_a_file_and_then_the_failures(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # smalltalk
        await pilot.press("r")
        await settle(pilot)
        assert app.run_state.cases_total == 2
        failed = app.listing.failed_keys()
        assert failed
        await pilot.press("F")
        await settle(pilot)
        assert app.run_state.cases_total == len(failed)
        assert app.run_state.label == f"Run {len(failed)} failed"


async def test_cancel_keeps_finished_cases_and_ui_stays_responsive(tmp_path: Path, make_app) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=40, delay=0.5)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # While it runs, keys are handled at once: the tree moves, the filter toggles.
        await run_all_until(pilot)
        tree = app.main.query_one(EvalBrowser)
        before = tree.cursor_line
        await pilot.press("enter", "down")
        assert tree.cursor_line == before + 1
        assert app.run_state.active, (app.run_state.phase, app.run_state.errors)
        await pilot.press("x")
        await settle(pilot)
        state = app.run_state
        assert state.phase == "cancelled"
        assert 1 <= state.cases_done < 40
        finished = [k for k in app.listing.results.keys() if app.listing.results.origin(k) == SESSION]
        assert len(finished) == state.cases_done
        assert "cancelled" in str(app.main.query_one("#run-status").render())
        assert app.main.query_one(RunPanel).has_class("-cancelled")


async def test_runs_refuse_to_overlap(tmp_path: Path, make_app) -> None:
    root = slow_agent_folder(tmp_path / "slowws", cases=4, delay=0.3)
    app = make_app(root, recording=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.engine.start_run("first", files=list(app.listing.files))
        assert not app.engine.start_run("second", files=list(app.listing.files))
        await settle(pilot)
        assert app.run_state.label == "first" and app.run_state.cases_done == 4


async def test_no_agent_reports_an_error_instead_of_running(workspace: Path, make_app) -> None:
    app = make_app(workspace, recording=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        status = str(app.main.query_one("#run-status").render())
        assert "no agent for" in status
        assert app.run_state.cases_done == 0


async def test_a_misspelt_criterion_is_an_error_on_screen_not_a_dropped_metric(workspace: Path, make_app) -> None:
    """As `tui-eval run` (exit 2): a criterion naming no metric refuses the run and says which, with a
    did-you-mean; the other metrics do not run as if nothing were wrong."""
    config = workspace / "travel" / "test_config.json"
    config.write_text('{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_scor": 0.5}}')
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down")  # travel > book_flight
        await pilot.press("r")
        await settle(pilot)
        status = str(app.main.query_one("#run-status").render())
        assert "unknown metric(s) response_match_scor (did you mean 'response_match_score'?)" in status
        assert app.run_state.cases_done == 0
        key = app.listing.key(workspace / "travel" / "travel.evalset.json", "book_flight")
        assert app.listing.results.origin(key).startswith("saved")



async def test_the_run_panel_bars_hold_the_progress_they_were_given_before_they_mount() -> None:
    # The run panel makes a bar the first time a metric shows up in a snapshot and sets its progress at
    # once. The bar used to keep that progress aside until its Mount handler ran; a test (or a screen) that
    # looked in between, as `settle` could under load right after the last pull, saw an empty bar.
    from textual.app import App, ComposeResult

    from tui_eval.schema.results import EvalStatus
    from tui_eval.tui.progress import RunSnapshot

    snap = RunSnapshot(version=1, phase="finished", label="run all", cases_total=2, cases_done=2,
                       counts={EvalStatus.PASSED: 2, EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 0},
                       metric_done={"m1": 2, "m2": 3}, metric_total={"m1": 5, "m2": 3},
                       metric_evaluated={"m1": 2, "m2": 0}, running=set(), errors=[], saved=[])

    class Panel(App[None]):
        def compose(self) -> ComposeResult:
            yield RunPanel()

    app = Panel()
    async with app.run_test() as pilot:
        panel = app.query_one(RunPanel)
        panel.show(snap)
        # Not one pause yet: the bars may not have mounted, their progress is there all the same.
        made = {bar.metric: bar for bar in panel.query(MetricBar)}
        assert {m: (b.bar.progress, b.bar.total) for m, b in made.items()} == {"m1": (2, 5), "m2": (3, 3)}
        assert made["m2"].has_class("-not-evaluated") and not made["m1"].has_class("-not-evaluated")
        await pilot.pause()
        for bar in made.values():
            assert bar.query_one(ProgressBar) is bar.bar
        assert made["m2"].query_one(".metric-note").display and not made["m2"].bar.display
        assert not made["m1"].query_one(".metric-note").display and made["m1"].bar.display
