"""A CES EvaluationResult on screen: per turn its expectation outcomes (expected vs observed), semantic
similarity (0-4) and hallucination with their explanations, tool scores, latencies and errors; for a
scenario its task completion, user-goal satisfaction, rubric and expectation outcomes.

Every text that came from CES (explanations, agent answers, tool arguments) is literal Content, never markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.content import Content
from textual.widgets import Static

from ...schema.ces.caseview import results_of
from ...schema.ces.mapping import short_name
from ...schema.ces.model import (
    EvaluationResult,
    GoldenExpectation,
    GoldenExpectationOutcome,
    LabelledScore,
    Message,
    ScenarioResult,
    ToolCall,
    ToolCallLatency,
    TurnReplayResult,
)
from ...ces.show import thresholds_line
from ..text import call_signature, one_line, plain

_OUTCOME = {"PASS": ("✔", "$text-success"), "FAIL": ("✘", "$text-error")}
_MUTED = "$text-muted"


def outcome_chip(outcome: str | None) -> Content:
    """✔ PASS / ✘ FAIL / – whatever else CES said (or `?`)."""
    glyph, style = _OUTCOME.get(outcome or "", ("–", "$text-warning"))
    return Content.styled(f"{glyph} {outcome or '?'}", style)


def _score(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _texts(message: Message | None) -> str:
    return " ".join(c.text for c in (message.chunks or []) if c.text) if message is not None else ""


def _call(call: ToolCall | None) -> str:
    if call is None:
        return "?"
    name = call.tool or (call.toolset_tool.tool_id if call.toolset_tool else None) or call.display_name or "?"
    return call_signature(short_name(name), call.args or {}, 120)


def _expectation(exp: GoldenExpectation | None) -> tuple[str, str | None]:
    """(what kind of check, the expected value as text)."""
    if exp is None:
        return "expectation", None
    if exp.tool_call is not None:
        return "tool call", _call(exp.tool_call)
    if exp.tool_response is not None:
        return "tool response", short_name(exp.tool_response.tool or "?")
    if exp.agent_response is not None:
        return "agent response", _texts(exp.agent_response)
    if exp.agent_transfer is not None:
        return "agent transfer", short_name(exp.agent_transfer.target_agent or "?")
    if exp.updated_variables is not None:
        return "updated variables", ", ".join(exp.updated_variables)
    if exp.mock_tool_response is not None:
        return "mock response", short_name(exp.mock_tool_response.tool or "?")
    return "expectation", None


def _observed(outcome: GoldenExpectationOutcome) -> str | None:
    if outcome.observed_tool_call is not None:
        return _call(outcome.observed_tool_call)
    if outcome.observed_agent_response is not None:
        return _texts(outcome.observed_agent_response)
    if outcome.observed_tool_response is not None:
        return short_name(outcome.observed_tool_response.tool or "?")
    if outcome.observed_agent_transfer is not None:
        return short_name(outcome.observed_agent_transfer.target_agent or "?")
    return None


def _labelled_line(indent: str, what: str, score: str, label: str | None, explanation: str | None,
                   outcome: str | None = None) -> list[Content]:
    lines = [Content.assemble(indent, (what, "bold"), f" {score}", plain(f" {label}" if label else "", _MUTED),
                              Content.assemble(" ", outcome_chip(outcome)) if outcome else "")]
    if explanation:
        lines.append(Content.assemble(indent + "  ", plain(explanation, "italic")))
    return lines


def _outcome_lines(outcome: GoldenExpectationOutcome) -> list[Content]:
    kind, expected = _expectation(outcome.expectation)
    head = Content.assemble("  ", outcome_chip(outcome.outcome), " ", (kind, "bold"))
    note = outcome.expectation.note if outcome.expectation is not None else None
    if note:
        head = head + plain(f"  [{note}]", _MUTED)
    lines = [head]
    if expected is not None:
        lines.append(Content.assemble(("      expected ", _MUTED), plain(one_line(expected, 200))))
    observed = _observed(outcome)
    if observed is not None:
        lines.append(Content.assemble(("      observed ", _MUTED), plain(one_line(observed, 200))))
    tool = outcome.tool_invocation_result
    if tool is not None:
        lines.append(Content.assemble(("      parameter correctness ", _MUTED), _score(tool.parameter_correctness_score),
                                      " ", outcome_chip(tool.outcome) if tool.outcome else ""))
        if tool.explanation:
            lines.append(Content.assemble("        ", plain(tool.explanation, "italic")))
    sim = outcome.semantic_similarity_result
    if sim is not None:
        lines += _labelled_line("      ", "semantic similarity", f"{_score(sim.score)}/4", sim.label, sim.explanation,
                                sim.outcome)
    return lines


def _latencies(items: list[ToolCallLatency] | None, indent: str) -> list[Content]:
    return [Content.assemble(indent, ("tool latency ", _MUTED),
                             plain(t.display_name or short_name(t.tool or "?")), f" {t.execution_latency or '-'}")
            for t in items or []]


def _error(info: Any, indent: str) -> list[Content]:
    if info is None:
        return []
    return [Content.assemble(indent, ("error ", "bold $text-error"),
                             plain(f"{info.error_type or ''} {info.error_message or ''}".strip(), "$text-error"))]


def turn_lines(index: int, turn: TurnReplayResult) -> list[Content]:
    """One golden turn's replay result."""
    parts: list[Content | tuple[str, str] | str] = [(f"turn {index + 1}", "bold")]
    overall = turn.overall_tool_invocation_result
    tool_score = overall.tool_invocation_score if overall is not None else turn.tool_invocation_score
    if tool_score is not None:
        parts += ["  tool invocation ", _score(tool_score)]
        if overall is not None and overall.outcome:
            parts += [" ", outcome_chip(overall.outcome)]
    if turn.tool_ordered_invocation_score is not None:
        parts += ["  ordered ", _score(turn.tool_ordered_invocation_score)]
    if turn.turn_latency:
        parts += ["  latency ", plain(turn.turn_latency)]
    lines = [Content.assemble(*parts)]
    sim = turn.semantic_similarity_result
    if sim is not None:
        lines += _labelled_line("  ", "semantic similarity", f"{_score(sim.score)}/4", sim.label, sim.explanation,
                                sim.outcome)
    hal = turn.hallucination_result
    if hal is not None:
        lines += _labelled_line("  ", "hallucination", _score(hal.score), hal.label, hal.explanation)
    for outcome in turn.expectation_outcome or []:
        lines += _outcome_lines(outcome)
    lines += _latencies(turn.tool_call_latencies, "  ")
    lines += _error(turn.error_info, "  ")
    return lines


