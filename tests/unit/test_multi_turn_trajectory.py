"""rubric_based_multi_turn_trajectory_quality_v1 through the judge service and the fake Gemini server, and
against google-adk 2.13's RubricBasedMultiTurnTrajectoryEvaluator on the same conversation and votes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric, RubricsBasedCriterion
from google.adk.evaluation.eval_rubrics import Rubric as AdkRubric
from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import RubricBasedMultiTurnTrajectoryEvaluator

from tests.support.evalfiles import turns_of
from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, json_reply, text_reply
from tests.unit.test_vertex import CONVERSATION, case, tool_events, turn
from tui_eval.judge import JudgeService
from tui_eval.metrics import get_metric
from tui_eval.metrics.base import MetricInput
from tui_eval.metrics.llm.multi_turn_trajectory import NAME, dialogue, instructions_and_tools
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import JudgeCaseDetails, RubricDetails
from tui_eval.schema.model import EvalCase, Rubric
from tui_eval.schema.results import EvalStatus, MetricResult

RUBRICS: list[dict[str, Any]] = [
    {"rubric_id": "r1", "rubric_content": {"text_property": "The agent calls get_weather for every city asked."}},
    {"rubric_id": "r2", "rubric_content": {"text_property": "The agent asks before assuming a city."}},
]


async def run(criterion: Any, ev: EvalCase, judge: JudgeService) -> MetricResult:
    config = read_eval_config({"criteria": {NAME: criterion}})
    assert not config.warnings, config.warnings
    spec = get_metric(NAME)
    assert spec is not None and spec.needs_judge and not spec.needs_reference
    inp = MetricInput(criterion=config.criteria[NAME], case=ev, actual=turns_of(ev), expected=turns_of(ev),
                      config=config, judge=judge)
    result = spec.evaluate(inp)
    return await result if not isinstance(result, MetricResult) else result


def ours_reply(votes: dict[str, str]) -> Reply:
    return json_reply({"verdicts": [{"rubric_id": rid, "rationale": f"{rid} is {v}", "verdict": v}
                                    for rid, v in votes.items()]})


def criterion(samples: int = 5, rubrics: list[dict[str, Any]] = RUBRICS) -> dict[str, Any]:
    return {"threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": samples},
            "rubrics": rubrics}


def adk_invocations(ev: EvalCase) -> list[AdkInvocation]:
    """ADK's invocations, tool declarations as genai Tools: ADK 2.13 keeps a loaded file's declarations as
    dicts, and this evaluator then fails on them (`tool.function_declarations`); ours reads both."""
    from google.genai import types as genai_types

    out = [AdkInvocation.model_validate(inv.to_dict()) for inv in turns_of(ev)]
    for inv in out:
        if inv.app_details is not None:
            for details in inv.app_details.agent_details.values():
                details.tool_declarations = [genai_types.Tool.model_validate(t) for t in details.tool_declarations]
    return out


def test_dialogue_instructions_and_tools_are_adks() -> None:
    other = {"agent_details": {"helper": {"name": "helper", "instructions": "Help.", "tool_declarations": [
        {"function_declarations": [{"name": "lookup", "description": "Look {things} up"}]}]}}}
    ev = case([*CONVERSATION, turn("Oslo?", "Cold {brr}.", events=tool_events("Oslo"), app=other)])
    adk = RubricBasedMultiTurnTrajectoryEvaluator(EvalMetric(
        metric_name=NAME, criterion=RubricsBasedCriterion(threshold=0.5, rubrics=[AdkRubric.model_validate(RUBRICS[0])])))
    adk._assemble_dialogue_history(adk_invocations(ev))
    assert dialogue(turns_of(ev)) == adk._formatted_dialogue
    assert instructions_and_tools(turns_of(ev)) == (adk._formatted_instructions, adk._formatted_tools)
    assert "(tool call): get_weather" in adk._formatted_dialogue  # the comparison is not vacuous


async def test_judged_once_on_the_last_turn_with_the_whole_conversation(fake_gemini: FakeGemini,
                                                                         judge: JudgeService) -> None:
    fake_gemini.default = ours_reply({"r1": "yes", "r2": "no", "case_r": "yes"})
    ev = case(CONVERSATION)
    # Case rubrics: only those of type TRAJECTORY_QUALITY apply.
    ev.rubrics = [Rubric.model_validate({"rubric_id": "case_r", "rubric_content": {"text_property": "Polite."},
                                         "type": "TRAJECTORY_QUALITY"}),
                  Rubric.model_validate({"rubric_id": "other", "rubric_content": {"text_property": "Short."},
                                         "type": "TOOL_USE_QUALITY"})]
    result = await run(criterion(samples=1), ev, judge)
    [req] = fake_gemini.requests
    prompt = req.prompt_text
    assert dialogue(turns_of(ev)) in prompt and "USER TURN 3: Thanks" in prompt
    assert re.findall(r"\[id: (\w+)\]", prompt) == ["r1", "r2", "case_r"]
    assert [r.status for r in result.per_invocation[:2]] == [EvalStatus.NOT_EVALUATED] * 2
    last = result.per_invocation[2]
    assert isinstance(last.details, RubricDetails)
    assert {v.rubric_id: v.score for v in last.details.rubrics} == {"r1": 1.0, "r2": 0.0, "case_r": 1.0}
    assert last.score == pytest.approx(2 / 3) and result.score == pytest.approx(2 / 3)
    assert result.status == EvalStatus.PASSED
    assert isinstance(result.details, JudgeCaseDetails) and result.details.evaluated_invocations == 1
    assert [r.rubric_id for r in result.details.rubric_scores] == ["r1", "r2", "case_r"]


async def test_no_rubrics_not_evaluated(judge: JudgeService) -> None:
    result = await run(criterion(rubrics=[]), case(CONVERSATION), judge)
    assert result.status == EvalStatus.NOT_EVALUATED
    assert "no rubrics" in (result.reason or "") and "TRAJECTORY_QUALITY" in (result.reason or "")


# -- against ADK's evaluator, same votes ------------------------------------------------------------

def adk_text(votes: dict[str, str]) -> str:
    text = {r["rubric_id"]: r["rubric_content"]["text_property"] for r in RUBRICS}
    return "\n".join(f"STEP 5: {v}\nID: {rid}\nProperty: {text[rid]}\nRationale: {rid} is {v}\nVerdict: {v}\n"
                     for rid, v in votes.items())


SAMPLES = [  # r1: 3 yes of 5 -> yes; r2: 2 yes of 5 -> no
    {"r1": "yes", "r2": "yes"}, {"r1": "yes", "r2": "no"}, {"r1": "no", "r2": "yes"},
    {"r1": "yes", "r2": "no"}, {"r1": "no", "r2": "no"},
]


@pytest.mark.parametrize("samples", [SAMPLES, SAMPLES[:4], [{"r1": "no", "r2": "no"}] * 3])
async def test_matches_adk_on_the_same_votes(gemini_env: FakeGemini, judge: JudgeService,
                                             samples: list[dict[str, str]]) -> None:
    counters = {"adk": 0, "ours": 0}

    def respond(req: RecordedRequest) -> Reply:
        ours = "responseSchema" in json.dumps(req.generation_config) or "responseJsonSchema" in json.dumps(
            req.generation_config)
        side = "ours" if ours else "adk"
        votes = samples[counters[side] % len(samples)]
        counters[side] += 1
        return ours_reply(votes) if ours else text_reply(adk_text(votes))

    gemini_env.responder = respond
    ev = case(CONVERSATION)
    adk = RubricBasedMultiTurnTrajectoryEvaluator(EvalMetric(
        metric_name=NAME, threshold=0.5,
        criterion=RubricsBasedCriterion(threshold=0.5, rubrics=[AdkRubric.model_validate(r) for r in RUBRICS],
                                        judge_model_options={"judge_model": "gemini-2.5-flash",
                                                             "num_samples": len(samples)})))
    theirs = await adk.evaluate_invocations(adk_invocations(ev))
    ours = await run(criterion(samples=len(samples)), ev, judge)
    assert counters == {"adk": len(samples), "ours": len(samples)}
    assert theirs.overall_score == pytest.approx(ours.score)
    assert theirs.overall_eval_status.value == int(ours.status)
    assert [r.score for r in theirs.per_invocation_results] == pytest.approx([r.score for r in ours.per_invocation])
    assert [r.eval_status.value for r in theirs.per_invocation_results] == [int(r.status) for r in ours.per_invocation]
    their_rubrics = {r.rubric_id: r.score for r in theirs.overall_rubric_scores or []}
    assert isinstance(ours.details, JudgeCaseDetails)
    assert their_rubrics == {r.rubric_id: r.score for r in ours.details.rubric_scores}
