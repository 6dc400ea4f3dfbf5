"""Watching the cases in flight (Pilot, a real agent in the engine's worker processes): the run panel names
each running case with its turn and last tool call, `i` lists them, enter shows one's transcript as it
grows, and `k` skips it without cancelling the run: it ends not evaluated, "skipped"."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import settle, wait_until

AGENT = '''
import asyncio

from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Content, FunctionCall, FunctionResponse, IntermediateData, Invocation


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        if self.case.eval_id == "stuck" and index == 1:
            await asyncio.sleep(600)  # until skipped
        expected = self.case.conversation[index]
        return Invocation(user_content=user_content, invocation_id=expected.invocation_id,
                          final_response=expected.final_response, intermediate_data=expected.intermediate_data)


class Stuck(Agent):
    name = "stuck"

    async def new_session(self, case, ctx):
        return Session(case)


root_agent = Stuck()
'''


def _turn(inv: str, text: str, answer: str, calls: list[tuple[str, dict]]) -> dict:
    return {"invocation_id": inv, "user_content": {"role": "user", "parts": [{"text": text}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
            "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls],
                                  "tool_responses": [], "intermediate_responses": []}}


def _folder(root: Path) -> Path:
    folder = root / "stuck"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(AGENT)
    (folder / "stuck.evalset.json").write_text(json.dumps({"eval_set_id": "stuck", "eval_cases": [
        {"eval_id": "stuck", "conversation": [
            _turn("s1", "find order 7", "Order 7 ships today.", [("lookup_order", {"order": 7})]),
            _turn("s2", "and order 8?", "Order 8 shipped.", [])]},
        {"eval_id": "quick", "conversation": [_turn("q1", "hello", "Hello!", [])]},
    ]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    return root


async def test_cases_in_flight_their_transcript_and_k_skipping_one(tmp_path: Path, make_app) -> None:
    root = _folder(tmp_path / "ws")
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(110, 34)) as pilot:
        await settle(pilot)
        key = app.listing.key(root / "stuck" / "stuck.evalset.json", "stuck")
        await pilot.press("R")
        await wait_until(pilot, lambda: len(app.model.in_flight.get(key, [])) == 1, timeout=60)

        def panel() -> str:
            return str(app.main.query_one("#run-in-flight").render())

        # (The screens redraw from the signal a moment after the pull.)
        await wait_until(pilot, lambda: '◌ stuck  turn 2  lookup_order({"order": 7})' in panel())
        assert "quick" not in panel()  # it finished

        await pilot.press("i")
        assert app.screen.id == "in-flight"
        await wait_until(pilot, lambda: [f.key.eval_id for f in app.screen.cases] == ["stuck"])
        await pilot.press("enter")
        assert app.screen.id == "transcript"
        body = str(app.screen.query_one("#transcript-body").render())
        assert "turn 1\nuser      find order 7\ntool call lookup_order({\"order\": 7})\nagent     Order 7 ships today." in body
        assert "◌ turn 2 under way…" in body

        await pilot.press("k")
        await settle(pilot, timeout=60)
        assert any("Skipping stuck" in n.message for n in app._notifications)
        body = str(app.screen.query_one("#transcript-body").render())
        assert "ended: " in body and "not evaluated" in body.lower()
        await wait_until(pilot, lambda: app.listing.result(key) is not None)  # (fetched from the engine)
        result = app.listing.result(key)
        assert result.status == 3 and [m.reason for m in result.metrics] == ["skipped"]
        assert app.listing.results.status(app.listing.key(root / "stuck" / "stuck.evalset.json", "quick")) == 1  # the run went on: not cancelled
        assert app.run_state.phase == "finished"
