"""Benchmark: LLM-judge throughput, serial (ADK's default parallelism_limit=1) vs bounded concurrency vs cache.

    python bench/judge_throughput.py [--invocations 200] [--samples 5] [--latency 0.1] [--also 16] [--provider openai]

Scores final_response_match_v2 (the real metric code, the real google-genai client) over N invocations
x num_samples against the local fake Gemini server (`--provider openai`: the fake OpenAI-compatible
server through the real `openai` SDK, judge_model "openai:..."), which answers every call after `--latency`
seconds. The server runs in its own process, as a remote model would (in-process, its threads would
compete with the client for the GIL). Prints wall time, calls made, the most calls the server saw in
flight, and the speed-up over serial; then re-runs over a warm cache, which must make zero calls and
take under a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tui_eval.judge import JudgeOptions, create_judge_service  # noqa: E402
from tui_eval.metrics import get_metric  # noqa: E402
from tui_eval.metrics.base import MetricInput  # noqa: E402
from tui_eval.schema.config import read_eval_config  # noqa: E402
from tui_eval.schema.model import Content, EvalCase, Invocation  # noqa: E402


def make_case(n: int) -> EvalCase:
    turns = [
        Invocation(
            user_content=Content.from_text(f"Question {i}: what is the weather in city {i}?"),
            invocation_id=f"inv-{i}",
            final_response=Content.from_text(f"It is sunny in city {i}.", role="model"),
        )
        for i in range(n)
    ]
    return EvalCase(eval_id="bench", conversation=turns)


class RemoteServer:
    """The fake Gemini server in a child process, with its counters read over HTTP."""

    def __init__(self, latency: float, provider: str = "gemini") -> None:
        self.provider = provider
        module = "tests.support.fake_openai" if provider == "openai" else "tests.support.fake_gemini"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--judge", "--latency", str(latency)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        # The judge_model the metric names: the fake OpenAI server is named in it (`openai:MODEL@URL`).
        self.judge_model = f"openai:gpt-4.1-mini@{self.base_url}" if provider == "openai" else "gemini-2.5-flash"

    def _get(self, what: str) -> dict[str, Any]:
        root = self.base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/__fake__/{what}") as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        self._get("reset")

    def stats(self) -> dict[str, Any]:
        return self._get("stats")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def score(server: RemoteServer, case: EvalCase, samples: int, concurrency: int, cache_dir: Path | None
                ) -> tuple[float, int, int, float | None]:
    """(wall seconds, calls the server received, max in flight, case score) for one scoring pass."""
    config = read_eval_config({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": server.judge_model, "num_samples": samples}}}})
    judge = create_judge_service(JudgeOptions(
        api_key="dummy", base_url=server.base_url, concurrency=concurrency,
        cache_dir=cache_dir, use_cache=cache_dir is not None, timeout=30.0))
    spec = get_metric("final_response_match_v2")
    assert spec is not None
    inp = MetricInput(config.criteria["final_response_match_v2"], case, case.conversation, case.conversation,
                      config, judge)
    server.reset()
    started = time.perf_counter()
    result = await spec.evaluate(inp)  # type: ignore[misc]
    wall = time.perf_counter() - started
    await judge.aclose()
    stats = server.stats()
    return wall, stats["calls"], stats["max_in_flight"], result.score


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the fake model takes per call")
    parser.add_argument("--also", type=int, nargs="*", default=[16], help="further concurrency levels to show")
    parser.add_argument("--skip-serial", action="store_true", help="estimate serial from latency instead of running it")
    parser.add_argument("--provider", choices=("gemini", "openai"), default="gemini",
                        help="which judge: Gemini (google-genai) or an OpenAI-compatible server (openai SDK)")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "dummy")  # the fake OpenAI server accepts any key

    case = make_case(args.invocations)
    total = args.invocations * args.samples
    client = ("fake OpenAI-compatible server, real openai client" if args.provider == "openai"
              else "fake Gemini server, real google-genai client")
    print(f"final_response_match_v2: {args.invocations} invocations x {args.samples} samples = {total} judge calls, "
          f"{args.latency * 1000:.0f} ms per call ({client})\n")
    rows: list[tuple[str, float, int, int]] = []
    server = RemoteServer(args.latency, args.provider)
    try:
        tmp = tempfile.mkdtemp(prefix="judge-bench-")
        # Warm-up: import google-genai and open the first connection outside the timings.
        await score(server, make_case(1), 1, 1, None)

        if args.skip_serial:
            serial = total * args.latency
            print(f"{'serial (concurrency 1)':<28} ~{serial:8.2f} s  (estimated: calls x latency)")
        else:
            serial, calls, peak, _ = await score(server, case, args.samples, 1, None)
            rows.append(("serial (concurrency 1)", serial, calls, peak))
        for level in [8, *args.also]:
            wall, calls, peak, _ = await score(server, case, args.samples, level, None)
            label = f"concurrency {level}" + (" (default)" if level == 8 else "")
            rows.append((label, wall, calls, peak))

        cache_dir = Path(tmp) / "cache"
        cold, cold_calls, cold_peak, _ = await score(server, case, args.samples, 8, cache_dir)
        rows.append(("cold cache, concurrency 8", cold, cold_calls, cold_peak))
        warm, warm_calls, warm_peak, _ = await score(server, case, args.samples, 8, cache_dir)
        rows.append(("warm cache re-run", warm, warm_calls, warm_peak))
    finally:
        server.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)

    for label, wall, calls, peak in rows:
        speedup = serial / wall if wall > 0 else float("inf")
        print(f"{label:<28} {wall:9.2f} s  {calls:5d} calls  max in flight {peak:3d}  x{speedup:6.1f} vs serial")
    ideal = total * args.latency / 8
    default_wall = next(w for label, w, _c, _p in rows if label.startswith("concurrency 8"))
    print(f"\nideal at 8 in flight: {ideal:.2f} s (x8.0); measured x{serial / default_wall:.1f}")
    print(f"warm cache: {warm:.3f} s with {warm_calls} calls -> {'OK' if warm < 1.0 and warm_calls == 0 else 'FAIL'}")


if __name__ == "__main__":
    asyncio.run(main())
