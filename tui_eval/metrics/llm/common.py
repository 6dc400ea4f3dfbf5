"""What every LLM-judged metric shares: sampling through the judge, voting, judge context, aggregation."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generic, Iterable, TypeVar

from pydantic import BaseModel

from ...schema.calls import pair_calls as pair_calls  # shared with mocked tools
from ...schema.config import Criterion
from ...schema.criteria import JudgeModelOptions
from ...schema.judge_model import parse_judge_model
from ...schema.model import (
    AppDetails,
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvents,
    content_text,
)
from ...schema.details import (
    HallucinationDetails,
    JudgeCaseDetails,
    JudgeDetails,
    JudgeSample,
    MetricDetails,
    RubricDetails,
    ResponseMatchJudgeDetails,
    RubricScore,
    SafetyDetails,
    SimulatorTurnDetails,
    TokenUsage,
    Votes,
)
from ...schema.results import EvalStatus, InvocationMetricResult, MetricResult, status_for
from ..base import MetricInput

if TYPE_CHECKING:  # pragma: no cover
    from ...judge.client import JudgeClient

T = TypeVar("T", bound=BaseModel)
D = TypeVar("D", bound=BaseModel)
logger = logging.getLogger(__name__)


# -- sampling -------------------------------------------------------------------------------------

@dataclass(slots=True)
class Sample(Generic[T]):
    """One judge sample: the parsed answer, or the reason it was dropped."""

    index: int
    parsed: T | None = None
    error: str | None = None
    raw_text: str | None = None
    usage: TokenUsage | None = None
    cached: bool = False
    latency: float = 0.0

    @property
    def ok(self) -> bool:
        return self.parsed is not None

    def record(self, **verdict: Any) -> JudgeSample:
        """What the dashboard shows for this sample; `verdict` holds the metric's verdict fields."""
        return self.record_as(JudgeSample, **verdict)

    def record_as(self, kind: type[D], **verdict: Any) -> D:
        """This sample as a details model of `kind` (JudgeSample, SimulatorSample), with `verdict`'s fields."""
        return kind(
            sample=self.index, cached=self.cached, latency=round(self.latency, 4),
            usage=self.usage, error=self.error,
            raw_text=self.raw_text[:2000] if self.error is not None and self.raw_text is not None else None,
            **verdict,
        )



async def ask_samples(
    judge: JudgeClient | None,
    *,
    model: str,
    prompt: str,
    schema: type[T],
    config: dict[str, Any] | None,
    num_samples: int,
    first_sample: int = 0,
) -> list[Sample[T]]:
    """`num_samples` samples of one prompt, concurrently (the judge service bounds what is in flight).
    A sample whose call failed or whose reply did not parse is kept with its reason, not raised."""
    from ...judge import JudgeError

    async def one(i: int) -> Sample[T]:
        if judge is None:  # the runner says so before asking; a metric called without a judge drops every sample
            return Sample(i, error="no judge credentials")
        try:
            reply = await judge.ask(model=model, contents=prompt, schema=schema, config=config, sample=i)
        except JudgeError as exc:
            # Kept in the details (errors, dropped samples); the log says it as it happens.
            logger.info("judge sample %d dropped (%s): %s", i, model, exc.reason)
            return Sample(i, error=exc.reason, raw_text=exc.text, usage=exc.usage)
        return Sample(i, parsed=reply.parsed, raw_text=reply.text, usage=reply.usage,
                      cached=reply.cached, latency=reply.latency)

    return list(await asyncio.gather(*(one(first_sample + i) for i in range(num_samples))))


def sum_usage(samples: Iterable[Sample[Any]]) -> TokenUsage:
    return TokenUsage.total(s.usage for s in samples if s.usage is not None)


def add_usage(*usages: TokenUsage) -> TokenUsage:
    return TokenUsage.total(list(usages))


def sample_errors(samples: Iterable[Sample[Any]]) -> list[str]:
    """One line per dropped sample, as the details keep them."""
    return [f"sample {s.index}: {s.error}" for s in samples if s.error]


