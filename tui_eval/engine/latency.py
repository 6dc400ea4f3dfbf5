"""Latency aggregates: per tool (count, pass/fail, mean and p95, as CES reports them) and per turn wall time.

p95 is the nearest-rank percentile: sort the n values ascending and take the value at 1-based rank
ceil(0.95 * n) (so with fewer than 20 values it is the maximum; always an observed value, never an
interpolation).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class TimedToolCall(Protocol):
    """What a tool timing must offer: the tool's name, its latency, and whether it succeeded."""

    @property
    def name(self) -> str: ...

    @property
    def seconds(self) -> float: ...

    @property
    def ok(self) -> bool: ...


class ToolCallTiming(BaseModel):
    """One tool call's latency and outcome (ok False: the tool raised or answered with an error)."""

    model_config = ConfigDict(frozen=True)

    name: str
    seconds: float
    ok: bool = True


def nearest_rank(values: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile of non-empty `values` (percent in (0, 100])."""
    if not values:
        raise ValueError("no values")
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    ordered = sorted(values)
    # round() first so 0.95 * 20 = 19.000000000000004 gives rank 19, not 20.
    rank = max(1, math.ceil(round(percent / 100 * len(ordered), 9)))
    return ordered[rank - 1]


class DurationStats(BaseModel):
    """count, total, mean, p95 (nearest rank) and max of some durations in seconds."""

    model_config = ConfigDict(frozen=True)

    count: int
    total_seconds: float
    mean_seconds: float
    p95_seconds: float
    max_seconds: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> DurationStats:
        if not seconds:
            raise ValueError("no durations")
        total = math.fsum(seconds)
        return cls(count=len(seconds), total_seconds=total, mean_seconds=total / len(seconds),
                   p95_seconds=nearest_rank(seconds, 95), max_seconds=max(seconds))


class ToolLatency(BaseModel):
    """One tool's aggregate over its calls: how many, how many passed/failed, and their latency."""

    model_config = ConfigDict(frozen=True)

    name: str
    passed: int
    failed: int
    stats: DurationStats

    @property
    def count(self) -> int:
        return self.stats.count

    @property
    def mean_seconds(self) -> float:
        return self.stats.mean_seconds

    @property
    def p95_seconds(self) -> float:
        return self.stats.p95_seconds


def tool_latencies(timings: Iterable[TimedToolCall]) -> list[ToolLatency]:
    """Per tool name, sorted by name; failed calls count in the latency too (they took that long)."""
    seconds: dict[str, list[float]] = {}
    passed: dict[str, int] = {}
    for t in timings:
        seconds.setdefault(t.name, []).append(t.seconds)
        passed[t.name] = passed.get(t.name, 0) + (1 if t.ok else 0)
    return [ToolLatency(name=name, passed=passed[name], failed=len(values) - passed[name],
                        stats=DurationStats.of(values))
            for name, values in sorted(seconds.items())]


def turn_wall_times(seconds: Iterable[float]) -> DurationStats | None:
    """Aggregate of turns' wall times (any grouping: a case, a run); None when there are none."""
    values = list(seconds)
    return DurationStats.of(values) if values else None
