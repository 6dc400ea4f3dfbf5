"""Results of a run: per metric, per invocation, per case, per eval set.

Two serialisations: `to_adk()` is google-adk 2.13's EvalSetResult shape (what `--json` and the eval
history write, what `EvalSetResult.model_validate` accepts); `to_record()` / `from_record()` is our own
richer record that also keeps NOT_EVALUATED reasons, trajectory alignments, judge verdicts and errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from .model import Invocation

# The user id google-adk 2.13 runs (and records) a case with when its session_input names none.
ADK_DEFAULT_USER_ID = "test_user_id"


class EvalStatus(IntEnum):
    """ADK's EvalStatus numbering, which the JSON results carry as integers."""

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3

    @property
    def label(self) -> str:
        return {1: "passed", 2: "failed", 3: "not evaluated"}[self.value]


def status_for(score: float | None, threshold: float) -> EvalStatus:
    if score is None:
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def combine_statuses(statuses: list[EvalStatus]) -> EvalStatus:
    """FAILED if any failed, else PASSED if any passed, else NOT_EVALUATED."""
    if EvalStatus.FAILED in statuses:
        return EvalStatus.FAILED
    if EvalStatus.PASSED in statuses:
        return EvalStatus.PASSED
    return EvalStatus.NOT_EVALUATED


@dataclass(slots=True)
class InvocationMetricResult:
    """One metric's verdict on one turn. `details` holds what the dashboard draws (alignment, votes...)."""

    score: float | None
    status: EvalStatus
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"score": self.score, "status": int(self.status)}
        if self.reason:
            out["reason"] = self.reason
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> InvocationMetricResult:
        return cls(d.get("score"), EvalStatus(d["status"]), d.get("reason"), d.get("details") or {})


@dataclass(slots=True)
class MetricResult:
    """One metric's verdict on a whole case, with its per-invocation verdicts."""

    metric_name: str
    threshold: float
    score: float | None
    status: EvalStatus
    criterion: dict[str, Any] = field(default_factory=dict)
    per_invocation: list[InvocationMetricResult] = field(default_factory=list)
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def not_evaluated(
        cls, metric_name: str, threshold: float, reason: str, criterion: dict[str, Any] | None = None
    ) -> MetricResult:
        return cls(metric_name, threshold, None, EvalStatus.NOT_EVALUATED, criterion or {"threshold": threshold},
                   reason=reason)

    @classmethod
    def mean_of(
        cls, metric_name: str, threshold: float, criterion: dict[str, Any], per_invocation: list[InvocationMetricResult]
    ) -> MetricResult:
        """The case verdict of a per-turn metric: the mean of its turn scores, summed in turn order
        and then divided, as ADK does (the same float result); NOT_EVALUATED with no turns."""
        if not per_invocation:
            return cls.not_evaluated(metric_name, threshold, "no invocations to score", criterion)
        total = 0.0
        for inv in per_invocation:
            total += inv.score
        score = total / len(per_invocation)
        return cls(metric_name, threshold, score, status_for(score, threshold), criterion, per_invocation)

    def adk_metric(self, inv: InvocationMetricResult | None = None) -> dict[str, Any]:
        """An ADK EvalMetricResult dict (for the case, or for one invocation when `inv` is given)."""
        src_score = self.score if inv is None else inv.score
        src_status = self.status if inv is None else inv.status
        details: dict[str, Any] = {}
        rubric_scores = (self.details if inv is None else inv.details).get("rubric_scores")
        if rubric_scores:
            details["rubric_scores"] = [
                {"rubric_id": r["rubric_id"], "rationale": r.get("rationale"), "score": r.get("score")}
                for r in rubric_scores
            ]
        return {
            "metric_name": self.metric_name,
            "threshold": self.threshold,
            "criterion": self.criterion or {"threshold": self.threshold},
            "score": src_score,
            "eval_status": int(src_status),
            "details": details,
        }

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric_name": self.metric_name,
            "threshold": self.threshold,
            "score": self.score,
            "status": int(self.status),
            "criterion": self.criterion,
            "per_invocation": [r.to_record() for r in self.per_invocation],
        }
        if self.reason:
            out["reason"] = self.reason
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> MetricResult:
        return cls(
            metric_name=d["metric_name"],
            threshold=d["threshold"],
            score=d.get("score"),
            status=EvalStatus(d["status"]),
            criterion=d.get("criterion") or {},
            per_invocation=[InvocationMetricResult.from_record(x) for x in d.get("per_invocation", [])],
            reason=d.get("reason"),
            details=d.get("details") or {},
        )