def failure_reason(errors: Iterable[str]) -> str:
    """The NOT_EVALUATED reason when every sample was dropped: each distinct cause once."""
    distinct = list(dict.fromkeys(errors))
    if not distinct:
        return "judge gave no usable answer"
    return "judge failed: " + "; ".join(distinct)


# -- voting ---------------------------------------------------------------------------------------

def majority(positive: int, negative: int) -> bool | None:
    """True when strictly more positive than negative votes; a tie is negative; no votes is None."""
    if positive == 0 and negative == 0:
        return None
    return positive > negative


@dataclass(slots=True)
class Ballot(Generic[T]):
    """One prompt's samples and their yes / no votes (a sample that was dropped does not vote)."""

    samples: list[Sample[T]]
    votes: Votes

    @property
    def outcome(self) -> bool | None:
        """The majority (a tie is no); None when no sample voted."""
        return majority(self.votes.yes, self.votes.no)

    @property
    def errors(self) -> list[str]:
        """One line per dropped sample, as the details keep them."""
        return sample_errors(self.samples)

    @property
    def failure(self) -> str:
        """The NOT_EVALUATED reason when no sample voted."""
        return failure_reason(s.error for s in self.samples if s.error)

    @property
    def token_usage(self) -> TokenUsage:
        return sum_usage(self.samples)

    def records(self, verdict: Callable[[T], dict[str, Any]]) -> list[JudgeSample]:
        """What the dashboard shows of each sample: a parsed answer's `verdict(answer)` fields (verdict,
        rationale...), a dropped sample's reason."""
        return [s.record(**verdict(s.parsed)) if s.parsed is not None else s.record() for s in self.samples]

    def details(self, kind: type[D], records: list[Any], **fields: Any) -> D:
        """A turn's details of `kind`: the samples' records, the votes, dropped samples and tokens."""
        return kind(samples=records, votes=self.votes, errors=self.errors, token_usage=self.token_usage, **fields)


async def ask_and_vote(judge: Any, opts: JudgeModelOptions, prompt: str, schema: type[T],
                       says_yes: Callable[[T], bool]) -> Ballot[T]:
    """Ask `opts.num_samples` samples of one prompt; each parsed answer votes yes when `says_yes(answer)`."""
    samples = await ask_samples(judge, model=opts.judge_model, prompt=prompt, schema=schema,
                                config=opts.judge_model_config, num_samples=opts.num_samples)
    return Ballot(samples, Votes.count(says_yes(s.parsed) for s in samples if s.parsed is not None))


# -- the judge's view of an invocation -------------------------------------------------------------

#: The turn a yes / no verdict judge reads (final_response_match_v2, safety_v1): `prompt`, `response`.
PROMPT_AND_RESPONSE = """\
<user_prompt>
{prompt}
</user_prompt>

<agent_response>
{response}
</agent_response>
"""


def app_details_for(inp: MetricInput, index: int) -> AppDetails | None:
    """The actual turn's app details, else the expected turn's (recorded eval sets often carry them)."""
    actual = inp.actual[index]
    if actual.app_details is not None and actual.app_details.agent_details:
        return actual.app_details
    expected = inp.expected[index] if inp.expected is not None and index < len(inp.expected) else None
    if expected is not None and expected.app_details is not None:
        return expected.app_details
    return actual.app_details


def response_text(inv: Invocation | None, include_intermediate: bool = False) -> str:
    """The final response's text; with `include_intermediate`, every earlier text first (as ADK)."""
    if inv is None:
        return ""
    if not include_intermediate:
        return content_text(inv.final_response)
    parts = [text for _author, text in inv.intermediate_texts]
    final = content_text(inv.final_response)
    if final:
        parts.append(final)
    return "\n".join(parts)


def first_author(inv: Invocation) -> str | None:
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents) and data.invocation_events:
        return data.invocation_events[0].author
    return None


