"""Typed verdict details: what each metric learnt beyond its score, as pure data the UI and reports read.

Every details model carries a `kind` literal, so `MetricDetails` (a discriminated union) loads a run
record back into the right class. Metrics fill these; readers (dashboard, reports) only read fields and
never re-run metric code. Nothing here computes a verdict.

Trajectory alignments and their steps are TypedDicts, not models: a run aligns every turn of every case
(under three match types when EXACT fails), and a dict costs a fraction of a model's __init__; pydantic
still validates them, field by field, whenever a details model is built or a record loads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from typing_extensions import NotRequired, TypedDict

from .usage import TokenUsage

MatchTypeName = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
MATCH_TYPE_NAMES: tuple[MatchTypeName, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")
ExpectedStatus = Literal["matched", "missing"]
ActualStatus = Literal["matched", "extra", "out_of_order"]
SentenceLabelName = Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]

class _Details(BaseModel):
    """The base of every details model: records keep unknown keys out, field names are the JSON keys."""

    # defer_build: built on first validation or dump, not when the dashboard imports this module.
    # frozen, as the results that carry them (schema/results.py): a metric builds each details model
    # whole, never fills one in afterwards; a changed one is a copy.
    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True, frozen=True)


# --- trajectory ---------------------------------------------------------------------------------------
class ArgDiff(TypedDict):
    """One argument path where the expected and actual values differ."""

    path: str  # "sides", "filters.room", "items[2]"; "" is the whole args value (e.g. None vs {})
    kind: Literal["changed", "missing", "extra"]  # missing: only expected has it; extra: only actual
    expected: NotRequired[JsonValue]  # absent when kind == "extra"
    actual: NotRequired[JsonValue]  # absent when kind == "missing"


class ExpectedStep(TypedDict):
    """What became of one expected call."""

    index: int
    name: str | None
    status: ExpectedStatus
    actual_index: int | None  # the actual call that answered it (also when out of order or other args)
    arg_diffs: NotRequired[list[ArgDiff]]  # only on a missing call paired with a same-name call


class ActualStep(TypedDict):
    """How one actual call was judged."""

    index: int
    name: str | None
    status: ActualStatus
    expected_index: int | None
    arg_diffs: NotRequired[list[ArgDiff]]  # only on an extra call paired with a same-name expected call


class Alignment(TypedDict):
    """One match type's verdict on a turn's tool calls, call by call."""

    passed: bool
    expected: list[ExpectedStep]
    actual: list[ActualStep]


def alignment_counts(alignment: Alignment) -> dict[str, int]:
    """Calls per status: "missing" counts expected calls, the other statuses actual calls. An expected
    call the agent made at another place counts once, as out of order (not also as missing)."""
    out = {"matched": 0, "missing": 0, "extra": 0, "out_of_order": 0}
    moved = {a["expected_index"] for a in alignment["actual"] if a["status"] == "out_of_order"}
    for e in alignment["expected"]:
        if e["status"] == "missing" and e["index"] not in moved:
            out["missing"] += 1
    for a in alignment["actual"]:
        out[a["status"]] += 1
    return out


class TrajectoryDetails(_Details):
    """tool_trajectory_avg_score on one turn: the alignment under every match type.

    `match_type` is the one the criterion named (the verdict). `in_order` / `any_order` are None when
    they equal `exact` (an EXACT pass pairs every call in place under all three types).
    """

    kind: Literal["trajectory"] = "trajectory"
    match_type: MatchTypeName = "EXACT"
    ignore_args: bool = False
    exact: Alignment
    in_order: Alignment | None = None
    any_order: Alignment | None = None

    def alignment(self, match_type: MatchTypeName | None = None) -> Alignment:
        """The alignment under `match_type` (default: the configured one)."""
        name = match_type or self.match_type
        if name == "IN_ORDER":
            return self.in_order or self.exact
        if name == "ANY_ORDER":
            return self.any_order or self.exact
        return self.exact

    def alignments(self) -> dict[MatchTypeName, Alignment]:
        return {name: self.alignment(name) for name in MATCH_TYPE_NAMES}


# --- response_match_score ---------------------------------------------------------------------------
class RougeDetails(_Details):
    """response_match_score on one turn: ROUGE-1 precision, recall and the token counts behind them."""

    kind: Literal["rouge"] = "rouge"
    precision: float
    recall: float
    shared_tokens: int = 0  # tokens counted on both sides (min of the two counts, summed)
    candidate_tokens: int = 0
    reference_tokens: int = 0


# --- judges -------------------------------------------------------------------------------------------
class Votes(_Details):
    """Sample votes: `yes` for the positive side (valid, safe, yes, supported), `no` for the other."""

    yes: int = 0
    no: int = 0

    @classmethod
    def count(cls, answers: Iterable[bool]) -> Votes:
        """The votes of the samples' yes (True) / no (False) answers."""
        listed = list(answers)
        yes = sum(listed)
        return cls(yes=yes, no=len(listed) - yes)

    @property
    def total(self) -> int:
        return self.yes + self.no

    @property
    def text(self) -> str:
        """`4/5`: positive votes over counted votes."""
        return f"{self.yes}/{self.total}"


