"""What if: a case's verdict under another threshold or trajectory match type, re-scored from its stored
result (the scores and the trajectory alignments under all three match types are kept), with no agent or
judge call. The dashboard's what-if view shows which cases would flip, and writes the change to the
config only when asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, TypeVar

from ..schema.details import MATCH_TYPE_NAMES, MatchTypeName, TrajectoryDetails
from ..schema.results import CaseResult, MetricResult, combine_statuses, status_for
from ..schema.status import EvalStatus

TRAJECTORY = "tool_trajectory_avg_score"
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class WhatIf:
    """One metric's hypothetical criterion: a threshold (None: each case's own) and, for the tool
    trajectory, a match type (None: the configured one)."""

    metric: str
    threshold: float | None = None
    match_type: MatchTypeName | None = None

    @property
    def active(self) -> bool:
        return self.threshold is not None or self.match_type is not None

    def describe(self) -> str:
        parts = []
        if self.threshold is not None:
            parts.append(f"threshold {self.threshold:g}")
        if self.match_type is not None:
            parts.append(f"match type {self.match_type}")
        return f"{self.metric}: " + (", ".join(parts) if parts else "as configured")


def _trajectory_score(m: MetricResult, match_type: MatchTypeName) -> float | None:
    """The case score under another match type, from each turn's stored alignments (None: a turn
    without alignments, e.g. a record older than them)."""
    if not m.per_invocation:
        return None
    passed = []
    for inv in m.per_invocation:
        if not isinstance(inv.details, TrajectoryDetails):
            return None
        passed.append(1.0 if inv.details.alignment(match_type)["passed"] else 0.0)
    return sum(passed) / len(passed)


def metric_status(m: MetricResult, what: WhatIf) -> tuple[EvalStatus, float | None]:
    """A metric's status and score under `what` (unchanged when `what` is about another metric)."""
    if m.metric_name != what.metric or m.status in (EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL):
        return m.status, m.score
    score = m.score
    if what.match_type is not None and m.metric_name == TRAJECTORY:
        rescored = _trajectory_score(m, what.match_type)
        score = rescored if rescored is not None else score
    threshold = what.threshold if what.threshold is not None else m.threshold
    status = status_for(score, threshold)
    if m.status == EvalStatus.FAILED and m.score is not None and m.score >= m.threshold and status == EvalStatus.PASSED:
        # It failed on a rule beyond its score (CES's extra tool calls): no threshold changes that.
        return EvalStatus.FAILED, score
    return status, score


def case_status(case: CaseResult, what: WhatIf) -> EvalStatus:
    """The case's status with one metric re-scored; an agent error keeps it failed."""
    if case.error:
        return case.status
    return combine_statuses(metric_status(m, what)[0] for m in case.metrics)


@dataclass(frozen=True, slots=True)
class Flip:
    key: object
    eval_id: str
    before: EvalStatus
    after: EvalStatus

    @property
    def would_pass(self) -> bool:
        return self.after == EvalStatus.PASSED


def flips(results: Iterable[tuple[K, CaseResult]], what: WhatIf) -> list[Flip]:
    """The cases whose status would change under `what`: newly failing first, then newly passing."""
    out = []
    for key, case in results:
        if case.metric(what.metric) is None:
            continue
        after = case_status(case, what)
        if after != case.status:
            out.append(Flip(key, case.eval_id, case.status, after))
    out.sort(key=lambda f: (f.would_pass, f.eval_id))
    return out


def next_match_type(current: MatchTypeName | None, configured: MatchTypeName = "EXACT") -> MatchTypeName:
    names = list(MATCH_TYPE_NAMES)
    return names[(names.index(current or configured) + 1) % len(names)]
