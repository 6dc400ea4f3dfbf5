"""A run's progress, as the dashboard's read model keeps it for the run panel: the engine's records
(or a CES run's counts) folded in on one thread, snapshots read on the UI thread.

Nothing here imports Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from ..engine import events as ev
from ..engine.feed import CaseBegun, CaseDone, CasesDone, MetricsScored, cases_done, summarize
from ..schema.status import CASE_STATUSES, EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.feed import Record


def _no_counts() -> dict[int, int]:
    """A run's finished cases by status before any finished: passed, failed, not evaluated."""
    return dict.fromkeys(CASE_STATUSES, 0)


#: Where a run is: it starts, runs (and may be asked to cancel), and ends finished, cancelled or failed.
RunPhase = Literal["starting", "running", "cancelling", "finished", "cancelled", "failed"]


@dataclass(slots=True)
class RunSnapshot:
    """What the UI needs to redraw the run panel, copied out under the lock."""

    version: int
    phase: RunPhase
    label: str
    cases_total: int
    cases_done: int
    counts: dict[int, int]
    metric_done: dict[str, int]
    metric_total: dict[str, int]
    #: Per metric, the finished cases it gave a verdict on (not NOT_EVALUATED): 0 means it evaluated nothing.
    metric_evaluated: dict[str, int]
    running: set[Any]
    errors: list[str]
    saved: list[str]
    #: Finished cases being saved now that no case runs any more (None until then, and once saved).
    saving: int | None = None


class RunState:
    """A run's progress: the read model applies the engine's records to it, a CES worker thread its
    counts; the UI reads it via `drain()`. `ticket` names the engine run command behind it."""

    def __init__(self, label: str, ticket: int = 0) -> None:
        self.label = label
        self.ticket = ticket
        self._lock = threading.Lock()
        self.version = 0
        self.phase: RunPhase = "starting"
        #: A live-loop run has adopted this state (so the next one gets its own).
        self.claimed = False
        self.cases_total = 0
        self.cases_done = 0
        self.counts: dict[int, int] = _no_counts()
        # Several engine runs (one per agent) may feed one state at once, so progress is counted here:
        # every MetricProgress event is one invocation scored by one metric.
        self._metric_done: dict[str, int] = defaultdict(int)
        self._metric_total: dict[str, int] = defaultdict(int)
        self._metric_evaluated: dict[str, int] = defaultdict(int)
        self.running: set[Any] = set()
        self.errors: list[str] = []
        self.saved: list[str] = []
        # Engine runs started and stopped (each says when its cases stop, before it saves them).
        self._runs_started = 0
        self._runs_stopped = 0
        self._stopped_cases = 0
        self._cancel: Callable[[], None] | None = None
        self.cancel_requested = False

    # ---- producer side (engine thread) -------------------------------------------------

    def apply(self, event: Record) -> None:
        """Fold one engine event or record into the state (cheap: called thousands of times a second)."""
        if type(event) is ev.CaseFinished:
            event = CaseDone(event.key, summarize(event.result, insight=False), event.repetition)
        if type(event) is CaseDone:  # one case: counted by the batch's rule (`cases_done`)
            event = cases_done([event], ended=(event.key,))
        with self._lock:
            self.version += 1
            if type(event) is CaseBegun or type(event) is ev.CaseStarted:
                self.running.add(event.key)
            elif type(event) is CasesDone:
                self.running.difference_update(event.ended)
                self.cases_done += len(event.keys)
                for status, n in event.counts.items():
                    self.counts[status] += n
                for name, n in event.evaluated.items():
                    self._metric_evaluated[name] += n
            elif isinstance(event, ev.MetricProgress):
                name = event.metric_name
                self._metric_done[name] += 1
                self._metric_total[name] = max(self._metric_total[name], self._metric_done[name])
            elif isinstance(event, MetricsScored):
                for name, n in event.counts.items():
                    self._metric_done[name] += n
                    self._metric_total[name] = max(self._metric_total[name], self._metric_done[name])
            elif isinstance(event, ev.RunStarted):
                if self.phase == "starting":
                    self.phase = "running"
                self.cases_total += event.total_cases
                self._runs_started += 1
                for name, total in event.metric_totals.items():
                    self._metric_total[name] += total
            elif isinstance(event, ev.CasesStopped):
                self._runs_stopped += 1
                self._stopped_cases += event.finished
            elif isinstance(event, ev.RunFinished):
                self.saved.extend(event.saved)
            elif isinstance(event, ev.RunError):
                self.errors.append(event.message)

    def set_counts(self, total: int, done: int, counts: dict[int, int]) -> None:
        """Progress counted elsewhere (a run in CES): the totals and the ✔/✘/– counts, replaced."""
        with self._lock:
            if self.phase == "starting":
                self.phase = "running"
            self.cases_total, self.cases_done = total, done
            self.counts = {**_no_counts(), **counts}
            self.version += 1

    def mark_running(self) -> None:
        with self._lock:
            if self.phase == "starting":
                self.phase = "cancelling" if self.cancel_requested else "running"
            self.version += 1

    def set_canceller(self, cancel: Callable[[], None] | None) -> None:
        """Register how to stop the engine work behind this state (a thread-safe callable)."""
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

    def finish(self, phase: RunPhase, error: str | None = None) -> None:
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
            return RunSnapshot(
                version=self.version,
                phase=self.phase,
                label=self.label,
                cases_total=self.cases_total,
                cases_done=self.cases_done,
                counts=dict(self.counts),
                metric_done=dict(self._metric_done),
                metric_total=dict(self._metric_total),
                metric_evaluated=dict(self._metric_evaluated),
                running=set(self.running),
                errors=list(self.errors),
                saved=list(self.saved),
                saving=self._saving(),
            )

    def _saving(self) -> int | None:
        """Cases being saved: every engine run feeding this state has stopped running cases (under the lock)."""
        if self.active and self._runs_started and self._runs_stopped >= self._runs_started:
            return self._stopped_cases
        return None
