"""Where agent turns run: sync-tool cases side by side, and what a worker process costs per case.

    python bench/executors.py [--python PATH] [--rounds 3] [--cases 180] [--only sync|overhead|pool]

Two figures, each through the real `tui-eval run` in a subprocess (so `--python` can point at another
checkout's interpreter to compare trees):
- sync tools: a google-adk agent whose sync tool takes 1 s, 8 cases x 2 tool calls, the default
  --concurrency 8, its model a local Gemini-compatible server (tests/support/fake_gemini.py): the run's
  wall time and the tool's mean latency as the summary reports it (on one shared loop: ~16 s and a
  latency that counts the queue).
- per-case overhead: the demo agent demo_agents/hello_world (offline policy, real tools), its 9 cases
  copied to --cases cases, `--no-save`: wall and CPU time (this process's children: the CLI and its
  workers) per case, and the same for a replay of the same conversations (no agent code: the floor).
- pool size: a google-adk agent with an instant tool, 48 cases at --concurrency 16, on 1, 2 and 4
  workers: how far spreading ADK's own CPU per turn over processes goes (the local pool's default is
  one worker per core, at most 4). Not for `--python` trees without --workers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_gemini import FakeGemini, function_call_reply, text_reply  # noqa: E402

SLOW_ADK = '''
import time

from google.adk.agents import LlmAgent


def lookup(city: str) -> dict:
    """Look a city up (a sync call, as requests.get is)."""
    time.sleep(1.0)
    return {"city": city}


root_agent = LlmAgent(name="slow_agent", model="gemini-2.5-flash", instruction="Look cities up.", tools=[lookup])
'''


def _lookup_model(request: object) -> object:
    """The model of both ADK agents: call lookup for the city the user named, then say it was looked up."""
    user = [p.get("text", "") for c in request.contents if c.get("role") == "user"  # type: ignore[attr-defined]
            for p in c.get("parts") or [] if "text" in p][-1]
    city = user.removeprefix("Look up ")
    last = request.contents[-1].get("parts") or []  # type: ignore[attr-defined]
    if not any("functionResponse" in p or "function_response" in p for p in last):
        return function_call_reply("lookup", {"city": city})
    return text_reply(f"{city} looked up.")


def _run_cli(python: str, args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (the CLI and every process it started) of one `tui-eval` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-m", "tui_eval.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"tui-eval failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, cpu, proc.stdout


def _turns_span(history: Path) -> float:
    """Seconds from the first agent turn's start to the last one's end, read from the saved results."""
    (path,) = history.glob("*.evalset_result.json")
    data = json.loads(path.read_text())
    starts, ends = [], []
    for case in data["eval_case_results"]:
        for per in case["eval_metric_result_per_invocation"]:
            inv = per["actual_invocation"]
            starts.append(inv["creation_timestamp"])
            ends.append(inv["creation_timestamp"] + (inv.get("duration") or 0.0))
    return max(ends) - min(starts)


def sync_tools(python: str, tmp: Path, rounds: int) -> None:
    folder = tmp / "slow_agent"
    folder.mkdir()
    (folder / "agent.py").write_text(SLOW_ADK)
    (folder / "__init__.py").write_text("from . import agent\n")
    cases = []
    for i in range(8):
        turns = []
        for k, city in enumerate((f"Paris{i}", f"Rome{i}")):
            turns.append({
                "invocation_id": f"t{k}", "user_content": {"role": "user", "parts": [{"text": f"Look up {city}"}]},
                "final_response": {"role": "model", "parts": [{"text": f"{city} looked up."}]},
                "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"city": city}}]},
            })
        cases.append({"eval_id": f"c{i}", "conversation": turns})
    evalset = folder / "slow.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "slow", "eval_cases": cases}))

    with FakeGemini() as gemini:
        gemini.responder = _lookup_model
        env = dict(os.environ, GOOGLE_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=gemini.base_url,
                   TUI_EVAL_CACHE_DIR=str(tmp / "cache"))
        walls, means, spans = [], [], []
        for _ in range(rounds):
            history = folder / ".adk" / "eval_history"
            shutil.rmtree(history, ignore_errors=True)
            wall, _cpu, out = _run_cli(python, ["run", str(folder), str(evalset)], env, tmp)
            walls.append(wall)
            spans.append(_turns_span(history))
            found = re.search(r"Tool lookup: 16 call\(s\).*mean ([\d.]+) (ms|s)", out)
            if found:
                value = float(found.group(1))
                means.append(value / 1000 if found.group(2) == "ms" else value)
    print("sync tools: google-adk agent, 8 cases x 2 calls of a 1 s sync tool, --concurrency 8")
    print(f"  wall: median {statistics.median(walls):5.1f} s  (rounds: {', '.join(f'{w:.1f}' for w in walls)})")
    print(f"  from the first turn's start to the last turn's end: median {statistics.median(spans):5.1f} s "
          "(no interpreter, import or worker start-up)")
    if means:
        print(f"  the tool's mean latency as reported: {statistics.median(means):5.2f} s")


FAST_ADK = SLOW_ADK.replace("time.sleep(1.0)", "pass").replace("slow_agent", "fast_agent")


def pool_size(python: str, tmp: Path, rounds: int, n_cases: int) -> None:
    """The same google-adk agent with an instant tool: ADK's own CPU per turn is what the pool spreads."""
    folder = tmp / "fast_agent"
    folder.mkdir()
    (folder / "agent.py").write_text(FAST_ADK)
    (folder / "__init__.py").write_text("from . import agent\n")
    cases = [{"eval_id": f"c{i}", "conversation": [{
        "invocation_id": "t0", "user_content": {"role": "user", "parts": [{"text": f"Look up City{i}"}]},
        "final_response": {"role": "model", "parts": [{"text": f"City{i} looked up."}]},
        "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"city": f"City{i}"}}]}}]}
        for i in range(n_cases)]
    evalset = folder / "fast.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "fast", "eval_cases": cases}))

    print(f"pool size: google-adk agent, {n_cases} one-turn cases (a model call, a tool, a model call), "
          f"--concurrency 16, medians of {rounds}")
    with FakeGemini() as gemini:
        gemini.responder = _lookup_model
        env = dict(os.environ, GOOGLE_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=gemini.base_url)
        for workers in ("1", "2", "4"):
            runs = [_run_cli(python, ["run", str(folder), str(evalset), "--no-save", "--concurrency", "16",
                                      "--workers", workers], env, tmp)[:2] for _ in range(rounds)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"  --workers {workers}: wall {wall:5.2f} s  cpu {cpu:5.2f} s")


def overhead(python: str, tmp: Path, rounds: int, n_cases: int) -> None:
    demo = tmp / "hello_world"
    shutil.copytree(ROOT / "demo_agents" / "hello_world", demo, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    source = json.loads((demo / "hello_world.evalset.json").read_text())
    base = source["eval_cases"]
    cases = []
    for i in range(n_cases):
        c = json.loads(json.dumps(base[i % len(base)]))
        c["eval_id"] = f"{c['eval_id']}_{i}"
        cases.append(c)
    source["eval_cases"] = cases
    evalset = demo / "hello_world.evalset.json"
    evalset.write_text(json.dumps(source))
    env = dict(os.environ, TUI_EVAL_AGENT_MODE="offline")
    agent_runs = [_run_cli(python, ["run", str(demo), str(evalset), "--no-save"], env, tmp)[:2] for _ in range(rounds)]
    replay_runs = [_run_cli(python, ["run", "--agent", f"replay:{evalset}", str(evalset), "--no-save"], env, tmp)[:2]
                   for _ in range(rounds)]
    turns = sum(len(c["conversation"]) for c in cases)
    print(f"per case: demo hello_world, {n_cases} cases ({turns} turns), --no-save, medians of {rounds}")
    for label, runs in (("agent", agent_runs), ("replay (no agent code)", replay_runs)):
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"  {label:24s} wall {wall:5.2f} s  cpu {cpu:5.2f} s  = {wall / n_cases * 1000:5.1f} ms wall, "
              f"{cpu / n_cases * 1000:5.1f} ms cpu per case")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the tree to measure")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=180)
    parser.add_argument("--only", choices=("sync", "overhead", "pool"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tui-eval-bench-") as tmp:
        if args.only in (None, "sync"):
            sync_tools(args.python, Path(tmp), args.rounds)
        if args.only in (None, "overhead"):
            overhead(args.python, Path(tmp), args.rounds, args.cases)
        if args.only in (None, "pool"):
            pool_size(args.python, Path(tmp), args.rounds, 48)


if __name__ == "__main__":
    main()
