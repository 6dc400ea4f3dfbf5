"""Scenario cases: the LLM-backed user simulator and per_turn_user_simulator_quality_v1, through the real
judge service talking to the local fake Gemini server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_gemini import FakeGemini, RecordedRequest, error_reply, json_reply, text_reply
from tui_eval.agents.native import NativeAgent, PolicyTurn
from tui_eval.engine.plan import EvalTarget, RunPlan
from tui_eval.engine.runner import Run, RunOptions
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import EvalSet
from tui_eval.schema.results import EvalStatus

SIM_MARK = "You play the user in a conversation"
JUDGE_MARK = "You evaluate a User Simulator"
START = "Hi, I want to return a jacket."


def shop_policy(turn: PolicyTurn) -> str:
    text = turn.user_text.lower()
    if "refund" in text:
        return "Refunds take 5 to 7 business days."
    if "return" in text:
        return "You can return unused items within 30 days."
    return "How can I help?"


def _agent() -> NativeAgent:
    return NativeAgent("shop", "Help customers.", policy=shop_policy)


def _case(persona: Any = None) -> Any:
    scenario: dict[str, Any] = {
        "starting_prompt": START,
        "conversation_plan": "Ask how returns work, then ask how long refunds take, then end.",
    }
    if persona is not None:
        scenario["user_persona"] = persona
    return read_eval_case({"eval_id": "returns", "conversation_scenario": scenario,
                           "session_input": {"app_name": "shop", "user_id": "u", "state": {}}}, "$")


def _run(config: dict[str, Any], case: Any = None) -> Any:
    case = case or _case()
    target = EvalTarget(Path("scenarios.evalset.json"), EvalSet(eval_set_id="scenarios", eval_cases=[case]),
                        read_eval_config(config))
    return Run(RunPlan([target]), _agent(), options=RunOptions(save=False, turn_timeout=10))


def _user_texts(result: Any) -> list[str]:
    return [inv.user_content.text for inv in result.actual]


@pytest.fixture
def judge_env(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> FakeGemini:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")  # the agent answers offline; only the judge calls out
    return fake_gemini


def _simulator(script: list[str]):
    """Answers simulator prompts from the script, in order; records each prompt."""
    prompts: list[str] = []

    def respond(request: RecordedRequest):
        if SIM_MARK in request.prompt_text:
            prompts.append(request.prompt_text)
            return text_reply(script[min(len(prompts), len(script)) - 1])
        return None

    return respond, prompts


async def test_simulated_user_follows_the_script_until_the_stop_signal(judge_env: FakeGemini) -> None:
    respond, prompts = _simulator(["How long do refunds take?", "Thanks! </finished>"])
    judge_env.responder = respond
    record = await _run({"criteria": {"tool_trajectory_avg_score": 1.0},
                         "user_simulator_config": {"max_allowed_invocations": 10}}).execute()
    [case] = record.results[0].case_results
    assert case.error is None
    assert _user_texts(case) == [START, "How long do refunds take?"]
    assert case.actual[1].final_response.text == "Refunds take 5 to 7 business days."
    assert len(prompts) == 2  # asked for turn 2, then answered the stop signal
    # the simulator saw the plan and the conversation so far, the agent's replies included
    assert "Ask how returns work" in prompts[1]
    assert f"user: {START}" in prompts[1] and "shop: Refunds take 5 to 7 business days." in prompts[1]
    assert "</finished>" in prompts[0]
    sim_requests = [r for r in judge_env.requests if SIM_MARK in r.prompt_text]
    assert all(r.model == "gemini-2.5-flash" for r in sim_requests)


async def test_max_allowed_invocations_ends_the_conversation(judge_env: FakeGemini) -> None:
    respond, prompts = _simulator(["Tell me more about returns.", "And refunds?", "Anything else?", "More?"])
    judge_env.responder = respond
    record = await _run({"criteria": {"tool_trajectory_avg_score": 1.0},
                         "user_simulator_config": {"max_allowed_invocations": 3, "model": "sim-model"}}).execute()
    [case] = record.results[0].case_results
    assert _user_texts(case) == [START, "Tell me more about returns.", "And refunds?"]
    assert len(prompts) == 2
    assert {r.model for r in judge_env.requests if SIM_MARK in r.prompt_text} == {"sim-model"}


async def test_custom_instructions_and_persona_reach_the_simulator(judge_env: FakeGemini) -> None:
    respond, prompts = _simulator(["<done>"])
    judge_env.responder = respond
    custom = SIM_MARK + ": PLAN={{ conversation_plan }} | HISTORY={{conversation_history}} | STOP={{ stop_signal }}"
    config = {"criteria": {"per_turn_user_simulator_quality_v1": {"threshold": 0.5, "stop_signal": "<done>"}},
              "user_simulator_config": {"custom_instructions": custom}}
    judge_env.default = json_reply({"criteria": [], "is_valid": True})
    record = await _run(config).execute()
    [case] = record.results[0].case_results
    assert _user_texts(case) == [START]
    assert prompts[0].startswith(SIM_MARK + ": PLAN=Ask how returns work")
    assert prompts[0].endswith("STOP=<done>") and f"HISTORY=user: {START}" in prompts[0]

    prompts.clear()
    judge_env.default = None
    respond, prompts = _simulator(["</finished>"])
    judge_env.responder = respond
    persona = {"id": "terse", "description": "A terse shopper.",
               "behaviors": [{"name": "Terse", "description": "Few words.",
                              "behavior_instructions": ["Use five words at most."],
                              "violation_rubrics": ["Uses more than five words."]}]}
    await _run({"criteria": {"tool_trajectory_avg_score": 1.0}}, _case(persona)).execute()
    assert "A terse shopper." in prompts[0] and "Use five words at most." in prompts[0]


async def test_simulator_failure_leaves_the_case_not_evaluated_with_the_reason(judge_env: FakeGemini) -> None:
    # A user-simulator outage says nothing about the agent (issue 9, item 16): NOT_EVALUATED, not FAILED.
    judge_env.responder = lambda r: error_reply(400, "bad request") if SIM_MARK in r.prompt_text else None
    record = await _run({"criteria": {"tool_trajectory_avg_score": 1.0}}).execute()
    [case] = record.results[0].case_results
    assert case.status == EvalStatus.NOT_EVALUATED
    assert case.error is None  # not an agent error
    [metric] = case.metrics
    assert metric.status == EvalStatus.NOT_EVALUATED
    assert "user simulator failed at turn 2" in (metric.reason or "") and "400" in (metric.reason or "")
    assert _user_texts(case) == [START]


async def test_simulator_failure_fails_the_case_under_strict(judge_env: FakeGemini) -> None:
    judge_env.responder = lambda r: error_reply(400, "bad request") if SIM_MARK in r.prompt_text else None
    run = _run({"criteria": {"tool_trajectory_avg_score": 1.0}})
    run.options.strict = True
    record = await run.execute()
    [case] = record.results[0].case_results
    assert case.status == EvalStatus.FAILED
    assert "user simulator failed at turn 2" in (case.metrics[0].reason or "")


async def test_offline_sends_only_the_starting_prompt_and_is_not_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    record = await _run({"criteria": {"per_turn_user_simulator_quality_v1": 0.8,
                                      "tool_trajectory_avg_score": 1.0}}).execute()
    [case] = record.results[0].case_results
    assert case.status == EvalStatus.NOT_EVALUATED and case.error is None
    assert _user_texts(case) == [START]
    assert case.actual[0].final_response.text == "You can return unused items within 30 days."
    quality = case.metric("per_turn_user_simulator_quality_v1")
    assert quality.status == EvalStatus.NOT_EVALUATED and quality.reason == "no judge credentials"
    assert case.metric("tool_trajectory_avg_score").status == EvalStatus.NOT_EVALUATED


def _verdict(valid: bool, why: str = "ok") -> dict[str, Any]:
    return {"criteria": [{"name": "CONVERSATION_PLAN_FOLLOWED", "reasoning": why, "passes": valid}],
            "is_valid": valid}


def _quality_judge(votes: dict[str, list[bool]], seen: list[str]):
    """Answers quality-judge prompts: votes per generated user response, by sample order."""
    counters: dict[str, int] = {}

    def respond(request: RecordedRequest):
        text = request.prompt_text
        if JUDGE_MARK not in text:
            return None
        found = re.search(r"# Generated User Response\n(.*?)\n\nAnswer in JSON", text, re.S)
        assert found is not None, text
        generated = found.group(1).strip()
        seen.append(generated)
        n = counters.get(generated, 0)
        counters[generated] = n + 1
        valid = votes[generated][n % len(votes[generated])]
        return json_reply(_verdict(valid, f"sample {n} says {valid}"))

    return respond


QUALITY = {"per_turn_user_simulator_quality_v1": {
    "threshold": 0.6, "judge_model_options": {"judge_model": "judge-model", "num_samples": 3}}}


async def test_user_simulator_quality_scores_each_turn(judge_env: FakeGemini) -> None:
    sim, _prompts = _simulator(["How long do refunds take?", "Great, thanks. Bye", "</finished>"])
    seen: list[str] = []
    judge = _quality_judge({"How long do refunds take?": [True, True, False],
                            "Great, thanks. Bye": [False, True, False],
                            "</finished>": [True, True, True]}, seen)
    judge_env.responder = lambda r: sim(r) or judge(r)
    record = await _run({"criteria": QUALITY}).execute()
    [case] = record.results[0].case_results
    assert _user_texts(case) == [START, "How long do refunds take?", "Great, thanks. Bye"]
    metric = case.metric("per_turn_user_simulator_quality_v1")
    # turn 1 is the starting prompt (1), turn 2 wins 2-1 (1), turn 3 loses 1-2 (0); the stop passed
    assert [r.score for r in metric.per_invocation] == [1.0, 1.0, 0.0]
    assert metric.score == pytest.approx(2 / 3) and metric.status == EvalStatus.PASSED
    first, second, third = metric.per_invocation
    assert first.details.judged is False and first.details.verdict is True
    assert second.details.votes.text == "2/3" and second.details.verdict is True
    assert "CONVERSATION_PLAN_FOLLOWED" in second.details.rationale
    assert third.details.votes.text == "1/3" and third.details.failed_criteria == ["CONVERSATION_PLAN_FOLLOWED"]
    # Each sample is kept as the judge answered it (the samples run at once, so in any order).
    assert sorted(s.is_valid for s in third.details.samples) == [False, False, True]
    assert all(len(s.criteria) == 1 and s.criteria[0].passes is s.is_valid
               and s.criteria[0].reasoning.endswith(f"says {s.is_valid}") for s in third.details.samples)
    assert metric.details.stop_signal_turn.details.verdict is True
    assert seen.count("</finished>") == 3
    assert {r.model for r in judge_env.requests if JUDGE_MARK in r.prompt_text} == {"judge-model"}
    stop_prompt = next(r.prompt_text for r in judge_env.requests
                       if JUDGE_MARK in r.prompt_text and "# Generated User Response\n</finished>" in r.prompt_text)
    # the stop-signal check sees the whole conversation and the plan
    assert "Ask how returns work" in stop_prompt and "user: Great, thanks. Bye" in stop_prompt


async def test_failed_stop_signal_check_replaces_the_last_turn_and_ties_are_negative(judge_env: FakeGemini) -> None:
    sim, _ = _simulator(["How long do refunds take?", "</finished>"])
    seen: list[str] = []
    quality = {"per_turn_user_simulator_quality_v1": {
        "threshold": 0.9, "judge_model_options": {"num_samples": 2}}}
    judge = _quality_judge({"How long do refunds take?": [True, True], "</finished>": [True, False]}, seen)
    judge_env.responder = lambda r: sim(r) or judge(r)
    record = await _run({"criteria": quality}).execute()
    [case] = record.results[0].case_results
    metric = case.metric("per_turn_user_simulator_quality_v1")
    # turn 2 passed, but the stop-signal check tied 1-1 (negative) and takes the last turn's place
    assert [r.score for r in metric.per_invocation] == [1.0, 0.0]
    assert metric.per_invocation[-1].details.turn_kind == "stop_signal"
    assert metric.score == 0.5 and metric.status == EvalStatus.FAILED and case.status == EvalStatus.FAILED


async def test_quality_judge_failures_give_not_evaluated(judge_env: FakeGemini) -> None:
    sim, _ = _simulator(["How long do refunds take?", "</finished>"])
    judge_env.responder = lambda r: sim(r) or (json_reply({"nope": 1}) if JUDGE_MARK in r.prompt_text else None)
    quality = {"per_turn_user_simulator_quality_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}
    record = await _run({"criteria": quality}).execute()
    [case] = record.results[0].case_results
    metric = case.metric("per_turn_user_simulator_quality_v1")
    assert metric.status == EvalStatus.NOT_EVALUATED and "judge" in (metric.reason or "")
    assert case.status == EvalStatus.NOT_EVALUATED
    # The dropped sample says why and carries no verdict.
    dropped = metric.per_invocation[1].details.samples[0]
    assert dropped.error and dropped.is_valid is None and dropped.criteria == []
    json.dumps(case.to_record())  # the details stay JSON-able
