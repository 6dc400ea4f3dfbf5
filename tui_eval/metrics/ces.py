"""CES's view of a golden turn: tool invocation, parameter correctness, ordered invocation, semantic similarity
(0-4), hallucination and latency, judged with CES's thresholds.

A case imported from CES keeps its Evaluation under the `ces` key (tui_eval/schema/ces/mapping.py). An eval set
holding such cases gets these metrics added to its config (`with_ces_metrics`, called by the planner);
within that set a case without the key is NOT_EVALUATED ("not a CES case"), so every case of one file is
scored with one list of metrics, as the runner, reports and comparisons expect.

Thresholds, first found wins: the config's criterion when it names a threshold; the evaluation's
`evaluationMetricsThresholdOverride`; the thresholds CES recorded on the evaluation's last completed
result (the app's settings, which we cannot read otherwise); CES's defaults (semantic similarity >= 3,
tool invocation correctness 1.0, parameter correctness 1.0, extra tool calls FAIL).
"""

from __future__ import annotations

import dataclasses
import logging
import statistics
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from pydantic import BaseModel, Field, ValidationError

from ..schema.config import Criterion, EvalConfig
from ..schema.criteria import CATALOG
from ..schema.details import (
    ArgDiff,
    CesLatencyDetails,
    CesSemanticSimilarityDetails,
    CesToolCallResult,
    CesToolDetails,
    CesToolLatency,
    JudgeSample,
    Votes,
)
from ..schema.model import EvalCase, EvalSet, FunctionCall, Invocation, content_text
from ..schema.results import EvalStatus, InvocationMetricResult, MetricResult, combine_statuses, status_for
from .base import MetricInput, builtin

logger = logging.getLogger(__name__)

CES_KEY = "ces"
TOOL_INVOCATION = "ces_tool_invocation"
PARAMETER_CORRECTNESS = "ces_parameter_correctness"
TOOL_ORDERED_INVOCATION = "ces_tool_ordered_invocation"
SEMANTIC_SIMILARITY = "ces_semantic_similarity"
HALLUCINATION = "ces_hallucination"
LATENCY = "ces_latency"
# Pass or fail: a config that names any of these selects them; otherwise all are added.
SCORED = (TOOL_INVOCATION, PARAMETER_CORRECTNESS, SEMANTIC_SIMILARITY, HALLUCINATION)
# Never pass or fail (CES has no threshold for them): always added to an eval set with CES cases.
INFORMATIONAL = (TOOL_ORDERED_INVOCATION, LATENCY)
NOT_A_CES_CASE = "not a CES case (it has no 'ces' key)"

# CES's semantic similarity labels (SemanticSimilarityResult.label).
SIMILARITY_LABELS = {
    4: "Fully consistent",
    3: "Mostly consistent",
    2: "Partially consistent (minor omissions)",
    1: "Mostly inconsistent (major omissions)",
    0: "Fully inconsistent or contradictory",
}
# ADK's tool for handing over to another agent: CES expects transfers as agentTransfer, not as a tool call.
_TRANSFER = "transfer_to_agent"


# -- thresholds ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CesThresholds:
    """CES's EvaluationMetricsThresholds for one case, defaults filled in."""

    semantic_similarity: float = 3.0
    tool_invocation: float = 1.0
    parameter_correctness: float = 1.0
    extra_tool_call_behavior: Literal["FAIL", "ALLOW"] = "FAIL"
    hallucination_enabled: bool = True


DEFAULT_THRESHOLDS = CesThresholds()


def ces_evaluation(case: EvalCase) -> dict[str, Any] | None:
    """The CES Evaluation remainder a case carries (`{}` when the key holds no evaluation); None: not a CES case."""
    extra = case.model_extra or {}
    if CES_KEY not in extra:
        return None
    data = extra[CES_KEY]
    evaluation = data.get("evaluation") if isinstance(data, dict) else None
    return evaluation if isinstance(evaluation, dict) else {}


