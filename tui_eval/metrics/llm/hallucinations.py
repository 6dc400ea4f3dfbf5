"""hallucinations_v1: split each response into sentences, then label each against the turn's context."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ...judge import JudgeError
from ...schema.model import AppDetails, Invocation, content_text
from ...schema.details import (
    CheckedResponse,
    HallucinationDetails,
    JudgeSample,
    SentenceSampleLabel,
    SentenceVerdict,
    TokenUsage,
)
from ...schema.results import InvocationMetricResult, MetricResult
from ..base import MetricInput
from .common import (
    Step,
    add_usage,
    app_details_for,
    ask_samples,
    call_dict,
    case_result,
    developer_instructions,
    failure_reason,
    grounding_text,
    invocation_result,
    majority,
    not_evaluated,
    response_dict,
    sample_errors,
    score_invocations,
    sum_usage,
    tool_declarations_text,
    turn_steps,
)

NAME = "hallucinations_v1"
Label = Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]
POSITIVE: tuple[Label, ...] = ("supported", "not_applicable")
NEGATIVE: tuple[Label, ...] = ("unsupported", "contradictory", "disputed")


class Segmentation(BaseModel):
    sentences: list[str] = Field(description="Every sentence of the response, copied word for word, in order.")


class SentenceLabel(BaseModel):
    index: int = Field(description="The sentence's number as given in the input.")
    sentence: str = Field(description="The sentence, copied.")
    rationale: str = Field(description="A short reason for the label.")
    label: Label
    supporting_excerpt: str | None = Field(default=None, description="For supported and disputed: the context excerpt that supports it.")
    contradicting_excerpt: str | None = Field(default=None, description="For contradictory and disputed: the context excerpt that contradicts it.")


class SentenceLabels(BaseModel):
    sentences: list[SentenceLabel]


SEGMENT_PROMPT = """\
Split the response below into sentences so that each can be fact-checked on its own.

Rules:
- Cover the WHOLE response; leave nothing out and add nothing.
- Copy every sentence exactly, word for word, with its own punctuation.
- Each bullet point or numbered item is its own sentence, and so is each sub-item. A lead-in such as
  "It has three parts:" is a sentence too.
- A table stays whole, as one sentence.
- Do not output fragments that are only symbols or markup.

<response>
{response}
</response>

Answer in JSON: {{"sentences": ["...", "..."]}}.
"""

LABEL_PROMPT = """\
You check the sentences of an AI agent's response against the context the agent had. Label every
sentence with exactly one of:
- "supported": the context fully entails the sentence. Give the supporting excerpt.
- "unsupported": the context does not entail it (nor contradict it).
- "contradictory": the context shows it is false. Give the contradicting excerpt.
- "disputed": the context both supports and contradicts it. Give both excerpts.
- "not_applicable": the sentence makes no factual claim that needs support (a greeting, an opinion,
  a question, a plan, a disclaimer, arithmetic on stated numbers).

Be strict: unless a clear excerpt of the context settles it, the label is "unsupported". Do not use
world knowledge beyond the trivial. Tool outputs count as evidence only when the tool call that
produced them was appropriate and the output shows no error. The context's "Grounding metadata" is
the source attribution of the model's own tools (such as search), whose results may appear nowhere
else: a sentence that its "grounding_supports" attribute to a source counts as "supported". Excerpts may be concatenated or
briefly summarised when long; keep the rationale separate from the excerpt.

<context>
{context}
</context>

<sentences>
{sentences}
</sentences>

