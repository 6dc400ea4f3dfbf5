"""Headless reports of a run: the summary, detailed per-invocation text, `--json` and `--junit` files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .engine.store import dump_json
from .metrics.efficiency import run_efficiency
from .schema.fileio import atomic_write
from .schema.model import FunctionCall, content_text
from .schema.details import (
    MATCH_TYPE_NAMES,
    HallucinationDetails,
    JudgeDetails,
    MetricDetails,
    RougeDetails,
    RubricDetails,
    SafetyDetails,
    SimulatorTurnDetails,
    TrajectoryDetails,
    alignment_counts,
)
from .schema.results import CaseResult, EvalStatus, MetricResult, counts_text
from .textsafe import safe_line, safe_text, xml_safe

if TYPE_CHECKING:  # pragma: no cover
    from .engine.runner import RunRecord

# XML 1.0 forbids most control characters; agent text and ids may carry escape sequences.
_xml_text = xml_safe


# Control characters in agent or judge text are shown, never sent to the terminal (tab and newline kept).
_safe = safe_text


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def metric_line(m: MetricResult) -> str:
    """`tool_trajectory_avg_score 0.500 < 1.000 FAILED`, or the reason it was not evaluated."""
    if m.status == EvalStatus.NOT_EVALUATED:
        return f"{m.metric_name}: {m.status.label} ({_safe(m.reason or 'no reason given')})"
    if m.status == EvalStatus.INFORMATIONAL:
        return f"{m.metric_name}: {'n/a' if m.score is None else format(m.score, 'g')} ({m.status.label})"
    op = ">=" if m.status == EvalStatus.PASSED else "<"
    return f"{m.metric_name}: {_score(m.score)} {op} {m.threshold:g} {m.status.name}"


def _counts_text(counts: dict[EvalStatus, int]) -> str:
    return counts_text(counts)


# Statuses a list of what went wrong leaves out: informational metrics never pass or fail.
_QUIET = (EvalStatus.PASSED, EvalStatus.INFORMATIONAL)


def _first_line(text: str) -> str:
    """An agent error's first line (the reason); the traceback under it is for the detailed view."""
    return text.split("\n", 1)[0]


def print_summary(record: RunRecord, out: TextIO, *, verbose: bool = True) -> None:
    """Per eval set: counts, then every case that did not pass with why. Each line is one line: ids and
    reasons are escaped (safe_line), so no text can move the cursor or forge a line."""
    for result in record.results:
        print(f"{safe_line(result.eval_set_id)} ({safe_line(result.eval_set_file)}): "
              f"{_counts_text(result.counts())}", file=out)
        if not verbose:
            continue
        for case in result.case_results:
            if case.status == EvalStatus.PASSED:
                continue
            print(f"  {case.status.mark} {safe_line(case.eval_id)}", file=out)
            if case.error:
                print(f"       agent error: {safe_line(_first_line(case.error))}", file=out)
            for m in case.metrics:
                if m.status not in _QUIET and not (case.error and m.status == EvalStatus.NOT_EVALUATED):
                    print(f"       {safe_line(metric_line(m))}", file=out)
    total = record.counts()
    tail = " (cancelled: unfinished cases are not counted)" if record.cancelled else ""
    print(f"Total: {_counts_text(total)}{tail}", file=out)
    efficiency = run_efficiency([c for r in record.results for c in r.case_results])
    if efficiency is not None:
        print(f"efficiency: {efficiency}", file=out)
    judge = record.judge_stats
    if judge.get("requests"):
        print(
            f"Judge: {judge['requests']} answer(s), {judge['calls']} call(s), {judge['cache_hits']} from cache, "
            f"{judge['retries']} retried, {judge['failures']} failed, {judge['total_tokens']} tokens",
            file=out,
        )
    for path in record.saved:
        print(f"Saved eval history: {safe_line(path)}", file=out)


def _calls_text(calls: list[FunctionCall]) -> str:
    if not calls:
        return "(none)"
    return "; ".join(f"{c.name}({json.dumps(c.args, ensure_ascii=False, sort_keys=True)})" for c in calls)


class _SafeOut:
    """A text stream that escapes every control character but newline and tab before writing: detailed
    results print whole responses (several lines), and no byte of them may reach the terminal raw."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(safe_text(text))

    def flush(self) -> None:
        self._out.flush()


def print_detailed(record: RunRecord, out: TextIO) -> None:
    """Per invocation: prompt, expected and actual response and tool calls, each metric's verdict."""
    out = _SafeOut(out)  # type: ignore[assignment]
    for result in record.results:
        for case in result.case_results:
            print(f"=== {safe_line(result.eval_set_id)} / {safe_line(case.eval_id)}: {case.status.name}", file=out)
            if case.error:
                print(f"agent error: {case.error}", file=out)
            for i, actual in enumerate(case.actual):
                expected = case.expected[i] if case.expected and i < len(case.expected) else None
                print(f"--- turn {i + 1}", file=out)
                print(f"prompt:            {content_text(actual.user_content)}", file=out)
                if expected is not None:
                    print(f"expected response: {content_text(expected.final_response)}", file=out)
                print(f"actual response:   {content_text(actual.final_response)}", file=out)
                if expected is not None:
                    print(f"expected tools:    {_calls_text(expected.tool_calls)}", file=out)
                print(f"actual tools:      {_calls_text(actual.tool_calls)}", file=out)
                for m in case.metrics:
                    if i < len(m.per_invocation):
                        inv = m.per_invocation[i]
                        why = f" ({_safe(inv.reason)})" if inv.reason else ""
                        print(f"  {m.metric_name}: {inv.status.name} {_score(inv.score)}{why}", file=out)
                        for line in detail_lines(inv.details):
                            print(f"    {line}", file=out)
            for m in case.metrics:
                print(f"  case {metric_line(m)}", file=out)


