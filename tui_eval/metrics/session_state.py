"""final_session_state_v1: does the agent's session state after the last turn equal the case's
`final_session_state`? ADK defines the field and never checks it (google/adk-python #4532, #5037, #3261).

`compare: exact` (the default) wants the same keys with equal values; `compare: named_keys` checks only the
keys the case names. Values compare as JSON data (`1 == 1.0`, dict key order ignored, list order kept). The
case scores 1.0 or 0.0, with one reason per differing key.
"""

from __future__ import annotations

from typing import Literal

from ..schema.criteria import SessionStateCriterion
from ..schema.details import SessionStateDetails, state_diff
from ..schema.results import MetricResult, status_for
from .base import MetricInput, builtin

METRIC_NAME = "final_session_state_v1"


def evaluate(inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    name = crit.metric_name
    typed = crit.typed
    compare: Literal["exact", "named_keys"] = typed.compare if isinstance(typed, SessionStateCriterion) else "exact"
    expected = inp.case.final_session_state
    if not expected:  # ADK's default is {}: a case that names no state is not checked
        return MetricResult.not_evaluated(name, crit.threshold, "the case names no final_session_state",
                                          crit.to_dict())
    actual = inp.final_session_state
    if actual is None:
        return MetricResult.not_evaluated(name, crit.threshold, "the agent's session state is not known "
                                          "(an agent that keeps none, or turns stored without it)", crit.to_dict())
    diffs = state_diff(expected, actual, compare)
    score = 0.0 if diffs else 1.0
    details = SessionStateDetails(compare=compare, expected=expected, actual=actual, diffs=diffs)
    for i in range(len(inp.actual)):
        inp.progress(i)
    return MetricResult(metric_name=name, threshold=crit.threshold, score=score,
                        status=status_for(score, crit.threshold), criterion=crit.to_dict(),
                        reason="; ".join(d.reason for d in diffs) or None, details=details)


SPEC = builtin(METRIC_NAME, evaluate,
               "the session state after the last turn equals the case's final_session_state (every key, "
               "or only the keys it names)")
