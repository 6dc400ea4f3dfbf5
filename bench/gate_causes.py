"""Benchmark: the CI gate's and the causes view's own cost on a large run (issue 21).

    python bench/gate_causes.py [--cases 5000] [--repeat 5]

Runs the synthetic corpus of bench/headless_run.py (replay, no saving) once through the engine, then
times, on its results: grouping every case by cause (`group_by_cause`), the exit code (`run_outcome`),
a baseline compare of the run with itself (`compare_with`), and the Markdown report's causes section.
Prints the median of each in milliseconds, and the number of causes and failing cases.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from headless_run import generate  # type: ignore[import-not-found]

    from tui_eval.agents.replay import ReplayAgent
    from tui_eval.engine.causes import group_by_cause
    from tui_eval.engine.gate import compare_with, run_outcome
    from tui_eval.engine.plan import plan_run
    from tui_eval.engine.runner import Run, RunOptions
    from tui_eval.share import SharedRun, _causes_md

    expected, actual = generate(args.cases)
    t0 = time.perf_counter()
    record = asyncio.run(Run(plan_run([str(expected)]), ReplayAgent(actual),
                             options=RunOptions(save=False, code_state=False)).execute())
    run_s = time.perf_counter() - t0
    results = record.results
    groups = group_by_cause(results)
    failing = sum(1 for r in results for c in r.case_results if c.status.name == "FAILED")
    shared = SharedRun.of(record)
    print(f"{args.cases} cases ({failing} failed), {len(groups)} causes; the run itself took {run_s:.2f} s")
    print(f"group_by_cause:        {_median_ms(lambda: group_by_cause(results), args.repeat):8.1f} ms")
    print(f"run_outcome:           {_median_ms(lambda: run_outcome(results), args.repeat):8.1f} ms")
    print(f"compare_with (itself): {_median_ms(lambda: compare_with(results[0], results[0]), args.repeat):8.1f} ms")
    print(f"Markdown causes table: {_median_ms(lambda: _causes_md(shared), args.repeat):8.1f} ms")


if __name__ == "__main__":
    main()
