"""Tool-call equality and call/response pairing, shared by the trajectory metric, the judges' context and
mocked tools (agents/mocks.py), so that "the same call" means one thing everywhere; and a turn's calls as a
tree (the calls made inside tool calls under the call they ran in), for every face and the deep trajectory
metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import FunctionCall, FunctionResponse, Invocation, InvocationEvents, NestedCall


def calls_match(actual: FunctionCall, expected: FunctionCall, ignore_args: bool) -> bool:
    """ADK's call equality: same name and, unless ignore_args, `args == args` (None != {}; id ignored)."""
    # Operand order as in ADK (actual on the left), so even an odd __eq__ answers the same.
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def pair_calls(calls: list[FunctionCall], responses: list[FunctionResponse]
               ) -> list[tuple[FunctionCall, FunctionResponse | None]]:
    """Each call with its response: by id where both have one, else the next unclaimed same-name one."""
    unclaimed = list(responses)
    out: list[tuple[FunctionCall, FunctionResponse | None]] = []
    for call in calls:
        match = None
        if call.id:
            match = next((r for r in unclaimed if r.id == call.id), None)
        if match is None:
            match = next((r for r in unclaimed if r.name == call.name and not (call.id and r.id)), None)
        if match is not None:
            unclaimed.remove(match)
        out.append((call, match))
    return out


#: Between an agent and its call, in every face ("dice_agent › roll_die(sides=6)").
ATTRIBUTION = " › "


def args_text(args: dict[str, Any] | None) -> str:
    """`k=v, ...` with each value as JSON writes it (as the dashboard writes a call's arguments)."""
    import json

    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)}"
                     for key, value in (args or {}).items())


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
