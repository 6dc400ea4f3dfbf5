"""ADK 2.13's informational efficiency metrics: tool calls, model calls, tokens and seconds per turn.

Computed exactly as google-adk 2.13's `_efficiency_evaluators.py`: each turn gets its own value, the
case value is their average, and None means n/a (never zero). Their status is always INFORMATIONAL:
they never pass or fail a case, and a threshold for them is a config error (schema/config.py). The
engine appends them to every eval, as ADK does (`efficiency_results`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..schema.criteria import EFFICIENCY_METRICS as EFFICIENCY_METRICS  # the catalog's rows, in ADK's order
from ..schema.details import DURATION_FIELDS, TOKEN_USAGE_FIELDS, DurationDetails, TokenUsageDetails, framework_seconds
from ..schema.fast import trusted
from ..schema.model import Invocation, InvocationEvent, InvocationEvents
from ..schema.results import CaseResult, InvocationMetricResult, MetricResult
from ..schema.status import EvalStatus
from .base import MetricInput, MetricSpec, builtin

TOOL_CALL_COUNT = "tool_call_count_v1"
INFERENCE_CALL_COUNT = "inference_call_count_v1"
TOKEN_USAGE = "token_usage_v1"
INVOCATION_DURATION = "invocation_duration_v1"

_INFO = EvalStatus.INFORMATIONAL
# Informational metrics take no threshold; results carry 0.0 internally and None in ADK's shape.
_NO_THRESHOLD = 0.0


# --- per-turn values -----------------------------------------------------------------------------------
def tool_call_count(inv: Invocation) -> float | None:
    """Every tool call of the turn (either intermediate-data shape; transfer_to_agent counts)."""
    return float(len(inv.tool_calls))


def _is_model_call(event: InvocationEvent) -> bool:
    return event.usage_metadata is not None or event.model_version is not None


def inference_call_count(inv: Invocation) -> float | None:
    """Events that carry a model's usage metadata or model version; n/a without invocation events."""
    data = inv.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None
    return float(sum(1 for e in data.invocation_events if _is_model_call(e)))


def _usage_count(usage: Any, snake: str, camel: str) -> int | None:
    """One count of a usage metadata value: a genai object, or a dict as a file holds it (either case)."""
    if isinstance(usage, dict):
        value = usage.get(snake, usage.get(camel))
    else:
        value = getattr(usage, snake, None)
    if value is None:
        return None
    return int(value)


def _add(total: float | None, count: int | None) -> float | None:
    # A count a call did not report leaves the total as it was (None stays None: n/a, not zero).
    if count is None:
        return total
    return (total or 0) + count


def token_usage_details(inv: Invocation) -> TokenUsageDetails:
    """Every token count of the turn, summed over its model calls (ADK's TokenUsage buckets)."""
    totals: dict[str, float | None] = dict.fromkeys(TOKEN_USAGE_FIELDS)
    data = inv.intermediate_data
    events = data.invocation_events if isinstance(data, InvocationEvents) else []
    for event in events:
        usage = event.usage_metadata
        if usage is None:
            continue
        prompt = _usage_count(usage, "prompt_token_count", "promptTokenCount")
        tool = _usage_count(usage, "tool_use_prompt_token_count", "toolUsePromptTokenCount")
        candidates = _usage_count(usage, "candidates_token_count", "candidatesTokenCount")
        thoughts = _usage_count(usage, "thoughts_token_count", "thoughtsTokenCount")
        cached = _usage_count(usage, "cached_content_token_count", "cachedContentTokenCount")
        input_tokens = None if prompt is None and tool is None else (prompt or 0) + (tool or 0)
        output_tokens = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        totals["input_tokens"] = _add(totals["input_tokens"], input_tokens)
        totals["prompt_tokens"] = _add(totals["prompt_tokens"], prompt)
        totals["cached_tokens"] = _add(totals["cached_tokens"], cached)
        totals["tool_use_tokens"] = _add(totals["tool_use_tokens"], tool)
        totals["output_tokens"] = _add(totals["output_tokens"], output_tokens)
        totals["candidates_tokens"] = _add(totals["candidates_tokens"], candidates)
        totals["reasoning_tokens"] = _add(totals["reasoning_tokens"], thoughts)
    # Derived from the two directions, so the headline always agrees with the breakdown under it.
    if totals["input_tokens"] is not None or totals["output_tokens"] is not None:
        totals["total_tokens"] = (totals["input_tokens"] or 0) + (totals["output_tokens"] or 0)
    return trusted(TokenUsageDetails, kind="token_usage", **totals)


def duration_details(inv: Invocation) -> DurationDetails:
    """The turn's seconds: total, model, tool and the framework's remainder (all None when untimed)."""
    if inv.duration is None:
        return trusted(DurationDetails, kind="duration", **dict.fromkeys(DURATION_FIELDS))
    model, tool = inv.model_duration, inv.tool_duration
    framework = framework_seconds(inv.duration, model, tool)
    return trusted(DurationDetails, kind="duration", total_seconds=inv.duration, model_seconds=model,
                   tool_seconds=tool, framework_seconds=framework)


