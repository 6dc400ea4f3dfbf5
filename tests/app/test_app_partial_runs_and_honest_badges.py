"""The dashboard keeps older results through partial runs, says what it did not evaluate, never shows a stale
screen, fits 80x24 and pages huge files (first filed as issue 9, dashboard side)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import run_all_until, settle, wait_until
from tests.app.test_app_browse import labels, summary_text

HISTORY = Path("travel") / ".adk" / "eval_history"


def add_partial_run(workspace: Path, keep: list[str], stamp: float, *, cancelled: bool = False) -> None:
    """A newer saved run of travel covering only `keep` (as `F` or a cancelled run leaves one)."""
    src = workspace / HISTORY / "travel_travel_1767229200.tui-eval.json"
    data = json.loads(src.read_text())
    data["cases"] = [c for c in data["cases"] if c["eval_id"] in keep]
    names = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED"}
    data["counts"] = {name: sum(1 for c in data["cases"] if c["status"] == n) for n, name in names.items()}
    data["name"] = f"travel_travel_{int(stamp)}"
    data["run_id"] = "partial"
    data["creation_timestamp"] = stamp
    data["cancelled"] = cancelled
    (workspace / HISTORY / f"travel_travel_{int(stamp)}.tui-eval.json").write_text(json.dumps(data))


async def test_a_partial_run_never_hides_older_results(workspace: Path, make_app) -> None:
    # Two hours after the last full run, a failures-only run re-ran just book_flight.
    add_partial_run(workspace, ["book_flight"], 1767229200.0 + 7200)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # Every case keeps a result: the six from the full run, book_flight from the newer one.
        assert labels(app)[2].startswith("▶ travel (6) ✔2 ✘4")
        await pilot.press("down", "down", "enter", "down")
        text = summary_text(app)
        assert "Case book_flight" in text
        # The fixed clock is 2026-01-02 00:00; the partial run was saved 2026-01-01 03:00.
        assert "saved 2026-01-01 03:00 · 21h ago" in text
        await pilot.press("down", "down")
        text = summary_text(app)
        assert "Case hotel_rubrics" in text
        assert "saved 2026-01-01 01:00 · 23h ago" in text


async def test_a_cancelled_run_with_no_cases_hides_nothing(workspace: Path, make_app) -> None:
    add_partial_run(workspace, [], 1767229200.0 + 60, cancelled=True)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert labels(app)[2].startswith("▶ travel (6) ✔2 ✘4")


def big_folder(root: Path, cases: int) -> Path:
    """One eval file of `cases` one-turn cases, replayed from itself."""
    root.mkdir(parents=True)
    turn = {"user_content": {"role": "user", "parts": [{"text": "hi"}]},
            "final_response": {"role": "model", "parts": [{"text": "hello"}]}}
    data = {"eval_set_id": "big",
            "eval_cases": [{"eval_id": f"c{i:06d}", "conversation": [dict(turn, invocation_id=f"i{i}")]}
                           for i in range(cases)]}
    (root / "big.evalset.json").write_text(json.dumps(data))
    return root


async def test_ten_thousand_results_keep_the_file_counts_current(tmp_path: Path, make_app) -> None:
    """10,000 results reach the listing, and the file's counts follow each one (how fast: the folding of
    100,000 is timed by bench/tui_scale.py, never here)."""
    from tui_eval.schema.results import CaseResult, EvalStatus

    folder = big_folder(tmp_path / "big", 10_000)
    app = make_app(folder, recording=None, agent=f"replay:{folder / 'big.evalset.json'}")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        cat = app.listing
        path = cat.files[0]
        keys = [cat.key(path, c.eval_id) for c in cat.cases(path)]
        assert len(keys) == 10_000
        cat.counts(path)  # the file's counts are shown, so every result keeps them current
        results = [CaseResult(eval_set_id="big", eval_id=k.eval_id,
                              status=EvalStatus.PASSED if i % 4 else EvalStatus.FAILED) for i, k in enumerate(keys)]
        for key, result in zip(keys, results):
            cat.set_result(key, result, "this session")
        assert cat.counts(path)[1] == 7_500 and cat.counts(path)[2] == 2_500
        for key in keys[:100]:
            cat.set_result(key, None)
        assert cat.counts(path)[2] == 2_475 and cat.counts(path)[None] == 100


async def test_q_during_a_run_asks_first(tmp_path: Path, make_app) -> None:
    from tests.app.conftest import slow_agent_folder
    from tui_eval.tui.screens.confirm import ConfirmScreen

    # The run must outlive every step below, however slow a loaded machine makes them: with 40 cases
    # (2.5 s at 8 at a time) it sometimes finished first, and then `n` found no run going on and `y`
    # found nothing to cancel. 1,000 cases take 60 s; cancelling still stops within one 0.5 s turn.
    root = slow_agent_folder(tmp_path / "slowws", cases=1000, delay=0.5)
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await run_all_until(pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "finished cases are kept" in str(app.screen.query_one("#confirm-body").render())
        # No: the run goes on.
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert app.is_running and app.run_state.active
        # Yes: the run is cancelled and the app exits.
        await pilot.press("q")
        await pilot.pause()
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await pilot.pause()
        assert app.run_state.cancel_requested
    assert app.return_code == 0


async def test_a_pass_with_metrics_not_evaluated_says_so(workspace: Path, make_app) -> None:
    # judge_down passed on its two deterministic metrics; both judge metrics were not evaluated.
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter")
        lines = labels(app)
        judge_down = next(line for line in lines if "judge_down" in line)
        assert "2/4 evaluated" in judge_down
        hotel = next(line for line in lines if "hotel_rubrics" in line)
        assert "evaluated" not in hotel  # passed on all four
        app.main.browser.select_key(app.listing.key(app.listing.files[2], "judge_down"))
        await pilot.pause()
        assert "passed · 2 of 4 metrics evaluated" in summary_text(app)


async def test_a_search_with_no_match_says_so(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"zzzz", "enter")
        await pilot.pause(0.3)
        text = summary_text(app)
        assert "No case matches (search 'zzzz')" in text
        assert "No eval files found" not in text


async def test_s_without_sentence_labels_says_why(workspace: Path, make_app) -> None:
    from tui_eval.tui.screens.turn import TurnScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # judge_down's first turn: hallucinations_v1 was not evaluated (the judge was down).
        await pilot.press("down", "down", "enter", *["down"] * 5, "enter", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TurnScreen) and app.screen.key.eval_id == "judge_down"
        await pilot.press("s")
        await pilot.pause()
        messages = [str(n.message) for n in app._notifications]
        assert any(m.startswith("No sentence labels: ") for m in messages), messages


async def test_run_end_shrinks_the_panel_and_names_metrics_not_evaluated(workspace: Path, make_app) -> None:
    from tui_eval.tui.widgets.run_panel import MetricBar

    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert app.run_state.phase == "finished"
        # No judge credentials in tests: the judge bars filled up without one verdict.
        bars = {bar.metric: bar for bar in app.main.query(MetricBar)}
        assert bars["hallucinations_v1"].has_class("-not-evaluated")
        assert not bars["tool_trajectory_avg_score"].has_class("-not-evaluated")
        status = str(app.main.query_one("#run-status").render())
        assert "not evaluated: " in status and "hallucinations_v1" in status
        assert "tool_trajectory_avg_score" not in status
        # One line: the bars are hidden once the run is over.
        assert not app.main.query_one("#metric-bars").display or \
            app.main.query_one("#metric-bars").region.height == 0


def test_the_status_line_never_reads_0_of_0() -> None:
    from tui_eval.tui.progress import RunState
    from tui_eval.tui.widgets.run_panel import RunPanel

    snap = RunState("run all").drain()
    line = str(RunPanel._status_line(snap))
    assert "0/0" not in line and "starting" in line


async def test_deleting_a_turn_redraws_the_turn_view_at_once(workspace: Path, make_app) -> None:
    from tui_eval.tui.screens.turn import TurnScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        path = workspace / "travel" / "travel.evalset.json"
        key = app.listing.key(path.resolve(), "book_flight")
        app.open_turn(key, 0)
        await pilot.pause()
        assert isinstance(app.screen, TurnScreen)
        await pilot.press("d", "y")
        await settle(pilot)
        # The file has one turn left, the old result (scored on two) is gone, and the view shows that turn.
        assert len(app.listing.case(key).conversation) == 1
        assert app.listing.result(key) is None
        screen = app.screen
        assert isinstance(screen, TurnScreen)
        expected, actual, n = screen._turns()
        assert n == 1 and actual is None
        assert expected is not None and expected.user_content.text == "Book the cheapest one."
        assert "turn 1/1" in str(screen.query_one("#turn-title").render())
        # The tree's line for the case redraws too: no stale status beside it.
        line = app.main.browser._case_label(key).plain
        assert line.startswith("· book_flight"), line


async def test_history_marks_partial_runs_and_compare_says_not_run(workspace: Path, make_app) -> None:
    from textual.widgets import DataTable

    from tests.app.test_app_history import open_history, rows
    from tui_eval.tui.screens.history import CompareScreen

    add_partial_run(workspace, ["book_flight"], 1767229200.0 + 7200)
    add_partial_run(workspace, [], 1767229200.0 + 3600, cancelled=True)
    app = make_app(workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        listed = rows(table)
        # (the run column comes last, after "took")
        assert listed[0][1] == "2026-01-01 03:00:00" and listed[0][-1].startswith("replay selection 1/6 ")
        assert listed[1][1] == "2026-01-01 02:00:00" and listed[1][-1].startswith("replay cancelled 0/6 ")
        full = [r for r in listed if r[2] == "travel" and r[1].endswith("01:00:00")]
        # A full run is not marked as partial (this saved record was produced by a replay: it says so).
        assert full and full[0][-1].startswith("replay ") and not any(
        word in full[0][-1] for word in ("selection", "partial", "cancelled"))
        assert "selection" not in full[0][-1] and "cancelled" not in full[0][-1]
        # Compare the partial run with the cancelled one before it: the cases it did not run are "not run".
        table.move_cursor(row=0)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        kinds = [r[0] for r in rows(app.screen.query_one(DataTable))]
        assert "regression" not in kinds and "removed" not in kinds
        assert kinds == ["not run"]


async def test_80_columns_keep_help_quit_and_the_metric_filter(workspace: Path, make_app) -> None:
    from textual.widgets import Footer

    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # The footer's first keys are help and quit, so they survive the cut at 80 columns.
        keys = [k.key for k in app.main.query_one(Footer).query("FooterKey")]
        assert keys[:2] == ["question_mark", "q"], keys
        await pilot.press("m")
        await pilot.pause()
        bar = str(app.main.query_one("#topbar").render())
        wanted = "filter: metric tool_trajectory_avg_score"
        assert wanted in bar and bar.index(wanted) + len(wanted) <= 80, bar


async def test_capital_a_and_d_in_the_browser_work_or_say_where(workspace: Path, make_app) -> None:
    from tui_eval.tui.screens.confirm import ConfirmScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # On an eval file: nothing to accept, and the app says where A works.
        await pilot.press("down", "down", "A")
        await pilot.pause()
        messages = [str(n.message) for n in app._notifications]
        assert any("A accepts a whole case: highlight a case" in m for m in messages), messages
        # On a turn of book_flight: D asks to delete the whole case.
        await pilot.press("enter", "down", "enter", "down", "D")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Delete case book_flight" in str(app.screen.query_one("#confirm-body").render())
        await pilot.press("n")
        await pilot.pause()
        # On the case itself: A asks to accept all its actual turns.
        await pilot.press("up", "A")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "actual turns of case book_flight" in str(app.screen.query_one("#confirm-body").render())


async def test_a_huge_file_shows_its_cases_a_page_at_a_time(tmp_path: Path, make_app) -> None:
    from tui_eval.tui.widgets.browser import PAGE, CaseEntry, MoreEntry

    folder = big_folder(tmp_path / "big", PAGE + 10)
    app = make_app(folder, recording=None, agent=f"replay:{folder / 'big.evalset.json'}")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        browser = app.main.browser
        await pilot.press("enter")
        await pilot.pause()
        file_node = browser.root.children[0]
        # One page of case nodes, then a leaf that stands for the rest.
        assert len(file_node.children) == PAGE + 1
        more = file_node.children[-1]
        assert isinstance(more.data, MoreEntry)
        assert "10 more cases" in browser.render_label(more, browser.rich_style, browser.rich_style).plain
        # Selecting a case beyond the page shows the next page; enter on the leaf would do the same.
        last = app.listing.key(app.listing.files[0], f"c{PAGE + 9:06d}")
        assert browser.select_key(last)
        assert len(file_node.children) == PAGE + 10
        assert isinstance(browser.cursor_node.data, CaseEntry) and browser.cursor_node.data.key == last


def test_tool_calls_wrap_between_arguments() -> None:
    from textual.content import Content

    from tui_eval.tui.text import call_signature

    sig = call_signature("book_flight", {"origin": "Paris", "date": "5 May 2026", "note": "window seat please"})
    lines = [line.plain.strip() for line in Content(sig).wrap(30)]
    assert lines == ['book_flight(origin="Paris",', 'date="5\xa0May\xa02026",', 'note="window\xa0seat\xa0please")']
