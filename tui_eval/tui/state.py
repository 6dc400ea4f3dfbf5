"""Plain state shared between producers (loader and engine threads) and the UI, which pulls it on a timer.

Producers only call the locked methods here; the UI drains them on its 8 Hz tick. Nothing here imports
Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..schema.results import CaseResult


class Inbox:
    """A thread-safe mailbox of loaded results, removed cases and messages, drained by the UI tick."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: list[tuple[CaseKey, CaseResult, str, float | None]] = []
        self._removed: list[CaseKey] = []
        self._messages: list[tuple[str, str]] = []
        #: True until the start-up scan (files and saved results) is done.
        self.loading = True

    def push_result(self, key: CaseKey, result: CaseResult, origin: str, saved_at: float | None = None) -> None:
        with self._lock:
            self._results.append((key, result, origin, saved_at))

    def push_removed(self, keys: list[CaseKey]) -> None:
        with self._lock:
            self._removed.extend(keys)

    def push_message(self, text: str, severity: str = "information") -> None:
        with self._lock:
            self._messages.append((text, severity))

    def drain(
        self,
    ) -> tuple[list[tuple[CaseKey, CaseResult, str, float | None]], list[CaseKey], list[tuple[str, str]]]:
        with self._lock:
            results, self._results = self._results, []
            removed, self._removed = self._removed, []
            messages, self._messages = self._messages, []
        return results, removed, messages


class UiPriority:
    """Keeps the UI thread (and Textual's input and output threads) ahead of a CPU-bound engine thread.

    All of them are Python threads of one process, so they share the GIL. A replay run scores without
    pause, and CPython hands the GIL to a waiting thread only once the holder ran a whole switch
    interval without letting go of it; the engine lets go at every select of its event loop, which
    restarts that wait each time, so the other threads got the GIL only now and then: a key took seconds
    to reach the app and its frame seconds more to reach the terminal (bench/tui_scale.py at 100,000
    cases: keys p95 0.4-1.3 s, max 2-6 s).

    Two rules, applied at each engine event (`wait`):
    - held by the UI (a key during a run, see EvalApp._take_priority): wait, without the GIL, until the
      UI released it after its next paint, or MAX_PAUSE at most, so a UI that never releases only slows
      a run, never stops it;
    - after RUN_SLICE seconds of engine work without a break, sleep YIELD_FOR: every waiting thread then
      takes the GIL at once. Events further apart than IDLE_GAP mean the engine was waiting (an LLM, a
      timer), which starts a new slice, so a paced run never sleeps.
    """

    #: Seconds the engine waits at most for one hold.
    MAX_PAUSE = 0.1
    #: Seconds of uninterrupted engine work before it yields the GIL.
    RUN_SLICE = 0.010
    #: Seconds the engine sleeps when it yields.
    YIELD_FOR = 0.0005
    #: A gap between two engine events longer than this was idle time, not work.
    IDLE_GAP = 0.002

    def __init__(self, *, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._free = threading.Event()
        self._free.set()
        self._until = 0.0
        #: The UI thread (the one that makes this): its own events never wait and never sleep.
        self._ui_thread = threading.get_ident()
        self._clock = clock
        self._sleep = sleep
        self._slice_start = -1.0
        self._last_event = -1.0

    def hold(self) -> None:
        """UI thread: pause the engine until `release` (or MAX_PAUSE from now)."""
        self._until = time.monotonic() + self.MAX_PAUSE
        self._free.clear()

    def release(self) -> None:
        self._free.set()

    @property
    def held(self) -> bool:
        return not self._free.is_set()

    def wait(self) -> None:
        """Engine thread, at each event: wait while held, else yield the GIL if this slice is used up."""
        if threading.get_ident() == self._ui_thread:
            return  # (an event the UI thread itself delivers never waits for the UI)
        if not self._free.is_set():
            left = self._until - time.monotonic()
            if left > 0:
                self._free.wait(left)
            self._slice_start = self._last_event = self._clock()
            return
        now = self._clock()
        if now - self._last_event > self.IDLE_GAP:
            self._slice_start = now
        elif now - self._slice_start >= self.RUN_SLICE:
            self._sleep(self.YIELD_FOR)
            now = self._slice_start = self._clock()
        self._last_event = now


class Results:
    """The latest result of each case: this session's runs, else the newest saved record. UI thread only."""

    def __init__(self) -> None:
        self._by_key: dict[CaseKey, CaseResult] = {}
        self._origin: dict[CaseKey, str] = {}
        #: When a saved result was saved (its age is shown beside it); absent for this session's results.
        self._saved_at: dict[CaseKey, float] = {}
        #: Bumped on every change, so views can cache what they derive from results.
        self.version = 0

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: CaseKey) -> CaseResult | None:
        return self._by_key.get(key)

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

    def put(self, key: CaseKey, result: CaseResult, origin: str, saved_at: float | None = None) -> None:
        self._by_key[key] = result
        self._origin[key] = origin
        if saved_at is None:
            self._saved_at.pop(key, None)
        else:
            self._saved_at[key] = saved_at
        self.version += 1

    def forget(self, key: CaseKey) -> None:
        self._by_key.pop(key, None)
        self._origin.pop(key, None)
        self._saved_at.pop(key, None)
        self.version += 1

    def keys(self) -> list[CaseKey]:
        return list(self._by_key)

    def metric_names(self) -> list[str]:
        """Every metric any stored result was scored with, in first-seen order."""
        names: dict[str, None] = {}
        for result in self._by_key.values():
            for m in result.metrics:
                names.setdefault(m.metric_name, None)
        return list(names)


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
    finished: list[tuple[Any, Any]]
    errors: list[str]
    saved: list[str]
    #: Finished cases being saved now that no case runs any more (None until then, and once saved).
    saving: int | None = None
    #: The repetition (1-based, --num-runs) of each entry of `finished`, in the same order.
    repetitions: list[int] = field(default_factory=list)


class RunState:
    """A run's progress, written by the engine thread through `apply(event)`, read by the UI via `drain()`."""

    def __init__(self, label: str) -> None:
        self.label = label
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
        self._finished: list[tuple[Any, Any]] = []
        self._repetitions: list[int] = []
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
        """Fold one engine event into the state (cheap: called up to thousands of times a second)."""
        from ..engine import events as ev

        with self._lock:
            self.version += 1
            if isinstance(event, ev.MetricProgress):
                name = event.metric_name
                self._metric_done[name] += 1
                self._metric_total[name] = max(self._metric_total[name], self._metric_done[name])
            elif isinstance(event, ev.CaseStarted):
                self.running.add(event.key)
            elif isinstance(event, ev.CaseFinished):
                self.running.discard(event.key)
                self.cases_done += 1
                self.counts[int(event.result.status)] += 1
                self._finished.append((event.key, event.result))
                self._repetitions.append(event.repetition)
                for m in event.result.metrics:
                    # A judge with no credentials fills its bar all the same: count what it decided.
                    self._metric_evaluated[m.metric_name] += int(m.status) != _NOT_EVALUATED
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
            finished, self._finished = self._finished, []
            repetitions, self._repetitions = self._repetitions, []
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
                finished=finished,
                errors=list(self.errors),
                saved=list(self.saved),
                saving=self._saving(),
                repetitions=repetitions,
            )

    def _saving(self) -> int | None:
        """Cases being saved: every engine run feeding this state has stopped running cases (under the lock)."""
        if self.active and self._runs_started and self._runs_stopped >= self._runs_started:
            return self._stopped_cases
        return None