# --- case values ---------------------------------------------------------------------------------------
def _case(name: str, score: float | None, per_invocation: list[InvocationMetricResult],
          details: TokenUsageDetails | DurationDetails | None, na_reason: str) -> MetricResult:
    return trusted(MetricResult, metric_name=name, threshold=_NO_THRESHOLD, score=score, status=_INFO,
                   criterion={}, per_invocation=per_invocation, reason=None if score is not None else na_reason,
                   details=details)


def _turn(score: float | None, details: TokenUsageDetails | DurationDetails | None = None) -> InvocationMetricResult:
    return trusted(InvocationMetricResult, score=score, status=_INFO, reason=None, details=details)


# Results are read, never changed, once built: a run shares one object per common per-turn value (a
# replayed turn has no usage and no timing, and a handful of distinct tool counts), which keeps these
# metrics off the cost of a run of thousands of cases.
_NO_TOKENS = trusted(TokenUsageDetails, kind="token_usage", **dict.fromkeys(TOKEN_USAGE_FIELDS))
_NO_DURATION = trusted(DurationDetails, kind="duration", **dict.fromkeys(DURATION_FIELDS))
_NA_TURN = _turn(None)
_NA_TOKENS_TURN = _turn(None, _NO_TOKENS)
_NA_DURATION_TURN = _turn(None, _NO_DURATION)
_COUNT_TURNS: dict[float, InvocationMetricResult] = {}


def _count_turn(value: float | None) -> InvocationMetricResult:
    if value is None:
        return _NA_TURN
    turn = _COUNT_TURNS.get(value)
    if turn is None:
        turn = _turn(value)
        if len(_COUNT_TURNS) < 256:
            _COUNT_TURNS[value] = turn
    return turn


_NA_CASES: dict[tuple[str, int], MetricResult] = {}


def _na_case(name: str, turns: int, turn: InvocationMetricResult,
             details: TokenUsageDetails | DurationDetails | None, reason: str) -> MetricResult:
    """The n/a result of a case of `turns` turns (one shared object per metric and turn count)."""
    key = (name, turns)
    result = _NA_CASES.get(key)
    if result is None:
        result = _case(name, None, [turn] * turns, details, reason)
        if len(_NA_CASES) < 256:
            _NA_CASES[key] = result
    return result


def _has_usage(inv: Invocation) -> bool:
    data = inv.intermediate_data
    return isinstance(data, InvocationEvents) and any(e.usage_metadata is not None for e in data.invocation_events)


def _counted(name: str, actual: list[Invocation], value: Callable[[Invocation], float | None],
             na_reason: str) -> MetricResult:
    per_invocation = []
    values = []
    for inv in actual:
        v = value(inv)
        per_invocation.append(_count_turn(v))
        if v is not None:
            values.append(v)
    if not per_invocation:
        return _case(name, None, [], None, "no invocations")
    # The average, not the sum: comparable across cases with different turn counts (ADK's choice).
    return _case(name, sum(values) / len(values) if values else None, per_invocation, None, na_reason)


def tool_call_count_result(actual: list[Invocation]) -> MetricResult:
    return _counted(TOOL_CALL_COUNT, actual, tool_call_count, "n/a")


def inference_call_count_result(actual: list[Invocation]) -> MetricResult:
    if actual and not any(isinstance(inv.intermediate_data, InvocationEvents) for inv in actual):
        return _na_case(INFERENCE_CALL_COUNT, len(actual), _NA_TURN, None,
                        "n/a: the turns carry no model-call events")
    return _counted(INFERENCE_CALL_COUNT, actual, inference_call_count,
                    "n/a: the turns carry no model-call events")


def token_usage_result(actual: list[Invocation]) -> MetricResult:
    if not actual:
        return _case(TOKEN_USAGE, None, [], None, "no invocations")
    if not any(_has_usage(inv) for inv in actual):
        return _na_case(TOKEN_USAGE, len(actual), _NA_TOKENS_TURN, _NO_TOKENS,
                        "n/a: the model reported no usage metadata")
    all_details = [token_usage_details(inv) for inv in actual]
    per_invocation = [_turn(d.total_tokens, d) for d in all_details]
    # Each count averages over every turn (a count a call omits was not spent); one no turn reported
    # stays None.
    averaged: dict[str, float | None] = {}
    for field in TOKEN_USAGE_FIELDS:
        values = [getattr(d, field) for d in all_details]
        present = [v for v in values if v is not None]
        averaged[field] = sum(present) / len(values) if present else None
    overall = trusted(TokenUsageDetails, kind="token_usage", **averaged)
    return _case(TOKEN_USAGE, overall.total_tokens, per_invocation, overall,
                 "n/a: the model reported no usage metadata")