Answer in JSON: {{"sentences": [{{"index", "sentence", "rationale", "label", "supporting_excerpt",
"contradicting_excerpt"}}, ...]}} with one entry per sentence, using the numbers given above.
"""


@dataclass(slots=True)
class CheckStep:
    """One natural-language response to check and the context it may rely on."""

    source: Literal["final", "intermediate"]
    author: str | None
    text: str
    context: str


def _context(app: AppDetails | None, inv: Invocation, steps: list[Step]) -> str:
    import json

    parts = [
        "Developer instructions:\n" + (developer_instructions(app) or "(none)"),
        "User prompt:\n" + content_text(inv.user_content),
        "Tool definitions:\n" + tool_declarations_text(app),
        "Grounding metadata:\n" + grounding_text(steps),
    ]
    for step in steps:
        if step.texts:
            parts.append(f"{step.author} said:\n" + "\n".join(step.texts))
        if step.calls:
            parts.append("tool_calls:\n" + json.dumps([call_dict(c) for c in step.calls], indent=2,
                                                      ensure_ascii=False, default=str))
        if step.responses:
            parts.append("tool_outputs:\n" + json.dumps([response_dict(r) for r in step.responses], indent=2,
                                                        ensure_ascii=False, default=str))
    return "\n\n".join(parts)


def check_steps(inp: MetricInput, index: int) -> list[CheckStep]:
    """The responses to check: each intermediate text (when asked) against the events before it, then
    the final response against everything."""
    inv = inp.actual[index]
    app = app_details_for(inp, index)
    steps = turn_steps(inv)
    out: list[CheckStep] = []
    if inp.criterion.evaluate_intermediate_nl_responses:
        for k, step in enumerate(steps):
            if step.texts:
                # As ADK: a response is checked against the events before it, plus its own grounding.
                own = [Step(step.author, grounding=step.grounding)] if step.grounding else []
                context = _context(app, inv, steps[:k] + own)
                for text in step.texts:
                    out.append(CheckStep("intermediate", step.author, text, context))
    final = content_text(inv.final_response)
    if final:
        out.append(CheckStep("final", None, final, _context(app, inv, steps)))
    return out


def _locate(text: str, sentences: list[str]) -> list[tuple[int, int] | None]:
    """Where each sentence sits in the response (for inline display), scanning forward."""
    spans: list[tuple[int, int] | None] = []
    pos = 0
    for s in sentences:
        needle = s.strip()
        at = text.find(needle, pos) if needle else -1
        if at < 0:
            spans.append(None)
        else:
            spans.append((at, at + len(needle)))
            pos = at + len(needle)
    return spans


async def _check(inp: MetricInput, step: CheckStep, step_no: int) -> tuple[CheckedResponse, list[SentenceVerdict]]:
    """Segment once, label num_samples times, vote per sentence. Returns the checked response and its
    sentences."""
    opts = inp.criterion.judge

    def checked(*, reason: str | None, score: float | None = None, errors: list[str] | None = None,
                token_usage: TokenUsage | None = None, samples: list[JudgeSample] | None = None) -> CheckedResponse:
        return CheckedResponse(source=step.source, author=step.author, text=step.text, score=score, reason=reason,
                               errors=errors or [], samples=samples or [],
                               token_usage=token_usage if token_usage is not None else TokenUsage())

    if inp.judge is None:  # the runner says so before asking: no judge, nothing checked
        return checked(reason="judge failed: segmentation: no judge credentials"), []
    try:
        seg = await inp.judge.ask(model=opts.judge_model, contents=SEGMENT_PROMPT.format(response=step.text),
                                  schema=Segmentation, config=opts.judge_model_config, sample=0)
    except JudgeError as exc:
        return checked(errors=[f"segmentation: {exc.reason}"], token_usage=exc.usage,
                       reason=f"judge failed: segmentation: {exc.reason}"), []
    seg_usage = seg.usage
    sentences = [s for s in seg.parsed.sentences if s.strip()] if seg.parsed is not None else []
    if not sentences:
        return checked(token_usage=seg_usage, reason="the judge found no sentences in the response"), []
    numbered = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(sentences))
    samples = await ask_samples(inp.judge, model=opts.judge_model,
                                prompt=LABEL_PROMPT.format(context=step.context, sentences=numbered),
                                schema=SentenceLabels, config=opts.judge_model_config,
                                num_samples=opts.num_samples)
    by_sentence: list[list[tuple[int, SentenceLabel]]] = [[] for _ in sentences]
    for s in samples:
        if s.parsed is not None:
            seen: set[int] = set()
            for item in s.parsed.sentences:
                k = item.index - 1
                if not 0 <= k < len(sentences):
                    # A judge that renumbered: fall back to the sentence text.
                    k = next((j for j, t in enumerate(sentences) if t.strip() == item.sentence.strip()), -1)
                if k < 0 or k in seen:
                    continue
                seen.add(k)
                by_sentence[k].append((s.index, item))
    spans = _locate(step.text, sentences)
    positives = 0
    labelled = 0
    verdicts: list[SentenceVerdict] = []
    for k, text in enumerate(sentences):
        votes = Counter(lab.label for _si, lab in by_sentence[k])
        pos = sum(votes[label] for label in POSITIVE)
        neg = sum(votes[label] for label in NEGATIVE)
        outcome = majority(pos, neg)
        winner: Label | None = None
        chosen: SentenceLabel | None = None
        if outcome is not None:
            side = POSITIVE if outcome else NEGATIVE
            # The commonest label on the winning side; ties go to the first in the side's order.
            label: Label = max(side, key=lambda lab: (votes[lab], -side.index(lab)))
            chosen = next(lab for _si, lab in by_sentence[k] if lab.label == label)
            winner = label
            labelled += 1
            positives += 1 if outcome else 0
        excerpts = [e for e in (chosen.supporting_excerpt, chosen.contradicting_excerpt) if e] if chosen else []
        verdicts.append(SentenceVerdict(
            text=text, source=step.source, step=step_no, votes=dict(votes), span=spans[k],
            samples=[SentenceSampleLabel(sample=si, label=lab.label, rationale=lab.rationale)
                     for si, lab in by_sentence[k]],
            label=winner,
            rationale=chosen.rationale if chosen else None,
            excerpt=" / ".join(excerpts) or None,
            supporting_excerpt=chosen.supporting_excerpt if chosen else None,
            contradicting_excerpt=chosen.contradicting_excerpt if chosen else None,
        ))
    score: float | None = None
    reason: str | None = None
    if labelled:
        score = positives / labelled
    elif not any(s.ok for s in samples):
        reason = failure_reason(s.error for s in samples if s.error)
    else:
        reason = "the judge labelled none of the sentences"
    record = checked(samples=[s.record() for s in samples], errors=sample_errors(samples),
                     token_usage=add_usage(seg_usage, sum_usage(samples)), score=score, reason=reason)
    return record, verdicts


async def evaluate(inp: MetricInput) -> MetricResult:
    import asyncio

    crit = inp.criterion

    async def score_one(i: int) -> InvocationMetricResult:
        steps = check_steps(inp, i)
        if not steps:
            return not_evaluated("no natural-language response to check")
        checked = list(await asyncio.gather(*(_check(inp, step, k) for k, step in enumerate(steps))))
        records = [record for record, _sentences in checked]
        sentences = [s for _record, found in checked for s in found]
        details = HallucinationDetails(
            steps=records,
            sentences=sentences,
            labels=dict(Counter(s.label for s in sentences if s.label)),
            errors=[e for r in records for e in r.errors],
            token_usage=add_usage(*(r.token_usage for r in records)),
        )
        scores = [r.score for r in records if r.score is not None]
        if not scores:
            return not_evaluated(next((r.reason for r in records if r.reason), "no sentence could be labelled"),
                                 details)
        # As ADK: each checked response scores its share of good sentences; the turn is their mean.
        return invocation_result(sum(scores) / len(scores), crit, details)

    return case_result(inp, await score_invocations(inp, score_one))
