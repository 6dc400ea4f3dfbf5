"""The dashboard with 100,000 cases: first paint, loading, keys while a 100k-case replay run streams, cancel.

    python bench/tui_scale.py [--cases 100000] [--keys 60] [--size 120x40]

In a real pseudo-terminal: opens `tui-eval --agent replay:...` on a generated folder (bench/.data/scale/)
holding one eval file of `--cases` one-turn cases (replayed from itself, scored by the deterministic
tool_trajectory_avg_score) and two idle two-case files. Prints the time to the first frame, to the whole
folder being loaded, the key-to-paint p50/p95 of cursor moves between the idle files while `r` loads the
replay file and plans the run, and then while the big file runs, how many cases the run finished
meanwhile, and the time from `x` to the run panel saying `cancelled` (the run stopped; its finished
cases are then saved, which takes seconds for tens of thousands). Goals (issue 18): first paint under
1 s, keys while the run streams p95 <= 50 ms and max <= 200 ms, `x` to `cancelled` <= 150 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tui_latency import DOWN, eval_set, key_latencies, report  # noqa: E402
from tui_startup import DATA, FIRST_FRAME, ROOT, PtyApp, ensure_bytecode  # noqa: E402


def make_folder(cases: int) -> Path:
    root = DATA / "scale"
    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob(".adk/eval_history/*"):
        old.unlink()
    big = root / "big.evalset.json"
    if not big.exists() or json.loads(big.read_bytes()).get("eval_cases", [None]).__len__() != cases:
        big.write_text(json.dumps(eval_set("big", cases)))
    (root / "idle_a.evalset.json").write_text(json.dumps(eval_set("idle_a", 2)))
    (root / "idle_b.evalset.json").write_text(json.dumps(eval_set("idle_b", 2)))
    (root / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    return root


def cases_done(out: bytes | bytearray) -> int:
    found = re.findall(rb"(\d+)/(\d+) cases", out)
    return int(found[-1][0]) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--size", default="120x40")
    args = parser.parse_args()
    ensure_bytecode()
    t_make = time.perf_counter()
    folder = make_folder(args.cases)
    print(f"folder ready in {time.perf_counter() - t_make:.1f} s ({args.cases} cases)", flush=True)
    size = tuple(int(n) for n in args.size.split("x"))
    rng = random.Random(7)
    agent = f"replay:{folder / 'big.evalset.json'}"
    app = PtyApp([str(folder), "--agent", agent], size=size, cwd=ROOT,  # type: ignore[arg-type]
                 env={"TUI_EVAL_AGENT_MODE": "offline"})
    app.start()
    try:
        first = app.wait_for(FIRST_FRAME, timeout=60)
        loaded = app.wait_for(b"3 eval files \xc2\xb7", timeout=300)
        time.sleep(1.0)
        # The cursor starts on big (files sort by name): run it, then move between the idle files.
        since = len(app.out)
        app.send(b"r")
        app.wait_for(b"running", since=since, timeout=60)
        t_run = time.perf_counter()
        # The engine first loads the replay file and plans the run: keys meanwhile (down and up, in
        # pairs, until the first case finishes), then keys once finished cases stream onto the screen.
        app.send(DOWN)
        time.sleep(0.3)
        planning: list[float] = []
        while cases_done(app.out[since:]) == 0 and time.perf_counter() - t_run < 180:
            planning += key_latencies(app, 2, rng)
        planned = time.perf_counter() - t_run  # (the cursor is back on idle_a)
        time.sleep(0.5)
        t_stream = time.perf_counter()
        done0 = cases_done(app.out[since:])
        busy = key_latencies(app, args.keys, rng)
        elapsed = time.perf_counter() - t_stream
        done = cases_done(app.out[since:]) - done0
        since = len(app.out)
        t_x = time.perf_counter()
        app.send(b"x")
        # A small run may finish before `x` lands: then there is nothing to cancel.
        deadline = t_x + 120
        # (`Cancelling: finished cases are kept.` is the notification, not the run panel.)
        finished = re.compile(rb"(?<!Cancelling): finished")
        while b"cancelled" not in app.out[since:] and not finished.search(app.out[since:]):
            if time.perf_counter() > deadline:
                raise TimeoutError("the run was neither cancelled nor finished within 120 s")
            app.read(0.01)
        cancel = time.perf_counter() - t_x
        cancelled = b"cancelled" in app.out[since:]
    finally:
        app.stop()
    print(f"dashboard with {args.cases} cases ({args.size}; 2 shared cores, figures vary with the load)")
    print(f"  first paint                  {first * 1000:7.0f} ms")
    print(f"  all loaded                   {loaded * 1000:7.0f} ms")
    print("  " + report("keys during the run", busy))
    print(f"  r to the first finished case {planned * 1000:7.0f} ms (the engine plans and starts the run)")
    if planning:
        print("  " + report("keys meanwhile", planning))
    print(f"  the run meanwhile: {done} cases in {elapsed:.1f} s")
    if cancelled:
        print(f"  x to 'cancelled' on screen   {cancel * 1000:7.0f} ms")
    else:
        print(f"  x came too late: the run finished {cancel * 1000:.0f} ms after it (use more --cases)")


if __name__ == "__main__":
    main()
