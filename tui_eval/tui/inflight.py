"""The cases in flight, as the run panel and the in-flight view show them: each one's turn now, its last
tool call, and the turns it has answered so far. Nothing here imports Textual."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import TurnDone

#: Cases in flight the run panel names (the in-flight view, `i`, lists them all).
IN_FLIGHT_LINES = 3


@dataclass(frozen=True, slots=True)
class InFlight:
    """One case in flight: the turn it is on (1-based), the last tool call it made, its turns so far."""

    key: CaseKey
    turn: int
    last_call: str
    turns: tuple[TurnDone, ...]


def in_flight(turns: dict[CaseKey, list[TurnDone]], running: set[CaseKey]) -> list[InFlight]:
    """The running cases in a stable order (by case), each with what it has answered so far."""
    out = []
    for key in sorted(running, key=lambda k: (k.eval_file, k.eval_id)):
        done = tuple(turns.get(key, ()))
        calls = [c for t in done for c in t.calls]
        out.append(InFlight(key, len(done) + 1, calls[-1] if calls else "", done))
    return out
