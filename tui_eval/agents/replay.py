"""`replay:PATH`: answer each turn with the invocation recorded for the same case and turn in PATH."""

from __future__ import annotations

import copy
from pathlib import Path

from ..schema.load import load_eval_set
from ..schema.model import Content, EvalCase, Invocation
from .base import Agent, AgentError, AgentSession, CaseContext


class ReplaySession(AgentSession):
    def __init__(self, recorded: EvalCase | None, eval_id: str, source: Path) -> None:
        self._recorded = recorded
        self._eval_id = eval_id
        self._source = source

    async def turn(self, user_content: Content, index: int) -> Invocation:
        if self._recorded is None:
            raise AgentError(f"{self._source}: no recorded case with eval_id {self._eval_id!r}")
        turns = self._recorded.conversation or []
        if index >= len(turns):
            raise AgentError(
                f"{self._source}: case {self._eval_id!r} has {len(turns)} recorded turn(s), no turn {index + 1}"
            )
        recorded = turns[index]
        # The recorded turn answers this user message; keep the message that was actually sent.
        return Invocation(
            user_content=user_content,
            invocation_id=recorded.invocation_id,
            final_response=recorded.final_response,
            intermediate_data=copy.copy(recorded.intermediate_data),
            creation_timestamp=recorded.creation_timestamp,
            duration=recorded.duration,
            app_details=recorded.app_details,
        )


class ReplayAgent(Agent):
    """Scores recorded conversations without running anything."""

    # Our own code, no user code: replayed turns run on the engine's loop at no cost.
    needs_isolation = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = "replay"
        # Eval history goes beside each eval file under test, not beside the recording.
        self.home = None
        recorded = load_eval_set(self.path)  # LoadError names the file and place
        self._cases = {c.eval_id: c for c in recorded.eval_cases}

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        return ReplaySession(self._cases.get(case.eval_id), case.eval_id, self.path)

    def source_paths(self) -> list[Path]:
        return [self.path]
