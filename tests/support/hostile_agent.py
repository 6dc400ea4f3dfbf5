"""A native agent whose one tool does to its own process what the user message asks, and the helpers the
executor tests share (tests/e2e/test_executor_contract.py for both executors, test_agent_processes.py for
what only the local pool promises)."""

from __future__ import annotations

from pathlib import Path

from tests.support.evalfiles import case, turn, write_set

AGENT = '''
"""A native agent whose one tool does to its own process what the user message asks."""
import os
import re
import signal
import sys
import time

from tui_eval.agents.native import NativeAgent


def act(what: str) -> str:
    """Do something."""
    start = time.time()
    if what == "exit":
        os._exit(0)
    if what == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "regex":
        re.match(r"(a+)+$", "a" * 64 + "b")  # catastrophic backtracking: C code that never lets go of the GIL
    if what == "hang":
        time.sleep(600)
    if what == "sleep":
        time.sleep(1.0)
    if what == "closeout":
        sys.stdout.close()
        os.close(1)
    if what == "oom":
        hog = bytearray(4 << 30)
        return str(len(hog))
    if what == "ok":
        print("TOOL SAYS HI")  # the worker's stdout: the engine's log, never the run's output
        print("TOOL SAYS HI", file=sys.stderr)
    if what == "chdir":
        os.chdir("/")
        os.environ["POISON"] = "1"
    with open(os.environ["TOOL_LOG"], "a") as f:
        f.write(f"{what} {start} {time.time()} {os.getpid()} poison={os.environ.get('POISON', '')} {os.getcwd()}\\n")
    return "done"


def policy(turn):
    if not turn.results:
        return [("act", {"what": turn.user_text.split()[0]})]
    return "done"


root_agent = NativeAgent("hostile", "Do as told.", tools=[act], policy=policy)
'''


def hostile_case(eval_id: str, *whats: str) -> dict:
    """A case whose turns ask the tool, one after another, for `whats`."""
    return case(eval_id, *(turn(w, "done", [("act", {"what": w})]) for w in whats))


def hostile_folder(tmp_path: Path, *cases: dict) -> tuple[Path, Path]:
    """The agent folder (its tool logs each call to tmp_path/tools.log) and its eval set of `cases`."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "__init__.py").write_text("from . import agent\n")
    # The folder's .env travels with it, to a Ray cluster too.
    (folder / ".env").write_text(f"TOOL_LOG={tool_log(tmp_path)}\n")
    return folder, write_set(folder / "hostile.evalset.json", "hostile", *cases)


def tool_log(tmp_path: Path) -> Path:
    """Where the tool writes a line per call that returned: what, start, end, pid, poison=..., cwd."""
    return tmp_path / "tools.log"
