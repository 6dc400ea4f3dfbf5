"""Per-tool latency aggregates and turn wall times against hand-computed values."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tui_eval.engine.latency import (
    DurationStats,
    ToolCallTiming,
    nearest_rank,
    tool_latencies,
    turn_wall_times,
)


def test_nearest_rank_by_hand() -> None:
    twenty = [float(i) for i in range(1, 21)]  # 1..20
    assert nearest_rank(twenty, 95) == 19.0  # ceil(0.95 * 20) = 19
    assert nearest_rank(twenty, 50) == 10.0
    assert nearest_rank(twenty, 100) == 20.0
    assert nearest_rank([3.0, 1.0, 2.0], 95) == 3.0  # ceil(2.85) = 3: the max below 20 values
    assert nearest_rank([5.0], 95) == 5.0
    hundred = [float(i) for i in range(100, 0, -1)]  # unsorted input
    assert nearest_rank(hundred, 95) == 95.0
    assert nearest_rank([1.0, 2.0], 1) == 1.0
    with pytest.raises(ValueError):
        nearest_rank([], 95)
    with pytest.raises(ValueError):
        nearest_rank([1.0], 0)


def test_tool_latencies_by_hand() -> None:
    timings = [
        ToolCallTiming(name="search", seconds=0.2),
        ToolCallTiming(name="lookup", seconds=1.0, ok=False),
        ToolCallTiming(name="search", seconds=0.4),
        ToolCallTiming(name="search", seconds=0.9, ok=False),
        ToolCallTiming(name="lookup", seconds=3.0),
    ]
    lookup, search = tool_latencies(timings)
    assert (lookup.name, lookup.count, lookup.passed, lookup.failed) == ("lookup", 2, 1, 1)
    assert lookup.mean_seconds == pytest.approx(2.0)
    assert lookup.p95_seconds == 3.0
    assert (search.name, search.count, search.passed, search.failed) == ("search", 3, 2, 1)
    assert search.mean_seconds == pytest.approx(0.5)
    assert search.p95_seconds == 0.9
    assert search.stats.total_seconds == pytest.approx(1.5) and search.stats.max_seconds == 0.9
    assert tool_latencies([]) == []


def test_any_object_with_name_seconds_ok_works() -> None:
    @dataclass
    class Timing:
        name: str
        seconds: float
        ok: bool

    (only,) = tool_latencies([Timing("t", 2.0, True), Timing("t", 4.0, True)])
    assert (only.count, only.passed, only.failed, only.mean_seconds) == (2, 2, 0, 3.0)


def test_turn_wall_times_by_hand() -> None:
    stats = turn_wall_times([1.5, 0.5, 2.5, 3.5])
    assert stats == DurationStats(count=4, total_seconds=8.0, mean_seconds=2.0, p95_seconds=3.5,
                                  max_seconds=3.5)
    assert turn_wall_times([]) is None
    assert turn_wall_times(iter([2.0])) == DurationStats(count=1, total_seconds=2.0, mean_seconds=2.0,
                                                         p95_seconds=2.0, max_seconds=2.0)
