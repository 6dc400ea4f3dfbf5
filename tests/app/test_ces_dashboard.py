"""The dashboard on a CES app (`tui-eval ces://...`), against the local CES MCP server on 127.0.0.1:
pull beside local eval sets, CES results in the turn view, lastTenResults as history, runs in CES."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.widgets import OptionList

from tests.app.conftest import settle, wait_until
from tests.support.fake_ces import (
    APP,
    TOKEN,
    FakeCesState,
    detailed_golden_result,
    detailed_scenario_result,
    golden_evaluation,
    scenario_evaluation,
    serve,
)
from tui_eval.tui.ces_jobs import CesTarget
from tui_eval.tui.widgets.ces_panel import CesTurnPanel
from tui_eval.tui.widgets.ces_result import CesResultView

SMALL = (80, 24)


@pytest.fixture(scope="module")
def ces_server() -> Iterator[tuple[str, FakeCesState]]:
    state = FakeCesState()
    with serve(state) as url:
        yield url, state


def evaluations() -> list[dict[str, Any]]:
    """Two goldens (one fails when run, one with a detailed last result and history) and a scenario."""
    weather = golden_evaluation()
    weather["lastCompletedResult"] = detailed_golden_result()
    weather["lastTenResults"] = [
        detailed_golden_result(),
        detailed_golden_result(run="r0", status="PASS", when="2026-01-31T09:00:00Z"),
    ]
    weather["lastTenResults"][1]["goldenResult"]["turnReplayResults"][0]["semanticSimilarityResult"] = {
        "score": 4, "outcome": "PASS", "explanation": "Same facts as expected (older run)."}
    failing = golden_evaluation(eval_id="fail-golden")
    failing["displayName"] = "Will fail"
    del failing["lastCompletedResult"]
    scenario = scenario_evaluation()
    scenario["lastCompletedResult"] = detailed_scenario_result()
    return [weather, failing, scenario]


@pytest.fixture
def ces(ces_server: tuple[str, FakeCesState], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> tuple[str, FakeCesState]:
    url, state = ces_server
    with state.lock:
        state.evaluations.clear()
        state.runs.clear()
        state.results.clear()
        state.calls.clear()
        state.faults.clear()
        for evaluation in evaluations():
            state.add(evaluation)
    monkeypatch.setenv("CES_ACCESS_TOKEN", TOKEN)
    monkeypatch.setenv("TUI_EVAL_CES_CACHE", str(tmp_path / "ces-cache"))
    return url, state


def target(url: str, tmp_path: Path, app: str = APP, poll: float = 0.05) -> CesTarget:
    """The app pulled into tmp_path/ces-cache (made, as `tui-eval ces://...` makes it)."""
    folder = tmp_path / "ces-cache"
    folder.mkdir(exist_ok=True)
    return CesTarget(app, folder / f"{app.rsplit('/', 1)[-1]}.evalset.json", url, poll)


def messages(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


def ces_file(app: Any) -> Path:
    return next(p for p in app.listing.files if p.name == "app1.evalset.json")


async def run_whole_app_in_ces(pilot: Any) -> Any:
    """Once the pulled file is loaded, press C (every evaluation of the app) and wait for the run to end."""
    app = pilot.app
    await settle(pilot)
    await wait_until(pilot, lambda: bool(app.listing.files))
    await pilot.press("C")
    await wait_until(pilot, lambda: app.model.current is not None and not app.model.current.active)
    return app.model.current


async def open_case(pilot: Any, eval_id: str) -> None:
    """Highlight a case of the CES file in the browser."""
    app = pilot.app
    key = app.listing.key(ces_file(app), eval_id)
    app.main.select_key(key)
    await pilot.pause()


async def test_pull_shows_ces_cases_beside_local_sets(ces, tmp_path: Path, workspace: Path, make_app) -> None:
    url, state = ces
    app = make_app(workspace, ces=target(url, tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        names = sorted(p.name for p in app.listing.files)
        # The local sets are still there, beside the CES app's file.
        assert "app1.evalset.json" in names and "travel.evalset.json" in names
        # Three evaluations at two a page: the pull followed the page token.
        lists = [args for name, args in state.calls if name == "list_evaluations"]
        assert [a.get("pageToken") for a in lists] == [None, "2"]
        assert any("wrote" in m and "3 evaluation(s)" in m for m in messages(app))
        await open_case(pilot, "weather-golden")
        browser = app.main.browser
        label = browser._case_label(app.listing.key(ces_file(app), "weather-golden")).plain
        assert label.startswith("· CES ✘ weather-golden")  # its last CES result failed
        label = browser._case_label(app.listing.key(ces_file(app), "refund-scenario")).plain
        assert label.startswith("· CES scenario ✔ refund-scenario")
        label = browser._case_label(app.listing.key(ces_file(app), "fail-golden")).plain
        assert label.startswith("· CES · fail-golden")  # never run in CES
        # A local case has no CES tag.
        travel = next(p for p in app.listing.files if p.name == "travel.evalset.json")
        local = app.listing.cases(travel)[0].eval_id
        assert "CES" not in browser._case_label(app.listing.key(travel, local)).plain


async def test_turn_view_shows_the_ces_result_literally(ces, tmp_path: Path, make_app) -> None:
    url, _ = ces
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        app.open_turn(app.listing.key(ces_file(app), "weather-golden"), 0)
        await pilot.pause()
        panel = app.screen.query_one(CesTurnPanel)
        assert panel.display
        text = str(panel.query_one("#ces-turn-result").render())
        for expected in (
            "✘ FAIL r1  2026-02-01T10:00:00Z", "v7", "thresholds: semantic similarity >= 3",
            "turn 1", "tool invocation 0.50", "ordered 1.00", "latency 2.5s",
            "semantic similarity 2/4 Partially consistent",
            "Says [bold]rain[/bold] where 21 degrees was expected.",  # CES text is never markup
            "hallucination 0 Not justified", "The forecast is not in the tool output.",
            "✘ FAIL tool call  [Check_Weather_Tool_Called]", "expected get_weather(city=\"Paris\")",
            "observed get_weather(city=\"Lyon\")", "parameter correctness 0.00", "city differs",
            "✔ PASS agent response", "expected It is 21 degrees", "observed It will [red]rain[/red]",
            "tool latency get_weather 0.4s",
        ):
            assert expected in text.replace("\u00a0", " "), (expected, text)
        assert "TIMEOUT" not in text  # turn 2's error shows on turn 2
        await pilot.press("n")
        text = str(panel.query_one("#ces-turn-result").render())
        assert "turn 2" in text and "error TIMEOUT the agent did not answer in 30s" in text

        app.open_turn(app.listing.key(ces_file(app), "refund-scenario"), 0)
        await pilot.pause()
        text = str(app.screen.query_one(CesTurnPanel).query_one("#ces-turn-result").render())
        for expected in ("task completion 1 Completed", "The refund was issued.", "user goal satisfaction 1 Satisfied",
                         "rubric 1.00 The agent confirms the order number.", "It repeated 123.",
                         "✔ PASS tool call", "expected refund(order=\"123\")"):
            assert expected in text.replace("\u00a0", " "), expected


async def test_last_ten_results_are_the_history(ces, tmp_path: Path, make_app) -> None:
    url, _ = ces
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        app.open_turn(app.listing.key(ces_file(app), "weather-golden"), 0)
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        from tui_eval.tui.screens.ces_history import CesHistoryScreen

        assert isinstance(app.screen, CesHistoryScreen)
        options = app.screen.query_one(OptionList)
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len(lines) == 2
        assert lines[0].startswith("✘ FAIL  2026-02-01T10:00:00Z") and "similarity 2.0/4" in lines[0]
        assert lines[1].startswith("✔ PASS  2026-01-31T09:00:00Z") and "similarity 4.0/4" in lines[1]
        view = app.screen.query_one(CesResultView)
        assert "Says [bold]rain[/bold]" in str(view.render())
        await pilot.press("down")
        await pilot.pause()
        assert "Same facts as expected (older run)." in str(view.render())
        await pilot.press("escape")
        assert not isinstance(app.screen, CesHistoryScreen)
        # From the browser too: c on a CES case.
        await pilot.press("escape")
        await open_case(pilot, "weather-golden")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CesHistoryScreen) and app.screen.key.eval_id == "weather-golden"


async def test_a_run_in_ces_streams_progress_then_pulls_the_results(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    t = target(url, tmp_path, poll=0.4)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        await pilot.press("C")  # on the file: every evaluation of the app
        seen: list[tuple[str, int, int]] = []

        def progressed() -> bool:
            snap = app.model.current
            if snap is not None:
                seen.append((snap.phase, snap.cases_done, snap.cases_total))
            return snap is not None and not snap.active

        await wait_until(pilot, progressed, timeout=20)
        # Streamed: the run was seen part-way (some of the 3 done) before it finished.
        assert any(phase == "running" and 0 < done < total == 3 for phase, done, total in seen), seen
        final = app.model.current
        assert final is not None and final.phase == "finished"
        assert (final.cases_done, final.counts[1], final.counts[2]) == (3, 2, 1)
        await pilot.pause()  # the screens redraw from the pull's changes in their next message
        status_line = str(app.main.run_panel.query_one("#run-status").render())
        assert "CES run app1" in status_line and "3/3" in status_line
        await settle(pilot)
        # The new results were pulled into the file and are shown: fail-golden now failed in CES.
        await wait_until(pilot, lambda: "CES ✘ fail-golden" in app.main.browser._case_label(
            app.listing.key(ces_file(app), "fail-golden")).plain)
        data = orjson.loads(t.eval_file.read_bytes())
        fail = next(c for c in data["eval_cases"] if c["eval_id"] == "fail-golden")
        assert fail["ces"]["evaluation"]["lastCompletedResult"]["evaluationStatus"] == "FAIL"
        assert len(fail["ces"]["evaluation"]["lastTenResults"]) == 1
        assert [n for n, _ in state.calls].count("run_evaluation") == 1
        # The whole app is sent as the ids CES lists, not as the bare app (which a server may refuse).
        run_args = next(a for n, a in state.calls if n == "run_evaluation")
        assert run_args == {"app": APP, "evaluations": ["fail-golden", "refund-scenario", "weather-golden"]}


async def test_one_case_runs_alone_and_x_stops_following(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    t = target(url, tmp_path, poll=5.0)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        await open_case(pilot, "weather-golden")
        await pilot.press("C")
        await wait_until(pilot, lambda: any(n == "get_evaluation_run" for n, _ in state.calls))
        run_args = next(a for n, a in state.calls if n == "run_evaluation")
        assert run_args["evaluations"] == ["weather-golden"]  # an id, as the reference says, not a resource name
        await pilot.press("x")
        await wait_until(pilot, lambda: app.model.current is not None and not app.model.current.active, timeout=5)
        assert app.model.current.phase == "cancelled"
        await wait_until(pilot, lambda: any("goes on in CES" in m for m in messages(app)))
        assert app.is_running


async def test_a_failing_operation_is_one_line_and_the_app_goes_on(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    broken = "projects/p1/locations/us/apps/broken-app"
    evaluation = golden_evaluation(app=broken, eval_id="g1")
    with state.lock:
        state.add(evaluation)
    t = target(url, tmp_path, app=broken)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        assert (await run_whole_app_in_ces(pilot)).phase == "failed"
        failed = [m for m in messages(app) if "failed" in m]
        assert failed and "FAILED_PRECONDITION: the app has no deployed version" in failed[-1]
        assert all("\n" not in m and "Traceback" not in m for m in messages(app))
        assert app.is_running


async def test_refused_credentials_are_one_line_and_local_sets_stay(ces, tmp_path: Path, workspace: Path,
                                                                   make_app, monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = ces
    monkeypatch.setenv("CES_ACCESS_TOKEN", "wrong")
    app = make_app(workspace, ces=target(url, tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.ces.last_error is not None)
        line = app.ces.last_error
        assert line is not None and "\n" not in line
        assert f"{url} refused the credentials (HTTP 401)" in line
        assert "gcloud auth application-default login" in line
        assert any(line in m for m in messages(app))
        assert any(p.name == "travel.evalset.json" for p in app.listing.files)
        assert app.is_running


async def test_a_pull_keeps_unpushed_edits(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
    # Edit the pulled golden's question, then open the app again: the pull must not undo the edit.
    data = orjson.loads(t.eval_file.read_bytes())
    weather = next(c for c in data["eval_cases"] if c["eval_id"] == "weather-golden")
    weather["conversation"][0]["user_content"]["parts"][0]["text"] = "And in Lyon?"
    t.eval_file.write_bytes(orjson.dumps(data))
    edited = t.eval_file.read_bytes()
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any("unpushed edits" in m for m in messages(app)))
        assert t.eval_file.read_bytes() == edited
        assert any("kept" in m and "weather-golden" in m for m in messages(app))


def test_ces_result_view_snapshot(snap_compare, ces, tmp_path: Path, make_app) -> None:
    url, _ = ces
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        app.open_turn(app.listing.key(ces_file(app), "weather-golden"), 0)
        await pilot.pause()
        # Scroll the CES section into view, as a reader of the turn would.
        app.screen.query_one(CesTurnPanel).scroll_visible(top=True, animate=False)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)



async def test_an_unreachable_endpoint_is_one_line(ces, tmp_path: Path, make_app) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: app.ces.last_error is not None)
        line = app.ces.last_error
        assert line is not None and "\n" not in line
        assert line.startswith(f"CES pull of {APP} failed: cannot reach the CES MCP server at {url}")
        assert app.is_running and app.listing.files == []


async def test_a_pulled_folder_opened_as_a_path_works_the_same(ces, tmp_path: Path, make_app) -> None:
    import asyncio

    from tui_eval.cli import main

    url, state = ces
    folder = tmp_path / "pulled"
    # In a thread: the CLI runs its own event loop.
    assert await asyncio.to_thread(main, ["ces", "pull", APP, "-o", str(folder), "--endpoint", url]) == 0
    app = make_app(folder, recording=None, ces_endpoint=url)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        path = ces_file(app)
        label = app.main.browser._case_label(app.listing.key(path, "weather-golden")).plain
        assert label.startswith("· CES ✘ weather-golden")
        app.open_turn(app.listing.key(path, "weather-golden"), 0)
        await pilot.pause()
        assert "semantic similarity 2/4" in str(app.screen.query_one(CesTurnPanel).query_one("#ces-turn-result").render())
        await pilot.press("escape")
        await open_case(pilot, "fail-golden")
        await pilot.press("C")  # the case names its app; its results come back to this file
        await wait_until(pilot, lambda: app.model.current is not None and not app.model.current.active, 20)
        assert app.model.current.phase == "finished"
        await wait_until(pilot, lambda: "CES ✘ fail-golden" in app.main.browser._case_label(
            app.listing.key(path, "fail-golden")).plain)
        run_args = next(a for n, a in state.calls if n == "run_evaluation")
        assert run_args == {"app": APP, "evaluations": ["fail-golden"]}


async def test_a_run_that_ends_in_error_shows_why(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    flaky = "projects/p1/locations/us/apps/flaky-app"
    with state.lock:
        state.add(golden_evaluation(app=flaky, eval_id="g1"))
    t = target(url, tmp_path, app=flaky)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        assert (await run_whole_app_in_ces(pilot)).phase == "failed"
        await wait_until(pilot, lambda: "INTERNAL: the simulator crashed" in str(
            app.main.run_panel.query_one("#run-status").render()))
        assert app.is_running


async def test_c_in_the_turn_view_runs_that_case_with_the_app_version(ces, tmp_path: Path, make_app) -> None:
    from dataclasses import replace

    url, state = ces
    t = replace(target(url, tmp_path), app_version=f"{APP}/versions/v7")
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(p.name == "app1.evalset.json" for p in app.listing.files))
        app.open_turn(app.listing.key(ces_file(app), "refund-scenario"), 0)
        await pilot.pause()
        await pilot.press("C")
        await wait_until(pilot, lambda: app.model.current is not None and not app.model.current.active, 20)
        assert app.model.current.phase == "finished"
        run_args = next(a for n, a in state.calls if n == "run_evaluation")
        assert run_args == {"app": APP, "evaluations": ["refund-scenario"], "appVersion": f"{APP}/versions/v7"}


async def test_permission_denied_as_a_tool_error_says_what_to_do(ces, tmp_path: Path, make_app) -> None:
    url, state = ces
    state.faults["list_evaluations"] = ("PERMISSION_DENIED", "The caller does not have permission")
    try:
        t = target(url, tmp_path)
        app = make_app(t.eval_file.parent, recording=None, ces=t)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await wait_until(pilot, lambda: app.ces.last_error is not None)
            line = app.ces.last_error
            assert line is not None and "\n" not in line
            assert f"list_evaluations at {url}: permission denied (The caller does not have permission)" in line
            assert "CES role" in line and "gcloud auth application-default login" in line
            assert app.is_running
    finally:
        state.faults.clear()


def test_the_dashboard_flag_reaches_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tui_eval.tui.ces_jobs import ces_target_of

    monkeypatch.setenv("TUI_EVAL_CES_CACHE", str(tmp_path))
    _, found = ces_target_of([f"ces://{APP}"], None, "v7")
    assert found is not None and found.app_version == "v7"


async def test_a_bug_in_a_ces_run_fails_that_run_and_says_why(ces, tmp_path: Path, make_app,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tui_eval.tui import ces_jobs

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the poller broke")

    monkeypatch.setattr(ces_jobs, "run_and_pull", broken)  # not a CES error: a fault of ours
    url, _state = ces
    t = target(url, tmp_path)
    app = make_app(t.eval_file.parent, recording=None, ces=t)
    async with app.run_test(size=(100, 30)) as pilot:
        assert (await run_whole_app_in_ces(pilot)).phase == "failed"
        await wait_until(pilot, lambda: "RuntimeError: the poller broke" in str(
            app.main.run_panel.query_one("#run-status").render()))
        shown = [(n.title, n.message) for n in app._notifications if n.severity == "error"]
        assert ("CES", "RuntimeError: the poller broke") in shown
        assert not app.busy and app.is_running  # the keys that start runs are back
