"""Benchmark: what a case costs on Ray (`--executor ray`) against the local pool of worker processes.

    python bench/ray_overhead.py [--cases 90] [--agent demo_agents/hello_world] [--concurrency 8]

Runs the demo agent's cases (offline policy, real tools) through each executor as the engine does
(`executor.infer`, turns streamed back), first one case at a time (latency: the per-case overhead), then
`--concurrency` at once (throughput). Prints start-up (the local pool: a worker importing the agent; Ray:
the driver process, connecting or starting a Ray instance, a Ray worker importing the agent) and the mean
and median wall time per case. Ray joins `$RAY_ADDRESS` when set, else starts an instance on 127.0.0.1
(without token authentication, so nothing is written to ~/.ray).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TUI_EVAL_AGENT_MODE", "offline")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from tui_eval.agents.conversation import CaseJob  # noqa: E402
from tui_eval.executors import Executor, ExecutorOptions, executor_for  # noqa: E402
from tui_eval.engine.options import RunOptions  # noqa: E402
from tui_eval.schema.load import load_eval_set  # noqa: E402


async def _case(executor: Executor, job: CaseJob) -> float:
    t0 = time.perf_counter()
    inference = await executor.infer(job)
    assert inference.error is None, inference.error
    return time.perf_counter() - t0


async def _measure(kind: str, folder: Path, jobs: list[CaseJob], concurrency: int) -> dict[str, float]:
    t0 = time.perf_counter()
    executor = executor_for(str(folder), ExecutorOptions(kind))
    error = await executor.start()
    assert error is None, error
    startup = time.perf_counter() - t0
    print(f"{kind}: started in {startup:.2f} s", file=sys.stderr, flush=True)
    try:
        for job in jobs[:concurrency]:  # warm: as many workers as the concurrent round will use
            await _case(executor, job)
        await asyncio.gather(*(_case(executor, job) for job in jobs[:concurrency]))
        one = [await _case(executor, job) for job in jobs]
        t0 = time.perf_counter()
        gate = asyncio.Semaphore(concurrency)

        async def bounded(job: CaseJob) -> float:
            async with gate:
                return await _case(executor, job)

        await asyncio.gather(*(bounded(job) for job in jobs))
        many = (time.perf_counter() - t0) / len(jobs)
    finally:
        await executor.aclose()
    return {"startup": startup, "mean": statistics.fmean(one), "median": statistics.median(one), "many": many}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=90)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--agent", default=str(ROOT / "demo_agents" / "hello_world"))
    args = parser.parse_args()
    folder = Path(args.agent).resolve()
    eval_file = next(folder.glob("*.evalset.json"))
    cases = load_eval_set(eval_file).eval_cases
    jobs = [CaseJob(str(eval_file), c.eval_id, c, 120.0) for c in cases]
    jobs = [jobs[k % len(jobs)] for k in range(args.cases)]
    results = {kind: await _measure(kind, folder, jobs, args.concurrency) for kind in ("local", "ray")}
    for kind, r in results.items():
        print(f"{kind:<6} start-up {r['startup']:6.2f} s   one at a time: mean {r['mean'] * 1e3:7.1f} ms, "
              f"median {r['median'] * 1e3:7.1f} ms per case   {args.concurrency} at once: "
              f"{r['many'] * 1e3:7.1f} ms per case")
    local, ray = results["local"], results["ray"]
    print(f"Ray's overhead per case: {(ray['mean'] - local['mean']) * 1e3:+.1f} ms one at a time (median "
          f"{(ray['median'] - local['median']) * 1e3:+.1f} ms), {(ray['many'] - local['many']) * 1e3:+.1f} ms "
          f"at {args.concurrency} at once")


if __name__ == "__main__":
    asyncio.run(main())
