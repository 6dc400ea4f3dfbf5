"""The rubric metrics: an LLM judge gives a yes/no verdict per rubric on the final response or the tool use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ...schema.model import Rubric, content_text
from ...schema.details import JudgeSample, RubricDetails, RubricSampleVerdict, RubricScore, RubricVerdict, Votes
from ...schema.results import InvocationMetricResult, MetricResult
from ..base import MetricInput
from .common import (
    app_details_for,
    ask_samples,
    case_result,
    developer_instructions,
    failure_reason,
    first_author,
    grounding_text,
    invocation_result,
    majority,
    not_evaluated,
    response_text,
    sample_errors,
    score_invocations,
    sum_usage,
    tool_declarations_text,
    tool_steps_text,
    turn_steps,
)

FINAL_RESPONSE_QUALITY = "FINAL_RESPONSE_QUALITY"
TOOL_USE_QUALITY = "TOOL_USE_QUALITY"


class FinalResponseRubricVerdict(BaseModel):
    rubric_id: str = Field(description="The id of the property, copied exactly from its [id: ...] tag.")
    evidence: str = Field(description="Trusted evidence used (tool outputs by step, user prompt), or why there is none.")
    rationale: str = Field(description="How the evidence supports or contradicts the final answer, or why the property does not apply.")
    verdict: Literal["yes", "no"]


class FinalResponseRubricVerdicts(BaseModel):
    verdicts: list[FinalResponseRubricVerdict]


class ToolUseRubricVerdict(BaseModel):
    rubric_id: str = Field(description="The id of the property, copied exactly from its [id: ...] tag.")
    rationale: str = Field(description="Step by step reasoning about the tool calls for this property.")
    verdict: Literal["yes", "no"]


class ToolUseRubricVerdicts(BaseModel):
    verdicts: list[ToolUseRubricVerdict]


#: What both rubric judges are shown of the turn: the tools it had, the user's prompt, its calls and responses.
_TURN = """\
<available_tools>
{tools}
</available_tools>

<user_prompt>
{user_prompt}
</user_prompt>

<tool_calls_and_responses>
{steps}
</tool_calls_and_responses>
"""

FINAL_RESPONSE_PROMPT = """\
You assess the final answer of an AI agent against a list of properties. For EVERY property give a
verdict:
- "yes": the final answer fulfils the property, or the property's condition does not apply.
- "no": the property applies and the final answer does not fulfil it, or it rests on a claim that
  the trusted evidence cannot verify.

Work in two stages.
1. Collect trusted evidence. The only trusted sources are the user prompt, the developer
   instructions, the outputs of tool calls that were procedurally sound (the right tool, with
   sensible arguments, for what the user asked), and the grounding metadata the model supplied (a
   statement its grounding_supports attribute to a source is verified by that source). The agent's own final answer, its summaries and its
   interpretation of tool outputs are NOT evidence, and neither is the output of a flawed tool call
   (wrong tool, wrong or missing arguments, a tool that does not exist, a logical error in the
   sequence). Do not call tools yourself.
2. Judge the final answer against that evidence. A claim counts as correct only if the evidence
   verifies it unambiguously. If evidence is missing because the agent skipped a call it could have
   made, or made it wrongly, the property fails. Accept different wording and numerically equivalent
   values (minor rounding) as long as the conclusion does not change.

Answer only about the properties listed; do not invent new ones. Copy each property's id exactly.

<developer_instructions>
{instructions}
</developer_instructions>

""" + _TURN + """
<grounding_metadata>
{grounding}
</grounding_metadata>

<final_answer>
{final_answer}
</final_answer>

<properties>
{rubrics}
</properties>

Answer in JSON: {{"verdicts": [{{"rubric_id", "evidence", "rationale", "verdict"}}, ...]}} with one entry
per property.
"""


TOOL_USE_PROMPT = """\
You assess how an AI agent used its tools to serve a user's request, against a list of properties.
For EVERY property give a verdict:
- "yes": the agent's tool use fulfils the property, or the property does not apply.
- "no": the agent's tool use does not fulfil the property.

