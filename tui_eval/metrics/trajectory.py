"""tool_trajectory_avg_score: 1.0 per turn whose tool calls match the expected ones, averaged over the case."""

from __future__ import annotations

from ..schema.results import InvocationMetricResult, MetricResult, status_for
from .alignment import align_trajectory
from .base import MetricInput, MetricSpec, register

METRIC_NAME = "tool_trajectory_avg_score"


def evaluate(inp: MetricInput) -> MetricResult:
    """Judge each turn under the criterion's match type; keep the alignment for the dashboard."""
    crit = inp.criterion
    threshold = crit.threshold
    criterion = crit.to_dict()
    if inp.expected is None:
        return MetricResult.not_evaluated(METRIC_NAME, threshold, "no expected turns", criterion)
    match_type, ignore_args = crit.match_type, crit.ignore_args
    match_type_name = match_type.name
    # A turn scores 1.0 or 0.0, so two statuses cover every turn (enum lookups add up over 10k turns).
    status_if_passed, status_if_failed = status_for(1.0, threshold), status_for(0.0, threshold)
    progress = inp.progress
    per_invocation = []
    for i, (actual, expected) in enumerate(zip(inp.actual, inp.expected)):
        alignment = align_trajectory(expected.tool_calls, actual.tool_calls, match_type, ignore_args)
        details = {"alignment": alignment.to_dict(), "match_type": match_type_name}
        if alignment.passed:
            per_invocation.append(InvocationMetricResult(1.0, status_if_passed, details=details))
        else:
            per_invocation.append(InvocationMetricResult(0.0, status_if_failed, alignment.summary(), details))
        progress(i)
    return MetricResult.mean_of(METRIC_NAME, threshold, criterion, per_invocation)


SPEC = register(
    MetricSpec(
        METRIC_NAME,
        evaluate=evaluate,
        description="share of turns whose tool calls match the expected trajectory",
        needs_reference=True,
    )
)
