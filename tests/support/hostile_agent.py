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
import subprocess
import sys
import time

from tui_eval.agents.native import NativeAgent

HOARD = []
# Started by a short-lived process in a session of its own: an orphan that left the tool's process group.
DAEMON = ("import subprocess, sys; p = subprocess.Popen(['sleep', '600'], start_new_session=True, "
          "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)")


def _engine():
    """The pid of the nearest ancestor running `tui_eval.cli` (the engine), read from /proc."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"tui_eval.cli" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    raise RuntimeError("no engine among this process's ancestors")


def act(what: str) -> str:
    """Do something."""
    start = time.time()
    if what == "hoard":  # a runaway that keeps what it took: later allocations anywhere in its process fail
        while True:
            HOARD.append(bytes(16 << 20))
    if what == "alloc":  # a healthy tool that needs 64 MB, a moment after it starts
        time.sleep(0.5)
        len(bytes(64 << 20))
    if what == "daemon":
        started = subprocess.run([sys.executable, "-c", DAEMON], capture_output=True, text=True, check=True)
        with open(os.environ["TOOL_LOG"] + ".daemons", "a") as f:
            f.write(started.stdout.strip() + "\\n")
    if what == "killparent":
        os.kill(os.getppid(), signal.SIGTERM)
    if what == "killengine":
        os.kill(_engine(), signal.SIGTERM)
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


def daemons(tmp_path: Path) -> list[int]:
    """The pids of the processes the `daemon` calls started (each in a session of its own, orphaned)."""
    path = tmp_path / "tools.log.daemons"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """The process exists and is no zombie (one that ended but was not reaped yet is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
