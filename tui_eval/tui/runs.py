"""Run the engine off the UI thread: one asyncio loop per run in a thread worker, progress into RunState.

CPU-bound scoring never blocks the UI this way, and cancel reaches `Run.cancel()` in the run's own
loop through `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .state import RunState

if TYPE_CHECKING:  # pragma: no cover
    from ..agents.base import Agent
    from ..engine.events import CaseKey
    from ..engine.plan import RunPlan
    from ..schema.model import Invocation

AgentLoader = Callable[[str], "Agent"]


@dataclass(slots=True)
class RunGroup:
    """The part of a run that one agent answers (an engine Run each)."""

    agent_ref: str | None
    plan: RunPlan
    # Stored agent output to re-score without running the agent (a config edit in live mode).
    inferences: dict[CaseKey, list[Invocation]] = field(default_factory=dict)


def default_agent_loader(ref: str) -> Agent:
    from ..agents import load_agent

    return load_agent(ref)


def execute_groups(
    groups: list[RunGroup],
    state: RunState,
    *,
    agent_loader: AgentLoader = default_agent_loader,
    options: Any = None,
    store: Any = None,
) -> None:
    """Run every group in order in a fresh event loop of the calling thread; never raises for a case."""
    try:
        asyncio.run(_execute(groups, state, agent_loader, options, store))
    except BaseException as exc:  # the worker's state handler shows it; the run must still end
        state.finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    else:
        state.finish("cancelled" if state.cancel_requested else "finished")


async def _execute(
    groups: list[RunGroup], state: RunState, agent_loader: AgentLoader, options: Any, store: Any
) -> None:
    from ..engine.runner import Run, RunOptions
    from ..engine.store import ResultStore

    loop = asyncio.get_running_loop()
    for group in groups:
        if state.cancel_requested:
            return
        agent = None
        if group.agent_ref is not None:
            try:
                agent = await loop.run_in_executor(None, agent_loader, group.agent_ref)
            except Exception as exc:
                state.apply(_run_error(f"cannot load agent {group.agent_ref}: {exc}"))
                continue
        elif not group.inferences:
            state.apply(_run_error(_no_agent_message(group.plan)))
            continue
        run = Run(
            group.plan,
            agent,
            options=options or RunOptions(),
            on_event=state.apply,
            store=store if store is not None else ResultStore(),
            inferences=group.inferences or None,
        )
        state.set_canceller(lambda run=run: loop.call_soon_threadsafe(run.cancel))
        try:
            await run.execute()
        finally:
            state.set_canceller(None)
            close = getattr(agent, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    pass


def _run_error(message: str) -> Any:
    from ..engine.events import RunError

    return RunError(message)


def _no_agent_message(plan: RunPlan) -> str:
    files = ", ".join(t.eval_file.name for t in plan.targets)
    return (
        f"no agent for {files}: keep eval files inside an agent folder, "
        "or start tui-eval with --agent PATH or --agent replay:RECORDED.evalset.json"
    )
