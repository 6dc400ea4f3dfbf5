"""The agent interface every kind of agent implements: a session per case, a turn per user message."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..schema.model import AppDetails, Content, EvalCase, EvalSet, Invocation


class AgentError(Exception):
    """An agent could not be loaded or answered with an error; the message is shown to the user."""


class AgentCrash(AgentError):
    """Agent code raised (SystemExit and CancelledError included); `details` is its traceback."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


@dataclass(slots=True)
class CaseContext:
    """Where a case comes from, for agents that need more than its session input, and how the run wants
    it answered."""

    #: The case's eval set where the agent runs in the engine's process (replay); None in a worker.
    eval_set: EvalSet | None
    eval_file: Path
    #: --mock-tools: None (tools run), "strict" or "fallback" (agents/mocks.py).
    mock_tools: str | None = None


class AgentSession(abc.ABC):
    """One conversation: the agent keeps its own replies in the session across turns."""

    @abc.abstractmethod
    async def turn(self, user_content: Content, index: int) -> Invocation:
        """Answer one user message. Returns the actual invocation: tool calls with args, tool
        responses, intermediate texts, final response, `duration` (wall seconds), `tool_timings`
        and `app_details`. Raising marks the case FAILED with the error kept."""

    async def final_state(self) -> dict[str, Any] | None:
        """The session's state after the last turn (ADK: the session's state; native agents: their tool
        context's state); None when the agent keeps none. Read once, before `close`."""
        return None

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the session holds."""


class Agent(abc.ABC):
    """Something that turns user messages into events; one instance serves many sessions."""

    #: The app name (the agent folder's name), used for eval history file names.
    name: str = "agent"
    #: Where the eval history goes: `<home>/.adk/eval_history/`.
    home: Path | None = None
    #: Whether this agent runs user code. Only tui-eval's own agents that run none (replay) say False:
    #: they answer in the engine's process, with no turn timer.
    runs_user_code: ClassVar[bool] = True

    @abc.abstractmethod
    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        """Start a fresh session for a case (its `session_input` app, user and state)."""

    def app_details(self) -> AppDetails | None:
        """Instructions and tool declarations of the agents in the app, for the judges."""
        return None

    def source_paths(self) -> list[Path]:
        """Files whose edit should reload this agent and re-run its cases."""
        return []

    def warm_up(self) -> None:  # noqa: B027 - optional hook
        """Import now what the agent's first turn would import (a worker calls it after loading the
        agent, so its cases do not all wait behind the first one's imports)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the agent holds."""
