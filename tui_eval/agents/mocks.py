"""Hermetic runs (`--mock-tools[=strict|fallback]`): the agent's model runs for real, but each tool call is
answered from the case's recorded `tool_responses` for the matching expected call, and the real tool
never runs.

"Matching" is the trajectory metric's call equality (same name, args equal as Python values; ids
ignored: schema/calls.py). The turn's own expected calls are searched first, then the case's other turns;
among matches an unused recorded answer is preferred, so a call expected twice with two answers gets them
in order, and a repeat past the recorded ones gets the last answer again. A call with no recorded answer
fails the turn (`strict`, the default) or runs the real tool (`fallback`). ADK's `transfer_to_agent`
is control flow, not a backend, and always runs.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

from ..schema.calls import calls_match, pair_calls
from ..schema.model import EvalCase, FunctionCall
from .base import AgentError

MockMode = Literal["strict", "fallback"]
# ADK's own control flow, not a backend: always run for real (mocking it would stop the transfer).
NEVER_MOCKED = frozenset({"transfer_to_agent"})
MOCK_MODES: tuple[MockMode, ...] = ("strict", "fallback")
DEFAULT_MOCK_MODE: MockMode = "strict"


class UnexpectedToolCall(AgentError):
    """A tool call the case recorded no answer for, under `--mock-tools=strict`: the turn fails."""


def parse_mock_mode(value: str | None) -> MockMode | None:
    """None (tools run) or a mode; "" means the default mode (a bare `--mock-tools`)."""
    if value is None:
        return None
    text = value.strip().lower() or DEFAULT_MOCK_MODE
    for mode in MOCK_MODES:
        if text == mode:
            return mode
    raise ValueError(f"--mock-tools takes strict or fallback, not {value!r}")


def call_text(name: str, args: dict[str, Any] | None) -> str:
    """`name(key=value, ...)` with JSON values, cut to a readable length."""
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in (args or {}).items())
    if len(inner) > 200:
        inner = inner[:199] + "…"
    return f"{name}({inner})"


@dataclass(slots=True)
class _Recorded:
    call: FunctionCall
    response: dict[str, Any]
    used: int = 0


class ToolMocks:
    """One session's recorded tool answers; `turn_index` is the turn being answered (set by the session)."""

    def __init__(self, turns: list[list[_Recorded]], mode: MockMode) -> None:
        self._turns = turns
        self.mode: MockMode = mode
        self.turn_index = 0

    @classmethod
    def for_case(cls, case: EvalCase, mode: str | None) -> ToolMocks | None:
        """The case's recorded answers, or None when tools run for real (no mode)."""
        parsed = parse_mock_mode(mode)
        if parsed is None:
            return None
        turns = [
            [_Recorded(call, dict(resp.response or {})) for call, resp in pair_calls(inv.tool_calls, inv.tool_responses)
             if resp is not None]
            for inv in case.conversation or []
        ]
        return cls(turns, parsed)

    def answer(self, name: str, args: dict[str, Any] | None) -> dict[str, Any] | None:
        """The recorded response for this call (a copy the agent may change), or None: run the real tool
        (`fallback`). Raises UnexpectedToolCall under `strict` when nothing was recorded for it."""
        if name in NEVER_MOCKED:
            return None
        probe = FunctionCall(name=name, args=args)
        here = self.turn_index
        order = ([here] if 0 <= here < len(self._turns) else []) + sorted(
            (i for i in range(len(self._turns)) if i != here), key=lambda i: (abs(i - here), i))
        for i in order:
            matches = [r for r in self._turns[i] if calls_match(probe, r.call, False)]
            if not matches:
                continue
            chosen = next((r for r in matches if r.used == 0), matches[-1])
            chosen.used += 1
            return copy.deepcopy(chosen.response)
        if self.mode == "fallback":
            return None
        raise UnexpectedToolCall(f"unexpected call {call_text(name, args)}: no recorded response")
