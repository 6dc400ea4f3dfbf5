"""A chat with an agent as the dashboard keeps it: the user's messages, and the turns the latest play of
them answered (each play replays every message from a fresh session). Nothing here imports Textual."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.feed import ChatEnded, ChatTurn
    from ..schema.model import Invocation

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ChatLog:
    """One chat: its messages; the turns of its current play (by index) and whether that play ended."""

    agent_ref: str
    messages: list[str] = field(default_factory=list)
    ticket: int = 0
    turns: dict[int, Invocation] = field(default_factory=dict)
    playing: bool = False
    error: str | None = None

    def play(self, ticket: int) -> None:
        """A new play of the messages starts: its turns replace the last play's as they come."""
        self.ticket = ticket
        self.turns = {}
        self.playing = True
        self.error = None

    def take(self, record: ChatTurn | ChatEnded) -> bool:
        """Fold a record of this chat's current play; False when it belongs to an older play."""
        from ..engine.feed import ChatTurn

        if record.ticket != self.ticket:
            return False
        if isinstance(record, ChatTurn):
            turn = _read(record)
            if turn is not None:
                self.turns[record.turn] = turn
        else:
            self.playing = False
            self.error = record.error
        return True

    @property
    def complete(self) -> bool:
        """Every message answered and the play over: what can be saved as a case."""
        return not self.playing and self.error is None and len(self.turns) == len(self.messages) > 0

    def ordered(self) -> list[Invocation]:
        return [self.turns[i] for i in sorted(self.turns)]


def _read(record: ChatTurn) -> Invocation | None:
    import orjson

    from ..schema.errors import SchemaError
    from ..schema.load import read_invocation

    try:
        data: Any = orjson.loads(record.invocation)
        return read_invocation(data, ours=True)
    except (orjson.JSONDecodeError, SchemaError) as exc:
        log.error("chat turn %d is not a valid turn: %s", record.turn + 1, str(exc)[:300])
        return None


def case_of(log_: ChatLog, eval_id: str, app_name: str, now: float) -> dict[str, Any]:
    """The conversation as a new eval case in ADK's shape: each turn's user message, final response and
    events (its tool calls and responses: the expected trajectory), without the timings of this play."""
    turns = []
    for inv in log_.ordered():
        turn = inv.to_dict()
        for key in ("duration", "model_duration", "tool_duration", "app_details"):
            turn.pop(key, None)
        turns.append(turn)
    return {"eval_id": eval_id, "conversation": turns,
            "session_input": {"app_name": app_name, "user_id": "user", "state": {}},
            "creation_timestamp": now}