def _labelled(what: str, value: LabelledScore | None) -> list[Content]:
    if value is None:
        return []
    return _labelled_line("", what, _score(value.score), value.label, value.explanation)


def scenario_lines(result: ScenarioResult) -> list[Content]:
    lines = _labelled("task completion", result.task_completion_result)
    lines += _labelled("user goal satisfaction", result.user_goal_satisfaction_result)
    if result.task_completed is not None or result.all_expectations_satisfied is not None:
        lines.append(Content.styled(
            f"task completed {result.task_completed}  all expectations satisfied {result.all_expectations_satisfied}",
            _MUTED))
    for rubric in result.rubric_outcomes or []:
        lines.append(Content.assemble(("rubric ", "bold"), f"{_score(rubric.score)} ", plain(rubric.rubric or "")))
        if rubric.score_explanation:
            lines.append(Content.assemble("  ", plain(rubric.score_explanation, "italic")))
    for outcome in result.expectation_outcomes or []:
        exp = outcome.expectation
        subject, expected = "expectation", None
        if exp is not None and exp.tool_expectation is not None and exp.tool_expectation.expected_tool_call:
            subject, expected = "tool call", _call(exp.tool_expectation.expected_tool_call)
        elif exp is not None and exp.agent_response is not None:
            subject, expected = "agent response", _texts(exp.agent_response)
        lines.append(Content.assemble(outcome_chip(outcome.outcome), " ", (subject, "bold")))
        if expected is not None:
            lines.append(Content.assemble(("    expected ", _MUTED), plain(one_line(expected, 200))))
        observed = (_call(outcome.observed_tool_call.tool_call) if outcome.observed_tool_call is not None
                    else _texts(outcome.observed_agent_response) if outcome.observed_agent_response is not None else None)
        if observed is not None:
            lines.append(Content.assemble(("    observed ", _MUTED), plain(one_line(observed, 200))))
    for i, hal in enumerate(result.hallucination_result or []):
        lines += _labelled_line("", f"turn {i + 1} hallucination", _score(hal.score), hal.label, hal.explanation)
    lines += _latencies(result.tool_call_latencies, "")
    return lines