def developer_instructions(app: AppDetails | None, agent: str | None = None) -> str:
    """One agent's instructions (the turn's first author, else the first agent), or every agent's."""
    if app is None or not app.agent_details:
        return ""
    if agent is not None:
        details = app.agent_details.get(agent) or next(iter(app.agent_details.values()))
        return details.instructions or ""
    blocks = [f"{name}:\n{d.instructions}" for name, d in app.agent_details.items() if d.instructions]
    return "\n\n".join(blocks)


def tool_declarations_text(app: AppDetails | None) -> str:
    """Every agent's tool declarations as JSON; a plain sentence when there are none."""
    if app is None:
        return "The agent has no tools."
    tools = {name: list(d.tool_declarations) for name, d in app.agent_details.items() if d.tool_declarations}
    if not tools:
        return "The agent has no tools."
    return _dumps({"tool_declarations": tools})


def call_dict(call: FunctionCall) -> dict[str, Any]:
    out: dict[str, Any] = {"name": call.name, "args": call.args or {}}
    if call.id:
        out["id"] = call.id
    return out


def response_dict(resp: FunctionResponse) -> dict[str, Any]:
    out: dict[str, Any] = {"name": resp.name, "response": resp.response}
    if resp.id:
        out["id"] = resp.id
    return out


def tool_steps_text(inv: Invocation) -> str:
    """The turn's tool calls with their responses, numbered, as JSON."""
    steps = [
        {"step": i, "tool_call": call_dict(call),
         "tool_response": response_dict(resp) if resp is not None else None}
        for i, (call, resp) in enumerate(pair_calls(inv.tool_calls, inv.tool_responses))
    ]
    if not steps:
        return "The agent made no tool calls."
    return _dumps(steps)


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@dataclass(slots=True)
class Step:
    """What happened in a turn, in order: a text, or tool calls / responses (for step-wise context)."""

    author: str
    texts: list[str] = field(default_factory=list)
    calls: list[FunctionCall] = field(default_factory=list)
    responses: list[FunctionResponse] = field(default_factory=list)
    #: The event's grounding metadata (a model's search attributions), as recorded; None when it had none.
    grounding: Any = None


#: What the judges read when a turn carries no grounding metadata (ADK's words, so a judge reads the same).
NO_GROUNDING = "No grounding metadata was provided."


def grounding_text(steps: list[Step]) -> str:
    """The grounding metadata of `steps` as JSON, each entry with its step number and author (as ADK 2.13
    gives its judges); a plain sentence when there is none."""
    entries = [{"step": k, "author": s.author, "grounding_metadata": s.grounding}
               for k, s in enumerate(steps) if s.grounding]
    return _dumps({"grounding_metadata": entries}) if entries else NO_GROUNDING


def turn_steps(inv: Invocation) -> list[Step]:
    """The turn's events before the final response. With the tool_uses shape the order of texts and
    calls is not recorded: calls and responses come first, then the intermediate texts."""
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents):
        steps = []
        for event in data.invocation_events:
            content: Content | None = event.content
            parts = content.parts if content is not None and content.parts else []
            if not parts and not event.grounding_metadata:
                continue
            # As ADK: an event with grounding metadata and no parts is kept for its grounding.
            steps.append(Step(
                author=event.author,
                texts=[p.text for p in parts if p.text],
                calls=[p.function_call for p in parts if p.function_call],
                responses=[p.function_response for p in parts if p.function_response],
                grounding=event.grounding_metadata or None,
            ))
        return steps
    if isinstance(data, IntermediateData):
        steps = []
        if data.tool_uses or data.tool_responses:
            steps.append(Step(author="agent", calls=list(data.tool_uses), responses=list(data.tool_responses)))
        for author, parts in data.intermediate_responses:
            texts = [p.text for p in parts if p.text]
            if texts:
                steps.append(Step(author=author, texts=texts))
        return steps
    return []


