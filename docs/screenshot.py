"""Regenerate the front page's screenshots: the dashboard on the demo agents after a run, as the tour goes.

    python docs/screenshot.py            # writes docs/dashboard.svg and docs/turn.svg (120x36, theme tui-eval)

docs/dashboard.svg: failures only (f), check_then_roll highlighted. docs/turn.svg: its turn 1 opened.

The demo agents are copied to a temporary folder first, so the run's eval history never lands in the
repository. The agents run offline (TUI_EVAL_AGENT_MODE=offline); no API key is read.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "dashboard.svg"
OUT_TURN = ROOT / "docs" / "turn.svg"
SIZE = (120, 36)
THEME = "tui-eval"
#: Keys pressed once the run finished: failures only, then down to hello_world's check_then_roll.
KEYS = ("f", "down", "down", "down")
#: Then: list its turns and open turn 1.
TURN_KEYS = ("enter", "down", "enter")


async def shoot(folder: Path) -> tuple[str, str]:
    from tui_eval.tui.app import EvalApp

    app = EvalApp(folder, watch=False, theme=THEME)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        while not app.ready:
            await pilot.pause(0.1)
        await pilot.press("R")
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        deadline = time.monotonic() + 120
        while (app.busy or not app.ready) and time.monotonic() < deadline:  # the run's results reach the read model
            await pilot.pause(0.2)
            app.pull()
        app.pull()
        await pilot.pause()
        for key in KEYS:
            await pilot.press(key)
        app.clear_notifications()
        await pilot.pause(0.5)
        browser = app.export_screenshot(title="tui-eval demo_agents")
        for key in TURN_KEYS:
            await pilot.press(key)
        await pilot.pause(0.5)
        return browser, app.export_screenshot(title="tui-eval demo_agents: a turn")


def main() -> int:
    os.environ["TUI_EVAL_AGENT_MODE"] = "offline"
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "TUI_EVAL_THEME", "TUI_EVAL_KEYMAP"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")  # the default keys, not yours
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        folder = Path(tmp) / "demo_agents"
        shutil.copytree(ROOT / "demo_agents", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
        browser, turn = asyncio.run(shoot(folder))
    for path, svg in ((OUT, browser), (OUT_TURN, turn)):
        path.write_text(svg)
        print(f"wrote {path.relative_to(ROOT)} ({len(svg):,} bytes, {SIZE[0]}x{SIZE[1]}, theme {THEME})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
