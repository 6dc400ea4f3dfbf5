"""Run tui-eval (or a Python snippet) in a child process bounded in time and memory.

Hostile-input tests use it so that a regression (a read that never ends, a FIFO that blocks, a gzip bomb)
fails the test instead of hanging the suite or exhausting the machine: the child gets an address-space
limit and a wall-clock timeout, after which its whole process group is killed.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

#: Address space a child may map: imports of pydantic, orjson, google-genai and Textual fit well within.
DEFAULT_MEMORY = 3 * 1024**3
DEFAULT_TIMEOUT = 60.0


@dataclass
class Outcome:
    """What the child did: its exit code (None when it was killed for taking too long) and its output."""

    code: int | None
    out: str
    err: str

    @property
    def timed_out(self) -> bool:
        return self.code is None


def _limits(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_bounded(argv: Sequence[str], *, cwd: Path | None = None, timeout: float = DEFAULT_TIMEOUT,
                memory: int = DEFAULT_MEMORY, env: Mapping[str, str] | None = None,
                stdin: int | None = subprocess.DEVNULL) -> Outcome:
    """Run `argv` with a memory limit; kill its process group after `timeout` seconds."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen(list(argv), cwd=cwd, env=full_env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: _limits(memory))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Outcome(None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    return Outcome(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def tui_eval(*args: str, **kw: object) -> Outcome:
    """`tui-eval ARGS...` in a bounded child (`python -m tui_eval.cli`, so the tree under test runs)."""
    return run_bounded([sys.executable, "-m", "tui_eval.cli", *args], **kw)  # type: ignore[arg-type]


def python(code: str, *args: str, **kw: object) -> Outcome:
    """A Python snippet in a bounded child (`sys.argv[1:]` are `args`)."""
    return run_bounded([sys.executable, "-c", code, *args], **kw)  # type: ignore[arg-type]
