"""final_response_match_v2: an LLM judge decides whether the final response is as good as the reference."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ...schema.model import content_text
from ...schema.details import ResponseMatchJudgeDetails
from ...schema.results import InvocationMetricResult, MetricResult
from ..base import MetricInput
from .common import PROMPT_AND_RESPONSE, ask_and_vote, case_result, response_text, score_invocations, verdict_result

NAME = "final_response_match_v2"


class ResponseMatchVerdict(BaseModel):
    """The judge's answer; reasoning comes first so the verdict follows from it."""

    reasoning: str = Field(description="Why the agent's response is or is not a valid answer, citing both responses.")
    verdict: Literal["valid", "invalid"]


PROMPT = """\
You grade an AI agent's answer against a reference answer written by a careful human.

Decide whether the agent's response is a VALID answer to the user's request, using the reference as
the source of truth for what the correct answer is.

How to judge:
- The reference may name only the key facts; the agent may add more detail, explanation or
  context. Extra correct information does not make a response invalid.
- Accept different wording, ordering and formatting of the same facts: abbreviations or full names
  (e.g. "TX" and "Texas"), lists or sentences, tables or prose, 1000000 or 1,000,000, unless the
  user explicitly asked for a specific format.
- Numbers must agree in value and unit (100 miles is not 100 km). Rounding is acceptable when the
  user gave no precision and the rounding is reasonable for the quantity.
- Trust the reference for anything computed (arithmetic, dates, data in tables); do not recompute.
- If the reference finds an answer, an agent that claims it cannot answer or lacks access is invalid.
- If the reference asks the user for clarification or declines, the agent is valid only if it also
  asks for that clarification or declines for the same reason.
- Missing, wrong or contradicting key facts make the response invalid.

""" + PROMPT_AND_RESPONSE + """\

<reference_response>
{reference}
</reference_response>

Answer in JSON with "reasoning" (a short explanation) and "verdict": "valid" or "invalid".
"""


async def evaluate(inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    opts = crit.judge
    expected = inp.expected or []

    async def score_one(i: int) -> InvocationMetricResult:
        actual = inp.actual[i]
        reference_inv = expected[i] if i < len(expected) else None
        include = crit.include_intermediate_responses_in_final
        prompt_inv = reference_inv or actual
        prompt = PROMPT.format(
            prompt=content_text(prompt_inv.user_content),
            response=response_text(actual, include),
            reference=response_text(reference_inv, include),
        )
        ballot = await ask_and_vote(inp.judge, opts, prompt, ResponseMatchVerdict,
                                    lambda answer: answer.verdict == "valid")
        records = ballot.records(lambda answer: {"verdict": answer.verdict, "rationale": answer.reasoning})
        return verdict_result(ballot, ResponseMatchJudgeDetails, records, crit, ("valid", "invalid"))

    return case_result(inp, await score_invocations(inp, score_one))
