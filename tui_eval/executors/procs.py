"""Processes by their family (Linux `/proc`): a process's ancestors, a process's descendants, ending all of
a process's descendants. Elsewhere (no `/proc`) each answers as if there were none."""

from __future__ import annotations

import logging
import os
import signal
import time

log = logging.getLogger(__name__)

#: Seconds `end_descendants` keeps killing what appears (a tool forking as fast as it can) before it gives up.
END_WITHIN = 5.0


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # `pid (comm) state ppid ...`: comm may hold spaces and parentheses; the last ')' ends it.
    rest = text[text.rfind(")") + 2:].split()
    try:
        return int(rest[1]), rest[0]
    except (IndexError, ValueError):
        return None


def ancestry(pid: int) -> list[int]:
    """`pid`, its parent, its parent's parent... up to (not including) pid 1; [pid] when not known."""
    chain = [pid]
    seen = {pid}
    while True:
        stat = _stat(chain[-1])
        if stat is None or stat[0] <= 1 or stat[0] in seen:
            return chain
        chain.append(stat[0])
        seen.add(stat[0])


def _parents() -> dict[int, int]:
    out: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                out[int(name)] = stat[0]
    return out


def descendants(pid: int) -> list[int]:
    """Every living descendant of `pid` (children first)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def end_descendants() -> int:
    """SIGKILL every descendant of this process and reap them, until it has no child left. For a child
    subreaper (PR_SET_CHILD_SUBREAPER), which every orphan of its tree comes back to: no process this
    process's tree started outlives the call. Returns how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + END_WITHIN
    while True:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:  # no child left: the tree is gone
            return len(killed)
        if time.monotonic() > deadline:
            log.warning("processes started by the agent kept appearing for %g s: some may be left", END_WITHIN)
            return len(killed)
        time.sleep(0.01)
