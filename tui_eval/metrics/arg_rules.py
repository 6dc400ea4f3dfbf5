"""Argument rules for tool calls (google/adk-python #2757), as a function with ADK's custom-metric signature.

A config declares it in `custom_metrics`, so it runs under `adk eval` as well as under tui-eval:

    "criteria": {"tool_args_rules": {"threshold": 1.0, "match_type": "IN_ORDER",
                                     "ignore_args": ["request_id"], "numeric_tolerance": 0.01,
                                     "patterns": {"date": "2026-\\\\d\\\\d-\\\\d\\\\d"}}},
    "custom_metrics": {"tool_args_rules": {"code_config": {"name": "tui_eval.metrics.arg_rules.tool_trajectory_with_arg_rules"}}}

Two calls match when their names are equal and every argument passes: an argument named in `ignore_args`
is not compared; numbers within `numeric_tolerance` (absolute) of each other are equal; a string argument
named in `patterns` matches when the actual value fully matches the regular expression (the expected value
is not read); anything else compares as tool_trajectory_avg_score compares it. The turns then score 1.0 or
0.0 under `match_type` (EXACT, IN_ORDER, ANY_ORDER: the trajectory rules), the case their mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..schema.criteria import MatchType
from .alignment import matrix_passes


@dataclass(frozen=True, slots=True)
class ArgRules:
    """How two calls' arguments are compared."""

    ignore: frozenset[str] = frozenset()
    tolerance: float = 0.0
    patterns: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, criterion: Mapping[str, Any]) -> ArgRules:
        """The rules a criterion's keys give. Raises ValueError naming a bad key."""
        ignore = criterion.get("ignore_args") or []
        if isinstance(ignore, str) or not all(isinstance(n, str) for n in ignore):
            raise ValueError("ignore_args must be a list of argument names")
        tolerance = criterion.get("numeric_tolerance", 0.0)
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance < 0:
            raise ValueError(f"numeric_tolerance must be a number >= 0, got {tolerance!r}")
        patterns: dict[str, re.Pattern[str]] = {}
        for name, pattern in dict(criterion.get("patterns") or {}).items():
            try:
                patterns[name] = re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise ValueError(f"patterns.{name}: not a regular expression: {exc}") from None
        return cls(frozenset(ignore), float(tolerance), patterns)

    def value_matches(self, name: str, expected: Any, actual: Any) -> bool:
        pattern = self.patterns.get(name)
        if pattern is not None:
            return isinstance(actual, str) and pattern.fullmatch(actual) is not None
        numbers = (int, float)
        if (isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool)
                and not isinstance(actual, bool)):
            return abs(expected - actual) <= self.tolerance
        return bool(expected == actual)

    def args_match(self, expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None) -> bool:
        exp = {k: v for k, v in (expected or {}).items() if k not in self.ignore}
        act = {k: v for k, v in (actual or {}).items() if k not in self.ignore}
        if exp.keys() != act.keys():
            return False
        return all(self.value_matches(k, exp[k], act[k]) for k in exp)


def turn_passes(expected: Sequence[tuple[str | None, Mapping[str, Any] | None]],
                actual: Sequence[tuple[str | None, Mapping[str, Any] | None]], rules: ArgRules,
                match_type: MatchType) -> bool:
    """One turn's (name, args) calls under the rules and the match type."""
    hit = [[a_name == e_name and rules.args_match(e_args, a_args) for a_name, a_args in actual]
           for e_name, e_args in expected]
    return matrix_passes(hit, len(actual), match_type)


async def tool_trajectory_with_arg_rules(eval_metric: Any, actual_invocations: list[Any],
                                         expected_invocations: list[Any] | None,
                                         conversation_scenario: Any = None) -> Any:
    """ADK's custom-metric signature: google-adk models in, google-adk's EvaluationResult out."""
    from google.adk.evaluation.eval_case import get_all_tool_calls
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

    criterion = eval_metric.criterion.model_dump() if eval_metric.criterion is not None else {}
    threshold = float(criterion.get("threshold") or eval_metric.threshold or 1.0)
    if expected_invocations is None or len(expected_invocations) != len(actual_invocations):
        return EvaluationResult()  # NOT_EVALUATED: no reference, or turn counts differ
    rules = ArgRules.of(criterion)
    match_type = MatchType.parse(criterion.get("match_type", "EXACT"))
    per: list[Any] = []
    for actual, expected in zip(actual_invocations, expected_invocations):
        calls = [(c.name, c.args) for c in get_all_tool_calls(actual.intermediate_data)]
        wanted = [(c.name, c.args) for c in get_all_tool_calls(expected.intermediate_data)]
        score = 1.0 if turn_passes(wanted, calls, rules, match_type) else 0.0
        per.append(PerInvocationResult(actual_invocation=actual, expected_invocation=expected, score=score,
                                       eval_status=EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED))
    if not per:
        return EvaluationResult()
    overall = sum(p.score for p in per) / len(per)
    return EvaluationResult(overall_score=overall, per_invocation_results=per,
                            overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED)
