"""IsolatedAgent: agent code on its own loop thread; what it raises, returns or blocks stays there."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.support.evalfiles import case, turn, write_set
from tui_eval.agents.base import Agent, AgentCrash, AgentError, AgentSession, CaseContext
from tui_eval.agents.isolation import IsolatedAgent, close_agent, isolated
from tui_eval.agents.replay import ReplayAgent
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import Content, EvalCase, Invocation


class Probe(AgentSession):
    """Does what the message says; records what it saw."""

    def __init__(self, agent: ProbeAgent) -> None:
        self.agent = agent

    async def turn(self, user_content: Content, index: int) -> Invocation:
        self.agent.threads.append(threading.current_thread().name)
        text = user_content.text
        if text == "exit":
            raise SystemExit(3)
        if text == "cancel":
            raise asyncio.CancelledError()
        if text == "self-cancel":
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)
        if text == "block":
            time.sleep(5)
        if text == "wait":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.agent.cancelled += 1
                raise
        if text == "spawn-exit":
            async def boom() -> None:
                raise SystemExit(1)

            asyncio.get_running_loop().create_task(boom())
            await asyncio.sleep(0.05)
        if text == "none":
            return None  # type: ignore[return-value]
        return Invocation(user_content=user_content, invocation_id=f"e-{index}")

    async def close(self) -> None:
        self.agent.closed += 1


class ProbeAgent(Agent):
    def __init__(self) -> None:
        self.threads: list[str] = []
        self.cancelled = 0
        self.closed = 0
        self.aclosed_on: str | None = None

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        return Probe(self)

    async def aclose(self) -> None:
        self.aclosed_on = threading.current_thread().name


@pytest.fixture
def ctx(tmp_path: Path) -> tuple[EvalCase, CaseContext]:
    path = write_set(tmp_path / "s.evalset.json", "s", case("c1", turn("hi", "hello")))
    eval_set = load_eval_set(path)
    return eval_set.eval_cases[0], CaseContext(eval_set, path)


async def _turn(agent: Agent, ctx: tuple[EvalCase, CaseContext], text: str) -> Invocation:
    session = await agent.new_session(*ctx)
    try:
        return await session.turn(Content.from_text(text), 0)
    finally:
        await session.close()


async def test_turns_run_on_the_agent_loop_thread_and_the_wrapper_is_kept(ctx) -> None:
    inner = ProbeAgent()
    agent = isolated(inner)
    assert isinstance(agent, IsolatedAgent) and isolated(inner) is agent
    inv = await _turn(agent, ctx, "hi")
    assert isinstance(inv, Invocation)
    assert inner.threads[0].startswith("agent-loop-") and inner.threads[0] != threading.current_thread().name
    assert inner.closed == 1
    await close_agent(inner)
    assert inner.aclosed_on is not None and inner.aclosed_on.startswith("agent-loop-")


async def test_replay_runs_on_the_engine_loop(tmp_path: Path) -> None:
    path = write_set(tmp_path / "r.evalset.json", "r", case("c1", turn("hi", "hello")))
    replay = ReplayAgent(path)
    assert isolated(replay) is replay


async def test_system_exit_and_agent_cancel_come_back_as_crashes_with_tracebacks(ctx) -> None:
    agent = isolated(ProbeAgent())
    with pytest.raises(AgentCrash) as info:
        await _turn(agent, ctx, "exit")
    assert "sys.exit(3)" in str(info.value) and "Traceback" in info.value.details
    with pytest.raises(AgentCrash) as info:
        await _turn(agent, ctx, "cancel")
    assert "CancelledError" in str(info.value)
    assert not asyncio.current_task().cancelling()  # the caller was not cancelled
    with pytest.raises(AgentCrash, match="cancelled its own task"):
        await _turn(agent, ctx, "self-cancel")
    assert not asyncio.current_task().cancelling()
    with pytest.raises(AgentError, match="returned NoneType, not an Invocation"):
        await _turn(agent, ctx, "none")
    await agent.aclose()


async def test_our_cancel_reaches_the_agent_task(ctx) -> None:
    inner = ProbeAgent()
    agent = isolated(inner)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await _turn(agent, ctx, "wait")
    for _ in range(50):
        if inner.cancelled:
            break
        await asyncio.sleep(0.02)
    assert inner.cancelled == 1
    assert isinstance(await _turn(agent, ctx, "hi"), Invocation)  # the loop is fine: kept
    assert len({t for t in inner.threads}) == 1
    await agent.aclose()


async def test_a_blocked_loop_is_retired_and_new_sessions_get_a_fresh_one(ctx) -> None:
    inner = ProbeAgent()
    agent = isolated(inner)
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await _turn(agent, ctx, "block")
    assert time.perf_counter() - t0 < 2, "the engine waited for the blocked agent loop"
    assert isinstance(await _turn(agent, ctx, "hi"), Invocation)
    assert inner.threads[0] != inner.threads[1]
    await agent.aclose()


async def test_a_task_raising_system_exit_does_not_kill_the_agent_loop(ctx) -> None:
    inner = ProbeAgent()
    agent = isolated(inner)
    assert isinstance(await _turn(agent, ctx, "spawn-exit"), Invocation)
    assert isinstance(await _turn(agent, ctx, "hi"), Invocation)
    assert inner.threads[0] == inner.threads[1]
    await agent.aclose()


async def test_sessions_started_together_after_a_block_share_one_fresh_loop(ctx) -> None:
    inner = ProbeAgent()
    agent = isolated(inner)
    blocked = await agent.new_session(*ctx)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await blocked.turn(Content.from_text("block"), 0)  # not closed: nobody has probed the loop yet
    results = await asyncio.gather(*(_turn(agent, ctx, "hi") for _ in range(4)))
    assert all(isinstance(r, Invocation) for r in results)
    assert len(set(inner.threads[1:])) == 1 and inner.threads[1] != inner.threads[0]
    await agent.aclose()