def is_ces_case(case: EvalCase) -> bool:
    return ces_evaluation(case) is not None


def _apply(base: CesThresholds, raw: Any, *, scenario: bool) -> CesThresholds:
    """`base` with what one EvaluationMetricsThresholds JSON object sets."""
    from ..schema.ces.model import EvaluationMetricsThresholds

    if not isinstance(raw, dict):
        return base
    try:
        model = EvaluationMetricsThresholds.model_validate(raw)
    except ValidationError as exc:
        logger.warning("unreadable CES thresholds %s: %s; using the others", raw, exc.errors()[0]["msg"])
        return base
    changes: dict[str, Any] = {}
    golden = model.golden_evaluation_metrics_thresholds
    if golden is not None:
        turn = golden.turn_level_metrics_thresholds
        if turn is not None and turn.semantic_similarity_success_threshold is not None:
            changes["semantic_similarity"] = float(turn.semantic_similarity_success_threshold)
        if turn is not None and turn.overall_tool_invocation_correctness_threshold is not None:
            changes["tool_invocation"] = float(turn.overall_tool_invocation_correctness_threshold)
        expect = golden.expectation_level_metrics_thresholds
        if expect is not None and expect.tool_invocation_parameter_correctness_threshold is not None:
            changes["parameter_correctness"] = float(expect.tool_invocation_parameter_correctness_threshold)
        matching = golden.tool_matching_settings
        if matching is not None and matching.extra_tool_call_behavior:
            # ALLOW is the only value that tolerates extra calls; FAIL and UNSPECIFIED mean CES's default.
            changes["extra_tool_call_behavior"] = (
                "ALLOW" if matching.extra_tool_call_behavior.upper() == "ALLOW" else "FAIL"
            )
    behavior = (model.scenario_hallucination_metric_behavior if scenario
                else model.golden_hallucination_metric_behavior) or model.hallucination_metric_behavior
    if behavior:
        changes["hallucination_enabled"] = behavior.upper() != "DISABLED"
    return dataclasses.replace(base, **changes)


def case_thresholds(case: EvalCase) -> CesThresholds:
    """The CES thresholds of a case: its evaluation's override over its last result's over CES's defaults."""
    evaluation = ces_evaluation(case) or {}
    out = DEFAULT_THRESHOLDS
    last = evaluation.get("lastCompletedResult")
    if isinstance(last, dict):
        out = _apply(out, last.get("evaluationMetricsThresholds"), scenario=case.is_scenario)
    return _apply(out, evaluation.get("evaluationMetricsThresholdOverride"), scenario=case.is_scenario)


def _given(crit: Criterion) -> bool:
    """Whether the config named this criterion's threshold (else CES's threshold for the case applies)."""
    return "threshold" in crit.raw


# -- adding the metrics to an eval set's config -------------------------------------------------------


def default_criterion(name: str) -> Criterion:
    """The criterion an added CES metric runs with: no threshold of its own (the case's CES ones apply)."""
    threshold = {SEMANTIC_SIMILARITY: 3.0}.get(name, 1.0) if name in SCORED else 0.0
    typed = CATALOG[name].criterion.model_validate({"threshold": threshold})
    return Criterion.of(name, typed, {})


def with_ces_metrics(config: EvalConfig, eval_set: EvalSet) -> EvalConfig:
    """`config` plus the CES metrics when the eval set has a case imported from CES (else `config` itself).

    The scored ones are added unless the config names some of them (then it has chosen); the
    informational ones always are. A new config is returned: configs are shared between files.
    """
    if not any(is_ces_case(c) for c in eval_set.eval_cases):
        return config
    add = [n for n in INFORMATIONAL if n not in config.criteria]
    if not any(n in config.criteria for n in SCORED):
        add[:0] = SCORED
    if not add:
        return config
    criteria = dict(config.criteria)
    for name in add:
        criteria[name] = default_criterion(name)
    return dataclasses.replace(config, criteria=criteria)


