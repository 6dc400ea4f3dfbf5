"""Where agent turns run: one interface, several executors.

The engine hands an executor a case (a `CaseJob`) and gets each turn back as it finishes, then the case's
`Inference`. Agent code never runs in the engine's process: an agent folder runs in the local pool of
worker processes (`executors/pool.py`, the default) or as Ray tasks (`--executor ray`, `executors/ray.py`),
and what comes back crosses as the typed records of `protocol.py`.
tui-eval's own agents (replay) run no user code and answer here, where they are fastest (`InlineExecutor`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..agents.base import Agent
from ..agents.conversation import CaseJob, Inference, run_conversation

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient
    from ..schema.model import Invocation

OnTurn = Callable[[int, "Invocation"], None]


@dataclass(frozen=True, slots=True)
class ExecutorOptions:
    """Where and how an agent folder's cases run (the run's flags: `RunOptions.executor_options`)."""

    #: "local" (a pool of worker processes), "ray" or "ray://HOST:PORT".
    kind: str = "local"
    #: Worker processes of the local pool (None: one per core, at most 4).
    workers: int | None = None
    #: Bytes of address space each worker process may use (None: no limit).
    memory_limit: int | None = None
    #: Cases of the run in flight at once (spread over the pool).
    concurrency: int = 8
    #: A case whose worker died runs again alone (False: it fails as its worker died). Local pool only.
    retry_after_crash: bool = True


class Executor(abc.ABC):
    """Runs cases of one agent. `start` loads it (once); `infer` runs one case; `aclose` ends it all."""

    #: The app name (eval history file names) and where history goes (`<home>/.adk/eval_history/`).
    name: str = "agent"
    home: Path | None = None
    #: False for tui-eval's own agents (replay): no turn timer, no check of what they return.
    runs_user_code: bool = True

    async def start(self) -> str | None:
        """Load the agent if not done yet. Returns why it cannot be loaded (then every case fails with
        that reason), or None."""
        return None

    @abc.abstractmethod
    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        """Run one case; `on_turn(i, invocation)` as each turn finishes. Never raises for the agent's
        faults (they are the Inference's error); cancelling the awaiting task cancels the case."""

    def source_paths(self) -> list[Path]:
        """Files whose edit should reload this agent and re-run its cases."""
        return []

    async def restart(self) -> str | None:
        """Reload the agent's code (its files changed). Returns why it cannot be loaded, or None."""
        return await self.start()

    def request_stop(self) -> None:  # noqa: B027 - optional hook
        """From any thread: the run is being cancelled (drop work not started yet)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release everything: worker processes, the agent's clients."""


class InlineExecutor(Executor):
    """An agent object answering in this process: tui-eval's own agents (replay), and agent objects the
    engine is handed directly (its own tests). Agent folders never run here."""

    def __init__(self, agent: Agent, *, owns: bool = True) -> None:
        self.agent = agent
        self.name = agent.name
        self.home = agent.home
        self.runs_user_code = agent.runs_user_code
        self._owns = owns

    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        return await run_conversation(self.agent, job, judge=judge, on_turn=on_turn, own=not self.runs_user_code)

    def source_paths(self) -> list[Path]:
        return self.agent.source_paths()

    async def aclose(self) -> None:
        if self._owns:
            await self.agent.aclose()


class BrokenAgentExecutor(Executor):
    """Stands in for an agent that cannot be loaded: every case fails with the reason."""

    runs_user_code = False

    def __init__(self, ref: str, error: str) -> None:
        self.name = Path(ref.removeprefix("replay:")).name or "agent"
        self.error = error

    async def start(self) -> str | None:
        return self.error

    async def infer(self, job: CaseJob, *, judge: JudgeClient | None = None, on_turn: OnTurn | None = None) -> Inference:
        return Inference(error=f"agent could not start a session: {self.error}")
