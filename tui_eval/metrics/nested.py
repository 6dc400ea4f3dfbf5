"""deep_tool_trajectory_v1, and a turn's trajectory as a tree: the calls made inside tool calls.

An `AgentTool` runs its agent with a runner of its own: the calls that agent makes never reach ADK's
trajectory (google/adk-python #3493, #3652). tui-eval's ADK agent captures them (`Invocation.nested_calls`,
each with the agent that made it and its depth); a case names the ones it expects in its
`expected_nested_calls`, keyed by the expected turn's invocation id. This opt-in metric compares them under
the same EXACT / IN_ORDER / ANY_ORDER rules as tool_trajectory_avg_score; ADK's own metric and its score
are untouched (a `single_turn` sub-agent's calls land in the parent's events, so ADK's trajectory already
holds them, and so does this tree, at the top level, each with its author).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..schema.calls import pair_calls
from ..schema.details import TrajectoryDetails
from ..schema.model import ExpectedNestedCall, FunctionCall, Invocation, InvocationEvents, NestedCall
from ..schema.results import InvocationMetricResult, MetricResult, status_for
from .alignment import align_all
from .base import MetricInput, builtin

METRIC_NAME = "deep_tool_trajectory_v1"
#: Between an agent and its call, in every face ("dice_agent › roll_die(sides=6)").
ATTRIBUTION = " › "


def args_text(args: dict[str, Any] | None) -> str:
    """`k=v, ...` with each value as JSON would write it (strings quoted only when they hold a space)."""
    import json

    parts = []
    for key, value in (args or {}).items():
        shown = value if isinstance(value, str) and value and " " not in value else json.dumps(
            value, ensure_ascii=False, default=str)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


def call_label(agent: str | None, name: str | None, args: dict[str, Any] | None) -> str:
    """`agent › name(k=v)`; without an agent, `name(k=v)`."""
    call = f"{name or '?'}({args_text(args)})"
    return f"{agent}{ATTRIBUTION}{call}" if agent else call


def attributed(agent: str, name: str, args: dict[str, Any]) -> FunctionCall:
    """A nested call as the trajectory rules compare it: its agent is part of its name."""
    return FunctionCall(name=f"{agent}{ATTRIBUTION}{name}", args=args)


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One call of a turn's trajectory tree, in the order they ran (depth first)."""

    depth: int
    agent: str | None
    name: str
    args: dict[str, Any]
    response: dict[str, Any] | None
    seconds: float | None
    #: Made inside another tool call: outside ADK's trajectory.
    nested: bool

    @property
    def label(self) -> str:
        return call_label(self.agent, self.name, self.args)


def _dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return value if isinstance(value, dict) else {"result": value}


def _authors(inv: Invocation) -> dict[str, str]:
    """Call id -> the agent whose event holds the call (the events shape only)."""
    data = inv.intermediate_data
    out: dict[str, str] = {}
    if isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            for part in (event.content.parts or []) if event.content is not None else []:
                if part.function_call is not None and part.function_call.id:
                    out[part.function_call.id] = event.author
    return out


def call_tree(inv: Invocation) -> list[TreeRow]:
    """The turn's tool calls with, under each, the calls made inside it (indented by depth). A nested
    call whose enclosing call is not among the turn's calls is listed at the end, at its depth."""
    authors = _authors(inv)
    seconds: dict[str, float] = {t.call_id: t.seconds for t in inv.tool_timings if t.call_id}
    children: dict[str, list[NestedCall]] = {}
    for nested in inv.nested_calls:
        children.setdefault(nested.parent or "", []).append(nested)
    rows: list[TreeRow] = []
    placed: set[int] = set()

    def under(call_id: str | None) -> None:
        if not call_id:
            return
        for child in children.get(call_id, ()):
            if id(child) in placed:
                continue
            placed.add(id(child))
            rows.append(TreeRow(child.depth, child.agent, child.name, child.arguments, _dict(child.response),
                                child.seconds, True))
            under(child.call_id)

    for call, response in pair_calls(inv.tool_calls, inv.tool_responses):
        rows.append(TreeRow(0, authors.get(call.id or ""), call.name or "?", call.args or {},
                            response.response if response is not None else None, seconds.get(call.id or ""), False))
        under(call.id)
    for orphan in inv.nested_calls:
        if id(orphan) not in placed:
            placed.add(id(orphan))
            rows.append(TreeRow(orphan.depth, orphan.agent, orphan.name, orphan.arguments, _dict(orphan.response),
                                orphan.seconds, True))
    return rows


def nested_under(inv: Invocation, call_id: str | None) -> list[NestedCall]:
    """The calls made inside the call `call_id` of the turn, depth first (a call, then those inside it)."""
    if not call_id or not inv.nested_calls:
        return []
    out: list[NestedCall] = []
    for call in inv.nested_calls:
        if call.parent == call_id:
            out.append(call)
            out.extend(nested_under(inv, call.call_id))
    return out


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
