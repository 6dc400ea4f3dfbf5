"""deep_tool_trajectory_v1: the calls made inside tool calls, against the case's expected_nested_calls.

An `AgentTool` runs its agent with a runner of its own: the calls that agent makes never reach ADK's
trajectory (google/adk-python #3493, #3652). tui-eval's ADK agent captures them (`Invocation.nested_calls`,
each with the agent that made it and its depth); a case names the ones it expects in its
`expected_nested_calls`, keyed by the expected turn's invocation id. This opt-in metric compares them under
the same EXACT / IN_ORDER / ANY_ORDER rules as tool_trajectory_avg_score; ADK's own metric and its score
are untouched (a `single_turn` sub-agent's calls land in the parent's events, so ADK's trajectory already
holds them). The tree the faces draw is `schema.calls.call_tree`.
"""

from __future__ import annotations

from ..schema.calls import attributed
from ..schema.criteria import DEEP_TRAJECTORY
from ..schema.details import TrajectoryDetails
from ..schema.model import ExpectedNestedCall
from ..schema.results import InvocationMetricResult, MetricResult, status_for
from .alignment import align_all
from .base import MetricInput, builtin

METRIC_NAME = DEEP_TRAJECTORY


def expected_nested(inp: MetricInput, index: int) -> list[ExpectedNestedCall] | None:
    """The nested calls the case expects of turn `index` ([] when it names none for that turn); None
    when the case has no expected_nested_calls at all."""
    table = inp.case.expected_nested_calls
    if table is None:
        return None
    expected = inp.expected[index] if inp.expected is not None and index < len(inp.expected) else None
    if expected is None:
        return []
    return table.get(expected.invocation_id or f"#{index + 1}", [])


def evaluate(inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    name = crit.metric_name
    if inp.case.expected_nested_calls is None:
        return MetricResult.not_evaluated(name, crit.threshold, "the case names no expected_nested_calls",
                                          crit.to_dict())
    per_invocation: list[InvocationMetricResult] = []
    for i, actual in enumerate(inp.actual):
        exp = [attributed(c.agent, c.name, c.args) for c in expected_nested(inp, i) or []]
        act = [attributed(c.agent or "", c.name, c.arguments) for c in actual.nested_calls]
        exact, in_order, any_order = align_all(exp, act, crit.ignore_args)
        chosen = {"IN_ORDER": in_order, "ANY_ORDER": any_order}.get(crit.match_type.name, exact)
        details = TrajectoryDetails(match_type=crit.match_type.name, ignore_args=crit.ignore_args,
                                    exact=exact.as_details(), in_order=in_order.as_details(),
                                    any_order=any_order.as_details())
        score = 1.0 if chosen.passed else 0.0
        per_invocation.append(InvocationMetricResult(score=score, status=status_for(score, crit.threshold),
                                                     reason=None if chosen.passed else chosen.summary(),
                                                     details=details))
        inp.progress(i)
    return MetricResult.mean_of(name, crit.threshold, crit.to_dict(), per_invocation)


SPEC = builtin(METRIC_NAME, evaluate,
               "share of turns whose calls inside tool calls (an AgentTool's agent) match the case's "
               "expected_nested_calls")
