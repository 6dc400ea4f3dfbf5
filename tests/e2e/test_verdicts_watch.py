"""`tui-eval watch --strict`: the no-credentials notice is said once, and a pass with metrics not
evaluated fails (issue 9, item 1)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_watch import DEMO, Lines


def test_watch_strict_and_the_notice_once(tmp_path: Path) -> None:
    folder = tmp_path / "support"
    shutil.copytree(DEMO / "support", folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    env = dict(os.environ, TUI_EVAL_AGENT_MODE="auto", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_eval.cli", "watch", str(folder), "--debounce", "0.1", "--strict",
         "--judge-timeout", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )
    lines = Lines(proc)
    try:
        # Of the two eval files' configs: the judge metrics, then ADK's Vertex-backed multi-turn metrics.
        lines.wait_for("5 metrics will not be evaluated: no judge credentials; "
                       "3 metrics will not be evaluated: no Vertex AI settings")
        # --strict: scenario cases that could not be evaluated offline fail too.
        lines.wait_for("0 passed, 2 failed, 0 not evaluated")
        lines.wait_for("FAIL return_used_item: 1 of 4 metrics evaluated")
        lines.wait_for("watching")
        eval_file = folder / "support.evalset.json"
        data = json.loads(eval_file.read_text())
        case = next(c for c in data["eval_cases"] if c["eval_id"] == "return_used_item")
        case["conversation"][0]["final_response"]["parts"][0]["text"] += " Thanks!"
        eval_file.write_text(json.dumps(data, indent=2))
        line = lines.wait_for(" -> re-")
        assert "return_used_item" in line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        lines.wait_for("stopped watching")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sum("will not be evaluated" in line for line in lines.seen) == 1
