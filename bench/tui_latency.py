"""Key-to-paint latency of the dashboard while a run streams ~500 engine events a second.

    python bench/tui_latency.py [--keys 100] [--rate 100] [--cases 3000]

In a real pseudo-terminal: opens `tui-eval` on a generated folder (bench/.data/latency/) whose agent
answers `--rate` one-turn cases a second (8 at a time), scored by two deterministic metrics, so each
case is 5 engine events (started, inferred, 2 x metric progress, finished). It starts a run of that
eval set, then moves the browser's cursor between two idle eval files and times each key from the
write to the pty until the summary pane shows the newly highlighted file. The same keys are timed
with no run as a baseline. Goal: p95 under 50 ms while the run streams.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tui_startup import DATA, ROOT, PtyApp, ensure_bytecode  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.support.paced_agent import paced_agent_source  # noqa: E402

UP, DOWN = b"\x1b[A", b"\x1b[B"
EVENTS_PER_CASE = 5



def eval_set(set_id: str, cases: int) -> dict:
    def turn(i: int) -> dict:
        return {
            "invocation_id": f"{set_id}-{i}",
            "user_content": {"role": "user", "parts": [{"text": f"Please book table {i % 17} for {i % 6 + 1} people."}]},
            "final_response": {"role": "model", "parts": [{"text": f"Table {i % 17} is booked for {i % 6 + 1} people at 8 pm."}]},
            "intermediate_data": {"tool_uses": [{"name": "book", "args": {"table": i % 17, "people": i % 6 + 1}}],
                                  "tool_responses": [], "intermediate_responses": []},
        }

    return {"eval_set_id": set_id,
            "eval_cases": [{"eval_id": f"{set_id}_{i:05d}", "conversation": [turn(i)]} for i in range(cases)]}


def make_folder(cases: int, rate: float, concurrency: int = 8) -> Path:
    root = DATA / "latency"
    agent = root / "paced"
    agent.mkdir(parents=True, exist_ok=True)
    for old in (agent / ".adk").glob("eval_history/*"):
        old.unlink()
    (agent / "agent.py").write_text(paced_agent_source(concurrency / rate))
    (agent / "paced.evalset.json").write_text(json.dumps(eval_set("paced", cases)))
    (agent / "idle_a.evalset.json").write_text(json.dumps(eval_set("idle_a", 2)))
    (agent / "idle_b.evalset.json").write_text(json.dumps(eval_set("idle_b", 2)))
    (agent / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0,
                                                                      "response_match_score": 0.8}}))
    return root


def key_latencies(app: PtyApp, keys: int, rng: random.Random) -> list[float]:
    """Alternate the cursor between idle_a (up) and idle_b (down); time each key to its paint."""
    out = []
    at_a = True
    for _ in range(keys):
        key, marker = (DOWN, b"idle_b.evalset.json") if at_a else (UP, b"idle_a.evalset.json")
        since = len(app.out)
        t0 = time.perf_counter()
        app.send(key)
        deadline = t0 + 5
        while marker not in app.out[since:]:
            if time.perf_counter() > deadline:
                raise TimeoutError("a key was not painted within 5 s")
            app.read(0.002)
        out.append(time.perf_counter() - t0)
        at_a = not at_a
        time.sleep(rng.uniform(0.03, 0.12))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"{name:<28} p50 {statistics.median(ms):6.1f} ms   p95 {percentile(ms, 0.95):6.1f} ms   "
            f"max {max(ms):6.1f} ms   ({len(ms)} keys)")


def cases_done(out: bytes) -> int:
    found = re.findall(rb"(\d+)/(\d+) cases", out)
    return int(found[-1][0]) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rate", type=float, default=125.0, help="cases a second the agent is paced at (x5 events)")
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    ensure_bytecode()
    folder = make_folder(args.cases, args.rate)
    size = tuple(int(n) for n in args.size.split("x"))
    rng = random.Random(7)
    app = PtyApp([str(folder)], size=size, cwd=ROOT, env={"TUI_EVAL_AGENT_MODE": "offline"}).start()  # type: ignore[arg-type]
    try:
        app.wait_for(b"3 eval files \xc2\xb7", timeout=60)
        time.sleep(1.0)  # let the start-up settle (one full GC after loading)
        idle = key_latencies(app, args.keys // 2, rng)
        # The cursor is back on idle_a: go to the paced file and run it.
        app.send(DOWN)
        app.send(DOWN)
        time.sleep(0.3)
        since = len(app.out)
        app.send(b"r")
        app.wait_for(b"running", since=since, timeout=30)
        t_run = time.perf_counter()
        done0 = cases_done(app.out[since:])
        app.send(UP)
        app.send(UP)
        time.sleep(0.5)
        busy = key_latencies(app, args.keys, rng)
        elapsed = time.perf_counter() - t_run
        done = cases_done(app.out[since:]) - done0
        app.send(b"x")
        time.sleep(0.5)
    finally:
        app.stop()
    rate = done / elapsed if elapsed else 0.0
    print(f"dashboard key-to-paint ({args.size}, 2 cores)")
    print("  " + report("idle", idle))
    print("  " + report("during a run", busy))
    print(f"  the run meanwhile: {done} cases in {elapsed:.1f} s = {rate:.0f} cases/s = "
          f"{rate * EVENTS_PER_CASE:.0f} engine events/s (pulled onto the screen at 8 Hz)")


if __name__ == "__main__":
    main()