# -- tools ---------------------------------------------------------------------------------------------


def parameter_correctness(expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None
                          ) -> tuple[float, list[ArgDiff]]:
    """Share of the expected arguments the actual call has with an equal value (CES's
    parameterCorrectnessScore; extra actual arguments do not count), and the ones it lacks or changed."""
    expected = expected or {}
    actual = actual or {}
    if not expected:
        return 1.0, []
    diffs: list[ArgDiff] = []
    for key, value in expected.items():
        if key not in actual:
            diffs.append({"path": key, "kind": "missing", "expected": value})
        elif actual[key] != value:
            diffs.append({"path": key, "kind": "changed", "expected": value, "actual": actual[key]})
    return (len(expected) - len(diffs)) / len(expected), diffs


def _in_order(expected: list[str | None], actual: list[str | None]) -> int:
    """Length of the longest common subsequence of two name lists."""
    previous = [0] * (len(actual) + 1)
    for e in expected:
        row = [0]
        for j, a in enumerate(actual):
            row.append(previous[j] + 1 if e == a else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def tool_view(expected: list[FunctionCall], actual: list[FunctionCall], *, parameter_threshold: float,
              extra_behavior: Literal["FAIL", "ALLOW"]) -> CesToolDetails:
    """Pair each expected call with the unpaired actual call of the same tool that has the most of its
    arguments right (the first on a tie), and score the turn as CES does."""
    if not any(c.name == _TRANSFER for c in expected):
        actual = [c for c in actual if c.name != _TRANSFER]
    used: set[int] = set()
    tools: list[CesToolCallResult] = []
    for i, exp in enumerate(expected):
        best: tuple[int, float, list[ArgDiff]] | None = None
        for j, act in enumerate(actual):
            if j in used or act.name != exp.name:
                continue
            score, diffs = parameter_correctness(exp.args, act.args)
            if best is None or score > best[1]:
                best = (j, score, diffs)
        if best is None:
            tools.append(CesToolCallResult(index=i, tool=exp.name))
            continue
        used.add(best[0])
        tools.append(CesToolCallResult(
            index=i, tool=exp.name, actual_index=best[0], parameter_correctness_score=best[1],
            outcome="PASS" if best[1] >= parameter_threshold else "FAIL", arg_diffs=best[2],
        ))
    invoked = sum(1 for t in tools if t.actual_index is not None)
    extra = [j for j in range(len(actual)) if j not in used]
    return CesToolDetails(
        tool_invocation_score=invoked / len(expected) if expected else 1.0,
        tool_ordered_invocation_score=(
            _in_order([c.name for c in expected], [c.name for c in actual]) / len(expected) if expected else 1.0
        ),
        parameter_correctness_threshold=parameter_threshold,
        extra_tool_call_behavior=extra_behavior,
        tools=tools,
        extra_calls=extra,
        extra_call_names=[actual[j].name for j in extra],
    )


def _turn_tools(inp: MetricInput, i: int, thresholds: CesThresholds, parameter_threshold: float
                ) -> CesToolDetails:
    assert inp.expected is not None
    behavior = thresholds.extra_tool_call_behavior
    typed = inp.criterion.typed
    configured = getattr(typed, "extra_tool_call_behavior", None)
    if configured in ("FAIL", "ALLOW"):
        behavior = configured
    return tool_view(inp.expected[i].tool_calls, inp.actual[i].tool_calls,
                     parameter_threshold=parameter_threshold, extra_behavior=behavior)


def _case(name: str, threshold: float, inp: MetricInput, turns: list[InvocationMetricResult]) -> MetricResult:
    """A CES case verdict: the mean of the scored turns; FAILED when any turn failed (CES fails an
    evaluation on any failed turn check), NOT_EVALUATED when no turn was scored."""
    criterion = inp.criterion.to_dict()
    criterion["threshold"] = threshold
    scores = [t.score for t in turns if t.score is not None and t.status != EvalStatus.NOT_EVALUATED]
    if not scores:
        reason = next((t.reason for t in turns if t.reason), "no turn could be scored")
        return MetricResult(metric_name=name, threshold=threshold, status=EvalStatus.NOT_EVALUATED,
                            criterion=criterion, per_invocation=turns, reason=reason)
    # Scored turns that neither passed nor failed (CES's informational checks) leave the case informational.
    status = combine_statuses((t.status for t in turns), otherwise=EvalStatus.INFORMATIONAL)
    failed = next((f"turn {k + 1}: {t.reason}" for k, t in enumerate(turns)
                   if t.status == EvalStatus.FAILED and t.reason), None)
    return MetricResult(metric_name=name, threshold=threshold, score=sum(scores) / len(scores), status=status,
                        criterion=criterion, per_invocation=turns, reason=failed)


def _not_ces(name: str, inp: MetricInput) -> MetricResult:
    return MetricResult.not_evaluated(name, inp.criterion.threshold, NOT_A_CES_CASE, inp.criterion.to_dict())


def evaluate_tool_invocation(inp: MetricInput) -> MetricResult:
    """Per turn: CES's toolInvocationScore (share of expected calls invoked) against the overall tool
    invocation correctness threshold; an extra call fails the turn when extraToolCallBehavior is FAIL."""
    if not is_ces_case(inp.case) or inp.expected is None:
        return _not_ces(TOOL_INVOCATION, inp)
    cases = case_thresholds(inp.case)
    threshold = inp.criterion.threshold if _given(inp.criterion) else cases.tool_invocation
    turns: list[InvocationMetricResult] = []
    for i in range(len(inp.actual)):
        details = _turn_tools(inp, i, cases, cases.parameter_correctness)
        score = details.tool_invocation_score
        reasons = [f"{t.tool} not called" for t in details.tools if t.actual_index is None]
        status = status_for(score, threshold)
        if details.extra_calls and details.extra_tool_call_behavior == "FAIL":
            status = EvalStatus.FAILED
            reasons.append("extra tool call " + ", ".join(str(n) for n in details.extra_call_names)
                           + " (extraToolCallBehavior FAIL)")
        reason = "; ".join(reasons) if status == EvalStatus.FAILED else None
        turns.append(InvocationMetricResult(score=score, status=status, reason=reason, details=details))
        inp.progress(i)
    return _case(TOOL_INVOCATION, threshold, inp, turns)


def evaluate_parameter_correctness(inp: MetricInput) -> MetricResult:
    """Per expected tool call: CES's parameterCorrectnessScore against the expectation-level threshold (a
    call never made fails). A turn's score is the mean over its expected calls; it fails when any call does."""
    if not is_ces_case(inp.case) or inp.expected is None:
        return _not_ces(PARAMETER_CORRECTNESS, inp)
    cases = case_thresholds(inp.case)
    threshold = inp.criterion.threshold if _given(inp.criterion) else cases.parameter_correctness
    turns: list[InvocationMetricResult] = []
    for i in range(len(inp.actual)):
        details = _turn_tools(inp, i, cases, threshold)
        if not details.tools:
            turns.append(InvocationMetricResult.not_evaluated("the golden turn expects no tool call", details))
        else:
            score = sum(t.parameter_correctness_score or 0.0 for t in details.tools) / len(details.tools)
            failing = [t for t in details.tools if t.outcome == "FAIL"]
            reason = "; ".join(
                f"{t.tool} not called" if t.actual_index is None
                else f"{t.tool} parameters {t.parameter_correctness_score:.2f} < {threshold:g}"
                for t in failing
            ) or None
            turns.append(InvocationMetricResult(score=score, status=EvalStatus.FAILED if failing else EvalStatus.PASSED,
                                                reason=reason, details=details))
        inp.progress(i)
    return _case(PARAMETER_CORRECTNESS, threshold, inp, turns)


def evaluate_tool_ordered_invocation(inp: MetricInput) -> MetricResult:
    """Per turn: CES's toolOrderedInvocationScore (share of expected calls made in the expected order).
    CES sets no threshold for it: informational."""
    if not is_ces_case(inp.case) or inp.expected is None:
        return _not_ces(TOOL_ORDERED_INVOCATION, inp)
    cases = case_thresholds(inp.case)
    turns = []
    for i in range(len(inp.actual)):
        details = _turn_tools(inp, i, cases, cases.parameter_correctness)
        turns.append(InvocationMetricResult(score=details.tool_ordered_invocation_score,
                                            status=EvalStatus.INFORMATIONAL, details=details))
        inp.progress(i)
    return _case(TOOL_ORDERED_INVOCATION, inp.criterion.threshold, inp, turns)


def evaluate_latency(inp: MetricInput) -> MetricResult:
    """Per turn: its wall seconds and each tool call's (CES's turnLatency and toolCallLatencies);
    the case score is the mean turn latency. Informational."""
    if not is_ces_case(inp.case):
        return _not_ces(LATENCY, inp)
    turns = []
    for i, inv in enumerate(inp.actual):
        details = CesLatencyDetails(turn_seconds=inv.duration,
                                    tools=[CesToolLatency(name=t.name, seconds=t.seconds) for t in inv.tool_timings])
        if inv.duration is None:
            turns.append(InvocationMetricResult.not_evaluated("the agent did not time this turn", details))
        else:
            turns.append(InvocationMetricResult(score=inv.duration, status=EvalStatus.INFORMATIONAL,
                                                details=details))
        inp.progress(i)
    return _case(LATENCY, inp.criterion.threshold, inp, turns)


# -- semantic similarity ---------------------------------------------------------------------------


class SimilarityVerdict(BaseModel):
    """The judge's answer; reasoning first so the score follows from it."""

    reasoning: str = Field(description="What the agent's response keeps, omits or contradicts of the expected one.")
    score: int = Field(ge=0, le=4, description="4 fully consistent ... 0 fully inconsistent or contradictory")


SIMILARITY_PROMPT = """\
You compare an AI agent's response with the response a conversation designer expected at this turn.

Score how semantically consistent the agent's response is with the expected response, from 0 to 4:
4: Fully consistent: the same meaning; wording, order and formatting may differ.
3: Mostly consistent: the same key information, with small differences that do not matter to the user.
2: Partially consistent: minor omissions or additions that change some detail.
1: Mostly inconsistent: major omissions, or mostly different information.
0: Fully inconsistent or contradictory.

Judge meaning, not wording. Extra correct detail is not an inconsistency.

<user_input>
{prompt}
</user_input>

<agent_response>
{response}
</agent_response>

<expected_response>
{reference}
</expected_response>

Answer in JSON with "reasoning" (a short explanation) and "score" (an integer from 0 to 4).
"""


async def evaluate_semantic_similarity(inp: MetricInput) -> MetricResult:
    """Per turn: an LLM judge scores the agent's response against the golden's expected response on CES's
    0-4 scale (the median of the samples, rounded down); the turn passes at the success threshold."""
    if not is_ces_case(inp.case) or inp.expected is None:
        return _not_ces(SEMANTIC_SIMILARITY, inp)
    from .llm.common import ask_and_vote, score_invocations

    crit = inp.criterion
    opts = crit.judge
    threshold = crit.threshold if _given(crit) else case_thresholds(inp.case).semantic_similarity
    expected = inp.expected

    async def score_one(i: int) -> InvocationMetricResult:
        reference = content_text(expected[i].final_response)
        response = content_text(inp.actual[i].final_response)
        if not reference.strip():
            return InvocationMetricResult.not_evaluated("the golden turn expects no agent response")
        if not response.strip():
            details = CesSemanticSimilarityDetails(score=0, label=SIMILARITY_LABELS[0],
                                                   rationale="the agent gave no response")
            return InvocationMetricResult(score=0.0, status=status_for(0.0, threshold),
                                          reason="the agent gave no response", details=details)
        prompt = SIMILARITY_PROMPT.format(prompt=content_text(expected[i].user_content), response=response,
                                          reference=reference)
        ballot = await ask_and_vote(inp.judge, opts, prompt, SimilarityVerdict,
                                    lambda answer: answer.score >= threshold)
        scores = [s.parsed.score for s in ballot.samples if s.parsed is not None]
        records = ballot.records(lambda answer: {"verdict": str(answer.score), "rationale": answer.reasoning})
        if not scores:
            return InvocationMetricResult.not_evaluated(
                ballot.failure, ballot.details(CesSemanticSimilarityDetails, records, scores=scores))
        score = int(statistics.median_low(scores))
        details = ballot.details(CesSemanticSimilarityDetails, records, scores=scores, score=score,
                                 label=SIMILARITY_LABELS[score], verdict=str(score),
                                 rationale=next(r.rationale for r in records if r.verdict == str(score)))
        status = status_for(float(score), threshold)
        reason = f"{score} ({details.label}) < {threshold:g}" if status == EvalStatus.FAILED else None
        return InvocationMetricResult(score=float(score), status=status, reason=reason, details=details)

    return _case(SEMANTIC_SIMILARITY, threshold, inp, await score_invocations(inp, score_one))


# -- hallucination -------------------------------------------------------------------------------------


async def evaluate_hallucination(inp: MetricInput) -> MetricResult:
    """hallucinations_v1's judge on every turn, read as CES reads it: a turn whose sentences are all
    supported is justified (CES score 1), one with any unsupported sentence is not (0), one with
    nothing to check has no claim (-1, not evaluated). The default threshold 1.0 is that rule."""
    case = inp.case
    if not is_ces_case(case):
        return _not_ces(HALLUCINATION, inp)
    if not case_thresholds(case).hallucination_enabled:
        return MetricResult.not_evaluated(HALLUCINATION, inp.criterion.threshold,
                                          "the evaluation disables CES's hallucination check",
                                          inp.criterion.to_dict())
    from .llm import hallucinations

    result = await hallucinations.evaluate(inp)
    turns = [turn.model_copy(update={"reason": _ces_hallucination_reason(turn)}) for turn in result.per_invocation]
    return result.model_copy(update={"per_invocation": turns})


def _ces_hallucination_reason(turn: InvocationMetricResult) -> str | None:
    if turn.score is None:
        return f"CES score -1 (no claim to evaluate): {turn.reason}" if turn.reason else turn.reason
    if turn.score >= 1.0:
        return "CES score 1 (justified)"
    return "CES score 0 (not justified)"


# -- registry --------------------------------------------------------------------------------------------

TOOL_INVOCATION_SPEC = builtin(TOOL_INVOCATION, evaluate_tool_invocation,
                               "CES: share of the golden turn's tool calls the agent made (extra calls per CES's setting)")
PARAMETER_CORRECTNESS_SPEC = builtin(PARAMETER_CORRECTNESS, evaluate_parameter_correctness,
                                     "CES: share of each expected tool call's parameters the agent got right")
TOOL_ORDERED_INVOCATION_SPEC = builtin(TOOL_ORDERED_INVOCATION, evaluate_tool_ordered_invocation,
                                       "CES: share of the golden turn's tool calls made in the expected order")
SEMANTIC_SIMILARITY_SPEC = builtin(SEMANTIC_SIMILARITY, evaluate_semantic_similarity,
                                   "CES: an LLM judge scores the response against the golden's, 0 to 4")
HALLUCINATION_SPEC = builtin(HALLUCINATION, evaluate_hallucination,
                             "CES: is every claim of the response justified by the turn's context?")
LATENCY_SPEC = builtin(LATENCY, evaluate_latency, "CES: turn and tool-call latency (seconds)")
