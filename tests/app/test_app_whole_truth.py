"""Issue 32: what a demanding user met in one hour. Repetitions as one status and figure, keymap clashes
that keep the defaults, keys that cannot act now saying so, compare's `u`, modes that label what they show."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import settle
from tests.app.test_app_browse import labels, summary_text
from tests.app.test_app_insight import flaky_app


@pytest.mark.parametrize("num_runs", [3, 4])
async def test_a_flaky_case_is_flaky_whichever_repetition_ended_last(tmp_path: Path, make_app, num_runs: int) -> None:
    # flip alternates pass, fail, pass, fail: with 3 runs the last one passed, with 4 it failed.
    app, _root = flaky_app(make_app, tmp_path, num_runs=num_runs)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("enter")
        lines = labels(app)
        # Counted once each: steady as passed, broken as failed, flip only as flaky.
        assert lines[0].startswith("▼ flaky (3) ✔1 ✘1 ~1 flaky"), lines[0]
        cases = {line.split()[2]: line for line in lines[1:]}
        assert cases["flip"].endswith(f"~ flip  2/{num_runs} passed"), cases
        assert cases["steady"].endswith(f"✔ steady  {num_runs}/{num_runs} passed"), cases
        assert cases["broken"].endswith(f"✘ broken  0/{num_runs} passed"), cases
        await pilot.press("down", "down", "down")
        text = summary_text(app)
        head = next(line for line in text.splitlines() if "passed" in line)
        assert head.startswith(f"~ flaky · 2/{num_runs} passed"), text
        assert "✔ passed" not in text and "✘ failed" not in text
        # The metrics below are one repetition's, and say which.
        assert f"metrics of run {num_runs} of {num_runs}" in text
        # f (failed only) keeps the stable fail, not the flaky case whose last run failed.
        await pilot.press("f")
        await pilot.pause()
        assert [line.split()[2] for line in labels(app)[1:]] == ["broken"], labels(app)
        await pilot.press("f", "f", "down", "down", "down")  # flaky only, then everything
        await pilot.pause()
        assert summary_text(app).startswith("Case flip")
        await pilot.press("up")
        assert f"✘ stable fail · 0/{num_runs} passed" in summary_text(app)
        await pilot.press("up")
        assert f"✔ stable pass · {num_runs}/{num_runs} passed" in summary_text(app)


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_keys_that_cannot_act_now_say_why(workspace: Path, make_app) -> None:
    from tests.app.test_app_turn import open_turn

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert notices(app)[-1] == "No run to cancel."
        screen = await open_turn(app, pilot, "book_flight", 1)  # the last of its 2 turns
        await pilot.press("n")
        await pilot.pause()
        assert notices(app)[-1] == "This is the last turn (2 of 2)."
        assert screen.index == 1
        await pilot.press("v")
        await pilot.pause()
        assert notices(app)[-1] == "Nothing is cut on this turn: v shows a text cut at 20,000 characters."
        await pilot.press("k")
        await pilot.pause()
        assert notices(app)[-1] == "k steps through the runs of --num-runs N: this case ran once here."


async def test_run_keys_during_a_run_say_a_run_is_going(tmp_path: Path, make_app) -> None:
    from tests.app.conftest import wait_until

    app, _root = flaky_app(make_app, tmp_path, num_runs=40)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await wait_until(pilot, lambda: app.busy)
        await pilot.press("R")
        await pilot.press("r")
        await pilot.pause()
        going = "A run is going: x cancels it, or wait for it to end."
        assert notices(app)[-2:] == [going, going]
        await pilot.press("x")
        await settle(pilot)


async def test_search_says_where_it_matched_and_reads_scenario_plans(tmp_path: Path, make_app) -> None:
    import shutil

    root = tmp_path / "demo"
    shutil.copytree(Path(__file__).parents[2] / "demo_agents", root)
    app = make_app(root, recording=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"explained", "enter")
        await pilot.pause(0.3)
        assert labels(app) == ["▼ support_scenarios (2)", "· return_then_refund"], labels(app)
        await pilot.press("down")  # a scenario: found in its plan, which search now reads
        assert "found 'explained' in conversation plan" in summary_text(app)
        await pilot.press("escape", "slash", *"jacket", "enter")
        await pilot.pause(0.3)
        keys = {k.eval_id: k for k in app.listing.all_keys()}
        app.main.browser.select_key(keys["return_then_refund"])
        await pilot.pause()
        assert "found 'jacket' in starting prompt" in summary_text(app)
        app.main.browser.select_key(keys["return_used_item"])
        await pilot.pause()
        assert "found 'jacket' in expected turn 1: user message" in summary_text(app), summary_text(app)


async def test_at_80x24_every_key_the_footer_shows_fits(workspace: Path, make_app) -> None:
    """Short labels below 100 columns, neighbours sharing one (`r R F Run`): nothing falls off the end."""
    from textual.widgets import DataTable

    from tests.app.conftest import wait_until
    from tests.app.test_app_turn import open_turn
    from tui_eval.tui.textual_private import FooterKey

    def shown(app) -> list[str]:
        keys = [k for k in app.screen.query(FooterKey) if "-command-palette" not in k.classes]
        assert all(k.region.right <= 80 - len("▏^p palette") for k in keys), [(k.key, k.region) for k in keys]
        return [k.key for k in keys]

    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        assert shown(app) == ["question_mark", "q", "r", "R", "F", "f", "m", "slash", "h", "l"]
        await open_turn(app, pilot, "book_flight", 1)
        await pilot.pause(0.2)
        assert shown(app) == ["question_mark", "q", "escape", "n", "p", "m", "s", "a"]
        await pilot.press("escape", "W")
        await pilot.pause(0.2)
        assert shown(app)[:6] == ["question_mark", "q", "escape", "m", "t", "plus"]
        await pilot.press("escape", "h")
        await wait_until(pilot, lambda: getattr(app.screen, "entries", None))
        await pilot.pause(0.2)
        assert shown(app) == ["question_mark", "q", "enter", "escape", "space"]
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=next(i for i in range(table.row_count) if str(table.get_row_at(i)[2]) == "travel"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: getattr(app.screen, "changes", None))
        await pilot.pause(0.2)
        assert shown(app)[:3] == ["question_mark", "q", "enter"]


async def test_u_in_compare_keeps_still_failing_and_says_when_nothing_is_left(workspace: Path, make_app) -> None:
    from textual.widgets import DataTable, Static

    from tests.app.conftest import wait_until
    from tests.app.test_app_history import open_history, rows
    from tui_eval.engine.store import CaseChange
    from tui_eval.schema.status import EvalStatus
    from tui_eval.tui.screens.history import CompareScreen

    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=next(i for i, r in enumerate(rows(table)) if r[2] == "travel"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.changes)
        screen = app.screen
        # Two runs where every case passed both times: u leaves nothing, and says so.
        passed = EvalStatus.PASSED
        screen.changes = [CaseChange("a", passed, passed, {"invocation_duration_v1": (0.09, 0.03)}),
                          CaseChange("b", passed, passed, {})]
        screen.show_changes()
        assert [r[4] for r in rows(screen.query_one(DataTable))] == ["same scores; invocation_duration_v1 0.09→0.03 s/turn",
                                                                      "same scores"]
        await pilot.press("u")
        await pilot.pause()
        assert rows(screen.query_one(DataTable)) == []
        status = str(screen.query_one("#compare-status", Static).render())
        assert status == "2 unchanged: every case is unchanged, and u hides the 2 unchanged (u shows them).", status
        await pilot.press("t")
        await pilot.pause()
        assert notices(app)[-1] == "No case in the table: u shows the unchanged ones."
        await pilot.press("u")
        await pilot.pause()
        assert len(rows(screen.query_one(DataTable))) == 2


async def test_no_save_keeps_the_session_out_of_history(workspace: Path, make_app) -> None:
    from tui_eval.cli import build_parser
    from tui_eval.engine.runner import RunOptions

    assert build_parser().parse_args(["open", "--no-save"]).no_save is True
    assert build_parser().parse_args(["open"]).no_save is False
    history = workspace / "travel" / ".adk" / "eval_history"
    before = sorted(p.name for p in history.iterdir())
    app = make_app(workspace, run_options=RunOptions(judge_cache=False, save=False))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "not saved" in str(app.main.query_one("#topbar").render())
        await pilot.press("R")
        await settle(pilot)
        assert app.run_state is not None and app.run_state.phase == "finished"
    assert sorted(p.name for p in history.iterdir()) == before


async def test_opened_on_the_agent_folder_the_agent_has_its_name(tmp_path: Path, make_app) -> None:
    import shutil

    agent = tmp_path / "hello_world"
    shutil.copytree(Path(__file__).parents[2] / "demo_agents" / "hello_world", agent)
    app = make_app(agent, recording=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "agent hello_world" in summary_text(app)
        assert "agent ." not in summary_text(app)


async def test_history_tags_each_kind_of_run_and_the_trend_leaves_it_out(workspace: Path, make_app) -> None:
    import json

    from textual.widgets import Static

    from tests.app.test_app_history import open_history, rows

    # The later travel run was a failures-only run with mocked tools, --strict and a stand-in judge.
    record = next((workspace / "travel" / ".adk" / "eval_history").glob("*1767229200.tui-eval.json"))
    data = json.loads(record.read_text())
    data["kind"] = {"agent": "agent", "tools": "mock-strict", "criteria": "", "selection": "failures",
                    "judge": {"provider": "openai", "model": "stand-in", "endpoint": "http://127.0.0.1:9"},
                    "rescore_of": None, "strict": True}
    record.write_text(json.dumps(data))
    # The earlier one, the agent's own live run of the whole set.
    first = next((workspace / "travel" / ".adk" / "eval_history").glob("*1767225600.tui-eval.json"))
    data = json.loads(first.read_text())
    data["kind"] = {"agent": "agent", "tools": "live", "criteria": "", "selection": "all", "judge": None,
                    "rescore_of": None, "strict": False}
    first.write_text(json.dumps(data))
    app = make_app(workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await open_history(app, pilot)
        listed = rows(app.screen.query_one("DataTable"))
        later = next(r for r in listed if r[2] == "travel" and r[1] == "2026-01-01 01:00:00")
        assert later[7].startswith("mock tools stand-in judge strict failures 6/6 2026"), later[7]
        earlier = next(r for r in listed if r[2] == "travel" and r[1] == "2026-01-01 00:00:00")
        assert earlier[7].startswith("2026"), earlier[7]
        # Its pass rate is left out of the travel trend: one point, the earlier run's.
        trends = [str(s.render()) for s in app.screen.query("#history-trends Static, #history-trends Label")]
        assert any("travel" in t for t in trends)
        travel = " ".join(t for t in trends)
        assert "(1)" in travel.split("travel", 1)[1][:40], trends
