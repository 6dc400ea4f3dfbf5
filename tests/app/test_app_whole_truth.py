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
        await pilot.press("up")
        assert f"✘ stable fail · 0/{num_runs} passed" in summary_text(app)
        await pilot.press("up")
        assert f"✔ stable pass · {num_runs}/{num_runs} passed" in summary_text(app)
