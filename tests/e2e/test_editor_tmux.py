"""`E` in a real terminal (tmux): the dashboard suspends, $EDITOR (a script here) edits the case in a private
0600 file, the dashboard comes back and the eval file holds the edit; `z` puts the file's bytes back."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

from tests.support.evalfiles import case, turn

ROOT = str(Path(__file__).resolve().parents[2])

EDITOR = '''
import json, os, stat, sys
path = sys.argv[1]
with open({log!r}, "w") as log:
    json.dump({{"path": path, "mode": stat.S_IMODE(os.stat(path).st_mode), "tty": os.isatty(0) and os.isatty(1)}}, log)
with open(path) as fh:
    case = json.load(fh)
case["conversation"][0]["final_response"]["parts"][0]["text"] = "Edited in the editor."
with open(path, "w") as fh:
    json.dump(case, fh, indent=2)
'''


class Tmux:
    """One tmux server of its own (a private socket), one session running a command."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.socket = f"tui-eval-test-{uuid.uuid4().hex[:8]}"
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "110", "-y", "32",
                   " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " exec " + command)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            self._tmux("send-keys", "-t", "main", key)
            time.sleep(0.1)  # one key at a time, as typed (a burst can arrive as one escape sequence)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "main")

    def wait(self, condition: Callable[[], object], what: str, timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not happen; the screen:\n{self.screen()}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False, capture_output=True)


def test_e_suspends_for_the_editor_and_z_restores_the_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    eval_file = folder / "shop.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": "shop", "eval_cases": [
        case("refund", turn("I want a refund", "Sure, refunded.", [("refund", {"order": 7})], "r-1")),
        case("hours", turn("When do you open?", "At nine.", [], "h-1")),
    ]}, indent=4) + "\n")
    original = eval_file.read_bytes()
    log = tmp_path / "editor.json"
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR.format(log=str(log)))
    env = {"EDITOR": f"{sys.executable} {editor}", "PYTHONPATH": ROOT, "TERM": "xterm-256color",
           "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "PATH": os.environ.get("PATH", "")}
    term = Tmux(f"{shlex.quote(sys.executable)} -m tui_eval.cli {shlex.quote(str(folder))} --no-mouse", env)
    try:
        term.wait(lambda: "shop.evalset.json" in term.screen(), "the dashboard showing the eval set")
        term.keys("Enter")
        term.wait(lambda: "refund" in term.screen(), "the eval set opening")
        term.keys("Down", "E")
        term.wait(lambda: b"Edited in the editor." in eval_file.read_bytes(), "the edit reaching the eval file")
        seen = json.loads(log.read_text())
        # A private file, and the terminal was the editor's (the dashboard had let go of it).
        assert seen["mode"] == 0o600 and seen["tty"] is True
        term.wait(lambda: "Saved case refund" in term.screen(), "the dashboard coming back")
        data = json.loads(eval_file.read_text())
        assert data["eval_cases"][0]["conversation"][0]["final_response"]["parts"][0]["text"] == "Edited in the editor."
        assert data["eval_cases"][1] == json.loads(original)["eval_cases"][1]
        assert eval_file.read_text().startswith('{\n    "eval_set_id": "shop"')  # the file's own indentation
        assert not Path(seen["path"]).exists()  # the temporary copy is gone

        term.keys("z")
        term.wait(lambda: eval_file.read_bytes() == original, "undo restoring the bytes")
        term.wait(lambda: "Undone: edit of case refund" in term.screen(), "undo saying so")
        term.keys("q")
    finally:
        term.close()
