"""tool_trajectory_avg_score: 1.0 per turn whose tool calls match the expected ones, averaged over the case."""

from __future__ import annotations

from ..schema.config import MatchType
from ..schema.details import Alignment, TrajectoryDetails
from ..schema.fast import trusted
from ..schema.results import EvalStatus, InvocationMetricResult, MetricResult, status_for
from .alignment import align_all, exact_match
from .base import MetricInput, builtin

METRIC_NAME = "tool_trajectory_avg_score"
_EXACT, _IN_ORDER, _ANY_ORDER = MatchType.EXACT, MatchType.IN_ORDER, MatchType.ANY_ORDER

# An EXACT pass pairs call k with call k, so its verdict and details depend only on the call names, the
# match type, ignore_args and the status a pass gets: one shared (read-only) result per distinct
# trajectory instead of one per turn. Most turns pass and eval sets repeat their trajectories: on
# bench/headless_run.py's 5,000 cases no step dicts and no result objects are built per passed turn.
# Bounded for long-lived dashboards.
_MAX_SHARED = 20_000
_passed_turns: dict[tuple[str, bool, EvalStatus, tuple[str | None, ...]], InvocationMetricResult] = {}


def _passed_exact(names: tuple[str | None, ...], match_type_name: str, ignore_args: bool,
                  status: EvalStatus) -> InvocationMetricResult:
    key = (match_type_name, ignore_args, status, names)
    turn = _passed_turns.get(key)
    if turn is None:
        alignment: Alignment = {
            "passed": True,
            "expected": [{"index": k, "name": n, "status": "matched", "actual_index": k} for k, n in enumerate(names)],
            "actual": [{"index": k, "name": n, "status": "matched", "expected_index": k} for k, n in enumerate(names)],
        }
        details = trusted(TrajectoryDetails, kind="trajectory", match_type=match_type_name, ignore_args=ignore_args,
                          exact=alignment, in_order=None, any_order=None)
        turn = trusted(InvocationMetricResult, score=1.0, status=status, reason=None, details=details)
        if len(_passed_turns) >= _MAX_SHARED:
            _passed_turns.clear()
        _passed_turns[key] = turn
    return turn


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
            per_invocation.append(_passed_exact(tuple([c.name for c in exp_calls]), match_type_name, ignore_args,
                                                status_if_passed))
            progress(i)
            continue
        # One match matrix and one arg diff per pair of calls for all three match types.
        exact, in_order, any_order = align_all(exp_calls, act_calls, ignore_args)
        # A failed IN_ORDER pairs along the same longest in-order pairing as the failed EXACT: the same
        # steps, stored once (None) unless IN_ORDER is the verdict.
        shared = match_type is not _IN_ORDER and not in_order.passed
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


SPEC = builtin(METRIC_NAME, evaluate, "share of turns whose tool calls match the expected trajectory")