def dropped(samples: Iterable[JudgeSample | SimulatorSample]) -> int:
    """How many judge samples were dropped: their call failed or their reply did not parse."""
    return sum(1 for s in samples if s.error is not None)


class JudgeSample(_Details):
    """One judge sample: its verdict and rationale, or why it was dropped."""

    sample: int
    cached: bool = False
    latency: float = 0.0
    usage: TokenUsage | None = None
    error: str | None = None  # set when the sample was dropped (call failed, reply did not parse)
    raw_text: str | None = None  # the unparseable reply, first 2,000 characters
    verdict: str | None = None
    rationale: str | None = None
    violated_policies: list[str] = Field(default_factory=list)


class JudgeDetails(_Details):
    """What every sampled judge verdict keeps: samples, votes, dropped-sample errors, tokens."""

    samples: list[JudgeSample] = Field(default_factory=list)
    votes: Votes = Field(default_factory=Votes)
    errors: list[str] = Field(default_factory=list)  # one per dropped sample
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    verdict: str | None = None  # the majority verdict (None: no usable sample)
    rationale: str | None = None  # one rationale from the winning side

    @property
    def dropped_samples(self) -> int:
        return dropped(self.samples)


class ResponseMatchJudgeDetails(JudgeDetails):
    """final_response_match_v2 on one turn: `verdict` is "valid" or "invalid"."""

    kind: Literal["final_response_match"] = "final_response_match"


class SafetyDetails(JudgeDetails):
    """safety_v1 on one turn: `verdict` is "safe" or "unsafe", with the policies the unsafe votes named."""

    kind: Literal["safety"] = "safety"
    violated_policies: list[str] = Field(default_factory=list)


# --- rubrics ------------------------------------------------------------------------------------------
class RubricSampleVerdict(_Details):
    """One sample's verdict on one rubric."""

    sample: int
    verdict: Literal["yes", "no"]
    rationale: str
    evidence: str | None = None


class RubricVerdict(_Details):
    """The voted verdict on one rubric for one turn."""

    rubric_id: str
    text: str | None = None
    type: str | None = None
    verdict: Literal["yes", "no"] | None = None  # None: no sample judged this rubric
    score: float | None = None
    votes: Votes = Field(default_factory=Votes)
    rationale: str | None = None  # one rationale from the winning side
    samples: list[RubricSampleVerdict] = Field(default_factory=list)


class RubricScore(_Details):
    """ADK's RubricScore: what the ADK results file keeps of a rubric verdict."""

    rubric_id: str
    rationale: str | None = None
    score: float | None = None


class RubricDetails(_Details):
    """A rubric metric on one turn: per rubric its votes, verdict and rationales."""

    kind: Literal["rubrics"] = "rubrics"
    rubrics: list[RubricVerdict] = Field(default_factory=list)
    samples: list[JudgeSample] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    unmatched_rubric_ids: list[str] = Field(default_factory=list)  # ids the judge made up

    @property
    def rubric_scores(self) -> list[RubricScore]:
        return [RubricScore(rubric_id=r.rubric_id, rationale=r.rationale, score=r.score) for r in self.rubrics]

    @property
    def dropped_samples(self) -> int:
        return dropped(self.samples)


# --- hallucinations -----------------------------------------------------------------------------------
class SentenceSampleLabel(_Details):
    """One sample's label on one sentence."""

    sample: int
    label: SentenceLabelName
    rationale: str


