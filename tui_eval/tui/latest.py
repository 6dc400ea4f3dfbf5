"""The latest result of each case, as the dashboard's read model keeps it for the widgets: this
session's runs, else the newest saved record.

Nothing here imports Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, NamedTuple

from ..engine.feed import summarize
from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import CaseSummary, MetricSummary, Wanted
    from ..schema.results import CaseResult

#: Asks the engine process for full results it holds ((case, repetition) pairs) and returns at once: they
#: arrive later as a record (`arrived`), and the views that showed "loading" redraw.
Fetcher = Callable[[list["Wanted"]], None]


class Held(NamedTuple):
    """A full result the engine process holds (of this repetition of the case): fetched the first time
    something reads it, then kept."""

    repetition: int


_HELD: dict[int, Held] = {}


def held(repetition: int) -> Held:
    """The (shared) Held of a repetition: one object per repetition, not one per finished case."""
    found = _HELD.get(repetition)
    if found is None:
        found = _HELD[repetition] = Held(repetition)
    return found


class LatestResults:
    """The latest result of each case: this session's runs, else the newest saved record.

    Each case keeps its summary (what lists, counts, sorts and filters read) and its full result. A run's
    case comes as its summary alone: the engine holds the full result, and the first `get` asks for it
    and returns None meanwhile (`loading` says so): it arrives as a record (`arrived`), so nothing that
    draws ever waits for the engine, and 100,000 finished cases are never all copied into the dashboard."""

    def __init__(self) -> None:
        self._summary: dict[CaseKey, CaseSummary] = {}
        self._full: dict[CaseKey, CaseResult | Held] = {}
        self._origin: dict[CaseKey, str] = {}
        #: When a saved result was saved (its age is shown beside it); absent for this session's results.
        self._saved_at: dict[CaseKey, float] = {}
        # The repetition of a fetched session result (a held one knows its own).
        self._repetition: dict[CaseKey, int] = {}
        #: Bumped on every change, so views can cache what they derive from results.
        self.version = 0
        #: Asks for the results the engine holds (the app sets it once the engine runs).
        self.fetcher: Fetcher | None = None
        #: Asked for and not arrived yet (asked once each).
        self._asked: set[Wanted] = set()

    def __len__(self) -> int:
        return len(self._summary)

    def __contains__(self, key: object) -> bool:
        return key in self._summary

    def get(self, key: CaseKey) -> CaseResult | None:
        """The full result; None when there is none, or while it is being fetched from the engine (asked
        for here, the first time: see `loading`)."""
        full = self._full.get(key)
        if isinstance(full, Held):
            self.ask([(key, full.repetition)])
            return None
        return full

    def loading(self, key: CaseKey) -> bool:
        """Whether the case's full result is on its way from the engine (or will be, once asked for)."""
        return isinstance(self._full.get(key), Held) and self.fetcher is not None

    def get_many(self, keys: list[CaseKey]) -> dict[CaseKey, CaseResult]:
        """The full results of these cases at hand (the others are asked for, and left out)."""
        out: dict[CaseKey, CaseResult] = {}
        wanted: list[Wanted] = []
        for key in keys:
            full = self._full.get(key)
            if isinstance(full, Held):
                wanted.append((key, full.repetition))
            elif full is not None:
                out[key] = full
        if wanted:
            self.ask(wanted)
        return out

    @property
    def waiting(self) -> bool:
        """Some result asked for has not arrived yet."""
        return bool(self._asked)

    def ask(self, wanted: list[Wanted]) -> None:
        """Ask the engine for these results, once each (nothing waits: they arrive as a record)."""
        new = [w for w in wanted if w not in self._asked]
        if new and self.fetcher is not None:
            self._asked.update(new)
            self.fetcher(new)

    def arrived(self, results: list[tuple[Wanted, CaseResult | None]]) -> list[CaseKey]:
        """Results the engine sent (None: it no longer holds that one). Returns the cases whose result
        changed (one run again since keeps its newer hold)."""
        changed: list[CaseKey] = []
        for (key, repetition), result in results:
            self._asked.discard((key, repetition))
            if self._full.get(key) == Held(repetition):
                if result is None:
                    self._full.pop(key, None)
                else:
                    self._full[key] = result
                    self._repetition[key] = repetition
                changed.append(key)
        if changed:
            self.version += 1
        return changed

    def summary(self, key: CaseKey) -> CaseSummary | None:
        return self._summary.get(key)

    def repetition(self, key: CaseKey) -> int | None:
        """Which repetition (run k of N) of this session's run the latest result is; None for a saved one."""
        full = self._full.get(key)
        if isinstance(full, Held):
            return full.repetition
        return self._repetition.get(key)

    def _metric(self, key: CaseKey, metric: str) -> MetricSummary | None:
        """One metric's verdict in the case's summary; None when there is none."""
        summary = self._summary.get(key)
        return summary.metric(metric) if summary is not None else None

    @staticmethod
    def status_in(summary: CaseSummary, metric: str | None) -> int | None:
        """A summary's status, or (with `metric`) that metric's; None when it has none."""
        if not metric:
            return summary.status
        m = summary.metric(metric)
        return m.status if m is not None else None

    def status(self, key: CaseKey, metric: str | None = None) -> int | None:
        """The case's status, or (with `metric`) that metric's (an EvalStatus value); None when there is none."""
        verdict = self._metric(key, metric) if metric else self._summary.get(key)
        return verdict.status if verdict is not None else None

    def score(self, key: CaseKey, metric: str | None = None) -> float | None:
        """The score shown beside a case: the metric's, else the worst metric's score."""
        if metric:
            m = self._metric(key, metric)
            return m.score if m is not None else None
        summary = self._summary.get(key)
        scores = [m.score for m in summary.metrics if m.score is not None] if summary is not None else []
        return min(scores) if scores else None

    def has_metric(self, key: CaseKey, metric: str) -> bool:
        return self._metric(key, metric) is not None

    def turn_status(self, key: CaseKey, index: int, metric: str | None = None) -> EvalStatus | None:
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

    def put_finished(self, items: list[tuple[CaseKey, Finished]], origin: str) -> None:
        """Store many finished cases of one origin at once (a slice of a streaming run)."""
        summaries, full = self._summary, self._full
        for key, finished in items:
            summaries[key] = finished.summary
            full[key] = finished.full
        self._origin.update(dict.fromkeys([key for key, _f in items], origin))
        if self._repetition:
            for key, _f in items:
                self._repetition.pop(key, None)
        if self._saved_at:
            for key, _f in items:
                self._saved_at.pop(key, None)
        self.version += 1

    def put(self, key: CaseKey, result: CaseResult | Finished, origin: str, saved_at: float | None = None) -> None:
        """Store a case's result: a full one (summarised here), or a summary with its full result or the
        engine's hold on it."""
        if isinstance(result, Finished):
            self._summary[key], self._full[key] = result.summary, result.full
        else:
            self._summary[key], self._full[key] = summarize(result, insight=False), result
        self._repetition.pop(key, None)
        self._origin[key] = origin
        if saved_at is None:
            self._saved_at.pop(key, None)
        else:
            self._saved_at[key] = saved_at
        self.version += 1

    def forget(self, key: CaseKey) -> None:
        self._repetition.pop(key, None)
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