def judge_identity(judge_model: str) -> dict[str, Any]:
    """The record's `judge_provider`, `judge_model` and `judge_endpoint` for a judge_model value."""
    ref = parse_judge_model(judge_model)
    return {"judge_provider": ref.provider, "judge_model": ref.model, "judge_endpoint": ref.base_url}


# -- running a metric over a case -----------------------------------------------------------------

ScoreFn = Callable[[int], Awaitable[InvocationMetricResult]]


async def score_invocations(inp: MetricInput, score_one: ScoreFn) -> list[InvocationMetricResult]:
    """Score every invocation concurrently; report each to the progress callback as it finishes."""

    async def run(i: int) -> InvocationMetricResult:
        result = await score_one(i)
        inp.progress(i)
        return result

    return list(await asyncio.gather(*(run(i) for i in range(len(inp.actual)))))


not_evaluated = InvocationMetricResult.not_evaluated


def invocation_result(score: float | None, crit: Criterion, details: MetricDetails,
                      reason: str | None = None) -> InvocationMetricResult:
    return InvocationMetricResult(score=score, status=status_for(score, crit.threshold), reason=reason,
                                  details=details)


def verdict_result(ballot: Ballot[Any], kind: type[ResponseMatchJudgeDetails | SafetyDetails],
                   records: list[JudgeSample], crit: Criterion, words: tuple[str, str],
                   **fields: Any) -> InvocationMetricResult:
    """A yes / no judge's turn: NOT_EVALUATED when no sample voted, else 1 or 0; its details of `kind` (the
    samples' `records`, the metric's own `fields`) with the winning side's word (`words` is (yes, no)) and
    one rationale from that side."""
    outcome = ballot.outcome
    if outcome is None:
        return not_evaluated(ballot.failure, ballot.details(kind, records, **fields))
    verdict = words[0] if outcome else words[1]
    rationale = next(r.rationale for r in records if r.verdict == verdict)
    details = ballot.details(kind, records, verdict=verdict, rationale=rationale, **fields)
    return invocation_result(1.0 if outcome else 0.0, crit, details)


def usage_of(result: InvocationMetricResult) -> TokenUsage:
    """The judge tokens a turn's verdict spent (none when it never reached the judge)."""
    details = result.details
    if isinstance(details, (JudgeDetails, RubricDetails, HallucinationDetails, SimulatorTurnDetails)):
        return details.token_usage
    return TokenUsage()


def case_result(
    inp: MetricInput,
    per_invocation: list[InvocationMetricResult],
    *,
    scores: list[float] | None = None,
    rubric_scores: list[RubricScore] | None = None,
) -> MetricResult:
    """Case score = mean of `scores` (default: the evaluated invocations' scores); NOT_EVALUATED with
    the first invocation's reason when nothing was evaluated."""
    crit = inp.criterion
    if scores is None:
        scores = [r.score for r in per_invocation if r.score is not None]
    details = JudgeCaseDetails(
        **judge_identity(crit.judge.judge_model),
        num_samples=crit.judge.num_samples,
        evaluated_invocations=sum(1 for r in per_invocation if r.score is not None),
        token_usage=TokenUsage.total([usage_of(r) for r in per_invocation]),
        rubric_scores=rubric_scores or [],
    )
    if not scores:
        reasons = [r.reason for r in per_invocation if r.reason]
        reason = reasons[0] if reasons else "no invocation could be evaluated"
        if len(per_invocation) > 1 and reasons:
            reason = f"no invocation was evaluated: {reasons[0]}"
        return MetricResult(metric_name=crit.metric_name, threshold=crit.threshold, status=EvalStatus.NOT_EVALUATED,
                            criterion=crit.to_dict(), per_invocation=per_invocation, reason=reason, details=details)
    score = sum(scores) / len(scores)
    return MetricResult(metric_name=crit.metric_name, threshold=crit.threshold, score=score,
                        status=status_for(score, crit.threshold), criterion=crit.to_dict(),
                        per_invocation=per_invocation, details=details)
