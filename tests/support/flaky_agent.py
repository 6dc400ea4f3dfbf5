"""An agent folder whose `flip` case alternates per call (pass, fail, pass, fail), with token usage and tool timings.

Each turn records one model event with Gemini usage metadata (100 prompt, 20 output, 10 cached tokens,
model gemini-2.5-flash) and one `lookup` tool call whose timing alternates 0.1 s / 0.3 s; every second
call answers with an `error` key (a failed call, as ADK tools report failures). The real Agent interface.
"""

from __future__ import annotations

import json
from pathlib import Path

FLAKY_AGENT = '''
"""A deterministic flaky agent: the flip case alternates heads / tails per call."""
from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import (Content, FunctionCall, FunctionResponse, Invocation, InvocationEvent,
                                   InvocationEvents, Part, ToolTiming)

CALLS = {}


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        text = user_content.text
        n = CALLS[text] = CALLS.get(text, 0) + 1
        if text == "flip":
            answer = "heads" if n % 2 else "tails"
        elif text == "steady":
            answer = "always the same"
        else:
            answer = "wrong answer"
        call_id = f"c{n}"
        response = {"error": "busy"} if n % 2 == 0 else {"ok": True}
        events = [
            InvocationEvent(author="flaky", model_version="gemini-2.5-flash",
                            usage_metadata={"prompt_token_count": 100, "candidates_token_count": 20,
                                            "cached_content_token_count": 10, "total_token_count": 120},
                            content=Content(role="model", parts=[Part(function_call=FunctionCall(
                                name="lookup", args={}, id=call_id))])),
            InvocationEvent(author="flaky", content=Content(role="user", parts=[Part(
                function_response=FunctionResponse(name="lookup", response=response, id=call_id))])),
        ]
        return Invocation(user_content=user_content, invocation_id=f"e-{index + 1}",
                          final_response=Content(role="model", parts=[Part(text=answer)]),
                          intermediate_data=InvocationEvents(invocation_events=events),
                          tool_timings=[ToolTiming(name="lookup", seconds=0.1 if n % 2 else 0.3, call_id=call_id)])


class Flaky(Agent):
    name = "flaky"

    async def new_session(self, case, ctx):
        return Session(case)


root_agent = Flaky()
'''


def _case(eval_id: str, prompt: str, answer: str) -> dict:
    return {"eval_id": eval_id, "conversation": [{
        "invocation_id": "e-1", "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]}}]}


def flaky_folder(root: Path) -> Path:
    """`root/flaky/`: the agent, flaky.evalset.json (steady, broken, flip) and a response_match_score config."""
    folder = root / "flaky"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(FLAKY_AGENT)
    (folder / "flaky.evalset.json").write_text(json.dumps({"eval_set_id": "flaky", "eval_cases": [
        _case("steady", "steady", "always the same"), _case("broken", "broken", "the right answer"),
        _case("flip", "flip", "heads")]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    return folder
