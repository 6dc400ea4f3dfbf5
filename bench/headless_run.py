"""Benchmark: the whole `tui-eval run --agent replay:...` process on a synthetic 5,000-case corpus.

    python bench/headless_run.py [--cases 5000] [--repeat 3] [--adk]

Generates (once, cached in bench/.data/) an expected and an actual eval set of ~12,500 turns together
~40 MB, then runs the CLI as a subprocess and prints wall time and peak RSS. `--adk` also times
google-adk's own evaluators (pydantic load + TrajectoryEvaluator + RougeEvaluator) on the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"

WORDS = (
    "the a agent tool weather forecast city rain sunny temperature degrees booking flight hotel "
    "room light kitchen thermostat set turn on off order status shipped delivered refund policy "
    "account password reset invoice payment card number prime die roll sides result running runs "
    "quickly checked checking answered answering because however therefore calendar meeting "
    "tomorrow today yesterday morning evening customers customer support knowledge article "
    "東京 天気 ไทย สวัสดี 서울 날씨"
).split()
TOOLS = ["get_weather", "book_flight", "set_device", "get_device", "lookup_order", "roll_die", "check_prime",
         "search_kb", "transfer_to_agent", "send_email"]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _args(rng: random.Random) -> dict:
    return {
        "query": _sentence(rng, rng.randint(3, 8)),
        "limit": rng.randint(1, 20),
        "filters": {"room": rng.choice(["kitchen", "bedroom", "hall"]), "on": rng.random() < 0.5,
                    "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]},
    }


def _turn(rng: random.Random, case: int, turn: int) -> dict:
    calls = []
    responses = []
    for k in range(rng.randint(1, 3)):
        name = rng.choice(TOOLS)
        call_id = f"adk-{case}-{turn}-{k}"
        calls.append({"id": call_id, "name": name, "args": _args(rng)})
        responses.append({"id": call_id, "name": name,
                          "response": {"result": _sentence(rng, rng.randint(10, 20)), "ok": True}})
    return {
        "invocation_id": f"e-{case}-{turn}",
        "user_content": {"role": "user", "parts": [{"text": _sentence(rng, rng.randint(8, 25))}]},
        "final_response": {"role": "model", "parts": [{"text": _sentence(rng, rng.randint(25, 60))}]},
        "intermediate_data": {"tool_uses": calls, "tool_responses": responses,
                              "intermediate_responses": []},
        "creation_timestamp": 1700000000.0 + case,
    }


def _perturb(rng: random.Random, turn: dict) -> dict:
    """The 'actual' side: mostly equal, sometimes reworded, with changed args or an extra call."""
    actual = json.loads(json.dumps(turn))
    roll = rng.random()
    data = actual["intermediate_data"]
    if roll < 0.15:
        data["tool_uses"][0]["args"]["limit"] += 1
    elif roll < 0.25:
        data["tool_uses"].append({"id": "extra", "name": "send_email", "args": {"to": "x"}})
    elif roll < 0.3:
        data["tool_uses"].reverse()
    if rng.random() < 0.6:
        actual["final_response"]["parts"][0]["text"] = _sentence(rng, rng.randint(25, 60))
    # Half of the recorded actuals use the camelCase spelling ADK web writes.
    if rng.random() < 0.5:
        actual["userContent"] = actual.pop("user_content")
        actual["finalResponse"] = actual.pop("final_response")
    return actual


def generate(n_cases: int) -> tuple[Path, Path]:
    DATA.mkdir(exist_ok=True)
    expected_path = DATA / f"golden_{n_cases}.evalset.json"
    actual_path = DATA / f"recorded_{n_cases}.evalset.json"
    if expected_path.exists() and actual_path.exists():
        return expected_path, actual_path
    rng = random.Random(42)
    expected_cases, actual_cases = [], []
    for c in range(n_cases):
        turns = [_turn(rng, c, t) for t in range(rng.choice([1, 2, 2, 3, 4, 3]))]
        base = {"eval_id": f"case_{c:05d}", "session_input": {"app_name": "bench", "user_id": "u", "state": {}}}
        expected_cases.append(base | {"conversation": turns})
        actual_cases.append(base | {"conversation": [_perturb(rng, t) for t in turns]})
    for path, cases in ((expected_path, expected_cases), (actual_path, actual_cases)):
        path.write_text(json.dumps({"eval_set_id": path.name.split(".")[0], "eval_cases": cases}))
    (DATA / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}})
    )
    return expected_path, actual_path


def _run(cmd: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, float, int, str, float]:
    """Wall seconds, peak RSS (MB), exit code, output and CPU seconds (user + system) of one child
    process (os.wait4 gives its own rusage). CPU is the figure to compare on a busy machine."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = code
    if code not in (0, 1):
        sys.exit(f"command failed ({code}): {' '.join(cmd)}\n{err}")
    return wall, usage.ru_maxrss / 1024, code, out or err, usage.ru_utime + usage.ru_stime


_ADK_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
t1 = time.perf_counter()
exp = EvalSet.model_validate_json(open(sys.argv[1]).read())
act = EvalSet.model_validate_json(open(sys.argv[2]).read())
t2 = time.perf_counter()
traj = TrajectoryEvaluator(threshold=1.0)
rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5))
acts = {c.eval_id: c for c in act.eval_cases}
for case in exp.eval_cases:
    a = acts[case.eval_id].conversation
    traj.evaluate_invocations(a, case.conversation)
    rouge.evaluate_invocations(a, case.conversation)
t3 = time.perf_counter()
print(f"import {t1-t0:.2f}s  load {t2-t1:.2f}s  score {t3-t2:.2f}s")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--adk", action="store_true", help="also time google-adk's evaluators on the same data")
    ap.add_argument("--no-save", action="store_true", help="pass --no-save (skip writing eval history)")
    args = ap.parse_args()
    expected, actual = generate(args.cases)
    size = (expected.stat().st_size + actual.stat().st_size) / 1e6
    turns = sum(len(c["conversation"]) for c in json.loads(expected.read_text())["eval_cases"])
    print(f"corpus: {args.cases} cases, {turns} turns, {size:.1f} MB (expected + actual)")
    exe = [sys.executable, "-m", "tui_eval.cli", "run", "--agent", f"replay:{actual}", str(expected)]
    if args.no_save:
        exe.append("--no-save")
    walls, peaks, cpus = [], [], []
    for _ in range(args.repeat):
        wall, peak, code, _, cpu = _run(exe)
        walls.append(wall)
        peaks.append(peak)
        cpus.append(cpu)
    print(f"tui-eval run: wall median {statistics.median(walls):.2f}s (min {min(walls):.2f}s), "
          f"CPU median {statistics.median(cpus):.2f}s (min {min(cpus):.2f}s) "
          f"over {args.repeat}, peak RSS {max(peaks):.0f} MB, exit {code}")
    if args.adk:
        wall, peak, _, text, _cpu = _run([sys.executable, "-c", _ADK_SCRIPT, str(expected), str(actual)],
                                   stdout=subprocess.PIPE)
        print(f"google-adk evaluators: wall {wall:.2f}s, peak RSS {peak:.0f} MB ({text.strip()})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
