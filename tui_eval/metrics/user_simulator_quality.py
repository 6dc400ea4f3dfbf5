"""per_turn_user_simulator_quality_v1: did the simulated user follow the scenario, turn by turn?

As google-adk 2.13: turn 1 scores 1 when the user's text is the starting_prompt (stripped); every later
user message is judged for following the conversation plan (num_samples samples, majority vote, a tie is
negative); then the judge is asked whether ending the conversation with the stop signal was right at
that point, and when it was not, that verdict replaces the last turn's. Score = passed turns / all turns.
Each turn keeps its verdict, votes and rationale in `details`.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, Field

from ..judge.conversation import persona_text, transcript
from ..schema.details import (
    JudgeCaseDetails,
    SimulatorCriterionVerdict,
    SimulatorSample,
    SimulatorTurnDetails,
    StopSignalVerdict,
    TokenUsage,
)
from ..schema.model import Invocation
from ..schema.results import EvalStatus, InvocationMetricResult, MetricResult, status_for
from .base import MetricInput, builtin
from .llm.common import Sample, ask_and_vote, judge_identity

NAME = "per_turn_user_simulator_quality_v1"


class CriterionVerdict(BaseModel):
    name: str = Field(description="The criterion's name, as written in the instructions.")
    reasoning: str = Field(description="Why the user message passes or fails this criterion.")
    passes: bool


class TurnVerdict(BaseModel):
    criteria: list[CriterionVerdict]
    is_valid: bool = Field(description="True only when the user message passes every criterion.")


PROMPT = """You evaluate a User Simulator: an LLM playing the user in a conversation with an AI agent.
Decide whether the Generated User Response (the simulator's next message) is consistent with the
Conversation Plan (the sequential goals the simulated user must pursue, with the details it may use) and
with the Conversation History so far. The conversation is over only when the simulator answers
`{stop_signal}`; until then more turns may follow.

The response PASSES unless it commits one of these violations, in which case it FAILS:

CONVERSATION_PLAN_FOLLOWED
- repeats a goal, or gives details for a goal, that earlier turns already completed;
- agrees to change topic or do something the plan does not list, or invents a new goal;
- invents details (a phone number, an address...) that the plan does not give.

STOP_CONDITION_FOLLOWED
- the conversation should have ended but the response does not use `{stop_signal}`;
- it uses `{stop_signal}` while tasks of the plan remain and the agent has not failed;
- the agent handed the user over to a human, yet the response carries on.

USER_GOAL_ORIENTED
- gives details of a goal (content, recipient, numbers...) before the agent asked for them;
- tries to do more than one high-level task in a single message.

LIMITED_TROUBLESHOOTING
- ends the conversation right after the agent's first error;
- after the agent's second error, carries on instead of using `{stop_signal}`.

RESPONSIVENESS
- ignores a question the agent asked (or one of several);
- makes up an answer the plan does not contain instead of saying it does not know.

CORRECTS_AGENT
- carries on as if correct after the agent gave wrong information;
- lets a dangerous assumption by the agent pass without correcting it.

CONVERSATIONAL_TONE
- sounds unnatural: convoluted or jargon-heavy, a bare command with no conversational framing, overly
  formal or polite, or a wall of text where a sentence would do.
{persona}
# Conversation Plan
{conversation_plan}

# Conversation History
{conversation_history}

# Generated User Response
{generated_user_response}

Answer in JSON: "criteria" (for each criterion above: "name", "reasoning", "passes") and "is_valid"
(true only when every criterion passes).
"""


def _prompt(inp: MetricInput, history: list[Invocation], user_text: str) -> str:
    scenario = inp.case.conversation_scenario
    assert scenario is not None
    persona = persona_text(scenario.user_persona, rubrics=True)
    block = (
        "\nPERSONA (behaviours the simulated user must show; the plan wins over the persona)\n"
        f"{persona}\n"
        if persona
        else ""
    )
    return PROMPT.format(
        stop_signal=inp.criterion.stop_signal,
        persona=block,
        conversation_plan=scenario.conversation_plan,
        conversation_history=transcript(history, intermediate=False),
        generated_user_response=user_text,
    )


def _first_turn(inp: MetricInput) -> InvocationMetricResult:
    scenario = inp.case.conversation_scenario
    assert scenario is not None
    text = inp.actual[0].user_content.text
    matches = text.strip() == scenario.starting_prompt.strip()
    score = 1.0 if matches else 0.0
    rationale = (
        "the first user message is the starting prompt"
        if matches
        else f"the first user message is not the starting prompt {scenario.starting_prompt!r}"
    )
    details = SimulatorTurnDetails(user_text=text, turn_kind="starting_prompt", judged=False, verdict=matches,
                                   rationale=rationale)
    return InvocationMetricResult(score=score, status=status_for(score, inp.criterion.threshold), details=details)


def _sample_record(s: Sample[TurnVerdict]) -> SimulatorSample:
    """What the dashboard shows for one judge sample on a simulated user message."""
    parsed = s.parsed
    if parsed is None:
        return s.record_as(SimulatorSample)
    return s.record_as(SimulatorSample, is_valid=parsed.is_valid,
                       criteria=[SimulatorCriterionVerdict(name=c.name, reasoning=c.reasoning, passes=c.passes)
                                 for c in parsed.criteria])


async def _judge_turn(inp: MetricInput, history: list[Invocation], user_text: str,
                      kind: Literal["user_message", "stop_signal"]) -> InvocationMetricResult:
    ballot = await ask_and_vote(inp.judge, inp.criterion.judge, _prompt(inp, history, user_text), TurnVerdict,
                                lambda answer: answer.is_valid)
    records = [_sample_record(s) for s in ballot.samples]
    turn = {"user_text": user_text, "turn_kind": kind, "judged": True}
    verdict = ballot.outcome
    if verdict is None:
        return InvocationMetricResult.not_evaluated(ballot.failure,
                                                    ballot.details(SimulatorTurnDetails, records, **turn))
    # The rationale shown is that of a sample that voted with the majority: its failed criteria first.
    winner = next(s.parsed for s in ballot.samples if s.parsed is not None and s.parsed.is_valid == verdict)
    failed = [c for c in winner.criteria if not c.passes]
    shown = failed or winner.criteria
    details = ballot.details(SimulatorTurnDetails, records, **turn, verdict=verdict,
                             rationale="; ".join(f"{c.name}: {c.reasoning}" for c in shown),
                             failed_criteria=[c.name for c in failed])
    score = 1.0 if verdict else 0.0
    return InvocationMetricResult(score=score, status=status_for(score, inp.criterion.threshold), details=details)


async def evaluate(inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    actual = inp.actual
    first = _first_turn(inp)
    inp.progress(0)

    async def later(i: int) -> InvocationMetricResult:
        result = await _judge_turn(inp, actual[:i], actual[i].user_content.text, "user_message")
        inp.progress(i)
        return result

    judged = await asyncio.gather(
        *(later(i) for i in range(1, len(actual))),
        _judge_turn(inp, list(actual), crit.stop_signal, "stop_signal"),
    )
    stop = judged[-1]
    results = [first, *judged[:-1]]
    if stop.status == EvalStatus.FAILED:
        # As ADK: ending (or not ending) the conversation at the wrong time is the last turn's fault.
        results[-1] = stop
    stop_details = stop.details if isinstance(stop.details, SimulatorTurnDetails) else None
    details = JudgeCaseDetails(
        **judge_identity(crit.judge.judge_model),
        num_samples=crit.judge.num_samples,
        evaluated_invocations=sum(1 for r in results if r.score is not None),
        token_usage=TokenUsage.total([r.details.token_usage for r in judged
                                      if isinstance(r.details, SimulatorTurnDetails)]),
        stop_signal=crit.stop_signal,
        stop_signal_turn=StopSignalVerdict(score=stop.score, status=int(stop.status), reason=stop.reason,
                                           details=stop_details),
    )
    if all(r.status == EvalStatus.NOT_EVALUATED for r in judged):
        # The judge gave nothing usable for any judged turn: no verdict, rather than a score of 1/n.
        reason = next((r.reason for r in judged if r.reason), "judge gave no usable answer")
        return MetricResult(metric_name=NAME, threshold=crit.threshold, status=EvalStatus.NOT_EVALUATED,
                            criterion=crit.to_dict(), per_invocation=results, reason=reason, details=details)
    passed = sum(1 for r in results if r.status == EvalStatus.PASSED)
    score = passed / len(results)
    return MetricResult(metric_name=NAME, threshold=crit.threshold, score=score,
                        status=status_for(score, crit.threshold), criterion=crit.to_dict(), per_invocation=results,
                        details=details)


SPEC = builtin(NAME, evaluate, "Did the simulated user follow the conversation plan, turn by turn? (scenario cases)")
