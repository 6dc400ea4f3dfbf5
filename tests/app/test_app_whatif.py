"""What if (issue 21, part 5): W changes a metric's threshold or the trajectory match type and shows which
cases would flip, re-scored from the stored results (no agent or judge call); s writes it to the config
after a confirmation, changing only that value."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from tests.app.conftest import settle, wait_until
from tui_eval.cli import main
from tui_eval.engine.whatif import WhatIf, flips
from tui_eval.schema.results import EvalStatus
from tui_eval.tui.screens.whatif import WhatIfScreen
from tui_eval.tui.widgets.browser import CaseEntry, EvalBrowser

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


@pytest.fixture
def hello(tmp_path: Path) -> Path:
    """A copy of hello_world with one saved run (offline policy, deterministic: 4 passed, 5 failed)."""
    dest = tmp_path / "demo"
    shutil.copytree(DEMO / "hello_world", dest / "hello_world", ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    code = main(["run", str(dest / "hello_world"), str(dest / "hello_world" / "hello_world.evalset.json"), "-q"],
                io.StringIO(), io.StringIO())
    assert code == 1
    return dest


def rows(app) -> list[list[str]]:
    table = app.screen.query_one(DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def status_text(app) -> str:
    return str(app.screen.query_one("#whatif-status", Static).render())


def test_flips_from_stored_results_without_running_anything() -> None:
    import tui_eval

    record = tui_eval.evaluate(DEMO / "hello_world", DEMO / "hello_world" / "hello_world.evalset.json",
                               raise_on_failure=False)
    cases = [(c.eval_id, c) for r in record.results for c in r.case_results]
    # IN_ORDER forgives the extra roll (prime_of_my_own_roll) on the trajectory, but its wording still fails;
    # check_then_roll's wrong order fails under IN_ORDER too. ANY_ORDER forgives the order.
    assert [f.eval_id for f in flips(cases, WhatIf("tool_trajectory_avg_score", match_type="ANY_ORDER"))] == [
        "check_then_roll"]
    assert flips(cases, WhatIf("tool_trajectory_avg_score", match_type="IN_ORDER")) == []
    lower = flips(cases, WhatIf("response_match_score", threshold=0.3))
    assert [(f.eval_id, f.after) for f in lower] == [("ten_sided_wording", EvalStatus.PASSED)]
    # 0.75 lets roll_and_check_prime's (0.786) and roll_twelve_in_words's (0.778) wording pass, but their
    # trajectories still fail: the case verdict takes every metric, so neither flips.
    assert flips(cases, WhatIf("response_match_score", threshold=0.75)) == []


async def test_whatif_flips_cases_and_writes_the_config_only_when_asked(hello: Path, make_app) -> None:
    config = hello / "hello_world" / "test_config.json"
    before = config.read_text()
    app = make_app(hello, recording=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await wait_until(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        assert "tool_trajectory_avg_score: as configured" in status_text(app)
        assert rows(app) == []
        await pilot.press("t", "t")  # EXACT → IN_ORDER → ANY_ORDER
        assert "match type ANY_ORDER" in status_text(app)
        assert rows(app) == [["pass", "check_then_roll", "hello_world", "✘ failed → ✔ passed"]]
        assert "0 would fail, 1 would pass" in status_text(app)
        # m: the next metric; - lowers its threshold in steps of 0.05 (0.8 → 0.3).
        await pilot.press("m", *["minus"] * 10)
        assert "response_match_score: threshold 0.3" in status_text(app)
        assert [r[:2] for r in rows(app)] == [["pass", "ten_sided_wording"]]
        # The settings last while the dashboard is open: back and W again shows the same.
        await pilot.press("escape", "W")
        await wait_until(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        assert "response_match_score: threshold 0.3" in status_text(app)
        assert config.read_text() == before  # nothing written yet
        # s asks first; n leaves the file alone, y writes only that value.
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert config.read_text() == before
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("y")
        await wait_until(pilot, lambda: config.read_text() != before)
        assert config.read_text() == before.replace('"response_match_score": 0.8', '"response_match_score": 0.3')
        # enter on a flipped case shows it in the browser.
        await pilot.press("m")  # back to the trajectory, still ANY_ORDER
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen.id == "main")
        node = app.main.query_one(EvalBrowser).cursor_node
        assert isinstance(node.data, CaseEntry) and node.data.key.eval_id == "check_then_roll"
