"""The bounded rule for an agent that rewrites its own source while it runs.

A save is never ignored: after every run the engine compares the agent's files on disk with the version
the run loaded, and a change re-runs the agent's cases (live mode). An agent whose every run changes its
own files (generated code, a scratch module) would then re-run itself for ever, each run saving
history; so once SELF_WRITE_LIMIT runs of an agent in a row each changed its files, its live re-runs
pause, with a notice that says so. Its results are stale meanwhile (and say so), a save made after its
last run ended still re-runs it, and `r`/`R` run it whenever asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Runs in a row that each changed the agent's own files before its live re-runs pause.
SELF_WRITE_LIMIT = 3


@dataclass(slots=True)
class SelfWrites:
    """Per agent: how many of its runs in a row changed its files, and its version when the last ended."""

    streak: dict[str, int] = field(default_factory=dict)
    ended_at: dict[str, str | None] = field(default_factory=dict)

    def ran(self, ref: str, loaded: str | None, on_disk: str | None) -> bool:
        """A run of `ref` that loaded version `loaded` ended, with `on_disk` on disk now; True when its
        files changed during the run (then the run's results are stale)."""
        changed = loaded != on_disk
        self.streak[ref] = self.streak.get(ref, 0) + 1 if changed else 0
        self.ended_at[ref] = on_disk
        return changed

    def paused(self, ref: str) -> bool:
        """Whether live re-runs of `ref` are paused: its last SELF_WRITE_LIMIT runs each changed its files."""
        return self.streak.get(ref, 0) >= SELF_WRITE_LIMIT

    def changed_since_run(self, ref: str, on_disk: str | None) -> bool:
        """Whether the files changed after the last run of `ref` ended (a save no run of it made)."""
        return ref not in self.ended_at or self.ended_at[ref] != on_disk

    def notice(self, ref: str, name: str) -> str:
        return (f"agent {name} changed its own files during each of its last {self.streak.get(ref, 0)} runs: "
                "live re-runs of it are paused (its results are marked stale; save again, or press r/R, "
                "to run it)")
