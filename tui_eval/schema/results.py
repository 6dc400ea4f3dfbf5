"""Results of a run: per metric, per invocation, per case, per eval set, and the run record on disk.

Two serialisations: `to_adk()` is google-adk 2.13's EvalSetResult shape (what `--json` and the eval
history write, what `EvalSetResult.model_validate` accepts); `to_record()` / `from_record()` is our own
richer record (`RunRecordFile`) that also keeps NOT_EVALUATED reasons and the typed verdict details
(`schema.details`: alignments, judge votes, rubric verdicts, sentence labels) and judge errors.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, SkipValidation

from .details import (
    DurationDetails,
    JudgeCaseDetails,
    MetricDetails,
    RubricDetails,
    TokenUsageDetails,
    VertexCaseDetails,
    VertexDetails,
)
from .fast import adk_json_default, trusted
from .model import Invocation, ToolTiming
from .runrecord import HumanVerdict, JudgeVersion, NestedCall, ResultVersions, RunMeta
from .status import CASE_STATUSES, EvalStatus, combine_statuses

__all__ = ["CaseRecord", "CaseResult", "EvalSetResult", "EvalStatus", "InvocationMetricResult", "JudgeVersion",
           "MetricResult", "ResultVersions", "RunRecordFile", "SharedJson", "ToolTimingRecord", "combine_statuses",
           "counts_text", "status_counts", "status_for"]

T = TypeVar("T")


def _same(value: T) -> T:
    return value


# The user id google-adk 2.13 runs (and records) a case with when its session_input names none.
ADK_DEFAULT_USER_ID = "test_user_id"


def status_counts(cases: Iterable[CaseResult]) -> dict[EvalStatus, int]:
    """How many cases have each status (every status present, 0 when none): the one count the summary,
    `watch`'s lines, reports and the Python API's record give."""
    out = dict.fromkeys(EvalStatus, 0)
    for case in cases:
        out[case.status] += 1
    return out


def counts_text(counts: dict[EvalStatus, int]) -> str:
    """`1 passed, 3 failed, 0 not evaluated` (informational verdicts are never a case's status)."""
    return ", ".join(f"{counts.get(s, 0)} {s.label}" for s in CASE_STATUSES)


def status_for(score: float | None, threshold: float) -> EvalStatus:
    if score is None:
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


class _Result(BaseModel):
    # Results are built by our own code on the hot path: nested models pass through unvalidated
    # (pydantic's default), and records are validated when they load.
    # defer_build: the dashboard imports these at start-up but validates nothing until a record loads.
    # frozen: a result may be shared by several cases (metrics/efficiency.py), so none is rewritten in
    # place; a changed result is a copy (`model_copy(update=...)`).
    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, defer_build=True, frozen=True)


class InvocationMetricResult(_Result):
    """One metric's verdict on one turn. `details` is the metric's typed details model."""

    score: float | None = None
    status: EvalStatus
    reason: str | None = None
    details: MetricDetails | None = None

    @classmethod
    def not_evaluated(cls, reason: str, details: MetricDetails | None = None) -> InvocationMetricResult:
        """A turn the metric could not score, and why."""
        return cls(score=None, status=EvalStatus.NOT_EVALUATED, reason=reason, details=details)


