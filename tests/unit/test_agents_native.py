"""The native agent: tool declarations, the offline policy loop, Gemini function calling, timings."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import pytest

from tests.support.fake_gemini import FakeGemini, function_call_reply, text_reply
from tui_eval.agents.base import AgentError, CaseContext
from tui_eval.agents.native import (
    NativeAgent,
    NativeSession,
    PolicyResult,
    PolicyTurn,
    Step,
    ToolContext,
    declaration_for,
)
from tui_eval.engine.plan import EvalTarget, RunPlan
from tui_eval.engine.runner import Run, RunOptions
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.model import Content, EvalCase, EvalSet, IntermediateData, Invocation, SessionInput
from tui_eval.schema.results import EvalStatus


def add(a: int, b: float = 1.0, tool_context: ToolContext | None = None) -> dict:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number,
            which may span lines.

    Returns:
        The sum.
    """
    if tool_context is not None:
        tool_context.state["adds"] = tool_context.state.get("adds", 0) + 1
    return {"sum": a + b}


def tag(words: list[str], mode: Literal["upper", "lower"] = "upper") -> str:
    """Tag words."""
    return ",".join(w.upper() if mode == "upper" else w.lower() for w in words)


def broken() -> str:
    """Always fails."""
    raise ValueError("no luck")


def test_declaration_from_signature_and_docstring() -> None:
    decl = declaration_for(add)
    assert decl["name"] == "add"
    assert decl["description"].startswith("Add two numbers.")
    assert "Args:" not in decl["description"]
    params = decl["parameters"]
    assert params["required"] == ["a"]
    assert params["properties"]["a"] == {"type": "INTEGER", "description": "The first number."}
    assert params["properties"]["b"]["type"] == "NUMBER"
    assert params["properties"]["b"]["description"] == "The second number, which may span lines."
    assert "tool_context" not in params["properties"]
    tag_params = declaration_for(tag)["parameters"]["properties"]
    assert tag_params["words"] == {"type": "ARRAY", "items": {"type": "STRING"}}
    assert tag_params["mode"]["enum"] == ["upper", "lower"]
    assert "parameters" not in declaration_for(broken)


def policy(turn: PolicyTurn) -> PolicyResult:
    if turn.last("add") is None:
        return Step(calls=[("add", {"a": 2, "b": 3}), ("tag", {"words": ["x"]})], text="Working on it.")
    if "broken" in turn.user_text and turn.last("broken") is None:
        return [("broken", {})]
    results = "; ".join(f"{r.name}={r.response}" for r in turn.results)
    return f"done: {results} (history {len(turn.history)})"


def _agent() -> NativeAgent:
    return NativeAgent("calc", "You add.", tools=[add, tag, broken], policy=policy)


def _case(eval_id: str = "c1") -> EvalCase:
    return EvalCase(eval_id=eval_id, conversation=[], session_input=SessionInput(app_name="calc", user_id="u", state={"adds": 10}))


async def test_offline_turn_records_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    agent = _agent()
    session = await agent.new_session(_case(), CaseContext(EvalSet(eval_set_id="s", eval_cases=[]), Path("x.evalset.json")))
    inv = await session.turn(Content.from_text("add please"), 0)
    assert [(c.name, c.args) for c in inv.tool_calls] == [("add", {"a": 2, "b": 3}), ("tag", {"words": ["x"]})]
    assert [c.id for c in inv.tool_calls] == [r.id for r in inv.tool_responses] == ["call-1-1-1", "call-1-1-2"]
    assert [r.response for r in inv.tool_responses] == [{"sum": 5}, {"result": "X"}]
    assert inv.intermediate_texts == [("calc", "Working on it.")]
    assert inv.final_response is not None and inv.final_response.text.startswith("done: add=")
    assert inv.final_response.role == "model"
    assert [(t.name, t.call_id) for t in inv.tool_timings] == [("add", "call-1-1-1"), ("tag", "call-1-1-2")]
    assert inv.duration is not None and inv.duration >= sum(t.seconds for t in inv.tool_timings)
    assert inv.app_details is not None
    details = inv.app_details.agent_details["calc"]
    assert details.instructions == "You add."
    assert [d["name"] for d in details.tool_declarations[0]["function_declarations"]] == ["add", "tag", "broken"]
    # session state starts from session_input.state and is the tool's to change
    assert isinstance(session, NativeSession) and session.tool_ctx.state["adds"] == 11
    # the second turn sees the first in its history; a tool error goes back to the policy as a response
    inv2 = await session.turn(Content.from_text("broken too"), 1)
    assert inv2.final_response is not None
    assert "broken={'error': 'ValueError: no luck'}" in inv2.final_response.text
    assert "(history 2)" in inv2.final_response.text
    assert isinstance(inv.intermediate_data, IntermediateData)


