"""Files reload as they are saved (a broken one keeps its last good version); live mode re-runs what changed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import full_result, settle, wait_until
from tui_eval.tui.widgets.browser import EvalBrowser


def set_label(app, name: str) -> str:
    tree = app.main.query_one(EvalBrowser)
    for path, node in tree._set_nodes.items():
        if path.name == name:
            return tree.render_label(node, tree.rich_style, tree.rich_style).plain
    raise AssertionError(name)


async def start(app, pilot) -> None:
    await settle(pilot)
    await wait_until(pilot, lambda: app.model.watch_ready)


async def test_saved_files_reload_and_broken_ones_stay_stale(workspace: Path, make_app) -> None:
    path = workspace / "smalltalk" / "smalltalk.evalset.json"
    app = make_app(workspace, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(app, pilot)
        data = json.loads(path.read_text())
        extra = json.loads(json.dumps(data["eval_cases"][0]))
        extra["eval_id"] = "greet_again"
        data["eval_cases"].append(extra)
        path.write_text(json.dumps(data))
        await wait_until(pilot, lambda: "(3)" in set_label(app, path.name))
        assert app.run_state is None  # live mode is off: nothing ran
        # A half-saved file: flagged, last good version kept.
        path.write_text('{"eval_set_id": "smalltalk", "eval_cases": [')
        await wait_until(pilot, lambda: "stale" in set_label(app, path.name))
        assert "(3)" in set_label(app, path.name)
        app.main.browser.select_key(app.listing.key(path, "greet"))
        await pilot.pause()
        app.main.summary.show(app.main.browser.cursor_node.parent.data)
        assert "last good version" in str(app.main.summary.render())
        # Fixed again: the stale mark goes.
        path.write_text(json.dumps(data))
        await wait_until(pilot, lambda: "stale" not in set_label(app, path.name))


async def test_live_mode_reruns_only_the_edited_case(workspace: Path, make_app) -> None:
    path = workspace / "travel" / "travel.evalset.json"
    app = make_app(workspace, watch=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(app, pilot)
        await pilot.press("l")
        assert app.live
        await wait_until(pilot, lambda: app.model.watch_ready)
        assert "live on" in str(app.main.query_one("#topbar").render())
        data = json.loads(path.read_text())
        data["eval_cases"][1]["conversation"][0]["final_response"]["parts"][0]["text"] = "Sunny tomorrow in Paris."
        path.write_text(json.dumps(data))
        await wait_until(pilot, lambda: app.run_state is not None and app.run_state.phase == "finished")
        assert app.run_state.cases_total == 1
        assert "weather_paris" in app.run_state.label
        key = app.listing.key(path, "weather_paris")
        assert app.listing.results.origin(key) == "this session"
        other = app.listing.key(path, "book_flight")
        assert app.listing.results.origin(other).startswith("saved")


async def test_live_config_edit_rescores_without_the_agent(workspace: Path, make_app) -> None:
    config = workspace / "smalltalk" / "test_config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    app = make_app(workspace, watch=True, live=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(app, pilot)
        farewell = app.listing.key(workspace / "smalltalk" / "smalltalk.evalset.json", "farewell")
        assert (await full_result(pilot, farewell)).status == 2
        # The saved inference scores 0.0 on response_match; a threshold of 0 passes it without re-running.
        (workspace / "all.recorded.json").unlink()  # the agent could not run now
        config.write_text(json.dumps({"criteria": {"response_match_score": 0.0}}))
        await wait_until(pilot, lambda: app.run_state is not None and app.run_state.phase == "finished")
        assert app.run_state.label.startswith("re-score")
        assert (await full_result(pilot, farewell)).status == 1
        assert not app.run_state.errors
