"""Deeper than ADK, on a real google-adk Runner and the fake Gemini server: the calls an AgentTool's agent
makes, the session state a case leaves, and the grounding metadata of a turn; ADK's own output unchanged."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support.evalfiles import first_turn, turns_of
from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, function_call_reply, text_reply
from tui_eval.cli import main

AGENT_PY = '''
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool


def roll_die(sides: int, tool_context) -> int:
    """Roll a die with this many sides."""
    rolled = 4 if sides == 6 else 17
    tool_context.state["last_roll"] = rolled
    return rolled


dice_agent = LlmAgent(name="dice_agent", model="gemini-2.5-flash", instruction="You roll dice with roll_die.",
                      description="Rolls dice.", tools=[roll_die])
root_agent = LlmAgent(name="planner", model="gemini-2.5-flash", instruction="You plan; ask dice_agent for rolls.",
                      tools=[AgentTool(dice_agent)])
'''


def _system(request: RecordedRequest) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    return json.dumps(body.get("systemInstruction") or {})


def _user(request: RecordedRequest) -> str:
    return " ".join(p.get("text", "") for c in request.contents if c.get("role") == "user" for p in c.get("parts", []))


def _script(fake: FakeGemini) -> None:
    """The planner asks dice_agent; dice_agent rolls a d6 (a d20 when the user says 'big')."""

    def respond(request: RecordedRequest) -> Reply:
        answered = [fr["name"] for fr in request.function_responses]
        big = "big" in _user(request)
        if "You roll dice" in _system(request):
            if not answered:
                return function_call_reply("roll_die", {"sides": 20 if big else 6}, id="inner-1")
            return text_reply("rolled")
        if not answered:
            return function_call_reply("dice_agent", {"request": "roll a big die" if big else "roll a die"},
                                       id="outer-1")
        return text_reply("You rolled it.")

    fake.responder = respond


def _turn(prompt: str, request: str) -> dict[str, Any]:
    return {"invocation_id": f"t-{prompt.split()[0]}",
            "user_content": {"role": "user", "parts": [{"text": prompt}]},
            "final_response": {"role": "model", "parts": [{"text": "You rolled it."}]},
            "intermediate_data": {"tool_uses": [{"name": "dice_agent", "args": {"request": request}}],
                                  "tool_responses": [], "intermediate_responses": []}}


def _write_agent(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "planner"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    d6 = [{"agent": "dice_agent", "name": "roll_die", "args": {"sides": 6}}]
    cases = [
        {"eval_id": "small", "conversation": [_turn("small roll please", "roll a die")],
         "session_input": {"app_name": "planner", "user_id": "u1", "state": {"player": "ana"}},
         "final_session_state": {"last_roll": 4}, "expected_nested_calls": {"t-small": d6}},
        # The inner agent rolls a d20 and the state says 17: ADK's trajectory still passes.
        {"eval_id": "big", "conversation": [_turn("big roll please", "roll a big die")],
         "session_input": {"app_name": "planner", "user_id": "u2", "state": {}},
         "final_session_state": {"last_roll": 4}, "expected_nested_calls": {"t-big": d6}},
    ]
    eval_file = folder / "dice.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": "dice", "eval_cases": cases}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {
        "tool_trajectory_avg_score": 1.0,
        "deep_tool_trajectory_v1": {"threshold": 1.0, "match_type": "EXACT"},
        "final_session_state_v1": {"threshold": 1.0, "compare": "named_keys"},
    }}))
    return folder, eval_file


def test_agent_tool_calls_and_state_reach_every_face_while_adk_output_stays_adks(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / "results.json"
    code = main(["run", str(folder), str(eval_file), "--json", str(json_out), "--print-detailed-results"], out, err)
    text = out.getvalue()
    assert code == 1, text + err.getvalue()
    assert "1 passed, 1 failed" in text

    # --print-detailed-results: the trajectory as a tree, each inner call attributed; the final state.
    assert "  planner › dice_agent(request=\"roll a die\")\n    dice_agent › roll_die(sides=6)" in text
    assert "dice_agent › roll_die(sides=20)" in text
    assert 'final session state: {"last_roll": 4, "player": "ana"}' in text
    assert "last_roll: expected 4, got 17" in text

    [result] = json.loads(json_out.read_text())
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.eval_result import EvalSetResult
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    adk_result = EvalSetResult.model_validate(result)
    cases = {c.eval_id: c for c in adk_result.eval_case_results}
    for case in cases.values():
        [per_turn] = case.eval_metric_result_per_invocation
        actual = per_turn.actual_invocation
        # ADK's app details name only the app's own agent, and its trajectory only the top-level call.
        assert actual.app_details is not None and list(actual.app_details.agent_details) == ["planner"]
        adk = TrajectoryEvaluator(eval_metric=EvalMetric(
            metric_name="tool_trajectory_avg_score", threshold=1.0)).evaluate_invocations(
            [actual], [per_turn.expected_invocation] if per_turn.expected_invocation is not None else None)
        ours = {m.metric_name: m for m in case.overall_eval_metric_results}
        assert ours["tool_trajectory_avg_score"].score == adk.overall_score == 1.0
    statuses = {eid: {m.metric_name: m.eval_status.name for m in c.overall_eval_metric_results}
                for eid, c in cases.items()}
    assert statuses["small"]["deep_tool_trajectory_v1"] == "PASSED"
    assert statuses["small"]["final_session_state_v1"] == "PASSED"
    assert statuses["big"]["deep_tool_trajectory_v1"] == "FAILED"
    assert statuses["big"]["final_session_state_v1"] == "FAILED"

    # The run record keeps the inner calls per turn (by invocation id) and the final state.
    [record_file] = (folder / ".adk" / "eval_history").glob("*.tui-eval.json")
    record = json.loads(record_file.read_text())
    by_id = {c["eval_id"]: c for c in record["cases"]}
    [(turn_id, [inner])] = by_id["small"]["nested_calls"].items()
    assert turn_id == cases["small"].eval_metric_result_per_invocation[0].actual_invocation.invocation_id
    assert (inner["agent"], inner["name"], inner["args"], inner["depth"], inner["parent"]) == (
        "dice_agent", "roll_die", {"sides": 6}, 1, "outer-1")
    assert inner["response"] == {"result": 4}
    assert by_id["small"]["final_session_state"] == {"player": "ana", "last_roll": 4}


async def test_inner_calls_do_not_leak_into_the_tool_timings(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    from tui_eval.agents import load_agent
    from tui_eval.agents.adk import AdkSession
    from tui_eval.agents.base import CaseContext
    from tui_eval.schema.load import load_eval_set

    agent = load_agent(str(folder))
    eval_set = load_eval_set(eval_file)
    case = eval_set.eval_cases[0]
    session = await agent.new_session(case, CaseContext(eval_set, eval_file))
    assert isinstance(session, AdkSession)
    inv = await session.turn(turns_of(case)[0].user_content, 0)
    state = await session.final_state()
    await session.close()
    assert [(t.name, t.call_id) for t in inv.tool_timings] == [("dice_agent", "outer-1")]
    # Every timing the plugin took was handed to the turn: none is kept for a call the turn never answers.
    assert session.plugin.tool_seconds == {}
    assert [(c.agent, c.name, c.depth) for c in inv.nested_calls] == [("dice_agent", "roll_die", 1)]
    assert state == {"player": "ana", "last_roll": 4}


GROUNDING = {"groundingChunks": [{"web": {"uri": "https://example.org/louvre", "title": "Louvre"}}],
             "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 22, "text": "The Louvre opens at 9."},
                                    "groundingChunkIndices": [0]}]}


async def test_grounding_metadata_is_kept_on_the_actual_turn(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "The Louvre opens at 9."}]},
                            "finishReason": "STOP", "index": 0, "groundingMetadata": GROUNDING}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}}
    fake_gemini.responder = lambda _request: Reply(body=body)
    folder = tmp_path / "guide"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\n"
        "root_agent = LlmAgent(name='guide', model='gemini-2.5-flash', instruction='Answer with search.')\n")
    from tui_eval.agents import load_agent
    from tui_eval.agents.base import CaseContext
    from tui_eval.metrics.llm import hallucinations
    from tui_eval.metrics.base import MetricInput
    from tui_eval.schema.config import read_eval_config
    from tui_eval.schema.load import read_eval_case
    from tui_eval.schema.model import Content, InvocationEvents

    case = read_eval_case({"eval_id": "g", "conversation": [{"user_content": {"parts": [{"text": "Louvre hours?"}]}}],
                           "session_input": {"app_name": "guide", "user_id": "u", "state": {}}}, "$")
    agent = load_agent(str(folder))
    session = await agent.new_session(case, CaseContext(None, tmp_path / "x.evalset.json"))
    inv = await session.turn(Content.from_text("Louvre hours?"), 0)
    await session.close()
    assert isinstance(inv.intermediate_data, InvocationEvents)
    [event] = inv.intermediate_data.invocation_events
    assert event.content is None  # as ADK: the final text lives on final_response only
    assert event.grounding_metadata["grounding_supports"][0]["segment"]["text"] == "The Louvre opens at 9."
    # As ADK writes it: the actual turn's event validates as google-adk's InvocationEvent with its grounding.
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    adk = AdkInvocation.model_validate(inv.to_dict())
    assert adk.model_dump(mode="json")["intermediate_data"]["invocation_events"][0]["grounding_metadata"][
        "grounding_chunks"][0]["web"]["uri"] == "https://example.org/louvre"
    config = read_eval_config({"criteria": {"hallucinations_v1": 0.5}})
    [step] = hallucinations.check_steps(MetricInput(config.criteria["hallucinations_v1"], case, [inv], None, config), 0)
    assert "https://example.org/louvre" in step.context.split("Grounding metadata:", 1)[1]


SINGLE_TURN_PY = AGENT_PY.replace(
    'description="Rolls dice.", tools=[roll_die])', 'description="Rolls dice.", tools=[roll_die], mode="single_turn")'
).replace("tools=[AgentTool(dice_agent)])", "sub_agents=[dice_agent])")


async def test_a_single_turn_sub_agents_calls_stay_in_adks_trajectory(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other style: a `single_turn` sub-agent runs inline, its events land in the parent's stream, so
    its calls are in ADK's trajectory (and not kept again as nested calls)."""
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    (folder / "agent.py").write_text(textwrap.dedent(SINGLE_TURN_PY))
    inv = await first_turn(folder, eval_file, 0)
    assert [(c.name, c.args) for c in inv.tool_calls] == [("dice_agent", {"request": "roll a die"}),
                                                          ("roll_die", {"sides": 6})]
    assert inv.nested_calls == []
    assert inv.app_details is not None and list(inv.app_details.agent_details) == ["planner", "dice_agent"]
