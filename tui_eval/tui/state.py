"""Plain state the read model keeps for the widgets: the latest result of each case, and the run in progress.

Nothing here imports Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from ..engine import events as ev
from ..engine.feed import CaseBegun, CaseDone, MetricsScored, summarize

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import CaseSummary, Wanted
    from ..schema.results import CaseResult

#: Gets full results the engine process holds: (case, repetition) pairs -> their results (one it could
#: not get is left out).
Fetcher = Callable[[list["Wanted"]], dict["Wanted", "CaseResult"]]


class Held(NamedTuple):
    """A full result the engine process holds (of this repetition of the case): fetched the first time
    something reads it, then kept."""

    repetition: int


class Results:
    """The latest result of each case: this session's runs, else the newest saved record.

    Each case keeps its summary (what lists, counts, sorts and filters read) and its full result. A run's
    case comes as its summary alone: the engine holds the full result, and `get` fetches it the first
    time something reads it, so 100,000 finished cases are never all copied into the dashboard."""

    def __init__(self) -> None:
        self._summary: dict[CaseKey, CaseSummary] = {}
        self._full: dict[CaseKey, CaseResult | Held] = {}
        self._origin: dict[CaseKey, str] = {}
        #: When a saved result was saved (its age is shown beside it); absent for this session's results.
        self._saved_at: dict[CaseKey, float] = {}
        #: Bumped on every change, so views can cache what they derive from results.
        self.version = 0
        #: Fetches the results the engine holds (the app sets it once the engine runs).
        self.fetcher: Fetcher | None = None

    def __len__(self) -> int:
        return len(self._summary)

    def __contains__(self, key: object) -> bool:
        return key in self._summary

    def get(self, key: CaseKey) -> CaseResult | None:
        """The full result (fetched from the engine the first time, if it holds it)."""
        full = self._full.get(key)
        if type(full) is Held:
            return self._fetch([key]).get(key)
        return full  # type: ignore[return-value]

    def get_many(self, keys: list[CaseKey]) -> dict[CaseKey, CaseResult]:
        """The full results of these cases (those without one left out), with one fetch from the engine."""
        out: dict[CaseKey, CaseResult] = {}
        held: list[CaseKey] = []
        for key in keys:
            full = self._full.get(key)
            if isinstance(full, Held):
                held.append(key)
            elif full is not None:
                out[key] = full
        if held:
            out.update(self._fetch(held))
        return out

    def _fetch(self, keys: list[CaseKey]) -> dict[CaseKey, CaseResult]:
        wanted = [(k, held.repetition) for k in keys if type(held := self._full.get(k)) is Held]
        got = self.fetcher(wanted) if self.fetcher is not None and wanted else {}
        out: dict[CaseKey, CaseResult] = {}
        for (key, repetition), result in got.items():
            out[key] = result
            if self._full.get(key) == Held(repetition):  # not replaced while it was fetched
                self._full[key] = result
        return out

    def summary(self, key: CaseKey) -> CaseSummary | None:
        return self._summary.get(key)

    def status(self, key: CaseKey, metric: str | None = None) -> int | None:
        """The case's status, or (with `metric`) that metric's; None when there is none."""
        summary = self._summary.get(key)
        if summary is None:
            return None
        if metric:
            m = summary.metric(metric)
            return m.status if m is not None else None
        return summary.status

    def score(self, key: CaseKey, metric: str | None = None) -> float | None:
        """The score shown beside a case: the metric's, else the worst metric's score."""
        summary = self._summary.get(key)
        if summary is None:
            return None
        if metric:
            m = summary.metric(metric)
            return m.score if m is not None else None
        scores = [m.score for m in summary.metrics if m.score is not None]
        return min(scores) if scores else None

    def has_metric(self, key: CaseKey, metric: str) -> bool:
        summary = self._summary.get(key)
        return summary is not None and summary.metric(metric) is not None

    def turn_status(self, key: CaseKey, index: int, metric: str | None = None) -> int | None:
        summary = self._summary.get(key)
        return summary.turn_status(index, metric) if summary is not None else None

    def origin(self, key: CaseKey) -> str:
        return self._origin.get(key, "")

    def origin_text(self, key: CaseKey, now: float, *, short: bool = False) -> str:
        """The origin with the result's age, e.g. `saved 2026-01-01 01:00 · 2h ago` (`saved 2h ago` short)."""
        origin = self._origin.get(key, "")
        saved_at = self._saved_at.get(key)
        if saved_at is None:
            return origin
        if short:
            return f"saved {age_text(now - saved_at)}"
        return f"{origin} · {age_text(now - saved_at)}"

    def saved_at(self, key: CaseKey) -> float | None:
        """When the shown result was saved (None: a result of this session)."""
        return self._saved_at.get(key)

    def put(self, key: CaseKey, result: CaseResult | Finished, origin: str, saved_at: float | None = None) -> None:
        """Store a case's result: a full one (summarised here), or a summary with its full result or the
        engine's hold on it."""
        if isinstance(result, Finished):
            self._summary[key], self._full[key] = result.summary, result.full
        else:
            self._summary[key], self._full[key] = summarize(result, insight=False), result
        self._origin[key] = origin
        if saved_at is None:
            self._saved_at.pop(key, None)
        else:
            self._saved_at[key] = saved_at
        self.version += 1

    def forget(self, key: CaseKey) -> None:
        self._summary.pop(key, None)
        self._full.pop(key, None)
        self._origin.pop(key, None)
        self._saved_at.pop(key, None)
        self.version += 1

    def keys(self) -> list[CaseKey]:
        return list(self._summary)

    def metric_names(self) -> list[str]:
        """Every metric any stored result was scored with, in first-seen order."""
        names: dict[str, None] = {}
        for summary in self._summary.values():
            for m in summary.metrics:
                names.setdefault(m.name, None)
        return list(names)


@dataclass(frozen=True, slots=True)
class Finished:
    """A finished case as the read model stores it: its summary, and its full result (as the loader read
    it) or the engine's hold on it (a case of this session's runs)."""

    summary: CaseSummary
    full: CaseResult | Held


def age_text(seconds: float) -> str:
    """How long ago, in the coarsest unit that is at least one: `just now`, `5min ago`, `2h ago`, `3d ago`."""
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            # No space before the unit: the summary's status line must fit 40 columns at 80x24.
            return f"{int(seconds // size)}{unit} ago"
    return "just now"  # pragma: no cover - the loop always returns


_NOT_EVALUATED = 3  # EvalStatus.NOT_EVALUATED (the schema stays off this module's import path)


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
        self.phase = "starting"  # starting | running | cancelling | finished | cancelled | failed
        #: A live-loop run has adopted this state (so the next one gets its own).
        self.claimed = False
        self.cases_total = 0
        self.cases_done = 0
        self.counts: dict[int, int] = {1: 0, 2: 0, 3: 0}
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

    def apply(self, event: Any) -> None:
        """Fold one engine event or record into the state (cheap: called thousands of times a second)."""
        kind = type(event)
        with self._lock:
            self.version += 1
            if kind is CaseBegun or kind is ev.CaseStarted:
                self.running.add(event.key)
            elif kind is CaseDone or kind is ev.CaseFinished:
                summary = event.summary if kind is CaseDone else summarize(event.result, insight=False)
                self.running.discard(event.key)
                self.cases_done += 1
                self.counts[summary.status] += 1
                for m in summary.metrics:
                    # A judge with no credentials fills its bar all the same: count what it decided.
                    self._metric_evaluated[m.name] += m.status != _NOT_EVALUATED
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
            self.counts = {**{1: 0, 2: 0, 3: 0}, **counts}
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
