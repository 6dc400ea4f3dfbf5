"""Benchmark: LLM-judge throughput, serial (ADK's default parallelism_limit=1) vs bounded concurrency vs cache.

    python bench/judge_throughput.py [--invocations 200] [--samples 5] [--latency 0.1] [--also 16] [--provider openai]
    python bench/judge_throughput.py --whole [--before REV] [--repeat 3]

`--whole` times whole processes instead: 100 judge calls at 100 ms laid out as 11 cases with 20 turns in
all, 5 samples each (final_response_match_v2), one agent folder (an ADK agent that answers without a
model), the same fake Gemini server in its own process: google-adk 2.13's `adk eval` with its defaults,
`tui-eval run` of this checkout and, with `--before REV`, of REV (checked out in a temporary git worktree),
each on the agent folder and on a replay of its answers (`--agent replay:`; ADK has no replay).
Each row gives the whole process's wall time and its judge phase (from the first judge request the server
received to the last answer it sent), and both as a multiple of google-adk's; runs alternate, medians shown.

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

DEFAULT = JudgeOptions().concurrency


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

    def __init__(self, latency: float, provider: str = "gemini", text: str | None = None) -> None:
        self.provider = provider
        module = "tests.support.fake_openai" if provider == "openai" else "tests.support.fake_gemini"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--judge", "--latency", str(latency),
             *(["--text", text] if text is not None else [])],
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


AGENT = '''"""Answers "It is sunny in city N." to "Question N: ...", without a model (the bench times judges)."""
import re
from typing import AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.genai import types


class Weather(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        text = "".join(p.text or "" for p in (ctx.user_content.parts or [])) if ctx.user_content else ""
        found = re.search(r"Question (\\d+)", text)
        answer = f"It is sunny in city {found.group(1) if found else 0}."
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=answer)]))


root_agent = Weather(name="weather")
'''
# `adk eval` itself, in a process that stands in empty modules for the SDKs only ADK's Vertex AI facade uses
# (pandas, vertexai, agentplatform: google-adk[eval], not installed here); final_response_match_v2 never
# touches them.
ADK_EVAL = """
import sys, types
for name in ("pandas", "vertexai", "agentplatform"):
    sys.modules.setdefault(name, types.ModuleType(name))
