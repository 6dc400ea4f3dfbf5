"""Series over the eval history (pass rate per run, score per case and metric) and one case's usage and tool latency.

Pure: the dashboard draws these as sparklines; nothing here knows about a screen. Records are read
through `store`'s public functions only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..schema.model import Invocation
from ..schema.results import CaseResult, EvalStatus
from .insight import UNKNOWN_MODEL, invocation_tool_timings, invocation_usage
from .latency import ToolCallTiming, ToolLatency, tool_latencies
from ..schema.usage import TokenUsage
from .store import CaseScores, HistoryEntry, record_case_scores

log = logging.getLogger(__name__)

#: How many of the newest runs a case's score trend covers (a sparkline at 80 columns has room for few).
TREND_RUNS = 12
#: Bytes of run records a trend reads at most (parsing a big record costs CPU the dashboard feels).
TREND_BYTES = 32 * 1024 * 1024
_FULL = (None, "all")


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One run of an eval set: when, what it covered, and its counts (all its repetitions together)."""

    run_id: str
    timestamp: float
    coverage: str | None
    passed: int
    failed: int
    not_evaluated: int
    duration: float

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.not_evaluated

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.total if self.total else None


def run_points(entries: Iterable[HistoryEntry], eval_set_id: str) -> list[RunPoint]:
    """One point per run of `eval_set_id`, oldest first; the records of a --num-runs run (one per
    repetition, same run id) add up into one point."""
    by_run: dict[str, list[HistoryEntry]] = {}
    for e in entries:
        if e.eval_set_id == eval_set_id:
            by_run.setdefault(e.run_id, []).append(e)
    points = []
    for run_id, group in by_run.items():
        points.append(RunPoint(
            run_id=run_id,
            timestamp=min(e.creation_timestamp for e in group),
            coverage=group[0].coverage,
            passed=sum(e.counts.get("PASSED", 0) for e in group),
            failed=sum(e.counts.get("FAILED", 0) for e in group),
            not_evaluated=sum(e.counts.get("NOT_EVALUATED", 0) for e in group),
            duration=max(e.duration for e in group),
        ))
    points.sort(key=lambda p: p.timestamp)
    return points


def pass_rate_series(points: Iterable[RunPoint]) -> list[float]:
    """Pass rate (0..1) of each full run, oldest first. Partial runs (failures only, a selection,
    cancelled) are left out: their counts say nothing about the eval set's pass rate."""
    out = []
    for p in points:
        rate = p.pass_rate
        if p.coverage in _FULL and rate is not None:
            out.append(rate)
    return out


@dataclass(slots=True)
class RunScores:
    """One run's score per case and metric (the mean over its repetitions), and each case's status."""

    run_id: str
    timestamp: float
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    statuses: dict[str, list[EvalStatus]] = field(default_factory=dict)


def load_run_scores(entries: Sequence[HistoryEntry], eval_set_id: str, *, limit: int = TREND_RUNS,
                    max_bytes: int = TREND_BYTES) -> list[RunScores]:
    """The newest `limit` runs of an eval set, oldest first, from their records' case statuses and scores.
    Reading stops at `max_bytes` of records (newest first): a big eval set's trend covers fewer runs.
    A record that cannot be read is logged and left out."""
    mine = sorted((e for e in entries if e.eval_set_id == eval_set_id), key=lambda e: e.creation_timestamp)
    run_ids = list(dict.fromkeys(e.run_id for e in mine))[-limit:] if limit > 0 else []
    wanted = set(run_ids)
    loaded: list[tuple[str, int, float, list[CaseScores]]] = []
    budget = max_bytes
    for e in reversed(mine):  # newest first, so a budget cut drops the oldest runs
        if e.run_id not in wanted:
            continue
        try:
            size = Path(e.path).stat().st_size
            if size > budget and loaded:
                break
            budget -= size
            rep, cases = record_case_scores(Path(e.path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("trends: could not read %s: %s", e.path, exc)
            continue
        loaded.append((e.run_id, rep, e.creation_timestamp, cases))
    # The repetitions of a run share its timestamp: their record says which is which.
    loaded.sort(key=lambda item: (run_ids.index(item[0]), item[1]))
    runs: dict[str, RunScores] = {}
    sums: dict[str, dict[str, dict[str, list[float]]]] = {}
    for run_id, _rep, timestamp, cases in loaded:
        run = runs.setdefault(run_id, RunScores(run_id, timestamp))
        per_case = sums.setdefault(run_id, {})
        for case in cases:
            run.statuses.setdefault(case.eval_id, []).append(case.status)
            per_metric = per_case.setdefault(case.eval_id, {})
            for name, score in case.scores.items():
                if score is not None:
                    per_metric.setdefault(name, []).append(score)
    for run_id, per_case in sums.items():
        runs[run_id].scores = {cid: {name: math.fsum(v) / len(v) for name, v in metrics.items()}
                               for cid, metrics in per_case.items()}
    return [runs[rid] for rid in run_ids if rid in runs]


def case_series(runs: Iterable[RunScores], eval_id: str) -> dict[str, list[float]]:
    """metric -> the case's score in each run that scored it, oldest first (runs without the case,
    or where the metric gave no score, are skipped)."""
    out: dict[str, list[float]] = {}
    for run in runs:
        for name, score in run.scores.get(eval_id, {}).items():
            out.setdefault(name, []).append(score)
    return out


def case_status_series(runs: Iterable[RunScores], eval_id: str) -> list[EvalStatus]:
    """The case's status in each run that ran it, oldest first (every repetition of a run in turn)."""
    return [s for run in runs for s in run.statuses.get(eval_id, [])]


# ---- one case's usage and tool latency ----------------------------------------------------------


def case_usage(case: CaseResult) -> dict[str, TokenUsage]:
    """The agent's tokens per model over a case's turns (from the usage metadata in its events)."""
    return usage_by_model(case.actual)


def usage_by_model(invocations: Iterable[Invocation]) -> dict[str, TokenUsage]:
    """The agent's tokens per model over some turns (from the usage metadata in their events)."""
    per_model: dict[str, list[TokenUsage]] = {}
    for inv in invocations:
        for model, usage in invocation_usage(inv):
            per_model.setdefault(model or UNKNOWN_MODEL, []).append(usage)
    return {model: TokenUsage.total(usages) for model, usages in per_model.items()}


def case_tool_timings(case: CaseResult) -> list[ToolCallTiming]:
    """Every timed tool call of a case (as a run's insight counts them: `insight.invocation_tool_timings`)."""
    return [timing for inv in case.actual for timing in invocation_tool_timings(inv)]


def case_tool_latency(case: CaseResult) -> list[ToolLatency]:
    return tool_latencies(case_tool_timings(case))