For each property: restate what it requires, decide exactly which calls, arguments, orderings and
responses would satisfy it, check the agent's calls against that one by one, then decide. Judge only
from the tool declarations, the user prompt and the calls and responses shown. Answer only about the
properties listed; do not invent new ones. Copy each property's id exactly.

""" + _TURN + """
<properties>
{rubrics}
</properties>

Answer in JSON: {{"verdicts": [{{"rubric_id", "rationale", "verdict"}}, ...]}} with one entry per property.
"""


@dataclass(frozen=True, slots=True)
class RubricMetric:
    name: str
    rubric_type: str
    prompt: str
    schema: type[BaseModel]


FINAL_RESPONSE_METRIC = RubricMetric("rubric_based_final_response_quality_v1", FINAL_RESPONSE_QUALITY,
                                     FINAL_RESPONSE_PROMPT, FinalResponseRubricVerdicts)
TOOL_USE_METRIC = RubricMetric("rubric_based_tool_use_quality_v1", TOOL_USE_QUALITY, TOOL_USE_PROMPT,
                               ToolUseRubricVerdicts)


class RubricConflict(ValueError):
    pass


def effective_rubrics(inp: MetricInput, index: int, rubric_type: str) -> list[Rubric]:
    """The criterion's rubrics, plus the case's and this turn's rubrics of the metric's type (as ADK
    routes them). Raises RubricConflict when one rubric_id names two different rubrics."""
    chosen: dict[str, Rubric] = {}
    sources: dict[str, str] = {}

    def add(rubrics: list[Rubric] | None, scope: str, filter_type: bool) -> None:
        for r in rubrics or []:
            if filter_type and (r.type or "").strip().upper() != rubric_type:
                continue
            if r.rubric_id in chosen:
                if chosen[r.rubric_id].rubric_content.text_property != r.rubric_content.text_property:
                    raise RubricConflict(
                        f"rubric_id {r.rubric_id!r} is defined differently in the {sources[r.rubric_id]} "
                        f"and the {scope}"
                    )
                continue
            chosen[r.rubric_id] = r
            sources[r.rubric_id] = scope

    add(inp.criterion.rubrics, "criterion", False)
    add(inp.case.rubrics, "eval case", True)
    expected = inp.expected[index] if inp.expected is not None and index < len(inp.expected) else None
    if expected is not None:
        add(expected.rubrics, "expected invocation", True)
    add(inp.actual[index].rubrics, "invocation", True)
    return list(chosen.values())


def _prompt(metric: RubricMetric, inp: MetricInput, index: int, rubrics: list[Rubric]) -> str:
    actual = inp.actual[index]
    app = app_details_for(inp, index)
    agent = first_author(actual)
    if agent is None and app is not None and app.agent_details:
        agent = next(iter(app.agent_details))
    rubric_lines = "\n".join(f"* [id: {r.rubric_id}] {r.rubric_content.text_property or ''}" for r in rubrics)
    return metric.prompt.format(
        instructions=developer_instructions(app, agent) if agent else "",
        tools=tool_declarations_text(app),
        user_prompt=content_text(actual.user_content),
        steps=tool_steps_text(actual),
        grounding=grounding_text(turn_steps(actual)),
        final_answer=response_text(actual, inp.criterion.include_intermediate_responses_in_final),
        rubrics=rubric_lines,
    )


def _normal_id(value: str) -> str:
    value = value.strip()
    if value.lower().startswith("[id:") and value.endswith("]"):
        value = value[4:-1].strip()
    return value


async def evaluate_rubrics(metric: RubricMetric, inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    opts = crit.judge

    async def score_one(i: int) -> InvocationMetricResult:
        try:
            rubrics = effective_rubrics(inp, i, metric.rubric_type)
        except RubricConflict as exc:
            return not_evaluated(str(exc))
        if not rubrics:
            return not_evaluated(f"no rubrics: give the criterion 'rubrics', or case/invocation rubrics of type "
                                 f"{metric.rubric_type}")
        samples = await ask_samples(inp.judge, model=opts.judge_model, prompt=_prompt(metric, inp, i, rubrics),
                                    schema=metric.schema, config=opts.judge_model_config,
                                    num_samples=opts.num_samples)
        known = {r.rubric_id: r for r in rubrics}
        per_sample: dict[str, list[RubricSampleVerdict]] = {r.rubric_id: [] for r in rubrics}
        unmatched: list[str] = []
        records: list[JudgeSample] = []
        for s in samples:
            if s.parsed is not None:
                seen: set[str] = set()
                for v in s.parsed.verdicts:  # type: ignore[attr-defined]
                    rid = _normal_id(v.rubric_id)
                    if rid not in known:
                        unmatched.append(v.rubric_id)
                        continue
                    if rid in seen:
                        continue  # a judge repeating itself gets one vote per sample
                    seen.add(rid)
                    per_sample[rid].append(RubricSampleVerdict(sample=s.index, verdict=v.verdict,
                                                               rationale=v.rationale,
                                                               evidence=getattr(v, "evidence", None)))
            records.append(s.record())
        verdicts: list[RubricVerdict] = []
        for r in rubrics:
            rid = r.rubric_id
            votes = Votes.count(e.verdict == "yes" for e in per_sample[rid])
            outcome = majority(votes.yes, votes.no)
            verdict: Literal["yes", "no"] | None = None if outcome is None else ("yes" if outcome else "no")
            verdicts.append(RubricVerdict(
                rubric_id=rid,
                text=r.rubric_content.text_property,
                type=r.type,
                verdict=verdict,
                score=None if outcome is None else (1.0 if outcome else 0.0),
                votes=votes,
                rationale=next((e.rationale for e in per_sample[rid] if e.verdict == verdict), None),
                samples=per_sample[rid],
            ))
        details = RubricDetails(
            rubrics=verdicts,
            samples=records,
            errors=sample_errors(samples),
            token_usage=sum_usage(samples),
            unmatched_rubric_ids=sorted(set(unmatched)),
        )
        scored = [v.score for v in verdicts if v.score is not None]
        if not scored:
            if not any(s.ok for s in samples):
                return not_evaluated(failure_reason(s.error for s in samples if s.error), details)
            return not_evaluated("the judge gave no verdict for any rubric", details)
        # As ADK: the score is over the rubrics the judge answered; the others are not evaluated
        # (neither passed nor failed), and the verdict says which.
        unanswered = [v.rubric_id for v in verdicts if v.score is None]
        reason = (f"{len(unanswered)} of {len(verdicts)} rubrics not evaluated (the judge gave no verdict): "
                  f"{', '.join(unanswered)}") if unanswered else None
        return invocation_result(sum(scored) / len(scored), crit, details, reason)

    per_invocation = await score_invocations(inp, score_one)
    # Gathered in turn order (not completion order) so the case's rubric list is stable run to run.
    all_scores: list[float] = []
    by_rubric: dict[str, list[float]] = {}
    for result in per_invocation:
        if not isinstance(result.details, RubricDetails):
            continue
        for v in result.details.rubrics:
            if v.score is not None:
                all_scores.append(v.score)
                by_rubric.setdefault(v.rubric_id, []).append(v.score)
    case_rubric_scores = [
        RubricScore(
            rubric_id=rid,
            score=sum(scores) / len(scores),
            rationale=f"mean over {len(scores)} invocation(s); see each invocation for the judge's rationale",
        )
        for rid, scores in by_rubric.items()
    ]
    case = case_result(inp, per_invocation, scores=all_scores, rubric_scores=case_rubric_scores)
    if case.reason is None:
        partial = [f"turn {i + 1}: {r.reason}" for i, r in enumerate(per_invocation)
                   if r.score is not None and r.reason]
        if partial:
            case = case.model_copy(update={"reason": "; ".join(partial)})
    return case


async def evaluate_final_response_quality(inp: MetricInput) -> MetricResult:
    return await evaluate_rubrics(FINAL_RESPONSE_METRIC, inp)


async def evaluate_tool_use_quality(inp: MetricInput) -> MetricResult:
    return await evaluate_rubrics(TOOL_USE_METRIC, inp)
