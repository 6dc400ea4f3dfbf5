"""One command, several agents: `tui-eval run` runs each agent's eval files as a run of its own (one run
id for all of them) and reports them as one run: one summary, one exit code (`merge_records`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.config import EvalConfig
    from .runner import RunRecord


def merge_records(parts: Sequence[RunRecord], configs: Sequence[EvalConfig]) -> RunRecord:
    """The runs of one command as one record: their results in order, counts, judge work, what was saved
    and what could not be, what did not finish. One part is returned as it is."""
    if len(parts) == 1:
        return parts[0]
    from .insight import build_insight
    from .runner import RunRecord

    first = parts[0]
    merged = RunRecord(first.run_id, started=min(p.started for p in parts))
    merged.finished = max(p.finished for p in parts)
    merged.cancelled = any(p.cancelled for p in parts)
    merged.num_runs = first.num_runs
    merged.strict = first.strict
    merged.source = first.source
    merged.code_state = first.code_state
    merged.executor = first.executor
    merged.coverage = "cancelled" if merged.cancelled else next((p.coverage for p in parts if p.coverage != "all"),
                                                                "all")
    for part in parts:
        merged.results += part.results
        merged.repetitions += part.repetitions
        merged.saved += part.saved
        merged.save_errors += part.save_errors
        merged.judge_stats.add(part.judge_stats)
        merged.kinds.update(part.kinds)
        merged.unfinished += part.unfinished
    merged.insight = build_insight(merged.results, merged.repetitions, num_runs=merged.num_runs,
                                   judge_stats=merged.judge_stats, configs=configs,
                                   wall_seconds=merged.finished - merged.started)
    return merged