class SentenceVerdict(_Details):
    """One sentence of a checked response, its voted label, rationale and excerpt."""

    text: str
    label: SentenceLabelName | None = None  # None: no majority
    rationale: str | None = None
    excerpt: str | None = None  # the supporting and/or contradicting excerpt, joined
    supporting_excerpt: str | None = None
    contradicting_excerpt: str | None = None
    source: Literal["final", "intermediate"] = "final"
    step: int = 0  # index into HallucinationDetails.steps
    votes: dict[str, int] = Field(default_factory=dict)  # label -> samples that gave it
    span: tuple[int, int] | None = None  # where the sentence sits in its step's text
    samples: list[SentenceSampleLabel] = Field(default_factory=list)


class CheckedResponse(_Details):
    """One response hallucinations_v1 checked: the final one, or an intermediate one."""

    source: Literal["final", "intermediate"] = "final"
    author: str | None = None
    text: str = ""
    score: float | None = None
    reason: str | None = None  # why it has no score
    errors: list[str] = Field(default_factory=list)
    samples: list[JudgeSample] = Field(default_factory=list)
    token_usage: TokenUsage = Field(default_factory=TokenUsage)


class HallucinationDetails(_Details):
    """hallucinations_v1 on one turn: every checked response and every sentence's label."""

    kind: Literal["hallucinations"] = "hallucinations"
    steps: list[CheckedResponse] = Field(default_factory=list)
    sentences: list[SentenceVerdict] = Field(default_factory=list)
    labels: dict[str, int] = Field(default_factory=dict)  # label -> sentences
    errors: list[str] = Field(default_factory=list)
    token_usage: TokenUsage = Field(default_factory=TokenUsage)

    @property
    def dropped_samples(self) -> int:
        return dropped(s for st in self.steps for s in st.samples)


# --- user simulator -----------------------------------------------------------------------------------
class SimulatorCriterionVerdict(_Details):
    """One criterion of the simulator-quality rubric, as one sample judged it."""

    name: str
    reasoning: str
    passes: bool


class SimulatorSample(_Details):
    """One judge sample on one simulated user message."""

    sample: int
    cached: bool = False
    latency: float = 0.0
    usage: TokenUsage | None = None
    error: str | None = None
    raw_text: str | None = None
    is_valid: bool | None = None
    criteria: list[SimulatorCriterionVerdict] = Field(default_factory=list)


class SimulatorTurnDetails(_Details):
    """per_turn_user_simulator_quality_v1 on one turn (or on the stop signal)."""

    kind: Literal["simulator_turn"] = "simulator_turn"
    user_text: str
    turn_kind: Literal["starting_prompt", "user_message", "stop_signal"] = "user_message"
    judged: bool = True  # False for turn 1 (compared with the starting prompt, no judge)
    verdict: bool | None = None
    rationale: str | None = None
    failed_criteria: list[str] = Field(default_factory=list)
    votes: Votes = Field(default_factory=Votes)
    samples: list[SimulatorSample] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    token_usage: TokenUsage = Field(default_factory=TokenUsage)

    @property
    def dropped_samples(self) -> int:
        return dropped(self.samples)


# --- case level -----------------------------------------------------------------------------------
class StopSignalVerdict(_Details):
    """The simulator-quality verdict on ending the conversation when it did."""

    score: float | None = None
    status: int = 3
    reason: str | None = None
    details: SimulatorTurnDetails | None = None


class JudgeCaseDetails(_Details):
    """An LLM-judged metric on a whole case: the judge used, tokens, and (rubric metrics) rubric means."""

    kind: Literal["judge_case"] = "judge_case"
    # Who judged: "gemini" (google-genai) or "openai" (an OpenAI-compatible server); records written
    # before there was a choice were all Gemini.
    judge_provider: str = "gemini"
    # The model name the provider knows (without the `openai:` prefix) and, when the judge_model named
    # one, the endpoint that served it.
    judge_model: str = ""
    judge_endpoint: str | None = None
    num_samples: int = 0
    evaluated_invocations: int = 0
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    rubric_scores: list[RubricScore] = Field(default_factory=list)  # mean per rubric over the turns
    # per_turn_user_simulator_quality_v1 only:
    stop_signal: str | None = None
    stop_signal_turn: StopSignalVerdict | None = None


