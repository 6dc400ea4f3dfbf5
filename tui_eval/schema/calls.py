"""Tool-call equality and call/response pairing, shared by the trajectory metric, the judges' context and
mocked tools (agents/mocks.py), so that "the same call" means one thing everywhere."""

from __future__ import annotations

from .model import FunctionCall, FunctionResponse


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
