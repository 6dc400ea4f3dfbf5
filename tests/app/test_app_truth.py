"""Issue 19: what the dashboard shows beside a case is true (a real score, never a count or seconds),
the tree sorts by it and by duration, and replays stay apart from the agent's own results."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.app.conftest import full_result, settle, wait_until
from tests.app.test_app_browse import labels, summary_text, visible_cases

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


def _demo(tmp_path: Path) -> Path:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return demo


def _case_line(app, eval_id: str) -> str:
    return next(line for line in labels(app) if f" {eval_id}  " in line or line.endswith(f" {eval_id}"))


async def test_the_number_beside_a_case_is_its_deciding_score_never_a_count_or_seconds(tmp_path: Path, make_app) -> None:
    app = make_app(_demo(tmp_path), recording=None)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("right")  # hello_world's cases
        # `greeting` passes with no tool calls: its tool_call_count_v1 is 0 and it took ~0.1 s; both
        # used to be the number beside it. Both its scored metrics are 1.00.
        assert _case_line(app, "greeting").endswith("✔ greeting  1.00")
        assert _case_line(app, "roll_six_sided").endswith("✔ roll_six_sided  1.00")
        # A failed case shows the failing metric's score (ten_sided_wording fails on wording only).
        wording = await full_result(pilot, next(k for k in app.listing.all_keys() if k.eval_id == "ten_sided_wording"))
        response = wording.metric("response_match_score")
        assert response.status == 2
        assert _case_line(app, "ten_sided_wording").endswith(f"✘ ten_sided_wording  {response.score:.2f}")
        # The summary names the metric the tree's number comes from.
        await pilot.press("down")
        assert "tool_trajectory_avg_score 1.00 / 1 ◂" in summary_text(app)


async def test_an_informational_metric_under_the_filter_shows_its_unit(tmp_path: Path, make_app) -> None:
    app = make_app(_demo(tmp_path), recording=None)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        app.screen.set_metric("tool_call_count_v1")
        await pilot.pause()
        line = _case_line(app, "greeting")
        assert line.endswith("greeting  0 calls"), line
        app.screen.set_metric("invocation_duration_v1")
        await pilot.pause()
        assert _case_line(app, "greeting").endswith(" s"), _case_line(app, "greeting")


async def test_s_sorts_the_tree_by_score_then_by_duration_then_back(tmp_path: Path, make_app) -> None:
    app = make_app(_demo(tmp_path), recording=None)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("right")  # hello_world's cases
        in_file = visible_cases(app)
        hello = [k for k in app.listing.all_keys() if k.eval_id in in_file]
        scores = {k.eval_id: app.listing.case_score(k) for k in hello}
        await pilot.press("s")
        await pilot.pause()
        assert app.screen.browser.border_title == "Eval sets · worst score first"
        by_score = visible_cases(app)
        assert sorted(by_score) == sorted(in_file) and by_score != in_file
        assert [scores[c] for c in by_score] == sorted(scores.values())
        # The failed cases (their failing metric's score) come before the passed ones.
        statuses = [int((await full_result(pilot, next(k for k in hello if k.eval_id == c))).status) for c in by_score]
        assert statuses == sorted(statuses, reverse=True)
        await pilot.press("s")
        await pilot.pause()
        assert app.screen.browser.border_title == "Eval sets · slowest first"
        walls = {k.eval_id: (await full_result(pilot, k)).wall_seconds for k in hello}
        by_time = visible_cases(app)
        assert [walls[c] for c in by_time] == sorted(walls.values(), reverse=True)
        for case in by_time:  # the number is now the case's wall time, with its unit
            line = next(line for line in labels(app) if f" {case}  " in line)
            assert f" {case}  {walls[case]:.2f}s" in line, line
        await pilot.press("s")
        await pilot.pause()
        assert visible_cases(app) == in_file
        assert app.screen.browser.border_title == "Eval sets"


async def test_the_trajectory_diff_keeps_the_files_order_and_reads_a_swap_as_one_move(workspace: Path, make_app) -> None:
    """transfer_order expects lookup_contact, transfer, get_balance; the agent called get_balance first."""
    from tests.app.test_app_turn import grid_text, open_turn, text_of

    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "transfer_order")
        for match_type, passed in (("EXACT", False), ("IN_ORDER", False), ("ANY_ORDER", True)):
            cells = grid_text(screen)[2:]
            left = [c.split("(")[0].split()[-1] for c in cells[0::2] if c]
            right = [c.split("(")[0].split()[-1] for c in cells[1::2] if c]
            assert left == ["lookup_contact", "transfer", "get_balance"], (match_type, cells)
            assert right == ["get_balance", "lookup_contact", "transfer"], (match_type, cells)
            head = text_of(screen, "#trajectory-head")
            assert f"[{match_type}" in head, head
            assert "missing" not in head and "missing" not in " ".join(cells), (match_type, head, cells)
            if passed:
                assert all(c.startswith("✔") for c in cells if c)
                assert "3 matched" in head
            else:
                assert "2 matched, get_balance moved from 3 to 1" in head, head
                assert "↕ get_balance() moved from 3 to 1" in cells
                assert "↕ get_balance() moved to 1" in cells
            await pilot.press("m")


async def _cli(*args: str) -> tuple[int, str]:
    """The CLI as a user runs it (its own event loop, so on a thread beside the test's)."""
    import asyncio
    import io

    from tui_eval.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(main, list(args), out, err)
    return code, out.getvalue() + err.getvalue()


async def test_a_replay_never_becomes_the_agents_latest_status(tmp_path: Path, make_app, monkeypatch) -> None:
    """The agent fails 5 of hello_world's 9 cases; a replay of the eval file's own turns then passes all 9
    and lands in the same history folder. The tree, history, compare and report keep them apart."""
    import orjson

    from tui_eval.engine.store import HISTORY_DIR, list_history

    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    demo = _demo(tmp_path)
    hello = demo / "hello_world"
    evalset = hello / "hello_world.evalset.json"
    code, text = await _cli("run", str(hello), str(evalset))
    assert code == 1, text
    code, text = await _cli("run", f"replay:{evalset}", str(evalset))
    assert code == 0, text
    entries = list_history(hello / HISTORY_DIR)
    assert [e.replay for e in entries] == [True, False]  # newest first: the replay is the latest record
    replay_head = orjson.loads(entries[0].path.read_bytes())
    source = replay_head["source"]
    assert source["kind"] == "replay" and source["replay_file"] == str(evalset.resolve())
    assert source["agent_dir"] is None and source["judge_credentials"] is False
    agent_source = orjson.loads(entries[1].path.read_bytes())["source"]
    assert agent_source["kind"] == "agent" and agent_source["agent_dir"] == str(hello.resolve())
    assert agent_source["replay_file"] is None and agent_source["models"] == []  # the offline policy

    # `tui-eval report FOLDER` reports the agent's run, not the newer replay.
    code, report = await _cli("report", str(hello))
    assert code == 0, report
    assert "**4 of 9 case results passed**" in report and "all passed" not in report
    assert "Source: agent hello\\_world" in report
    code, report = await _cli("report", str(entries[0].path))
    assert "**replay: all passed**" in report and "replay of hello_world.evalset.json (not an agent run)".replace("_", "\\_") in report

    app = make_app(demo, recording=None)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        # The tree keeps the agent's own latest status.
        assert labels(app)[0].startswith("▶ hello_world (9) ✔4 ✘5"), labels(app)[0]
        await pilot.press("h")
        await settle(pilot)
        from textual.widgets import DataTable

        table = app.screen.query_one(DataTable)
        # The pass-rate trend is the agent's: the replay's 9/9 is not one of its points.
        rates = {str(row.query_one(".trend-name").render()).strip(): row.values for row in app.screen.query(".trend-row")}
        assert rates == {"hello_world": [4 / 9]}, rates
        runs = [str(table.get_row_at(r)[7]) for r in range(table.row_count)]
        assert sum(r.startswith("replay ") for r in runs) == 1, runs
        newest = next(r for r in range(table.row_count) if str(table.get_row_at(r)[7]).startswith("replay "))
        table.move_cursor(row=newest)
        await pilot.press("enter")
        await settle(pilot)
        from textual.widgets import Static

        status = str(app.screen.query_one("#compare-status", Static).render())
        assert "⚠ the later run is a replay of recorded turns, the other ran the agent" in status, status


async def test_after_accept_the_new_expected_shows_and_the_old_result_is_stale_until_rerun(workspace: Path, make_app) -> None:
    from tests.app.test_app_turn import grid_text, open_turn, text_of

    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "transfer_order")  # fails: the agent called get_balance first
        key = screen.key
        assert "✘" in app.main.browser._case_label(key).plain
        await pilot.press("a", "y")  # accept the agent's turn as the expected one
        await settle(pilot)
        # The expected calls are the file's new ones at once, listed without the old verdicts.
        head = text_of(screen, "#trajectory-head")
        assert "stale: the expected calls changed since this result" in head, head
        left = [c for c in grid_text(screen)[2::2] if c]
        assert [c.split("(")[0].split()[-1] for c in left] == ["get_balance", "lookup_contact", "transfer"]
        assert "⚠ stale" in text_of(screen, "#turn-response")
        # The tree and the summary say the ✘ beside the case is the old expected's.
        assert app.main.browser._case_label(key).plain.endswith("  stale")
        await pilot.press("escape")
        app.main.browser.select_key(key)
        await pilot.pause()
        assert "⚠ stale: eval case changed since it ran" in summary_text(app)
        # Running it again clears the mark: the recording now matches the file.
        await pilot.press("r")
        await settle(pilot)
        line = app.main.browser._case_label(key).plain
        assert "stale" not in line and line.startswith("✔ transfer_order"), line
        assert "stale" not in summary_text(app)


