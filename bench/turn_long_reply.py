"""The turn view of a huge reply: time from opening the turn to its first full paint, and to `v`'s whole text.

    python bench/turn_long_reply.py [--mb 11] [--size 80x24]

Headless (App.run_test): a replay folder (bench/.data/long_reply/) whose one case answers with `--mb`
megabytes of words. Runs it, then opens its turn and waits until the screen is idle. Issue 23 item 11
measured ~25 s for 11 MB (the whole reply wrapped on the UI thread); the goal is well under 1 s, with
`v` showing all of it in a line-API view.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(__file__).resolve().parent / ".data" / "long_reply"


def make_folder(size: int) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    for old in DATA.glob(".adk/eval_history/*"):
        old.unlink()
    words = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]

    def case(reply: str) -> dict:
        return {"eval_id": "huge", "conversation": [{
            "invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": "say a lot"}]},
            "final_response": {"role": "model", "parts": [{"text": reply}]},
            "intermediate_data": {"tool_uses": [], "tool_responses": [], "intermediate_responses": []}}]}

    (DATA / "big.evalset.json").write_text(json.dumps({"eval_set_id": "big", "eval_cases": [case("short")]}))
    (DATA / "big.recorded.json").write_text(json.dumps({"eval_set_id": "big", "eval_cases": [case(words)]}))
    (DATA / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    return DATA


async def main(mb: float, width: int, height: int) -> None:
    from tui_eval.engine.runner import RunOptions
    from tui_eval.tui.app import EvalApp

    folder = make_folder(int(mb * 1_000_000))
    app = EvalApp(folder, agent=f"replay:{folder / 'big.recorded.json'}", watch=False,
                  run_options=RunOptions(judge_cache=False))
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("R")
        while app.listing.result(app.listing.all_keys()[0]) is None:
            await pilot.pause(0.05)
            app.pull()
        key = app.listing.all_keys()[0]
        t0 = time.perf_counter()
        app.open_turn(key, 0)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        await pilot.press("v")
        await pilot.pause()
        whole = time.perf_counter() - t0
        print(f"{mb:g} MB reply, {width}x{height}: turn view painted in {opened:.2f} s; "
              f"v (whole text) in {whole:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=11.0)
    parser.add_argument("--size", default="80x24")
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    asyncio.run(main(args.mb, w, h))
