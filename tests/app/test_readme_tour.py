"""The README's five-minute tour, key by key, on a copy of the demo agents: what it says is on screen is."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.app.conftest import settle
from tests.support.screen_text import screen_text

ROOT = Path(__file__).resolve().parents[2]


def _tour_keys() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme[readme.index("## A five-minute tour"):readme.index("## What needs credentials")]


async def test_the_readme_tour_shows_what_it_says(tmp_path: Path, make_app) -> None:
    tour = _tour_keys()
    # The keys the tour names, in its words.
    for phrase in ("Press `R`", "Press `f`", "`↓` three times", "press `enter`", "Press `m`", "press `a`",
                   "press `y`", "Press `r`"):
        assert phrase in tour, phrase
    demo = tmp_path / "demo_agents"
    shutil.copytree(ROOT / "demo_agents", demo, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    app = make_app(demo, recording=None)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # 1. run
        await settle(pilot)
        text = screen_text(app)
        counts = re.search(r"finished\s+(\d+)/(\d+) cases\s+✔ (\d+)\s+✘ (\d+)\s+– (\d+)", text)
        assert counts, text
        assert f"{counts.group(1)}/{counts.group(2)} cases  ✔ {counts.group(3)}  ✘ {counts.group(4)}  – " \
               f"{counts.group(5)}" in tour

        await pilot.press("f")  # 2. failures only
        await pilot.press("down", "down", "down")  # 3. to check_then_roll
        await pilot.pause()
        assert "Case check_then_roll" in screen_text(app)
        await pilot.press("enter", "down", "enter")
        await pilot.pause()
        text = screen_text(app)
        assert "check_then_roll › turn 1/1" in text and "roll_die moved from 2 to 1" in text
        assert "`roll_die moved from 2 to 1`" in tour

        await pilot.press("m")  # 4. IN_ORDER, still failing; then ANY_ORDER, passing
        await pilot.pause()
        assert "[IN_ORDER ✘]" in screen_text(app)
        await pilot.press("m")
        await pilot.pause()
        assert "[ANY_ORDER ✔]" in screen_text(app)

        eval_file = demo / "hello_world" / "hello_world.evalset.json"
        await pilot.press("a")  # 5. accept, confirm, re-run
        await pilot.pause()
        assert "Accept turn" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        case = next(c for c in json.loads(eval_file.read_text())["eval_cases"] if c["eval_id"] == "check_then_roll")
        assert [u["name"] for u in case["conversation"][0]["intermediate_data"]["tool_uses"]] == ["roll_die", "check_prime"]
        assert "stale" in tour and "changed since this result" in screen_text(app)
        await pilot.press("r")
        await settle(pilot)
        assert "check_then_roll › turn 1/1  ✔ passed" in screen_text(app)
