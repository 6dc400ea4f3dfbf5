"""Which changed files are a run's own writes rather than edits (the live loop re-runs on edits only).

An agent that writes a .py file into its own folder while it runs (generated code, a scratch module)
would otherwise re-run itself for ever under `watch`, a few times a second, each run saving history.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

# File times come from the kernel's coarse clock, up to a tick behind time.time().
_MTIME_SLACK = 0.05
_CLOCK_REALTIME_COARSE = 5  # Linux's clock id (uapi/linux/time.h); Python names no constant for it


def file_clock() -> float:
    """Now, on the clock file modification times are taken from (Linux: the coarse real-time clock)."""
    if sys.platform.startswith("linux"):
        try:
            return time.clock_gettime(_CLOCK_REALTIME_COARSE)
        except OSError:  # a kernel without it
            pass
    return time.time()


class RunWrites:
    """Per agent, when its latest run was under way: a file last changed then is that run's own write."""

    def __init__(self) -> None:
        self._windows: dict[str, tuple[float, float]] = {}

    def ran(self, ref: str, started: float) -> None:
        """A run of `ref` that started at `started` (time.time()) has just ended."""
        self._windows[ref] = (started, file_clock())

    def written_by_run(self, ref: str, path: Path) -> bool:
        """Whether `path` was last changed while the latest run of `ref` was under way. (A save made
        during a run is taken for the run's too: saving again re-runs.)"""
        window = self._windows.get(ref)
        if window is None:
            return False
        try:
            changed = path.stat().st_mtime
        except OSError:
            return False  # deleted: an edit (or the run's own clean-up, which re-runs once)
        # Slack at the start; the end is read from the files' own clock, so a save just after the
        # run is never taken for the run's.
        if window[0] - _MTIME_SLACK <= changed < window[1]:
            log.info("%s changed during a run of %s: the run's own write, not an edit", path, ref)
            return True
        return False
