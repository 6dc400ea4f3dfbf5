"""Benchmark: what running agent turns in isolation costs per turn, thread loop against worker process.

    python bench/isolation_overhead.py [--turns 2000] [--agent demo_agents/hello_world]

Runs the demo agent's eval set (offline policy, real tools) turn after turn, three ways: directly on the
engine's loop (no isolation, the baseline), on an agent loop thread (tui_eval.agents.isolation, what the
engine does), and in a worker process reached over a pipe (the alternative: the child loads the agent
folder itself; the case goes over as JSON and the Invocation comes back as JSON, as it would have to).
Prints the mean and median wall time per turn and each option's overhead over the baseline, plus the
process's start-up cost. Replay agents are not isolated, so they are not measured here.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TUI_EVAL_AGENT_MODE", "offline")

from tui_eval.agents.base import Agent, AgentSession, CaseContext  # noqa: E402
from tui_eval.agents.folder import load_agent_folder  # noqa: E402
from tui_eval.agents.isolation import isolated  # noqa: E402
from tui_eval.schema.load import load_eval_set, read_content, read_eval_case, read_invocation  # noqa: E402
from tui_eval.schema.model import EvalCase, EvalSet  # noqa: E402


def _turns(eval_set: EvalSet, n: int) -> list[tuple[EvalCase, int]]:
    pairs = [(c, i) for c in eval_set.eval_cases for i in range(len(c.conversation or []))]
    return [pairs[k % len(pairs)] for k in range(n)]


async def _in_loop(agent: Agent, eval_set: EvalSet, eval_file: Path, n: int) -> list[float]:
    """One session per case (as the engine does), each turn timed from the engine's loop."""
    times = []
    ctx = CaseContext(eval_set, eval_file)
    session: AgentSession | None = None
    for case, i in _turns(eval_set, n):
        t0 = time.perf_counter()
        if i == 0 or session is None:
            session = await agent.new_session(case, ctx)
        assert case.conversation is not None
        await session.turn(case.conversation[i].user_content, i)
        times.append(time.perf_counter() - t0)
    return times


def _child(conn: Connection, folder: str, eval_file: str) -> None:
    async def serve() -> None:
        agent = load_agent_folder(folder)
        eval_set = load_eval_set(Path(eval_file))
        ctx = CaseContext(eval_set, Path(eval_file))
        session = None
        conn.send("ready")
        while True:
            msg = conn.recv()
            if msg is None:
                return
            case_dict, index, content_dict = msg
            case = read_eval_case(case_dict, "$")
            if index == 0 or session is None:
                session = await agent.new_session(case, ctx)
            inv = await session.turn(read_content(content_dict, "$"), index)
            conn.send(inv.to_dict())

    asyncio.run(serve())


async def _in_process(folder: Path, eval_set: EvalSet, eval_file: Path, n: int) -> tuple[list[float], float]:
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe()
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(child, str(folder), str(eval_file)), daemon=True)
    proc.start()
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, parent.recv) == "ready"
    startup = time.perf_counter() - t0
    times = []
    for case, i in _turns(eval_set, n):
        t0 = time.perf_counter()
        assert case.conversation is not None
        parent.send((case.to_dict(), i, case.conversation[i].user_content.to_dict()))
        # The engine must not block its loop on the pipe: wait for the answer the way it would.
        ready = asyncio.Event()
        loop.add_reader(parent.fileno(), ready.set)
        await ready.wait()
        loop.remove_reader(parent.fileno())
        read_invocation(parent.recv(), "$")
        times.append(time.perf_counter() - t0)
    parent.send(None)
    proc.join(5)
    return times, startup


def _report(name: str, times: list[float], base: float | None) -> float:
    mean = statistics.fmean(times) * 1e3
    med = statistics.median(times) * 1e3
    extra = f"  overhead {mean - base:+.3f} ms/turn" if base is not None else ""
    print(f"{name:<22} mean {mean:7.3f} ms  median {med:7.3f} ms{extra}")
    return mean


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--agent", default=str(ROOT / "demo_agents" / "hello_world"))
    args = parser.parse_args()
    folder = Path(args.agent).resolve()
    eval_file = next(folder.glob("*.evalset.json"))
    eval_set = load_eval_set(eval_file)
    agent = load_agent_folder(folder)
    await _in_loop(agent, eval_set, eval_file, 50)  # warm up
    base = _report("direct (no isolation)", await _in_loop(agent, eval_set, eval_file, args.turns), None)
    iso = isolated(agent)
    await _in_loop(iso, eval_set, eval_file, 50)
    _report("agent loop thread", await _in_loop(iso, eval_set, eval_file, args.turns), base)
    await iso.aclose()
    times, startup = await _in_process(folder, eval_set, eval_file, args.turns)
    _report("worker process", times, base)
    print(f"worker process start-up (fork + agent import): {startup * 1e3:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
