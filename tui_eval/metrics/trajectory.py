"""tool_trajectory_avg_score: 1.0 per turn whose tool calls match the expected ones, averaged over the case."""

from __future__ import annotations

from ..schema.config import MatchType
from ..schema.details import Alignment, TrajectoryDetails, trusted
from ..schema.results import InvocationMetricResult, MetricResult, status_for
from .alignment import align_trajectory, exact_match, in_order_match
from .base import MetricInput, MetricSpec, register

METRIC_NAME = "tool_trajectory_avg_score"
_EXACT, _IN_ORDER, _ANY_ORDER = MatchType.EXACT, MatchType.IN_ORDER, MatchType.ANY_ORDER

# An EXACT pass pairs call k with call k, so its details depend only on the call names, the match type
# and ignore_args: one shared (read-only) details object per distinct trajectory instead of one per turn.
# Most turns pass and eval sets repeat their trajectories: on bench/headless_run.py's 5,000 cases the
# metric's CPU went from 0.50 to 0.44-0.47 s, and no step dicts are kept per passed turn. Bounded for
# long-lived dashboards.
_MAX_SHARED = 20_000
_passed_details: dict[tuple[str, bool, tuple[str | None, ...]], TrajectoryDetails] = {}


def _passed_exact(names: tuple[str | None, ...], match_type_name: str, ignore_args: bool) -> TrajectoryDetails:
    key = (match_type_name, ignore_args, names)
    details = _passed_details.get(key)
    if details is None:
        alignment: Alignment = {
            "passed": True,
            "expected": [{"index": k, "name": n, "status": "matched", "actual_index": k} for k, n in enumerate(names)],
            "actual": [{"index": k, "name": n, "status": "matched", "expected_index": k} for k, n in enumerate(names)],
        }
        details = trusted(TrajectoryDetails, kind="trajectory", match_type=match_type_name, ignore_args=ignore_args,
                          exact=alignment, in_order=None, any_order=None)
        if len(_passed_details) >= _MAX_SHARED:
            _passed_details.clear()
        _passed_details[key] = details
    return details


def evaluate(inp: MetricInput) -> MetricResult:
    """Judge each turn under the criterion's match type; keep the alignment under all three match types,
    so the dashboard can show how each would judge the turn without running this code again."""
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
        exp_calls, act_calls = expected.tool_calls, actual.tool_calls
        if exact_match(exp_calls, act_calls, ignore_args):
            # Every call paired in place: IN_ORDER and ANY_ORDER pair them the same way (stored once),
            # and every match type passes.
            details = _passed_exact(tuple([c.name for c in exp_calls]), match_type_name, ignore_args)
            per_invocation.append(trusted(InvocationMetricResult, score=1.0, status=status_if_passed, reason=None,
                                          details=details))
            progress(i)
            continue
        exact = align_trajectory(exp_calls, act_calls, _EXACT, ignore_args)
        # A failed IN_ORDER pairs along the same longest in-order pairing as a failed EXACT: the same
        # steps, stored once (None), and not computed again unless IN_ORDER is the verdict.
        shared = match_type is not _IN_ORDER and not in_order_match(exp_calls, act_calls, ignore_args)
        in_order = exact if shared else align_trajectory(exp_calls, act_calls, _IN_ORDER, ignore_args)
        any_order = align_trajectory(exp_calls, act_calls, _ANY_ORDER, ignore_args)
        chosen = in_order if match_type is _IN_ORDER else any_order if match_type is _ANY_ORDER else exact
        details = trusted(TrajectoryDetails, kind="trajectory", match_type=match_type_name, ignore_args=ignore_args,
                          exact=exact.as_details(), in_order=None if shared else in_order.as_details(),
                          any_order=any_order.as_details())
        if chosen.passed:
            per_invocation.append(trusted(InvocationMetricResult, score=1.0, status=status_if_passed, reason=None,
                                          details=details))
        else:
            per_invocation.append(trusted(InvocationMetricResult, score=0.0, status=status_if_failed,
                                          reason=chosen.summary(), details=details))
        progress(i)
    return MetricResult.mean_of(METRIC_NAME, threshold, criterion, per_invocation)


SPEC = register(
    MetricSpec(
        METRIC_NAME,
        evaluate=evaluate,
        description="share of turns whose tool calls match the expected trajectory",
        kind="deterministic",
        needs_reference=True,
    )
)