async def test_the_summary_starts_at_its_top_for_each_selection(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down")  # travel > book_flight: a summary taller than its pane
        scroll = app.main.query_one("#summary-scroll")
        assert scroll.max_scroll_y > 0
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("down")
        await pilot.pause()
        assert scroll.scroll_y == 0


async def test_a_file_not_loaded_notice_goes_once_the_file_loads_again(workspace: Path, make_app) -> None:
    import json

    from tests.app.test_app_live import start

    path = workspace / "smalltalk" / "smalltalk.evalset.json"
    good = path.read_text()
    app = make_app(workspace, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(app, pilot)

        def notices() -> list[str]:
            return [n.title for n in app._notifications]

        path.write_text('{"eval_set_id": "smalltalk", "eval_cases": [')
        await wait_until(pilot, lambda: "File not loaded" in notices())
        import time

        shown = time.monotonic()
        path.write_text(json.dumps(json.loads(good)))
        await wait_until(pilot, lambda: "File not loaded" not in notices(), timeout=7.0)
        # Withdrawn because the file loaded, not because its 8 s timeout ran out.
        assert time.monotonic() - shown < 7.5


async def test_comparing_runs_of_two_different_eval_sets_warns(workspace: Path, make_app) -> None:
    from textual.widgets import DataTable, Static

    from tests.app.test_app_history import open_history, rows
    from tui_eval.tui.screens.history import CompareScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        listed = rows(table)
        travel = next(i for i, r in enumerate(listed) if r[2] == "travel")
        smalltalk = next(i for i, r in enumerate(listed) if r[2] == "smalltalk")
        table.move_cursor(row=travel)
        await pilot.press("space")
        table.move_cursor(row=smalltalk)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        status = str(app.screen.query_one("#compare-status", Static).render())
        assert "⚠ these are runs of two different eval sets (travel and smalltalk)" in status \
            or "⚠ these are runs of two different eval sets (smalltalk and travel)" in status, status


async def test_flaky_is_a_status_in_the_tree_the_filter_the_counts_and_the_history(tmp_path: Path, make_app) -> None:
    from textual.widgets import DataTable, Static

    from tests.app.test_app_history import rows
    from tests.app.test_app_insight import flaky_app

    app, _root = flaky_app(make_app, tmp_path, num_runs=4)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        # 3 cases run 4 times each: the count says case runs, not 12 cases.
        assert "12/12 case runs (3 cases × 4)" in str(app.main.query_one("#run-status", Static).render())
        await pilot.press("enter")
        lines = labels(app)
        assert "~1 flaky" in lines[0], lines[0]
        flip = next(line for line in lines if " flip" in line)
        assert flip.startswith("▶ ~ flip") and "2/4 passed" in flip, flip
        assert all(not line.startswith("▶ ~") for line in lines if " flip" not in line[:10])
        # f: failed only, then flaky only, then everything.
        await pilot.press("f")
        await pilot.pause()
        assert app.listing.filter.failed_only
        await pilot.press("f")
        await pilot.pause()
        assert app.listing.filter.flaky_only and visible_cases(app) == ["flip"]
        await pilot.press("f")
        await pilot.pause()
        assert not app.listing.filter.active
        assert [len(app.listing.visible_cases(p)) for p in app.listing.files] == [3]
        # The history says which repetition each record is.
        await pilot.press("h")
        await settle(pilot)
        listed = rows(app.screen.query_one(DataTable))
        assert [r[7].split(" ")[:4] for r in listed] == [["run", str(k), "of", "4"] for k in (1, 2, 3, 4)]


async def test_trends_draw_scores_on_0_to_1_and_captions_count_the_marks(workspace: Path, make_app) -> None:
    from tests.app.test_app_insight import shown_trends
    from tui_eval.tui.widgets.trends import CaseTrendRow, CaseTrends, bars

    # The scale is fixed: a constant 1.00 is a full bar, a constant 0.50 a half one, 0 the lowest.
    assert bars([1.0, 1.0, 1.0]) == "███" and bars([0.5, 0.5]) == "▅▅" and bars([0.0, 1.0]) == "▁█"
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down")  # travel > book_flight, two saved runs
        trends = app.main.query_one(CaseTrends)
        await wait_until(pilot, lambda: "Trend ✔✘" in str(trends.query_one("#trends-title").render()))
        title = str(trends.query_one("#trends-title").render())
        assert title.endswith("✔✘ last 2 runs of it"), title
        from rich.console import Console

        def drawn(row: CaseTrendRow) -> str:
            console = Console(width=80, record=True, file=open("/dev/null", "w"))
            console.print(row.render())
            return console.export_text().strip()

        rows = {row.label.strip(): drawn(row) for row in trends.query(CaseTrendRow) if row.display}
        # hallucinations_v1 scored 1.00 in both runs: two full bars (Textual's min..max scale drew ▁▁).
        assert rows["hallucination…"] == "hallucination… ██ 1.00 (2)", rows
        # Scored metrics before informational ones.
        names = list(shown_trends(trends))
        assert names[:2] == ["tool_trajecto…", "response_matc…"], names


async def test_every_screen_footer_keeps_help_and_quit_at_80x24(workspace: Path, make_app) -> None:
    from tui_eval.tui.textual_private import FooterKey

    from tests.app.test_app_turn import open_turn

    def footer_keys(app) -> list[str]:
        keys = [k for k in app.screen.query(FooterKey) if "-command-palette" not in k.classes]
        # Only the keys the 80-column footer has room for (the rest are cut off at its right end).
        return [k.key for k in keys if k.region.right <= 80 - len("▏^p palette") and k.region.width > 0]

    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_turn(app, pilot, "book_flight", 1)
        await pilot.pause(0.2)
        assert footer_keys(app)[:2] == ["question_mark", "q"], footer_keys(app)
        await pilot.press("escape", "h")
        await settle(pilot)
        await pilot.pause(0.2)
        assert footer_keys(app)[:2] == ["question_mark", "q"], footer_keys(app)


def test_a_cut_label_ends_after_a_whole_word() -> None:
    from tui_eval.tui.text import one_line

    text = "Find me a flight from Paris to Rome on the fifth of May please"
    assert one_line(text, 30) == "Find me a flight from Paris…"
    assert one_line("x" * 40, 10) == "x" * 9 + "…"  # one long word: cut where it must


def test_without_colour_the_word_diff_marks_what_changed(monkeypatch) -> None:
    from tui_eval.tui.text import word_diff

    monkeypatch.setenv("NO_COLOR", "1")
    left, right = word_diff("I rolled a 12-sided die and got 5.", "I rolled a 6-sided die and got 3.")
    assert left.plain == "I rolled a [-12-sided-] die and got [-5.-]"
    assert right.plain == "I rolled a {+6-sided+} die and got {+3.+}"
    monkeypatch.delenv("NO_COLOR")
    left, right = word_diff("got 5", "got 3")
    assert (left.plain, right.plain) == ("got 5", "got 3")  # with colour: styles only, the text as it is


def _big_reply_folder(root: Path, size: int) -> tuple[Path, str]:
    """One case whose recorded reply is `size` characters of words (issue 23 item 11: a huge one froze the UI)."""
    import json

    folder = root / "big"
    folder.mkdir(parents=True)
    words = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]

    def case(reply: str) -> dict:
        return {"eval_id": "huge", "conversation": [{
            "invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": "say a lot"}]},
            "final_response": {"role": "model", "parts": [{"text": reply}]},
            "intermediate_data": {"tool_uses": [], "tool_responses": [], "intermediate_responses": []}}]}

    (folder / "big.evalset.json").write_text(json.dumps({"eval_set_id": "big", "eval_cases": [case("short")]}))
    (folder / "big.recorded.json").write_text(json.dumps({"eval_set_id": "big", "eval_cases": [case(words)]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    return folder, words


async def test_a_huge_reply_is_cut_in_the_turn_view_and_v_shows_all_of_it(tmp_path: Path, make_app) -> None:
    from textual.widgets import Log, Static

    from tui_eval.tui.screens.fulltext import FullTextScreen
    from tui_eval.tui.screens.turn import TurnScreen
    from tui_eval.tui.text import CLIP_CHARS

    folder, words = _big_reply_folder(tmp_path, 3_000_000)
    app = make_app(folder, recording="big.recorded.json")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        key = app.listing.all_keys()[0]
        assert len((await full_result(pilot, key)).actual[0].final_response.text) == len(words)
        app.open_turn(key, 0)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TurnScreen)
        response = str(screen.query_one("#turn-response", Static).render())
        # Laid out: a head of the reply, never the 3 MB; the cut says so and how to see the rest.
        assert len(response) < CLIP_CHARS + 2000
        assert "… cut for the screen (actual 3,000,000 characters): v shows the whole text" in response
        assert screen.check_action("full_text", ()) is True
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, FullTextScreen)
        log = app.screen.query_one(Log)
        lines = list(log.lines)
        assert lines[0] == "── actual (3,000,000 characters) ──"
        assert "".join(lines[1:]) == words  # all of it, in 2,000-character lines
        await pilot.press("escape")
        assert isinstance(app.screen, TurnScreen)


async def test_search_finds_responses_tools_and_arguments_and_y_copies_json(workspace: Path, make_app) -> None:
    import json

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        main = app.main
        for needle, expected in (("get_balance", ["transfer_order"]),      # a tool name
                                 ("alice-01", ["transfer_order"]),         # an argument value
                                 ("QX7T2", ["book_flight", "agent_crash"])):  # words of responses only
            main._set_query(needle)
            await pilot.pause()
            assert visible_cases(app) == expected, (needle, visible_cases(app))
        main.action_clear_filters()
        await pilot.pause()
        key = app.listing.key(app.listing.root / "travel" / "travel.evalset.json", "transfer_order")
        main.browser.select_key(key)
        await pilot.press("y")
        copied = json.loads(app.clipboard)
        assert copied["eval_id"] == "transfer_order" and copied["conversation"][0]["invocation_id"]
        await pilot.press("enter", "down", "y")  # the case's first turn: the agent's answer
        turn = json.loads(app.clipboard)
        assert [c["name"] for c in turn["intermediate_data"]["tool_uses"]][0] == "get_balance"


async def test_the_turn_view_shows_tool_responses_and_the_event_trace_on_demand(workspace: Path, make_app) -> None:
    import json

    from tests.app.test_app_turn import open_turn, text_of

    recorded = json.loads((workspace / "all.recorded.json").read_text())
    case = next(c for c in recorded["eval_cases"] if c["eval_id"] == "weather_paris")
    data = case["conversation"][0]["intermediate_data"]
    responses = {r["name"]: r["response"] for r in data.get("tool_responses", [])}
    assert responses, "the recording keeps what the tools returned"
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        screen = await open_turn(app, pilot, "weather_paris")
        shown = text_of(screen, "#turn-responses")
        for name, response in responses.items():
            line = next(line for line in shown.splitlines() if line.startswith(f"{name}("))
            assert json.dumps(response, ensure_ascii=False, sort_keys=True)[:20] in line, (line, response)
        assert "folded: e shows them" in text_of(screen, "#turn-trace")
        await pilot.press("e")
        trace = text_of(screen, "#turn-trace").splitlines()
        assert any(line.startswith("calls get_forecast(") for line in trace), trace
        assert any(line.startswith("  ← get_forecast: ") for line in trace), trace
        assert trace[-1].startswith("final: ")


def test_a_keymap_value_that_is_not_a_key_is_reported(tmp_path: Path) -> None:
    from tui_eval.tui.keymap import load_keymap

    path = tmp_path / "keymap.toml"
    path.write_text('run.all = "ctlr+r"\nrun.failed = "ctrl+f,G"\n"filter.search" = "slash"\n"app.help" = "foo"\n',
                    encoding="utf-8")
    keymap = load_keymap(path)
    assert keymap.bindings == {"run.failed": "ctrl+f,G", "filter.search": "slash"}
    assert len(keymap.problems) == 2
    assert "run.all: 'ctlr+r' is not a key" in keymap.problems[0]
    assert "app.help: 'foo' is not a key" in keymap.problems[1]


async def test_an_unknown_keymap_id_gets_a_did_you_mean_and_help_lists_ids(
        workspace: Path, make_app, monkeypatch, tmp_path: Path) -> None:
    from tui_eval.tui.screens.help import HelpScreen

    keymap = tmp_path / "keys.toml"
    keymap.write_text('run.al = "g"\n', encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        found = [n.message for n in app._notifications if "unknown binding ids" in n.message]
        assert found and "run.al (did you mean run.all?)" in found[0], found
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = str(app.screen.query_one("#help-body Static").render()).splitlines()
        assert any(row.split()[:1] == ["s"] and row.rstrip().endswith("browser.sort") for row in rows), rows
        assert any(row.rstrip().endswith("Whole text  turn.full_text") for row in rows)


async def test_compare_opens_a_case_turn_by_turn_in_both_runs(workspace: Path, make_app) -> None:
    from textual.widgets import DataTable, Static

    from tests.app.test_app_history import open_history, rows
    from tui_eval.tui.screens.history import CompareScreen
    from tui_eval.tui.screens.runs_diff import RunsDiffScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=next(i for i, r in enumerate(rows(table)) if r[2] == "travel"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        assert rows(app.screen.query_one(DataTable))[0][:2] == ["regression", "book_flight"]
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsDiffScreen)
                         and "Turn 2" in str(app.screen.query_one("#runs-diff-text", Static).render()))
        text = str(app.screen.query_one("#runs-diff-text", Static).render())
        assert text.startswith("earlier ✔ passed   later ✘ failed")
        assert "earlier response" in text and "later response" in text


def test_two_runs_of_a_turn_are_diffed_like_expected_and_actual(monkeypatch) -> None:
    from tui_eval.schema.load import read_invocation
    from tui_eval.schema.results import CaseResult, EvalStatus
    from tui_eval.tui.screens.runs_diff import turn_blocks

    def turn(text: str, calls: list[tuple[str, dict]]) -> object:
        return read_invocation({
            "invocation_id": "t", "user_content": {"role": "user", "parts": [{"text": "Book it."}]},
            "final_response": {"role": "model", "parts": [{"text": text}]},
            "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls],
                                  "tool_responses": [], "intermediate_responses": []}}, "$")

    def case(status: EvalStatus, inv: object) -> CaseResult:
        return CaseResult(eval_set_id="s", eval_id="c", status=status, actual=[inv])

    monkeypatch.setenv("NO_COLOR", "1")  # the word diff's markers show in plain text
    before = case(EvalStatus.PASSED, turn("Booked for 1 passenger.", [("book", {"n": 1})]))
    after = case(EvalStatus.FAILED, turn("Booked for 2 passengers.", [("weather", {}), ("book", {"n": 2})]))
    [block] = [b.plain for b in turn_blocks(before, after)]
    assert "earlier response\nBooked for [-1 passenger.-]\nlater response\nBooked for {+2 passengers.+}" in block
    assert "earlier (1)\n− book(n=1)\nlater (2)\n+ weather()\n+ book(n=2)" in block


async def test_a_long_metric_filter_leaves_the_top_bar_whole_at_80_columns(tmp_path: Path, make_app) -> None:
    # The filter comes right after the folder name; a metric name of 38 characters used to push
    # "live off" and "? help" off an 80-column bar.
    app = make_app(_demo(tmp_path), recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.set_metric("rubric_based_final_response_quality_v1")
        await pilot.pause()
        bar = str(app.main.query_one("#topbar").render())
        assert "metric rubric_based_fina…ality_v1" in bar, bar
        assert bar.rstrip().endswith("? help"), bar
        assert len(bar.rstrip()) <= 80