@dataclass(slots=True, repr=False)
class CaseResult:
    """Everything a run learnt about one eval case."""

    eval_set_id: str
    eval_id: str
    status: EvalStatus
    metrics: list[MetricResult] = field(default_factory=list)
    actual: list[Invocation] = field(default_factory=list)
    expected: list[Invocation] | None = None
    eval_set_file: str = ""
    session_id: str = ""
    user_id: str | None = None
    # Agent inference that raised: the case is FAILED and this says why.
    error: str | None = None
    wall_seconds: float = 0.0

    def __repr__(self) -> str:
        # Compact on purpose: asyncio and logging repr results, and a full one holds every turn.
        return f"CaseResult({self.eval_set_id!r}, {self.eval_id!r}, {self.status.name})"

    def metric(self, name: str) -> MetricResult | None:
        for m in self.metrics:
            if m.metric_name == name:
                return m
        return None

    def to_adk(self) -> dict[str, Any]:
        """An ADK EvalCaseResult dict."""
        per_invocation = []
        for i, actual in enumerate(self.actual):
            expected = self.expected[i] if self.expected is not None and i < len(self.expected) else None
            per_invocation.append(
                {
                    "actual_invocation": actual.to_dict(),
                    "expected_invocation": expected.to_dict() if expected is not None else None,
                    "eval_metric_results": [
                        m.adk_metric(m.per_invocation[i]) for m in self.metrics if i < len(m.per_invocation)
                    ],
                }
            )
        return {
            # As google-adk 2.13's LocalEvalService writes them: its (deprecated) eval_set_file holds
            # the eval set id, and a case without a session user ran as "test_user_id".
            "eval_set_file": self.eval_set_id,
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "final_eval_status": int(self.status),
            "overall_eval_metric_results": [m.adk_metric() for m in self.metrics],
            "eval_metric_result_per_invocation": per_invocation,
            "session_id": self.session_id,
            "user_id": self.user_id or ADK_DEFAULT_USER_ID,
        }

    def to_record(self) -> dict[str, Any]:
        """Our record of the case. Turns are not repeated here: the ADK history file beside the
        record holds them (`from_record(..., actual=...)` joins them back)."""
        return {
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "status": int(self.status),
            "metrics": [m.to_record() for m in self.metrics],
            "tool_timings": [_timing_record(inv) for inv in self.actual],
            "eval_set_file": self.eval_set_file,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "error": self.error,
            "wall_seconds": self.wall_seconds,
        }

    @classmethod
    def from_record(
        cls,
        d: dict[str, Any],
        actual: list[Invocation] | None = None,
        expected: list[Invocation] | None = None,
    ) -> CaseResult:
        from .model import ToolTiming

        actual = actual or []
        for inv, timings in zip(actual, d.get("tool_timings") or []):
            inv.tool_timings = [ToolTiming(name=t["name"], seconds=t["seconds"], call_id=t.get("call_id")) for t in timings]
        return cls(
            eval_set_id=d["eval_set_id"],
            eval_id=d["eval_id"],
            status=EvalStatus(d["status"]),
            metrics=[MetricResult.from_record(m) for m in d.get("metrics", [])],
            actual=actual,
            expected=expected,
            eval_set_file=d.get("eval_set_file", ""),
            session_id=d.get("session_id", ""),
            user_id=d.get("user_id"),
            error=d.get("error"),
            wall_seconds=d.get("wall_seconds", 0.0),
        )


def _timing_record(inv: Invocation) -> list[dict[str, Any]]:
    return [{"name": t.name, "seconds": t.seconds, "call_id": t.call_id} for t in inv.tool_timings]


@dataclass(slots=True, repr=False)
class EvalSetResult:
    """All case results of one eval set in one run."""

    eval_set_result_id: str
    eval_set_id: str
    creation_timestamp: float
    case_results: list[CaseResult] = field(default_factory=list)
    eval_set_file: str = ""

    def __repr__(self) -> str:
        return f"EvalSetResult({self.eval_set_result_id!r}, {len(self.case_results)} cases)"

    def to_adk(self) -> dict[str, Any]:
        return {
            "eval_set_result_id": self.eval_set_result_id,
            "eval_set_result_name": self.eval_set_result_id.replace("/", "_"),
            "eval_set_id": self.eval_set_id,
            "eval_case_results": [c.to_adk() for c in self.case_results],
            "creation_timestamp": self.creation_timestamp,
        }

    def counts(self) -> dict[EvalStatus, int]:
        out = {s: 0 for s in EvalStatus}
        for c in self.case_results:
            out[c.status] += 1
        return out