from google.adk.cli.cli_tools_click import main
sys.argv = ["adk", "eval", *sys.argv[1:]]
main()
"""
# 11 cases, 20 turns: nine of two turns, two of one.
CASE_TURNS = [2] * 9 + [1] * 2
# What ADK's final_response_match_v2 reads from a judge that answers without a schema.
ADK_VERDICT = json.dumps({"reasoning": "same city", "is_the_agent_response_valid": "valid"})


def write_whole_inputs(folder: Path, samples: int) -> tuple[Path, Path]:
    """The agent folder (with its eval set and test_config.json); returns (agent folder, eval set)."""
    agent = folder / "weather_agent"
    agent.mkdir(parents=True)
    (agent / "__init__.py").write_text("from . import agent\n")
    (agent / "agent.py").write_text(AGENT)
    cases, n = [], 0
    for c, turns in enumerate(CASE_TURNS):
        conversation = []
        for _ in range(turns):
            conversation.append({
                "invocation_id": f"inv-{n}",
                "user_content": {"role": "user", "parts": [{"text": f"Question {n}: what is the weather in city {n}?"}]},
                "final_response": {"role": "model", "parts": [{"text": f"It is sunny in city {n}."}]},
                "intermediate_data": {"tool_uses": [], "intermediate_responses": []},
            })
            n += 1
        cases.append({"eval_id": f"case_{c:02d}", "conversation": conversation,
                      "session_input": {"app_name": "weather_agent", "user_id": "bench", "state": {}}})
    evalset = agent / "weather.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "weather", "name": "weather", "eval_cases": cases}))
    (agent / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": samples}}}}))
    return agent, evalset


Timing = tuple[float, float, float, int]


def timed_process(server: RemoteServer, command: list[str], env: dict[str, str]) -> Timing:
    """(whole process seconds, its CPU seconds, judge phase seconds, judge calls) for one process."""
    import resource

    server.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=env["BENCH_CWD"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = server.stats()
    if stats["calls"] == 0 or stats["first_received"] is None:
        raise SystemExit(f"{command[0]}... made no judge call (exit {done.returncode}):\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
    return wall, cpu, stats["last_answered"] - stats["first_received"], int(stats["calls"])


def whole(args: argparse.Namespace) -> None:
    import shutil
    import statistics

    tmp = Path(tempfile.mkdtemp(prefix="judge-whole-"))
    before: Path | None = None
    server = RemoteServer(args.latency, text=ADK_VERDICT)
    try:
        agent, evalset = write_whole_inputs(tmp / "inputs", args.samples)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "TUI_EVAL_"))}
        env |= {"GOOGLE_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": server.base_url, "BENCH_CWD": str(tmp),
                "TUI_EVAL_CACHE_DIR": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
        contenders: list[tuple[str, list[str], dict[str, str]]] = [
            ("google-adk 2.13 `adk eval`", [sys.executable, "-c", ADK_EVAL, str(agent), str(evalset),
                                             "--config_file_path", str(agent / "test_config.json")], env)]
        # The same agent folder, and a replay of its answers (the eval set holds exactly what it answers).
        tui = [sys.executable, "-m", "tui_eval.cli", "run", "--no-judge-cache", *args.tui_args]
        runs = [("agent", [*tui, str(agent), str(evalset)]),
                ("replay", [*tui, "--agent", f"replay:{evalset}", str(evalset)])]
        checkouts = [("this checkout", ROOT)]
        if args.before:
            before = tmp / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT, check=True,
                           capture_output=True)
            checkouts.insert(0, (args.before, before))
        for name, path in checkouts:
            for kind, command in runs:
                contenders.append((f"tui-eval {kind} ({name})", command, env | {"PYTHONPATH": str(path)}))
        total = sum(CASE_TURNS) * args.samples
        print(f"{len(CASE_TURNS)} cases, {sum(CASE_TURNS)} turns, {args.samples} samples each = {total} judge calls "
              f"at {args.latency * 1000:.0f} ms (fake Gemini server in its own process); medians of {args.repeat}\n")
        results: dict[str, list[Timing]] = {label: [] for label, _c, _e in contenders}
        for label, command, run_env in contenders:  # warm-up: imports into the page cache
            timed_process(server, command, run_env)
        for _ in range(args.repeat):
            for label, command, run_env in contenders:
                results[label].append(timed_process(server, command, run_env))
    finally:
        server.close()
        if before is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    base = results[contenders[0][0]]
    base_wall, base_judge = statistics.median(t[0] for t in base), statistics.median(t[2] for t in base)
    best_wall, best_judge = min(t[0] for t in base), min(t[2] for t in base)
    print(f"{'':<32} {'whole process':>25} {'judge phase':>25} {'CPU':>7}  calls")
    print(f"{'':<32} {'median (best)':>25} {'median (best)':>25}")
    for label, rows in results.items():
        wall, judge = statistics.median(t[0] for t in rows), statistics.median(t[2] for t in rows)
        low_wall, low_judge = min(t[0] for t in rows), min(t[2] for t in rows)
        cpu = statistics.median(t[1] for t in rows)
        print(f"{label:<32} {wall:6.2f} s x{base_wall / wall:4.1f} ({low_wall:5.2f} x{best_wall / low_wall:4.1f})"
              f" {judge:6.2f} s x{base_judge / judge:4.1f} ({low_judge:4.2f} x{best_judge / low_judge:4.1f})"
              f" {cpu:5.2f} s  {rows[0][3]:5d}")
    print(f"\n(x: google-adk's over this row's, medians and best runs; load average {os.getloadavg()[0]:.1f} "
          "at the end)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the fake model takes per call")
    parser.add_argument("--also", type=int, nargs="*", default=[8], help="further concurrency levels to show")
    parser.add_argument("--skip-serial", action="store_true", help="estimate serial from latency instead of running it")
    parser.add_argument("--provider", choices=("gemini", "openai"), default="gemini",
                        help="which judge: Gemini (google-genai) or an OpenAI-compatible server (openai SDK)")
    parser.add_argument("--whole", action="store_true",
                        help="whole processes: adk eval vs tui-eval run on 11 cases / 20 turns (see above)")
    parser.add_argument("--before", metavar="REV", help="with --whole: also time tui-eval at this git revision")
    parser.add_argument("--repeat", type=int, default=3, help="with --whole: runs of each (medians shown)")
    parser.add_argument("--tui-args", nargs="*", default=[], metavar="ARG",
                        help="with --whole: further `tui-eval run` arguments (e.g. --judge-concurrency=8)")
    args = parser.parse_args()
    if args.whole:
        whole(args)
        return
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
        for level in [DEFAULT, *args.also]:
            wall, calls, peak, _ = await score(server, case, args.samples, level, None)
            label = f"concurrency {level}" + (" (default)" if level == DEFAULT else "")
            rows.append((label, wall, calls, peak))

        cache_dir = Path(tmp) / "cache"
        cold, cold_calls, cold_peak, _ = await score(server, case, args.samples, DEFAULT, cache_dir)
        rows.append((f"cold cache, concurrency {DEFAULT}", cold, cold_calls, cold_peak))
        warm, warm_calls, warm_peak, _ = await score(server, case, args.samples, DEFAULT, cache_dir)
        rows.append(("warm cache re-run", warm, warm_calls, warm_peak))
    finally:
        server.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)

    for label, wall, calls, peak in rows:
        speedup = serial / wall if wall > 0 else float("inf")
        print(f"{label:<28} {wall:9.2f} s  {calls:5d} calls  max in flight {peak:3d}  x{speedup:6.1f} vs serial")
    ideal = total * args.latency / DEFAULT
    default_wall = next(w for label, w, _c, _p in rows if label == f"concurrency {DEFAULT} (default)")
    print(f"\nideal at {DEFAULT} in flight: {ideal:.2f} s (x{DEFAULT:.1f}); measured x{serial / default_wall:.1f}")
    print(f"warm cache: {warm:.3f} s with {warm_calls} calls -> {'OK' if warm < 1.0 and warm_calls == 0 else 'FAIL'}")


if __name__ == "__main__":
    asyncio.run(main())