# --- CES (Customer Engagement Suite) view of a golden turn (tui_eval/metrics/ces.py) -----------------
CesOutcome = Literal["PASS", "FAIL"]


class CesToolCallResult(_Details):
    """One expected tool call of a turn, as CES's ToolInvocationResult judges it."""

    index: int  # among the turn's expected calls
    tool: str | None
    actual_index: int | None = None  # the actual call paired with it (same tool); None: never invoked
    # Share of the expected arguments the actual call has with the same value; None: never invoked.
    parameter_correctness_score: float | None = None
    outcome: CesOutcome = "FAIL"  # PASS: invoked and parameter_correctness_score >= its threshold
    arg_diffs: list[ArgDiff] = Field(default_factory=list)  # "missing" / "changed" expected arguments


class CesToolDetails(_Details):
    """ces_tool_invocation / ces_parameter_correctness / ces_tool_ordered_invocation on one turn."""

    kind: Literal["ces_tools"] = "ces_tools"
    tool_invocation_score: float  # share of expected calls invoked (1.0 when none was expected)
    tool_ordered_invocation_score: float  # share invoked in the expected order (longest common subsequence)
    parameter_correctness_threshold: float
    extra_tool_call_behavior: Literal["FAIL", "ALLOW"]
    tools: list[CesToolCallResult] = Field(default_factory=list)
    extra_calls: list[int] = Field(default_factory=list)  # actual calls paired with no expected call
    extra_call_names: list[str | None] = Field(default_factory=list)


class CesSemanticSimilarityDetails(JudgeDetails):
    """ces_semantic_similarity on one turn: the judge's 0-4 score (median of the samples) and CES's label."""

    kind: Literal["ces_semantic_similarity"] = "ces_semantic_similarity"
    score: int | None = None
    label: str | None = None
    scores: list[int] = Field(default_factory=list)  # per usable sample


class CesToolLatency(_Details):
    name: str
    seconds: float


class CesLatencyDetails(_Details):
    """ces_latency on one turn: the turn's wall time and each tool call's execution time."""

    kind: Literal["ces_latency"] = "ces_latency"
    turn_seconds: float | None = None
    tools: list[CesToolLatency] = Field(default_factory=list)


# --- Vertex AI evaluation service (VERTEX block: keep together) --------------------------------------
class VertexRubricVerdict(_Details):
    """One adaptive rubric Vertex judged (multi_turn_* metrics): ADK keeps it as a RubricScore."""

    rubric_id: str  # as ADK names it: the rubric's description, else its id, else rubric_<n>
    description: str | None = None
    verdict: bool = False  # Vertex omits `verdict` when the rubric is not met
    reasoning: str | None = None


class VertexDetails(_Details):
    """A Vertex-backed metric on one turn (or, multi-turn metrics, on the whole conversation)."""

    kind: Literal["vertex"] = "vertex"
    metric_spec: str  # the service's metric: safety_v1, multi_turn_task_success_v1, coherence
    score: float | None = None
    explanation: str | None = None
    rubric_verdicts: list[VertexRubricVerdict] = Field(default_factory=list)
    error: str | None = None  # what Vertex (or the call) reported instead of a score
    attempts: int = 0
    latency: float = 0.0

    @property
    def rubric_scores(self) -> list[RubricScore]:
        """ADK's `rubric_scores` for this verdict: the rubrics, then the explanation and the error."""
        out = [RubricScore(rubric_id=v.rubric_id, rationale=v.reasoning, score=1.0 if v.verdict else 0.0)
               for v in self.rubric_verdicts]
        if self.explanation:
            out.append(RubricScore(rubric_id="explanation", rationale=self.explanation))
        if self.error:
            out.append(RubricScore(rubric_id="error", rationale=self.error))
        return out


class VertexCaseDetails(_Details):
    """A Vertex-backed metric on a whole case: where it ran and (multi-turn) the overall rubric scores."""

    kind: Literal["vertex_case"] = "vertex_case"
    metric_spec: str
    project: str = ""
    location: str = ""
    evaluated_invocations: int = 0
    rubric_scores: list[RubricScore] = Field(default_factory=list)