class MetricResult(_Result):
    """One metric's verdict on a whole case, with its per-invocation verdicts."""

    metric_name: str
    threshold: float
    score: float | None = None
    status: EvalStatus
    criterion: dict[str, JsonValue] = Field(default_factory=dict)
    per_invocation: list[InvocationMetricResult] = Field(default_factory=list)
    reason: str | None = None
    details: MetricDetails | None = None

    @classmethod
    def not_evaluated(
        cls, metric_name: str, threshold: float, reason: str, criterion: dict[str, JsonValue] | None = None
    ) -> MetricResult:
        return cls(metric_name=metric_name, threshold=threshold, status=EvalStatus.NOT_EVALUATED,
                   criterion=criterion or {"threshold": threshold}, reason=reason)

    @classmethod
    def mean_of(
        cls, metric_name: str, threshold: float, criterion: dict[str, JsonValue],
        per_invocation: list[InvocationMetricResult],
    ) -> MetricResult:
        """The case verdict of a per-turn metric: the mean of its turn scores, summed in turn order
        and then divided, as ADK does (the same float result); NOT_EVALUATED with no turns."""
        if not per_invocation:
            return cls.not_evaluated(metric_name, threshold, "no invocations to score", criterion)
        total = 0.0
        for inv in per_invocation:
            if inv.score is None:
                return cls.not_evaluated(metric_name, threshold, inv.reason or "a turn was not scored", criterion)
            total += inv.score
        score = total / len(per_invocation)
        # Built by the deterministic metrics for every case of a run: no second validation.
        return trusted(cls, metric_name=metric_name, threshold=threshold, score=score,
                       status=status_for(score, threshold), criterion=criterion, per_invocation=per_invocation,
                       reason=None, details=None)

    @property
    def went_wrong(self) -> bool:
        """Whether a list of what went wrong names this metric: it did not pass, and it is not one of ADK's
        efficiency metrics (informational; a run's summary sums those up in one `efficiency:` line)."""
        if self.status == EvalStatus.PASSED:
            return False
        if self.status == EvalStatus.INFORMATIONAL:
            from .criteria import EFFICIENCY_METRICS  # the catalog stays off the dashboard's start-up path

            return self.metric_name not in EFFICIENCY_METRICS
        return True

    def turn(self, index: int) -> InvocationMetricResult | None:
        """Its verdict on turn `index` (0-based); None for a turn it gave none (a case-level metric)."""
        per_invocation = self.per_invocation
        return per_invocation[index] if index < len(per_invocation) else None

    def adk_metric(self, inv: InvocationMetricResult | None = None) -> dict[str, Any]:
        """An ADK EvalMetricResult dict (for the case, or for one invocation when `inv` is given): what
        the writer (`_adk_entries`) writes."""
        threshold, criterion = _adk_head(self)
        if inv is None:
            return _adk_entry(self.metric_name, threshold, criterion, self.score, self.status, self.details)
        return _adk_entry(self.metric_name, threshold, criterion, inv.score, inv.status, inv.details)

    def to_record(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> MetricResult:
        return cls.model_validate(d)


def _adk_details(source: BaseModel) -> dict[str, Any]:
    """ADK's EvalMetricResult `details` of one of our details models ({} for most)."""
    write = _ADK_DETAILS.get(type(source))
    if write is None:  # once per details class: which of ADK's details it fills
        write = _ADK_DETAILS[type(source)] = (
            _rubric_scores if isinstance(source, (RubricDetails, JudgeCaseDetails, VertexDetails, VertexCaseDetails))
            else _token_usage if isinstance(source, TokenUsageDetails)
            else _duration if isinstance(source, DurationDetails)
            else _no_details
        )
    return write(source)


def _rubric_scores(source: Any) -> dict[str, Any]:
    scores = source.rubric_scores
    if not scores:
        return {}
    return {"rubric_scores": [{"rubric_id": r.rubric_id, "rationale": r.rationale, "score": r.score} for r in scores]}


def _token_usage(source: Any) -> dict[str, Any]:
    return {"token_usage_details": source.to_adk()}


def _duration(source: Any) -> dict[str, Any]:
    return {"duration_details": source.to_adk()}


def _no_details(source: Any) -> dict[str, Any]:
    return {}


_ADK_DETAILS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _adk_head(m: MetricResult) -> tuple[float | None, dict[str, Any] | None]:
    """The threshold and criterion ADK writes with each of a metric's results: none for its
    informational metrics."""
    if m.status is EvalStatus.INFORMATIONAL and not m.criterion:
        return None, None
    return m.threshold, m.criterion or {"threshold": m.threshold}


def _adk_entry(name: str, threshold: float | None, criterion: dict[str, Any] | None, score: float | None,
               status: EvalStatus, details: BaseModel | None) -> dict[str, Any]:
    """One ADK EvalMetricResult dict."""
    return {"metric_name": name, "threshold": threshold, "criterion": criterion, "score": score,
            "eval_status": int(status), "details": {} if details is None else _adk_details(details)}


def _adk_entries(m: MetricResult) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A metric's ADK EvalMetricResult dicts: the case's, and one per turn verdict."""
    threshold, criterion = _adk_head(m)
    name = m.metric_name
    overall = _adk_entry(name, threshold, criterion, m.score, m.status, m.details)
    return overall, [_adk_entry(name, threshold, criterion, inv.score, inv.status, inv.details)
                     for inv in m.per_invocation]


def _model_dict(obj: object) -> dict[str, Any]:
    # Inside a metric result every model is written field by field (as the record writer does).
    if isinstance(obj, BaseModel):
        return obj.__dict__
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


_OPTIONS = orjson.OPT_NON_STR_KEYS
_FIRST = object()


class SharedJson:
    """One save's memo of metric results that several cases hold as one object (the informational
    metrics' results of replayed turns are shared: metrics/efficiency.py). The second time a save
    meets such an object its JSON is made once, as `orjson.Fragment`s the writer embeds verbatim, so
    the bytes are those of writing it in full. Keyed by id(): every result stays alive while its
    run's files are written, and results are never changed once built. A result met once costs one
    dict entry."""

    __slots__ = ("_adk", "_record")

    def __init__(self) -> None:
        self._adk: dict[int, object] = {}
        self._record: dict[int, object] = {}

    def adk_entries(self, m: MetricResult) -> tuple[Any, list[Any]]:
        """`_adk_entries(m)`, as Fragments from the second time on."""
        known = self._adk.get(id(m), _FIRST)
        if known is _FIRST:
            self._adk[id(m)] = None
            return _adk_entries(m)
        if known is None:
            overall, per_turn = _adk_entries(m)
            known = self._adk[id(m)] = (
                orjson.Fragment(orjson.dumps(overall, default=adk_json_default, option=_OPTIONS)),
                [orjson.Fragment(orjson.dumps(e, default=adk_json_default, option=_OPTIONS)) for e in per_turn],
            )
        return known  # type: ignore[return-value]

    def record_metric(self, m: MetricResult) -> Any:
        """`_record_metric(m)`, as one Fragment from the second time on."""
        known = self._record.get(id(m), _FIRST)
        if known is _FIRST:
            self._record[id(m)] = None
            return _record_metric(m)
        if known is None:
            known = self._record[id(m)] = orjson.Fragment(
                orjson.dumps(_record_metric(m), default=_model_dict, option=_OPTIONS))
        return known


class ToolTimingRecord(BaseModel):
    """Latency of one tool call, as our record keeps it."""

    model_config = ConfigDict(defer_build=True)

    name: str
    seconds: float
    call_id: str | None = None
    mocked: bool = False


class _CaseFields(_Result):
    eval_set_id: str
    eval_id: str
    status: EvalStatus
    metrics: list[MetricResult] = Field(default_factory=list)
    eval_set_file: str = ""
    session_id: str = ""
    user_id: str | None = None
    # Agent inference that raised: the case is FAILED and this says why.
    error: str | None = None
    wall_seconds: float = 0.0
    # The run record's per-case places (`runrecord.CasePlaces`, format /3): defaults for older records.
    #: What the result was computed from; None in records written before versions were kept.
    versions: ResultVersions | None = None
    repetition: int = 1
    nested_calls: dict[str, list[NestedCall]] = Field(default_factory=dict)
    final_session_state: dict[str, JsonValue] | None = None
    human_verdicts: list[HumanVerdict] = Field(default_factory=list)
    reruns_after_crash: int = 0


_CASE_FIELDS = tuple(_CaseFields.model_fields)


def _record_metric(metric: MetricResult) -> dict[str, Any]:
    """A MetricResult's fields with its turn verdicts and details as their own fields (see record_fields)."""
    out = dict(metric.__dict__)
    details = out["details"]
    if details is not None:
        out["details"] = details.__dict__
    out["per_invocation"] = [
        values if (values := inv.__dict__)["details"] is None else {**values, "details": values["details"].__dict__}
        for inv in out["per_invocation"]
    ]
    return out


class CaseRecord(_CaseFields):
    """A case as our run record keeps it: no turns (the ADK history file beside it holds them), but
    each turn's tool latencies."""

    tool_timings: list[list[ToolTimingRecord]] = Field(default_factory=list)


def nested_by_turn(actual: list[Invocation]) -> dict[str, list[NestedCall]]:
    """The calls made inside tool calls of each turn, by invocation id (`#N` for a turn without one): the
    record's per-case `nested_calls` place."""
    return {inv.invocation_id or f"#{i + 1}": inv.nested_calls for i, inv in enumerate(actual) if inv.nested_calls}


class CaseResult(_CaseFields):
    """Everything a run learnt about one eval case."""

    # The turns are our schema's objects, built and checked by the loader: never re-validated here.
    actual: SkipValidation[list[Invocation]] = Field(default_factory=list, exclude=True)
    expected: SkipValidation[list[Invocation] | None] = Field(default=None, exclude=True)

    def __repr__(self) -> str:
        # Compact on purpose: asyncio and logging repr results, and a full one holds every turn.
        return f"CaseResult({self.eval_set_id!r}, {self.eval_id!r}, {self.status.name})"

    __str__ = __repr__

    @property
    def scored_metrics(self) -> list[MetricResult]:
        """The metrics that decide the case (informational ones never do)."""
        return [m for m in self.metrics if m.status != EvalStatus.INFORMATIONAL]

    @property
    def evaluated_metrics(self) -> int:
        """How many of the deciding metrics gave a verdict (passed or failed)."""
        return sum(1 for m in self.scored_metrics if m.status != EvalStatus.NOT_EVALUATED)

    @property
    def metrics_total(self) -> int:
        return len(self.scored_metrics)

    def coverage_text(self) -> str | None:
        """`1 of 4 metrics evaluated` when some deciding metric was not evaluated; None when all were.

        ADK's status rule lets a case pass with metrics that never ran: every face says so with this."""
        total = self.metrics_total
        done = self.evaluated_metrics
        if done == total:
            return None
        return f"{done} of {total} metric{'' if total == 1 else 's'} evaluated"

    def metric(self, name: str) -> MetricResult | None:
        for m in self.metrics:
            if m.metric_name == name:
                return m
        return None

    def to_adk(self) -> dict[str, Any]:
        """An ADK EvalCaseResult dict."""
        return self._adk(Invocation.to_dict)

    def adk_shallow(self, shared: SharedJson | None = None) -> dict[str, Any]:
        """`to_adk()` with the turns left as models, for `orjson.dumps(..., default=adk_json_default)`:
        the same JSON without a dict tree per turn (the eval history writer). With `shared` (one per
        save), a metric result that several cases hold is serialised once (see SharedJson)."""
        return self._adk(_same, shared)

    def _adk(self, turn: Callable[[Invocation], Any], shared: SharedJson | None = None) -> dict[str, Any]:
        actual_turns = self.actual
        expected_turns = self.expected or ()
        overall: list[Any] = []
        per_turn: list[list[Any]] = [[] for _ in actual_turns]
        for m in self.metrics:
            entries = _adk_entries(m) if shared is None else shared.adk_entries(m)
            overall.append(entries[0])
            for results, entry in zip(per_turn, entries[1]):
                results.append(entry)
        per_invocation = [
            {
                "actual_invocation": turn(actual),
                "expected_invocation": turn(expected_turns[i]) if i < len(expected_turns) else None,
                "eval_metric_results": per_turn[i],
            }
            for i, actual in enumerate(actual_turns)
        ]
        out = {
            # As google-adk 2.13's LocalEvalService writes them: its (deprecated) eval_set_file holds
            # the eval set id, and a case without a session user ran as "test_user_id".
            "eval_set_file": self.eval_set_id,
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "final_eval_status": int(self.status),
            "overall_eval_metric_results": overall,
            "eval_metric_result_per_invocation": per_invocation,
            "session_id": self.session_id,
            "user_id": self.user_id or ADK_DEFAULT_USER_ID,
        }
        if self.reruns_after_crash:
            # Our one extra key (ADK reads case results with extra keys allowed): the case ran again after
            # the agent process it ran in died, and its tools with it.
            out["reruns_after_crash"] = self.reruns_after_crash
        return out

    def to_record(self) -> dict[str, Any]:
        """Our record of the case (a `CaseRecord` as JSON-ready dict). Turns are not repeated here: the
        ADK history file beside the record holds them (`from_record(..., actual=...)` joins them back)."""
        return self.as_record().model_dump(mode="json")

    def record_fields(self, shared: SharedJson | None = None) -> dict[str, Any]:
        """`as_record()`'s fields as plain dicts one or two levels deep, for `orjson.dumps` with a
        default that gives any other model's `__dict__` (the run record writer): no CaseRecord, and no
        call from orjson back into Python per metric, turn verdict and details (hundreds of thousands in
        a big run), which cost several times the dicts made here."""
        d = self.__dict__
        out = {name: d[name] for name in _CASE_FIELDS}
        if shared is None:
            out["metrics"] = [_record_metric(m) for m in d["metrics"]]
        else:
            out["metrics"] = [shared.record_metric(m) for m in d["metrics"]]
        out["tool_timings"] = [inv.tool_timings for inv in d["actual"]]
        return out

    def as_record(self) -> CaseRecord:
        # Our own, already typed values: no second validation.
        fields = {name: getattr(self, name) for name in _CaseFields.model_fields}
        timings = [[ToolTimingRecord.model_construct(name=t.name, seconds=t.seconds, call_id=t.call_id,
                                                     mocked=t.mocked)
                    for t in inv.tool_timings] for inv in self.actual]
        return CaseRecord.model_construct(**fields, tool_timings=timings)

    @classmethod
    def from_record(
        cls,
        d: dict[str, Any] | CaseRecord,
        actual: list[Invocation] | None = None,
        expected: list[Invocation] | None = None,
    ) -> CaseResult:
        record = d if isinstance(d, CaseRecord) else CaseRecord.model_validate(d)
        actual = actual or []
        for inv, timings in zip(actual, record.tool_timings):
            inv.tool_timings = [ToolTiming(name=t.name, seconds=t.seconds, call_id=t.call_id, mocked=t.mocked)
                                for t in timings]
        if record.nested_calls:
            for i, inv in enumerate(actual):
                inv.nested_calls = list(record.nested_calls.get(inv.invocation_id or f"#{i + 1}", ()))
        fields = {name: getattr(record, name) for name in _CaseFields.model_fields}
        return cls(**fields, actual=actual, expected=expected)


class EvalSetResult(_Result):
    """All case results of one eval set in one run."""

    eval_set_result_id: str
    eval_set_id: str
    creation_timestamp: float
    case_results: list[CaseResult] = Field(default_factory=list)
    eval_set_file: str = ""

    def __repr__(self) -> str:
        return f"EvalSetResult({self.eval_set_result_id!r}, {len(self.case_results)} cases)"

    __str__ = __repr__

    def to_adk(self) -> dict[str, Any]:
        return {
            "eval_set_result_id": self.eval_set_result_id,
            "eval_set_result_name": self.eval_set_result_id.replace("/", "_"),
            "eval_set_id": self.eval_set_id,
            "eval_case_results": [c.to_adk() for c in self.case_results],
            "creation_timestamp": self.creation_timestamp,
        }

    def counts(self) -> dict[EvalStatus, int]:
        return status_counts(self.case_results)


class RunRecordFile(RunMeta):
    """Our `.tui-eval.json` run record: one eval set's results in one run, beside ADK's history file
    (its metadata is `runrecord.RunMeta`, the places of format /3)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    cases: list[CaseRecord] = Field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        """Everything but the cases (what the history list shows)."""
        return self.model_dump(mode="json", exclude={"cases"})