def head_line(result: EvaluationResult) -> Content:
    """Status, result id, time and app version."""
    status = result.evaluation_status or result.execution_state
    extras = [x for x in (result.create_time, result.app_version_display_name
                          or (short_name(result.app_version) if result.app_version else None)) if x]
    return Content.assemble(
        outcome_chip(status), " ", plain(short_name(result.name or "") or "result", "bold"),
        plain(f"  {', '.join(extras)}" if extras else "", _MUTED),
    )


def result_lines(result: EvaluationResult, turn: int | None = None) -> list[Content]:
    """A whole result, or (for a golden) only the replay of turn `turn` (0-based) after the head."""
    lines = [head_line(result)]
    thresholds = thresholds_line(result.evaluation_metrics_thresholds)
    if thresholds:
        lines.append(plain(f"thresholds: {thresholds}", _MUTED))
    lines += _error(result.error_info, "")
    golden = result.golden_result
    if golden is not None:
        turns = list(enumerate(golden.turn_replay_results or []))
        if turn is not None:
            turns = [(i, t) for i, t in turns if i == turn]
            if not turns:
                lines.append(Content.styled(f"CES replayed no turn {turn + 1} in this result", _MUTED))
        for i, replay in turns:
            lines += turn_lines(i, replay)
        for expectation in golden.evaluation_expectation_results or []:
            lines.append(Content.assemble(outcome_chip(expectation.outcome), " ",
                                          plain(short_name(expectation.evaluation_expectation or "?"), "bold")))
            if expectation.explanation:
                lines.append(Content.assemble("  ", plain(expectation.explanation, "italic")))
    if result.scenario_result is not None:
        lines += scenario_lines(result.scenario_result)
    if golden is None and result.scenario_result is None and not result.error_info:
        lines.append(Content.styled("no details in this result (pull again for the full result)", _MUTED))
    return lines


class CesResultView(Static):
    """One CES result (or a note that there is none); the turn view and the CES history screen show it."""

    def show(self, result: EvaluationResult | None, turn: int | None = None, *, empty: str = "") -> None:
        if result is None:
            self.update(Content.styled(empty or "no CES result", _MUTED))
            return
        self.update(Content("\n").join(result_lines(result, turn)))



def case_panel(extra: Mapping[str, Any] | None, index: int, *, scenario: bool) -> tuple[Content, Content] | None:
    """The turn view's CES section for a case (its `model_extra`): (title, body); None if not from CES."""
    results = results_of(extra)
    if results is None:
        return None
    count = len(results.history)
    title = Content.assemble(
        ("CES result", "bold $text-accent"),
        ("  (scenario: the whole conversation)" if scenario else f"  (turn {index + 1})", "$text-muted"),
        (f"  c: history of {count}" if count else "", "$text-muted"),
    )
    if results.last is None:
        problems = "; ".join(results.problems)
        return title, Content.styled(problems or "no completed CES result yet: C runs the case in CES", _MUTED)
    return title, Content("\n").join(result_lines(results.last, None if scenario else index))