# --- efficiency (informational) -----------------------------------------------------------------------
class TokenUsageDetails(_Details):
    """token_usage_v1 on one turn (or averaged over a case): ADK's TokenUsageDetails, count by count.

    The counts nest: total = input + output; prompt, cached and tool_use are parts of input; candidates
    and reasoning parts of output. None means no model call reported that count (n/a), never zero.
    """

    kind: Literal["token_usage"] = "token_usage"
    total_tokens: float | None = None
    input_tokens: float | None = None
    prompt_tokens: float | None = None
    cached_tokens: float | None = None
    tool_use_tokens: float | None = None
    output_tokens: float | None = None
    candidates_tokens: float | None = None
    reasoning_tokens: float | None = None

    def to_adk(self) -> dict[str, float | None]:
        """ADK's TokenUsageDetails dict (no `kind`)."""
        values = self.__dict__  # (a run writes one per turn: plain dict reads, not attribute lookups)
        return {name: values[name] for name in TOKEN_USAGE_FIELDS}


TOKEN_USAGE_FIELDS: tuple[str, ...] = ("total_tokens", "input_tokens", "prompt_tokens", "cached_tokens",
                                       "tool_use_tokens", "output_tokens", "candidates_tokens", "reasoning_tokens")


class DurationDetails(_Details):
    """invocation_duration_v1 on one turn (or averaged over a case): where the turn's seconds went.

    model + tool + framework = total; None when the turn was not timed by this run (n/a, never zero).
    """

    kind: Literal["duration"] = "duration"
    total_seconds: float | None = None
    model_seconds: float | None = None
    tool_seconds: float | None = None
    framework_seconds: float | None = None

    def to_adk(self) -> dict[str, float | None]:
        """ADK's DurationDetails dict (no `kind`)."""
        values = self.__dict__
        return {name: values[name] for name in DURATION_FIELDS}


DURATION_FIELDS: tuple[str, ...] = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")


def framework_seconds(total: float, model: float | None, tool: float | None) -> float | None:
    """What a turn's seconds leave to the framework once model and tool time are taken (ADK 2.13's duration
    details): clamped at zero (the parts close a hair after the total); unknown when a part is unknown."""
    return None if model is None or tool is None else round(max(total - model - tool, 0.0), 3)


class StateKeyDiff(_Details):
    """One key of the session state where expected and actual differ, with the reason in words."""

    key: str
    status: Literal["missing", "unexpected", "changed"]
    expected: JsonValue = None
    actual: JsonValue = None
    reason: str


class SessionStateDetails(_Details):
    """final_session_state_v1 on a case: the state compared, how, and every key that differs."""

    kind: Literal["session_state"] = "session_state"
    compare: Literal["exact", "named_keys"] = "exact"
    expected: dict[str, JsonValue] = Field(default_factory=dict)
    actual: dict[str, JsonValue] = Field(default_factory=dict)
    diffs: list[StateKeyDiff] = Field(default_factory=list)


def _shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def state_diff(expected: dict[str, Any], actual: dict[str, Any],
               compare: Literal["exact", "named_keys"] = "exact") -> list[StateKeyDiff]:
    """Every key where `actual` differs from `expected`, in the expected keys' order then the extra ones,
    each with its reason in words. With `named_keys`, keys the case does not name are not compared."""
    out: list[StateKeyDiff] = []
    for key, want in expected.items():
        if key not in actual:
            out.append(StateKeyDiff(key=key, status="missing", expected=want,
                                    reason=f"{key}: expected {_shown_value(want)}, the session has no such key"))
        elif actual[key] != want:
            out.append(StateKeyDiff(key=key, status="changed", expected=want, actual=actual[key],
                                    reason=f"{key}: expected {_shown_value(want)}, got {_shown_value(actual[key])}"))
    if compare == "exact":
        for key, got in actual.items():
            if key not in expected:
                out.append(StateKeyDiff(key=key, status="unexpected", actual=got,
                                        reason=f"{key}: not expected, the session has {_shown_value(got)}"))
    return out



MetricDetails = Annotated[
    Union[
        TrajectoryDetails,
        RougeDetails,
        ResponseMatchJudgeDetails,
        SafetyDetails,
        RubricDetails,
        HallucinationDetails,
        SimulatorTurnDetails,
        JudgeCaseDetails,
        CesToolDetails,
        CesSemanticSimilarityDetails,
        CesLatencyDetails,
        VertexDetails,
        VertexCaseDetails,
        TokenUsageDetails,
        DurationDetails,
        SessionStateDetails,
    ],
    Field(discriminator="kind"),
]
