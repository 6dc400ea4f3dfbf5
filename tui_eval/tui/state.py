"""Plain state shared between producers (loader, watcher, run threads) and the UI, which pulls it on a timer.

Producers only ever call the locked `push`/`apply` methods; the UI drains on its 8 Hz tick. Nothing
here imports Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..schema.results import CaseResult


@dataclass(slots=True)
class FileNews:
    """An eval file or config that was loaded, reloaded, went away or broke (for the UI to redraw)."""

    path: Path
    kind: str  # "eval" | "config" | "agent" | "other"
    removed: bool = False
    error: Any = None  # a LoadError
    changed_cases: list[str] = field(default_factory=list)
    # A config whose criteria changed (stored inferences can be re-scored), or an agent source's folder.
    criteria_changed: bool = False
    agent_dir: Path | None = None
    # Found by the start-up scan (its errors show in the tree, not as pop-ups).
    initial: bool = False


class Inbox:
    """A thread-safe mailbox of file news and loaded results, drained by the UI tick."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: list[FileNews] = []
        self._results: list[tuple[CaseKey, CaseResult, str]] = []
        self._messages: list[tuple[str, str]] = []
        self.loading = True
        self.loaded_files = 0

    def push_file(self, news: FileNews) -> None:
        with self._lock:
            self._files.append(news)
            if news.kind == "eval":
                self.loaded_files += 1

    def push_result(self, key: CaseKey, result: CaseResult, origin: str) -> None:
        with self._lock:
            self._results.append((key, result, origin))

    def push_message(self, text: str, severity: str = "information") -> None:
        with self._lock:
            self._messages.append((text, severity))

    def drain(self) -> tuple[list[FileNews], list[tuple[CaseKey, CaseResult, str]], list[tuple[str, str]]]:
        with self._lock:
            files, self._files = self._files, []
            results, self._results = self._results, []
            messages, self._messages = self._messages, []
        return files, results, messages


class Results:
    """The latest result of each case: this session's runs, else the newest saved record. UI thread only."""

    def __init__(self) -> None:
        self._by_key: dict[CaseKey, CaseResult] = {}
        self._origin: dict[CaseKey, str] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: CaseKey) -> CaseResult | None:
        return self._by_key.get(key)

    def origin(self, key: CaseKey) -> str:
        return self._origin.get(key, "")

    def put(self, key: CaseKey, result: CaseResult, origin: str) -> None:
        self._by_key[key] = result
        self._origin[key] = origin

    def forget(self, key: CaseKey) -> None:
        self._by_key.pop(key, None)
        self._origin.pop(key, None)

    def keys(self) -> list[CaseKey]:
        return list(self._by_key)

    def metric_names(self) -> list[str]:
        """Every metric any stored result was scored with, in first-seen order."""
        names: dict[str, None] = {}
        for result in self._by_key.values():
            for m in result.metrics:
                names.setdefault(m.metric_name, None)
        return list(names)


@dataclass(slots=True)
class RunSnapshot:
    """What the UI needs to redraw the run panel, copied out under the lock."""

    version: int
    phase: str
    label: str
    cases_total: int
    cases_done: int
    counts: dict[int, int]
    metric_done: dict[str, int]
    metric_total: dict[str, int]
    running: set[Any]
    finished: list[tuple[Any, Any]]
    errors: list[str]
    saved: list[str]


class RunState:
    """A run's progress, written by the engine thread through `apply(event)`, read by the UI via `drain()`."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._lock = threading.Lock()
        self.version = 0
        self.phase = "starting"  # starting | running | cancelling | finished | cancelled | failed
        self.cases_total = 0
        self.cases_done = 0
        self.counts: dict[int, int] = {1: 0, 2: 0, 3: 0}
        self._metric_done: dict[str, int] = defaultdict(int)
        self._metric_total: dict[str, int] = defaultdict(int)
        # Engine progress is run-wide; one UI run may chain several engine runs (one per agent).
        self._base_done: dict[str, int] = defaultdict(int)
        self._base_total: dict[str, int] = defaultdict(int)
        self.running: set[Any] = set()
        self._finished: list[tuple[Any, Any]] = []
        self.errors: list[str] = []
        self.saved: list[str] = []
        self._cancel: Callable[[], None] | None = None
        self.cancel_requested = False

    # ---- producer side (engine thread) -------------------------------------------------

    def apply(self, event: Any) -> None:
        """Fold one engine event into the state (cheap: called up to thousands of times a second)."""
        from ..engine import events as ev

        with self._lock:
            self.version += 1
            if isinstance(event, ev.MetricProgress):
                self._metric_done[event.metric_name] = self._base_done[event.metric_name] + event.done
                self._metric_total[event.metric_name] = self._base_total[event.metric_name] + event.total
            elif isinstance(event, ev.CaseStarted):
                self.running.add(event.key)
            elif isinstance(event, ev.CaseFinished):
                self.running.discard(event.key)
                self.cases_done += 1
                self.counts[int(event.result.status)] += 1
                self._finished.append((event.key, event.result))
            elif isinstance(event, ev.RunStarted):
                self.phase = "cancelling" if self.cancel_requested else "running"
                self.cases_total += event.total_cases
                for name in set(self._metric_total) | set(event.metric_totals):
                    self._base_done[name] = self._metric_done[name]
                    self._base_total[name] = self._metric_total[name]
                    self._metric_total[name] = self._base_total[name] + event.metric_totals.get(name, 0)
            elif isinstance(event, ev.RunFinished):
                self.saved.extend(event.saved)
                self.running.clear()
            elif isinstance(event, ev.RunError):
                self.errors.append(event.message)

    def set_canceller(self, cancel: Callable[[], None] | None) -> None:
        """Register how to stop the engine run in progress (a thread-safe callable), or clear it."""
        with self._lock:
            self._cancel = cancel
            requested = self.cancel_requested
        if cancel is not None and requested:
            cancel()

    def cancel(self) -> None:
        """Ask the run to stop; finished cases are kept. Safe from any thread."""
        with self._lock:
            self.cancel_requested = True
            if self.phase in ("starting", "running"):
                self.phase = "cancelling"
            self.version += 1
            cancel = self._cancel
        if cancel is not None:
            cancel()

    def finish(self, phase: str, error: str | None = None) -> None:
        with self._lock:
            self.phase = phase
            if error:
                self.errors.append(error)
            self.running.clear()
            self.version += 1

    # ---- consumer side (UI thread) -----------------------------------------------------

    @property
    def active(self) -> bool:
        return self.phase in ("starting", "running", "cancelling")

    def drain(self) -> RunSnapshot:
        with self._lock:
            finished, self._finished = self._finished, []
            return RunSnapshot(
                version=self.version,
                phase=self.phase,
                label=self.label,
                cases_total=self.cases_total,
                cases_done=self.cases_done,
                counts=dict(self.counts),
                metric_done=dict(self._metric_done),
                metric_total=dict(self._metric_total),
                running=set(self.running),
                finished=finished,
                errors=list(self.errors),
                saved=list(self.saved),
            )
