"""Optional inputs the dashboard reads at start-up (issue 23): a keymap that is a FIFO, a device or nested
thousands deep is reported and the dashboard starts with its default keys. Each dashboard runs in a child
bounded in time and memory, so a start-up that blocks fails the test instead of hanging the suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.bounded import python
from tests.support.evalfiles import dice_pair

ROOT = Path(__file__).resolve().parents[2]

START = """
import asyncio, sys
from pathlib import Path
from tui_eval.tui.app import EvalApp

async def main():
    app = EvalApp(Path(sys.argv[1]), agent=sys.argv[2], watch=False, theme="tui-eval")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        print("STARTED", app.screen.id)
        for n in app._notifications:
            print("NOTE", repr(f"{n.title}: {n.message}"))

asyncio.run(main())
"""


def start_dashboard(tmp_path: Path, keymap: str) -> list[str]:
    folder = tmp_path / "ws"
    folder.mkdir()
    _golden, recorded = dice_pair(folder)
    done = python(START, str(folder), f"replay:{recorded}", cwd=ROOT, timeout=90,
                  env={"TUI_EVAL_KEYMAP": keymap, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                       "TUI_EVAL_LOG_FILE": str(tmp_path / "log.txt")})
    assert not done.timed_out, "the dashboard did not start"
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert "STARTED main" in lines, done.out
    return [line for line in lines if line.startswith("NOTE")]


def test_a_keymap_that_is_a_fifo_is_reported_and_the_dashboard_starts(tmp_path: Path) -> None:
    fifo = tmp_path / "keys.toml"
    os.mkfifo(fifo)
    notes = start_dashboard(tmp_path, str(fifo))
    assert any("Keymap" in n and "FIFO" in n for n in notes), notes


def test_a_keymap_on_a_device_is_reported_and_the_dashboard_starts(tmp_path: Path) -> None:
    notes = start_dashboard(tmp_path, "/dev/zero")
    assert any("Keymap" in n and "device" in n for n in notes), notes


@pytest.mark.parametrize("text", ["a = " + "[" * 5000 + "]" * 5000,
                                  ".".join(["run"] * 5000) + ' = "x"',
                                  "a = " + "{ b = " * 3000 + "1" + " }" * 3000],
                         ids=["arrays", "dotted-keys", "inline-tables"])
def test_a_keymap_nested_thousands_deep_is_reported_and_the_dashboard_starts(tmp_path: Path, text: str) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text(text, encoding="utf-8")
    notes = start_dashboard(tmp_path, str(keymap))
    assert any("Keymap" in n and "keys.toml" in n for n in notes), notes