def detail_lines(details: MetricDetails | None) -> list[str]:
    """What a metric's typed details add to its verdict on one turn, one line each (read, never recomputed)."""
    if isinstance(details, TrajectoryDetails):
        verdicts = "  ".join(
            f"{name}{'*' if name == details.match_type else ''} "
            f"{(EvalStatus.PASSED if details.alignment(name)['passed'] else EvalStatus.FAILED).glyph}"
            for name in MATCH_TYPE_NAMES)
        counts = alignment_counts(details.alignment())
        shown = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "no tool calls"
        return [f"match types: {verdicts} (* configured)", f"calls: {shown}"]
    if isinstance(details, RougeDetails):
        return [f"precision {details.precision:.3f}, recall {details.recall:.3f}: {details.shared_tokens} shared "
                f"token(s) of {details.candidate_tokens} actual / {details.reference_tokens} expected"]
    if isinstance(details, RubricDetails):
        lines = []
        for r in details.rubrics:
            votes = f"votes {r.votes.text} yes" if r.votes.total else "no votes"
            lines.append(f"rubric {_safe(r.rubric_id)}: {r.verdict or 'no verdict'} ({votes})"
                         + (f": {_safe(r.rationale)}" if r.rationale else ""))
        if details.unmatched_rubric_ids:
            lines.append(f"ids the judge made up: {_safe(', '.join(details.unmatched_rubric_ids))}")
        return lines
    if isinstance(details, HallucinationDetails):
        return [f"sentence {k + 1} [{s.source}]: {s.label or 'no majority'}: {_safe(s.text)}"
                + (f" ({_safe(s.rationale)})" if s.rationale else "") for k, s in enumerate(details.sentences)]
    if isinstance(details, (JudgeDetails, SimulatorTurnDetails)):
        lines = []
        if details.votes.total:
            verdict = "" if details.verdict is None else f": {details.verdict}"
            lines.append(f"votes {details.votes.text}{verdict}" + (f" ({_safe(details.rationale)})"
                                                                    if details.rationale else ""))
        if isinstance(details, SafetyDetails) and details.violated_policies:
            lines.append(f"violated policies: {_safe(', '.join(details.violated_policies))}")
        return lines
    return []


def write_json(record: RunRecord, path: Path) -> None:
    """A JSON list of ADK EvalSetResult objects, one per eval set (and repetition)."""
    atomic_write(path, dump_json([r.to_adk() for r in record.results]))


def _failure_text(case: CaseResult) -> str:
    lines = []
    if case.error:
        lines.append(f"agent error: {case.error}")
    lines.extend(metric_line(m) for m in case.metrics if m.status not in _QUIET)
    return "\n".join(lines)


def write_junit(record: RunRecord, path: Path) -> None:
    """One testsuite per eval set, one testcase per eval case; failures carry the failing metrics."""
    suites = ET.Element("testsuites")
    for result in record.results:
        counts = result.counts()
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=_xml_text(result.eval_set_id),
            tests=str(len(result.case_results)),
            failures=str(counts[EvalStatus.FAILED]),
            skipped=str(counts[EvalStatus.NOT_EVALUATED]),
            errors="0",
            file=_xml_text(result.eval_set_file),
        )
        for case in result.case_results:
            tc = ET.SubElement(
                suite,
                "testcase",
                name=_xml_text(case.eval_id),
                classname=_xml_text(result.eval_set_id),
                time=f"{case.wall_seconds:.3f}",
            )
            if case.status == EvalStatus.FAILED:
                failing = [m.metric_name for m in case.metrics if m.status == EvalStatus.FAILED]
                message = "agent error" if case.error else "failed: " + ", ".join(failing)
                failure = ET.SubElement(tc, "failure", message=_xml_text(message), type="EvalFailure")
                failure.text = _xml_text(_failure_text(case))
            elif case.status == EvalStatus.NOT_EVALUATED:
                skipped = ET.SubElement(tc, "skipped", message=EvalStatus.NOT_EVALUATED.label)
                skipped.text = _xml_text("\n".join(metric_line(m) for m in case.metrics))
    ET.indent(suites)
    atomic_write(path, ET.tostring(suites, encoding="utf-8", xml_declaration=True))
