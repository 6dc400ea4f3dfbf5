"""The latest result of each case, as the dashboard's read model keeps it for the widgets: this
session's runs, else the newest saved record.

Nothing here imports Textual, so it is cheap to import and easy to test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine.feed import summarize, unpack
from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import CaseSummary, MetricSummary
    from ..schema.results import CaseResult


class LatestResults:
    """The latest result of each case: this session's runs, else the newest saved record. UI thread only.

    Each case keeps its summary (what lists, counts and filters read) and its full result, which a run's
    case holds as bytes until something reads it (`get`): 100,000 finished cases are never all parsed."""

    def __init__(self) -> None:
        self._summary: dict[CaseKey, CaseSummary] = {}
        self._full: dict[CaseKey, CaseResult | bytes] = {}
        self._origin: dict[CaseKey, str] = {}
        #: When a saved result was saved (its age is shown beside it); absent for this session's results.
        self._saved_at: dict[CaseKey, float] = {}
        #: Bumped on every change, so views can cache what they derive from results.
        self.version = 0

    def __len__(self) -> int:
        return len(self._summary)

    def get(self, key: CaseKey) -> CaseResult | None:
        """The full result (parsed now if it came packed from the engine, once)."""
        full = self._full.get(key)
        if isinstance(full, bytes):
            full = self._full[key] = unpack(full)
        return full

    def summary(self, key: CaseKey) -> CaseSummary | None:
        return self._summary.get(key)

    def _metric(self, key: CaseKey, metric: str) -> MetricSummary | None:
        """One metric's verdict in the case's summary; None when there is none."""
        summary = self._summary.get(key)
        return summary.metric(metric) if summary is not None else None

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

    def put(self, key: CaseKey, result: CaseResult | Packed, origin: str, saved_at: float | None = None) -> None:
        """Store a case's result: a full one (summarised here), or a packed one as the engine sent it."""
        if isinstance(result, Packed):
            self._summary[key], self._full[key] = result.summary, result.payload
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
class Packed:
    """A result with its summary: as the engine sent it (the full result as bytes, parsed on first read) or
    as the loader read it."""

    summary: CaseSummary
    #: The full result, or its bytes until first read.
    payload: CaseResult | bytes

    def unpack(self) -> CaseResult:
        return unpack(self.payload) if isinstance(self.payload, bytes) else self.payload


def age_text(seconds: float) -> str:
    """How long ago, in the coarsest unit that is at least one: `just now`, `5min ago`, `2h ago`, `3d ago`."""
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            # No space before the unit: the summary's status line must fit 40 columns at 80x24.
            return f"{int(seconds // size)}{unit} ago"
    return "just now"  # pragma: no cover - the loop always returns
