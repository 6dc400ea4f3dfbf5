"""The real demo: open it, run everything offline, read a scenario turn (no reference to diff)."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Static

from tests.app.conftest import settle

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


async def test_demo_opens_runs_and_shows_a_scenario_turn(tmp_path: Path, make_app) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    app = make_app(demo, recording=None)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        assert len(app.listing.files) == 5 and len(app.listing.workspace.agent_dirs) == 4
        await pilot.press("R")
        await settle(pilot)
        state = app.run_state
        assert state.phase == "finished" and state.cases_done == state.cases_total == len(app.listing.all_keys())
        assert not state.errors
        key = next(k for k in app.listing.all_keys() if app.listing.case(k).is_scenario)
        app.open_turn(key, 0)
        await pilot.pause()
        response = str(app.screen.query_one("#turn-response", Static).render())
        assert "a scenario case has no reference turns" in response
        assert "no expected calls (scenario case)" in str(app.screen.query_one("#trajectory-head", Static).render())