def invocation_duration_result(actual: list[Invocation]) -> MetricResult:
    if not actual:
        return _case(INVOCATION_DURATION, None, [], None, "no invocations")
    if all(inv.duration is None for inv in actual):
        return _na_case(INVOCATION_DURATION, len(actual), _NA_DURATION_TURN, _NO_DURATION,
                        "n/a: the turns were not timed by this run")
    all_details = [duration_details(inv) for inv in actual]
    per_invocation = [_turn(d.total_seconds, d) for d in all_details]
    # Each part averages over the turns that were timed: an untimed turn is left out, not counted as 0.
    averaged: dict[str, float | None] = {}
    for field in DURATION_FIELDS:
        present = [v for v in (getattr(d, field) for d in all_details) if v is not None]
        averaged[field] = round(sum(present) / len(present), 3) if present else None
    overall = trusted(DurationDetails, kind="duration", **averaged)
    return _case(INVOCATION_DURATION, overall.total_seconds, per_invocation, overall,
                 "n/a: the turns were not timed by this run")


_RESULTS: dict[str, Callable[[list[Invocation]], MetricResult]] = {
    TOOL_CALL_COUNT: tool_call_count_result,
    INFERENCE_CALL_COUNT: inference_call_count_result,
    TOKEN_USAGE: token_usage_result,
    INVOCATION_DURATION: invocation_duration_result,
}


# Turns with no model-call events and no timing (replayed or read from a file: every case of a replay
# run) get results that depend only on each turn's tool-call count. They are read, never changed, so
# cases with the same counts share one list's worth of results (on bench/headless_run.py's cases the four
# metrics' CPU fell to a fraction; bench/README.md). Bounded for long-lived dashboards.
_PLAIN_RESULTS: dict[tuple[tuple[str, ...], tuple[int, ...]], list[MetricResult]] = {}
_MAX_PLAIN = 4096


def efficiency_results(actual: list[Invocation], skip: frozenset[str] | set[str] = frozenset()) -> list[MetricResult]:
    """The four informational metrics ADK appends to every eval, in ADK's order (`skip`: names the
    config already declares, left as the config has them)."""
    names = tuple([name for name in EFFICIENCY_METRICS if name not in skip])
    counts: list[int] = []
    for inv in actual:
        data = inv.intermediate_data
        if isinstance(data, InvocationEvents) or inv.duration is not None:
            return [_RESULTS[name](actual) for name in names]
        counts.append(len(data.tool_uses) if data is not None else 0)
    key = (names, tuple(counts))
    results = _PLAIN_RESULTS.get(key)
    if results is None:
        results = [_RESULTS[name](actual) for name in names]
        if len(_PLAIN_RESULTS) >= _MAX_PLAIN:
            _PLAIN_RESULTS.clear()
        _PLAIN_RESULTS[key] = results
    return list(results)


def efficiency_summary(values: dict[str, float | None]) -> str:
    """`2.0 tool calls/turn, 1.5 model calls/turn, 812 tokens/turn, 0.84 s/turn` (n/a for None)."""

    def fmt(name: str, spec: str, unit: str) -> str:
        v = values.get(name)
        return f"{'n/a' if v is None else format(v, spec)} {unit}"

    return ", ".join((fmt(TOOL_CALL_COUNT, ".1f", "tool calls/turn"), fmt(INFERENCE_CALL_COUNT, ".1f", "model calls/turn"),
                      fmt(TOKEN_USAGE, ".0f", "tokens/turn"), fmt(INVOCATION_DURATION, ".2f", "s/turn")))


def _spec(name: str, description: str) -> MetricSpec:
    def evaluate(inp: MetricInput) -> MetricResult:
        return _RESULTS[name](inp.actual)

    return builtin(name, evaluate, description)


SPECS = (
    _spec(TOOL_CALL_COUNT, "tool calls per turn (informational)"),
    _spec(INFERENCE_CALL_COUNT, "model calls per turn (informational)"),
    _spec(TOKEN_USAGE, "tokens per turn, with every token type (informational)"),
    _spec(INVOCATION_DURATION, "seconds per turn: model, tool and framework (informational)"),
)


def run_efficiency(cases: Iterable[CaseResult]) -> str | None:
    """The summary's efficiency line for a run: each metric's mean over every turn that has a value
    (None when no case reported efficiency, e.g. every agent failed)."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    # Cases share their results (see efficiency_results): each distinct result is read once and counted
    # as often as cases hold it. Only results without timings are shared (counts: whole numbers, which
    # add up exactly in any order); a timed result is held once, and its turns are added in case order.
    held: dict[int, tuple[MetricResult, int]] = {}
    seen = False
    for case in cases:
        for m in case.metrics:
            if m.metric_name in _RESULTS and m.status is EvalStatus.INFORMATIONAL:
                seen = True
                key = id(m)
                known = held.get(key)
                held[key] = (m, 1 if known is None else known[1] + 1)
    if not seen:
        return None
    for m, times in held.values():
        name = m.metric_name
        scores = [inv.score for inv in m.per_invocation if inv.score is not None]
        if not scores:
            continue
        total = totals.get(name, 0.0)
        if times == 1:
            for score in scores:
                total += score
        else:
            total += sum(scores) * times
        totals[name] = total
        counts[name] = counts.get(name, 0) + len(scores) * times
    return efficiency_summary({name: totals[name] / counts[name] for name in counts})
