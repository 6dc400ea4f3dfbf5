"""Failures grouped by cause: what failed in each case, read from its typed verdict details (no LLM).

`causes_of(case)` names every reason a case did not pass, or had a metric not evaluated, as short
stable labels (`missing call escalate_to_human`, `arg sides differs in roll_die`, `response below 0.8`,
`rubric 'grounded' failed`, `judge: unsupported sentences`, `agent error: TimeoutError`,
`not evaluated: no judge credentials`), so equal causes in different cases read the same.
`group_by_cause(results)` counts the cases under each label: failure causes first, most cases first,
then what was not evaluated. The CLI summary, `--print-detailed-results`, the Markdown report and the
dashboard's causes view all show these groups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal, NamedTuple, Sequence

from ..schema.details import (
    ArgDiff,
    CesSemanticSimilarityDetails,
    CesToolDetails,
    HallucinationDetails,
    ResponseMatchJudgeDetails,
    RubricDetails,
    SafetyDetails,
    SimulatorTurnDetails,
    TrajectoryDetails,
    VertexDetails,
)
from ..schema.results import CaseResult, EvalSetResult, InvocationMetricResult, MetricResult
from ..schema.status import EvalStatus

CauseKind = Literal["failed", "agent error", "infrastructure", "not evaluated"]
#: Groups are listed in this order of kinds, then by how many cases they hold.
KIND_ORDER: tuple[CauseKind, ...] = ("failed", "agent error", "infrastructure", "not evaluated")
# A label is one line of at most this many characters (a reason or error text may be long).
MAX_LABEL = 100

_BAD_LABELS = ("unsupported", "contradictory", "disputed")
# An outage of a service the agent calls (its model API), not a fault of the agent: a retryable HTTP status
# as google-genai words it (`503 UNAVAILABLE`), or a transport / rate-limit exception of genai, httpx or openai.
_HTTP_OUTAGE = re.compile(r"\b(408|429|500|502|503|504) (?:[A-Z][A-Z_]+|Too Many Requests|Service Unavailable|"
                          r"Gateway Timeout|Bad Gateway|Internal Server Error|Request Timeout)")
_OUTAGE_EXCEPTIONS = re.compile(r"\b(ServerError|ConnectError|ConnectTimeout|ReadTimeout|WriteTimeout|PoolTimeout|"
                                r"RemoteProtocolError|APIConnectionError|APITimeoutError|RateLimitError|"
                                r"InternalServerError|ServiceUnavailableError)\b"
                                # Ray's infrastructure stopped the case (executors/ray_driver.py NODE_LOST, CLUSTER_FAILED)
                                r"|\bRay (?:node lost|cluster failed)\b")
_EXCEPTION = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Timeout))\b")


@dataclass(frozen=True, slots=True)
class Cause:
    """One reason a case did not pass (or was not fully evaluated), and the metric it came from."""

    label: str
    kind: CauseKind
    metric: str | None = None


@dataclass(frozen=True, slots=True)
class CaseRef:
    """A case a group holds: its eval set and file, and the repetition (1-based) it failed in."""

    eval_set_id: str
    eval_file: str
    eval_id: str
    status: EvalStatus
    repetition: int = 1


@dataclass(slots=True)
class CauseGroup:
    """Every case with one cause."""

    label: str
    kind: CauseKind
    cases: list[CaseRef] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.cases)


def _one_line(text: str) -> str:
    line = " ".join(text.split("\n", 1)[0].split())
    return line if len(line) <= MAX_LABEL else line[: MAX_LABEL - 1] + "…"


def _name(name: str | None) -> str:
    return name or "?"


def infrastructure_error(error: str | None) -> str | None:
    """What outage an agent error was (`503 UNAVAILABLE`, `ConnectError`), or None when it is the agent's
    own failure. A run whose only failures are outages is incomplete (exit 3), never a regression."""
    if not error:
        return None
    first = error.split("\n", 1)[0]
    match = _HTTP_OUTAGE.search(first) or _OUTAGE_EXCEPTIONS.search(first)
    return match.group(0) if match else None


def verdict_status(case: CaseResult) -> EvalStatus:
    """A case's status as a verdict on the agent: a case failed by an outage (`infrastructure_error`)
    has no verdict (NOT_EVALUATED); any other case, its own status. Compares and the exit code use it."""
    if case.status == EvalStatus.FAILED and case.error and infrastructure_error(case.error) is not None:
        return EvalStatus.NOT_EVALUATED
    return case.status


def strict_status(status: EvalStatus, metrics: Iterable[MetricResult]) -> EvalStatus:
    """A case's status in a strict run (`--strict`, `strict=True`): a case with any metric not evaluated
    (or no verdict at all) fails, instead of passing on the metrics that ran as ADK does. The engine
    records it; the Python API applies it when asked to judge a lenient run strictly."""
    if status != EvalStatus.FAILED and (
            status == EvalStatus.NOT_EVALUATED or any(m.status == EvalStatus.NOT_EVALUATED for m in metrics)):
        return EvalStatus.FAILED
    return status


def agent_error_label(error: str) -> str:
    """`agent error: TimeoutError` (the exception's type when the text names one), `agent error: timed
    out`, else the error's first line."""
    first = error.split("\n", 1)[0]
    match = _EXCEPTION.search(first)
    if match:
        return f"agent error: {match.group(1)}"
    if "timed out" in first.lower():
        return "agent error: timed out"
    return "agent error: " + _one_line(re.sub(r"\d+(\.\d+)?", "N", first))


def _arg_labels(call: str, diffs: Iterable[dict[str, object]]) -> list[str]:
    out = []
    for d in diffs:
        path = str(d.get("path") or "")
        out.append(f"arg {path} differs in {call}" if path else f"args differ in {call}")
    return out


class CallFault(NamedTuple):
    """One thing wrong with a turn's tool calls under the configured match type: a call with other
    arguments (`arg_diffs`), a missing or an extra call, or a call out of order (`expected_index`:
    where the file expects it, `actual_index`: where the agent made it)."""

    kind: Literal["args", "missing", "extra", "out_of_order"]
    name: str | None
    arg_diffs: Sequence[ArgDiff] = ()
    expected_index: int | None = None
    actual_index: int | None = None


def call_faults(details: TrajectoryDetails) -> list[CallFault]:
    """What went wrong with a turn's tool calls, read from its alignment (never recomputed); each fault
    once: an expected call answered by a same-name call with other arguments is one `args` fault."""
    alignment = details.alignment()
    faults: list[CallFault] = []
    explained: set[int] = set()
    for e in alignment["expected"]:
        if e["status"] != "missing":
            continue
        diffs = e.get("arg_diffs")
        if diffs:
            faults.append(CallFault("args", e["name"], diffs))
            if e["actual_index"] is not None:
                explained.add(e["actual_index"])
        elif e["actual_index"] is None:
            faults.append(CallFault("missing", e["name"]))
        # else: answered by a call out of order, which says so below
    for a in alignment["actual"]:
        if a["index"] in explained:
            continue
        if a["status"] == "extra":
            diffs = a.get("arg_diffs")
            faults.append(CallFault("args", a["name"], diffs) if diffs else CallFault("extra", a["name"]))
        elif a["status"] == "out_of_order":
            faults.append(CallFault("out_of_order", a["name"], expected_index=a["expected_index"],
                                    actual_index=a["index"]))
    return faults


def _trajectory(details: TrajectoryDetails) -> list[str]:
    """Missing, extra, out-of-order calls and differing args under the configured match type."""
    labels: list[str] = []
    for f in call_faults(details):
        if f.kind == "args":
            labels += _arg_labels(_name(f.name), f.arg_diffs)  # type: ignore[arg-type]
        elif f.kind == "out_of_order":
            labels.append("calls out of order")
        else:
            labels.append(f"{f.kind} call {_name(f.name)}")
    return labels


def _ces_tools(details: CesToolDetails) -> list[str]:
    labels: list[str] = []
    for t in details.tools:
        if t.outcome == "PASS":
            continue
        if t.actual_index is None:
            labels.append(f"missing call {_name(t.tool)}")
        else:
            labels += _arg_labels(_name(t.tool), t.arg_diffs) or [f"args differ in {_name(t.tool)}"]  # type: ignore[arg-type]
    if details.extra_tool_call_behavior == "FAIL":
        labels += [f"extra call {_name(n)}" for n in details.extra_call_names]
    return labels


def _turn_labels(m: MetricResult, inv: InvocationMetricResult) -> list[str]:
    """What one failing turn of a metric says about why, from its details."""
    d = inv.details
    if isinstance(d, TrajectoryDetails):
        return _trajectory(d)
    if isinstance(d, RubricDetails):
        return [f"rubric '{_one_line(r.rubric_id)}' failed" for r in d.rubrics if r.verdict == "no"]
    if isinstance(d, HallucinationDetails):
        found = {s.label for s in d.sentences if s.label in _BAD_LABELS}
        return [f"judge: {label} sentences" for label in _BAD_LABELS if label in found]
    if isinstance(d, SafetyDetails):
        policies = ", ".join(d.violated_policies)
        return [f"judge: unsafe ({_one_line(policies)})" if policies else "judge: unsafe"]
    if isinstance(d, ResponseMatchJudgeDetails):
        return ["judge: response does not match the reference"]
    if isinstance(d, CesSemanticSimilarityDetails):
        return [f"judge: response not similar ({d.label})" if d.label else "judge: response not similar"]
    if isinstance(d, SimulatorTurnDetails):
        if d.failed_criteria:
            return [f"user simulator: {_one_line(c)}" for c in d.failed_criteria]
        return ["user simulator: did not follow the plan"]
    if isinstance(d, CesToolDetails):
        return _ces_tools(d)
    if isinstance(d, VertexDetails):
        return [f"{m.metric_name} below {m.threshold:g}"]
    return []


def _below(m: MetricResult) -> str:
    """The label of a failed metric whose details say nothing more."""
    if m.metric_name == "response_match_score":
        return f"response below {m.threshold:g}"
    if m.reason:
        return f"{m.metric_name}: {_one_line(m.reason)}"
    return f"{m.metric_name} below {m.threshold:g}"


def _not_evaluated_reason(m: MetricResult) -> str:
    reason = m.reason or next((i.reason for i in m.per_invocation if i.reason), None)
    if not reason:
        return "no reason given"
    if reason.startswith("no ") and ": " in reason:
        # `no Vertex AI settings: set GOOGLE_CLOUD_PROJECT and …`: what is missing, not how to fix it.
        reason = reason.split(": ", 1)[0]
    return _one_line(reason)


def metric_causes(m: MetricResult) -> list[Cause]:
    """Why one metric failed (every distinct label over its turns), or why it was not evaluated."""
    if m.status == EvalStatus.NOT_EVALUATED:
        return [Cause(f"not evaluated: {_not_evaluated_reason(m)}", "not evaluated", m.metric_name)]
    if m.status != EvalStatus.FAILED:
        return []
    labels: list[str] = []
    for inv in m.per_invocation:
        if inv.status == EvalStatus.FAILED:
            labels += _turn_labels(m, inv)
    if m.metric_name == "response_match_score" or not labels:
        # ROUGE's details say by how much, not why: the threshold is the cause.
        labels = [_below(m)] + [label for label in labels if label != _below(m)]
    return [Cause(label, "failed", m.metric_name) for label in dict.fromkeys(labels)]


def causes_of(case: CaseResult) -> list[Cause]:
    """Every cause of a case, each label once, in metric order: an agent error first (its metrics were
    not evaluated because of it and add nothing)."""
    if case.error:
        outage = infrastructure_error(case.error)
        if outage is not None:
            return [Cause(f"infrastructure error: {outage}", "infrastructure")]
        return [Cause(agent_error_label(case.error), "agent error")]
    seen: dict[str, Cause] = {}
    for m in case.metrics:
        for cause in metric_causes(m):
            seen.setdefault(cause.label, cause)
    return list(seen.values())


def group_by_cause(results: Iterable[EvalSetResult], repetitions: Iterable[int] | None = None) -> list[CauseGroup]:
    """The cases that did not pass, or had a metric not evaluated, under each of their causes. Over
    repeated runs a case is counted once per group (its first run with that cause). Failure causes
    first (most cases first, then by label), then agent errors, then what was not evaluated."""
    reps = list(repetitions) if repetitions is not None else []

    def items() -> Iterator[tuple[str, CaseResult, int]]:
        for index, result in enumerate(results):
            rep = reps[index] if index < len(reps) else 1
            for case in result.case_results:
                yield result.eval_set_file, case, rep

    return group_cases(items())


def group_cases(items: Iterable[tuple[str, CaseResult, int]]) -> list[CauseGroup]:
    """`group_by_cause` over `(eval file, case result, repetition)` (the dashboard's latest results)."""
    groups: dict[tuple[CauseKind, str], CauseGroup] = {}
    seen: set[tuple[CauseKind, str, str, str]] = set()
    for eval_file, case, rep in items:
        if case.status == EvalStatus.PASSED and case.coverage_text() is None:
            continue
        for cause in causes_of(case):
            key = (cause.kind, cause.label)
            once = (*key, eval_file, case.eval_id)
            if once in seen:
                continue
            seen.add(once)
            group = groups.get(key)
            if group is None:
                group = groups[key] = CauseGroup(cause.label, cause.kind)
            group.cases.append(CaseRef(case.eval_set_id, eval_file, case.eval_id, case.status, rep))
    return sorted(groups.values(), key=lambda g: (KIND_ORDER.index(g.kind), -g.count, g.label))


def groups_text(groups: list[CauseGroup], *, max_cases: int = 5) -> list[str]:
    """Plain lines: `3  missing call escalate_to_human: a, b, c` per group (ids, not escaped)."""
    lines = []
    for g in groups:
        ids = [c.eval_id for c in g.cases[:max_cases]]
        more = f", … {g.count - max_cases} more" if g.count > max_cases else ""
        lines.append(f"{g.count:>4}  {g.label}: {', '.join(ids)}{more}")
    return lines