async def test_offline_without_policy_is_an_agent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no credentials in tests: offline
    agent = NativeAgent("bare", "x", tools=[add])
    with pytest.raises(AgentError, match="no offline policy"):
        await agent.new_session(_case(), CaseContext(EvalSet(eval_set_id="s", eval_cases=[]), Path("x")))


def _run_one(agent: NativeAgent, timeout: float) -> Run:
    turn = Invocation(user_content=Content.from_text("add please"))
    case = EvalCase(eval_id="slow", conversation=[turn], session_input=SessionInput(app_name="calc", user_id="u"))
    config = read_eval_config({"criteria": {"tool_trajectory_avg_score": 1.0}})
    target = EvalTarget(Path("x.evalset.json"), EvalSet(eval_set_id="s", eval_cases=[case]), config)
    return Run(RunPlan([target]), agent, options=RunOptions(turn_timeout=timeout, save=False))


async def test_hanging_tool_times_out_and_fails_the_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")

    def hang() -> str:
        """Never returns in time."""
        time.sleep(3)
        return "late"

    agent = NativeAgent("slow", "x", tools=[hang], policy=lambda t: [("hang", {})] if not t.results else "ok")
    t0 = time.perf_counter()
    record = await _run_one(agent, 0.2).execute()
    assert time.perf_counter() - t0 < 2
    [case] = record.results[0].case_results
    assert case.status == EvalStatus.FAILED
    assert case.error == "turn 1 timed out after 0.2 s"


async def test_policy_error_fails_the_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")

    def bad_policy(turn: PolicyTurn) -> str:
        raise KeyError("oops")

    record = await _run_one(NativeAgent("bad", "x", policy=bad_policy), 5).execute()
    [case] = record.results[0].case_results
    assert case.status == EvalStatus.FAILED and "policy failed: KeyError" in (case.error or "")


async def test_gemini_mode_manual_function_calling(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.enqueue(function_call_reply("add", {"a": 4, "b": 5}, id="fc-1", text="Let me add."))
    fake_gemini.enqueue(text_reply("4 + 5 = 9"))
    fake_gemini.enqueue(text_reply("You're welcome"))
    agent = _agent()
    session = await agent.new_session(_case(), CaseContext(EvalSet(eval_set_id="s", eval_cases=[]), Path("x")))
    inv = await session.turn(Content.from_text("What is 4 + 5?"), 0)
    assert [(c.name, c.args, c.id) for c in inv.tool_calls] == [("add", {"a": 4, "b": 5}, "fc-1")]
    assert [(r.name, r.response, r.id) for r in inv.tool_responses] == [("add", {"sum": 9}, "fc-1")]
    assert inv.intermediate_texts == [("calc", "Let me add.")]
    assert inv.final_response is not None and inv.final_response.text == "4 + 5 = 9"
    assert [t.call_id for t in inv.tool_timings] == ["fc-1"]
    inv2 = await session.turn(Content.from_text("thanks"), 1)
    assert inv2.final_response is not None
    assert inv2.final_response.text == "You're welcome" and inv2.tool_calls == []

    first, second, third = fake_gemini.requests
    assert first.model == "gemini-2.5-flash"
    assert first.body["systemInstruction"]["parts"][0]["text"] == "You add."
    names = [d["name"] for d in first.tools[0]["functionDeclarations"]]
    assert names == ["add", "tag", "broken"]
    # the tool's answer goes back with the model's call id, after the model's own turn
    assert second.function_responses == [{"id": "fc-1", "name": "add", "response": {"sum": 9}}]
    assert [c["role"] for c in second.contents] == ["user", "model", "user"]
    # the next turn carries the whole session history
    assert [c["role"] for c in third.contents] == ["user", "model", "user", "model", "user"]


def test_each_loops_gemini_client_is_closed_on_that_loop_without_warnings(
        fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import gc
    import logging

    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.enqueue(text_reply("first"))
    fake_gemini.enqueue(text_reply("second"))
    agent = _agent()

    async def run_once() -> str:
        # As a run does: open a session, answer, close the agent on the loop that used it.
        session = await agent.new_session(_case(), CaseContext(EvalSet(eval_set_id="s", eval_cases=[]), Path("x")))
        answer = (await session.turn(Content.from_text("hello"), 0)).final_response
        assert answer is not None
        text = answer.text
        await agent.aclose()
        await agent.aclose()  # closed already: nothing left to close
        return text

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(run_once()) == "first"
        assert asyncio.run(run_once()) == "second"  # a new loop gets a client of its own, which works
        gc.collect()  # a client left open would try to close itself now, on no loop or the wrong one
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
