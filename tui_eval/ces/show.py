"""A CES result as text: what `tui-eval ces show` prints for a case pulled from CES.

The result is the evaluation's `lastCompletedResult` (kept in the case's `ces` data by `pull`): per turn
its expectation outcomes, semantic-similarity and hallucination scores with their explanations, tool
scores and latencies; for a scenario its rubric and expectation outcomes, task completion and user-goal
satisfaction. `lastTenResults` are the history, one line each. Every text from CES passes `safe_line`.
"""

from __future__ import annotations

from ..schema.ces.mapping import short_name
from ..textsafe import safe_line
from ..schema.ces.model import (
    Evaluation,
    EvaluationMetricsThresholds,
    EvaluationResult,
    GoldenExpectation,
    GoldenExpectationOutcome,
    GoldenResult,
    LabelledScore,
    ScenarioResult,
    ToolCallLatency,
    TurnReplayResult,
)


def _s(text: object) -> str:
    return safe_line(text)


def _score(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _expectation(exp: GoldenExpectation | None) -> str:
    """One expectation in a few words: its kind and its subject."""
    if exp is None:
        return "expectation"
    if exp.tool_call is not None:
        name = exp.tool_call.tool or (exp.tool_call.toolset_tool.tool_id if exp.tool_call.toolset_tool else None)
        return f"tool call {short_name(name or '?')}"
    if exp.tool_response is not None:
        return f"tool response {short_name(exp.tool_response.tool or '?')}"
    if exp.agent_response is not None:
        texts = [c.text for c in exp.agent_response.chunks or [] if c.text]
        return f"agent response {' '.join(texts)!r}" if texts else "agent response"
    if exp.agent_transfer is not None:
        return f"agent transfer to {short_name(exp.agent_transfer.target_agent or '?')}"
    if exp.updated_variables is not None:
        return f"updated variables {', '.join(exp.updated_variables)}"
    if exp.mock_tool_response is not None:
        return f"mock response {short_name(exp.mock_tool_response.tool or '?')}"
    return "expectation"


def _outcome_lines(outcome: GoldenExpectationOutcome) -> list[str]:
    exp = outcome.expectation
    line = f"{outcome.outcome or '?':4} {_s(_expectation(exp))}"
    if exp is not None and exp.note:
        line += f" [{_s(exp.note)}]"
    lines = [line]
    tool = outcome.tool_invocation_result
    if tool is not None:
        lines.append(f"       parameter correctness {_score(tool.parameter_correctness_score)}"
                     f" {tool.outcome or ''}".rstrip())
        if tool.explanation:
            lines.append(f"       {_s(tool.explanation)}")
    sim = outcome.semantic_similarity_result
    if sim is not None:
        lines.append(f"       semantic similarity {_score(sim.score)} {_s(sim.label or '')} {sim.outcome or ''}".rstrip())
        if sim.explanation:
            lines.append(f"       {_s(sim.explanation)}")
    observed = outcome.observed_agent_response
    if observed is not None:
        texts = [c.text for c in observed.chunks or [] if c.text]
        if texts:
            lines.append(f"       observed: {_s(' '.join(texts))}")
    call = outcome.observed_tool_call
    if call is not None:
        lines.append(f"       observed call: {_s(short_name(call.tool or '?'))}({_s(call.args or {})})")
    return lines


def _latencies(items: list[ToolCallLatency] | None) -> list[str]:
    return [f"tool latency {_s(t.display_name or short_name(t.tool or '?'))} {_s(t.execution_latency or '-')}"
            for t in items or []]


def _turn_lines(i: int, turn: TurnReplayResult) -> list[str]:
    head = [f"turn {i + 1}:"]
    overall = turn.overall_tool_invocation_result
    tool_score = overall.tool_invocation_score if overall is not None else turn.tool_invocation_score
    if tool_score is not None:
        head.append(f"tool invocation {_score(tool_score)}" + (f" {overall.outcome}" if overall and overall.outcome else ""))
    if turn.tool_ordered_invocation_score is not None:
        head.append(f"ordered {_score(turn.tool_ordered_invocation_score)}")
    sim = turn.semantic_similarity_result
    if sim is not None:
        head.append(f"semantic similarity {_score(sim.score)}" + (f" {sim.outcome}" if sim.outcome else ""))
    hal = turn.hallucination_result
    if hal is not None:
        head.append(f"hallucination {_score(hal.score)}")
    if turn.turn_latency:
        head.append(f"latency {_s(turn.turn_latency)}")
    lines = ["  " + " ".join([head[0], "  ".join(head[1:])]).rstrip()]
    if sim is not None and (sim.label or sim.explanation):
        lines.append(f"    semantic similarity: {_s(sim.label or '')}" + (f": {_s(sim.explanation)}" if sim.explanation else ""))
    if hal is not None and (hal.label or hal.explanation):
        lines.append(f"    hallucination: {_s(hal.label or '')}" + (f": {_s(hal.explanation)}" if hal.explanation else ""))
    for outcome in turn.expectation_outcome or []:
        lines.extend("    " + line for line in _outcome_lines(outcome))
    lines.extend("    " + line for line in _latencies(turn.tool_call_latencies))
    if turn.error_info is not None:
        lines.append(f"    error: {_s(turn.error_info.error_type or '')} {_s(turn.error_info.error_message or '')}".rstrip())
    return lines


def _golden_lines(result: GoldenResult) -> list[str]:
    lines: list[str] = []
    for i, turn in enumerate(result.turn_replay_results or []):
        lines.extend(_turn_lines(i, turn))
    for expectation in result.evaluation_expectation_results or []:
        lines.append(f"  {expectation.outcome or '?':4} {_s(short_name(expectation.evaluation_expectation or '?'))}"
                     + (f": {_s(expectation.explanation)}" if expectation.explanation else ""))
    return lines


def _labelled(what: str, value: LabelledScore | None) -> list[str]:
    if value is None:
        return []
    line = f"  {what}: {_score(value.score)} {_s(value.label or '')}".rstrip()
    return [line + (f": {_s(value.explanation)}" if value.explanation else "")]


def _scenario_lines(result: ScenarioResult) -> list[str]:
    lines = _labelled("task completion", result.task_completion_result)
    lines += _labelled("user goal", result.user_goal_satisfaction_result)
    for rubric in result.rubric_outcomes or []:
        lines.append(f"  rubric {_score(rubric.score)} {_s(rubric.rubric or '')}"
                     + (f": {_s(rubric.score_explanation)}" if rubric.score_explanation else ""))
    for outcome in result.expectation_outcomes or []:
        exp = outcome.expectation
        subject = "expectation"
        if exp is not None and exp.tool_expectation is not None and exp.tool_expectation.expected_tool_call:
            subject = f"tool call {short_name(exp.tool_expectation.expected_tool_call.tool or '?')}"
        elif exp is not None and exp.agent_response is not None:
            subject = "agent response"
        lines.append(f"  {outcome.outcome or '?':4} {_s(subject)}")
    for i, hal in enumerate(result.hallucination_result or []):
        lines.append(f"  turn {i + 1} hallucination {_score(hal.score)} {_s(hal.label or '')}"
                     + (f": {_s(hal.explanation)}" if hal.explanation else ""))
    lines += ["  " + line for line in _latencies(result.tool_call_latencies)]
    return lines


def thresholds_line(thresholds: EvaluationMetricsThresholds | None) -> str | None:
    """The thresholds the result was judged with, as CES recorded them."""
    golden = thresholds.golden_evaluation_metrics_thresholds if thresholds is not None else None
    if golden is None:
        return None
    parts: list[str] = []
    turn = golden.turn_level_metrics_thresholds
    if turn is not None and turn.semantic_similarity_success_threshold is not None:
        parts.append(f"semantic similarity >= {turn.semantic_similarity_success_threshold}")
    if turn is not None and turn.overall_tool_invocation_correctness_threshold is not None:
        parts.append(f"tool invocation >= {turn.overall_tool_invocation_correctness_threshold:g}")
    expect = golden.expectation_level_metrics_thresholds
    if expect is not None and expect.tool_invocation_parameter_correctness_threshold is not None:
        parts.append(f"parameter correctness >= {expect.tool_invocation_parameter_correctness_threshold:g}")
    if golden.tool_matching_settings is not None and golden.tool_matching_settings.extra_tool_call_behavior:
        parts.append(f"extra tool calls {_s(golden.tool_matching_settings.extra_tool_call_behavior)}")
    return ", ".join(parts) or None


def result_lines(result: EvaluationResult) -> list[str]:
    """One CES EvaluationResult: a head line, then its golden or scenario details."""
    status = result.evaluation_status or result.execution_state or "?"
    head = f"{status:4} {_s(short_name(result.name or '') or 'result')}"
    extras = [x for x in (result.create_time, result.app_version_display_name or (
        short_name(result.app_version) if result.app_version else None)) if x]
    if extras:
        head += f" ({_s(', '.join(extras))})"
    lines = [head]
    thresholds = thresholds_line(result.evaluation_metrics_thresholds)
    if thresholds:
        lines.append(f"  thresholds: {thresholds}")
    if result.error_info is not None:
        lines.append(f"  error: {_s(result.error_info.error_type or '')} {_s(result.error_info.error_message or '')}".rstrip())
    if result.golden_result is not None:
        lines += _golden_lines(result.golden_result)
    if result.scenario_result is not None:
        lines += _scenario_lines(result.scenario_result)
    return lines


def evaluation_lines(eval_id: str, evaluation: Evaluation, *, history: bool = False) -> list[str]:
    """What `ces show` prints for one case: its last completed result, and with `history` the last ten."""
    title = evaluation.display_name or eval_id
    lines = [f"{_s(eval_id)}: {_s(title)}" if title != eval_id else _s(eval_id)]
    last = evaluation.last_completed_result
    if last is None:
        lines.append("  no completed result in CES (run it with `tui-eval ces run`, then pull again)")
    else:
        lines += ["  " + line for line in result_lines(last)]
    if history:
        older = evaluation.last_ten_results or []
        lines.append(f"  history ({len(older)} result(s)):")
        for result in older:
            status = result.evaluation_status or result.execution_state or "?"
            when = result.create_time or "?"
            lines.append(f"    {status:4} {_s(when)} {_s(short_name(result.name or ''))}".rstrip())
    return lines
