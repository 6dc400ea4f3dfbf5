"""What a headless run prints and writes: the terminal summary (`run`, `watch`; `--num-runs` per case),
detailed per-invocation text, and the `--json` and `--junit` files.

The shareable Markdown / HTML page of a run (`tui-eval report`, `--md`, `--html`) and the words every text
output shares (the verdict line, scores, counts) are in `share.py`, the layer below.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TextIO

from .engine.repeats import CaseRepeats, RepeatLabel, order_for_summary
from .engine.causes import CauseGroup, call_faults, causes_of, group_by_cause, groups_text, infrastructure_error
from .engine.store import dump_json
from .metrics.efficiency import run_efficiency
from .schema.fileio import write_output
from .schema.calls import call_tree
from .schema.model import content_text
from .schema.details import (
    MATCH_TYPE_NAMES,
    HallucinationDetails,
    JudgeDetails,
    MetricDetails,
    RougeDetails,
    RubricDetails,
    SafetyDetails,
    SimulatorTurnDetails,
    ArgDiff,
    TrajectoryDetails,
    alignment_counts,
)
from .schema.results import CaseResult, EvalSetResult, EvalStatus, MetricResult, counts_text
from .share import metric_line as metric_line  # the one verdict line (re-exported: the Python API's failures use it)
from .share import calls_text, count_text, latency_text, repeat_marks, score_text
from .textsafe import safe_line, safe_text, xml_safe

if TYPE_CHECKING:  # pragma: no cover
    from .engine.gate import BaselineReport, Outcome
    from .engine.pricing import CostEstimate
    from .schema.usage import TokenUsage
    from .engine.runner import RunRecord

# XML 1.0 forbids most control characters; agent text and ids may carry escape sequences.
_xml_text = xml_safe


# Control characters in agent or judge text are shown, never sent to the terminal (tab and newline kept).
_safe = safe_text


def _counts_text(counts: dict[EvalStatus, int], gaps: int = 0) -> str:
    """Counts; `gaps` passed cases had metrics not evaluated, and the passed count says so."""
    text = counts_text(counts)
    if gaps:
        passed = f"{counts.get(EvalStatus.PASSED, 0)} {EvalStatus.PASSED.label}"
        text = text.replace(passed, f"{passed} ({gaps} with metrics not evaluated)", 1)
    return text


def _gaps(cases: list[CaseResult]) -> int:
    """Passed cases with a metric that never ran (ADK's rule passes them; we say so)."""
    return sum(1 for c in cases if c.status == EvalStatus.PASSED and c.coverage_text() is not None)


def _call(name: str | None) -> str:
    return f"{name or '?'}(...)"


def _value(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _arg_diffs_text(diffs: Sequence[ArgDiff]) -> str:
    parts = []
    for d in diffs:
        path = d["path"] or "args"
        if d["kind"] == "changed":
            parts.append(f"{path} {_value(d.get('expected'))} → {_value(d.get('actual'))}")
        elif d["kind"] == "missing":
            parts.append(f"{path} missing (expected {_value(d.get('expected'))})")
        else:
            parts.append(f"{path} extra ({_value(d.get('actual'))})")
    return ", ".join(parts)


def trajectory_reasons(m: MetricResult) -> list[str]:
    """Why a tool trajectory failed, per failing turn, read from its TrajectoryDetails (never recomputed):
    `turn 2: missing escalate_to_human(...); lookup_order(...) args: sides 12 → 6`."""
    lines = []
    several = len(m.per_invocation) > 1
    for i, inv in enumerate(m.per_invocation):
        details = inv.details
        if not isinstance(details, TrajectoryDetails) or inv.status != EvalStatus.FAILED:
            continue
        parts: list[str] = []
        for f in call_faults(details):
            if f.kind == "args":
                parts.append(f"{_call(f.name)} args: {_arg_diffs_text(f.arg_diffs)}")
            elif f.kind == "out_of_order":
                # One order failure, said once: where the file expects the call and where the agent made it.
                j, at = f.expected_index, f.actual_index
                parts.append(f"{_call(f.name)} out of order"
                             + (f": moved from {j + 1} to {at + 1}" if j is not None and at is not None and j != at else ""))
            else:
                parts.append(f"{f.kind} {_call(f.name)}")
        if parts:
            lines.append((f"turn {i + 1}: " if several else "") + "; ".join(parts))
    return lines


def _first_line(text: str) -> str:
    """An agent error's first line (the reason); the traceback under it is for the detailed view."""
    return text.split("\n", 1)[0]


def case_lines(case: CaseResult, label: str) -> list[str]:
    """A case's block in a summary (`run` and `watch` print the same): nothing for a clean pass; else
    `  FAIL label: 1 of 4 metrics evaluated` and why, one escaped line each.

    A passed case's metrics not evaluated are summed up by their reason on its line (the run's `note:`
    said it already: three identical lines under every passing case hid the failures); a failed case
    keeps a line per metric."""
    coverage = case.coverage_text()
    if case.status == EvalStatus.PASSED and coverage is None:
        return []
    grouped: dict[str, list[str]] = {}
    if case.status == EvalStatus.PASSED:
        for m in case.metrics:
            if m.status == EvalStatus.NOT_EVALUATED:
                grouped.setdefault(m.reason or "no reason given", []).append(m.metric_name)
    note = f": {coverage}" if coverage is not None and not case.error else ""
    if len(grouped) == 1:
        # Which metrics were not evaluated, and why: `1 of 4 metrics evaluated (not evaluated: a, b: why)`.
        reason, names = next(iter(grouped.items()))
        note += f" (not evaluated: {', '.join(names)}: {reason})"
    lines = [f"  {case.status.mark} {safe_line(label)}{safe_line(note)}"]
    if case.error:
        lines.append(f"       agent error: {safe_line(_first_line(case.error))}")
    for m in case.metrics:
        if not m.went_wrong or (case.error and m.status == EvalStatus.NOT_EVALUATED):
            continue
        if grouped and m.status == EvalStatus.NOT_EVALUATED:
            continue
        lines.append(f"       {safe_line(metric_line(m))}")
        lines.extend(f"         {safe_line(reason)}" for reason in trajectory_reasons(m))
    if len(grouped) > 1:
        lines.extend(f"       not evaluated ({safe_line(reason)}): {safe_line(', '.join(names))}"
                     for reason, names in grouped.items())
    return lines


def usage_text(usage: TokenUsage) -> str:
    cached = f" ({count_text(usage.cached_tokens)} cached)" if usage.cached_tokens else ""
    return f"{count_text(usage.prompt_tokens)} prompt{cached}, {count_text(usage.output_tokens)} output"


def cost_lines(cost: CostEstimate | None) -> list[str]:
    """`Tokens agent gemini-2.5-flash: 1,200 prompt (300 cached), 80 output` per (who, model), then the cost."""
    if cost is None:
        return []
    out = [f"Tokens {line.who} {line.model}: {usage_text(line.usage)}" for line in cost.lines]
    out.append(f"{cost.text()[0].upper()}{cost.text()[1:]}; prices: {'; '.join(cost.sources)}")
    return out


def insight_lines(record: RunRecord) -> list[str]:
    """The summary's extra lines: tokens and estimated cost, per-tool latency, code state (plain text)."""
    insight = record.insight
    lines: list[str] = []
    if insight is not None:
        lines.extend(cost_lines(insight.cost))
        for t in insight.tool_latency[:8]:
            lines.append(f"Tool {t.name}: {t.count} call(s), {t.passed} ok, {t.failed} failed, "
                         f"mean {latency_text(t.mean_seconds)}, p95 {latency_text(t.p95_seconds)}")
        if len(insight.tool_latency) > 8:
            lines.append(f"(and {len(insight.tool_latency) - 8} more tools in the run record)")
    state = record.code_state
    if state is not None and state.commit:
        lines.append(f"Code: commit {state.commit[:12]}" + (" + uncommitted changes" if state.dirty else ""))
    return [safe_line(line) for line in lines]


def rerun_line(record: RunRecord) -> str | None:
    """`Run again after their worker died: 3 case(s) (...)`: cases whose tools ran twice; None when none."""
    again = [c.eval_id for r in record.results for c in r.case_results if c.reruns_after_crash]
    if not again:
        return None
    shown = ", ".join(again[:8]) + (f" and {len(again) - 8} more" if len(again) > 8 else "")
    return safe_line(f"Run again after their worker died: {len(again)} case(s), their tools ran again: {shown} "
                     "(--no-retry-after-crash fails them instead)")


def _why(case: CaseResult) -> str:
    if case.error:
        return "agent error: " + case.error.split("\n", 1)[0]
    failing = [m for m in case.metrics if m.went_wrong]
    return "; ".join(metric_line(m) for m in failing[:3])


_LABEL_MARK = {RepeatLabel.FLAKY: "FLAKY", RepeatLabel.STABLE_FAIL: "FAIL", RepeatLabel.NOT_EVALUATED: "N/E",
               RepeatLabel.STABLE_PASS: "PASS"}


def print_repeats(record: RunRecord, out: TextIO, *, verbose: bool = True) -> bool:
    """`--num-runs N`: one block per case (k/N runs passed, its label, its runs' marks), flaky cases
    first, instead of one block per repetition. False when the record has no repeat summary."""
    insight = record.insight
    if insight is None or not insight.repeats:
        return False
    n = record.num_runs
    by_file: dict[str, list[tuple[int, EvalSetResult]]] = {}
    for result, rep in zip(record.results, record.repetitions or [1] * len(record.results)):
        by_file.setdefault(result.eval_set_file, []).append((rep, result))
    for file, cases in insight.repeats.items():
        reps = by_file.get(file, [])
        set_id = reps[0][1].eval_set_id if reps else file
        labels = ", ".join(f"{k} {label.value}" for label, k in _label_counts(cases) if k)
        print(f"{safe_line(set_id)} ({safe_line(file)}): {len(cases)} case(s) x {n} runs: {labels}", file=out)
        if not verbose:
            continue
        for r in order_for_summary(cases):
            if r.label == RepeatLabel.STABLE_PASS:
                continue
            print(f"  {_LABEL_MARK[r.label]} {safe_line(r.case_id)}  {r.fraction} ({r.label.value}) "
                  f"{repeat_marks(r.statuses)}  pass@{r.runs} {r.pass_at_k[-1]:.2f}  pass^{r.runs} {r.pass_hat_k[-1]:.2f}",
                  file=out)
            for rep, result in reps:
                case = next((c for c in result.case_results if c.eval_id == r.case_id), None)
                if case is not None and case.status != EvalStatus.PASSED:
                    print(f"       run {rep}: {safe_line(_why(case))}", file=out)
                    break  # the first failing run says why; the record has the rest
    return True


def _label_counts(cases: Sequence[CaseRepeats]) -> list[tuple[RepeatLabel, int]]:
    order = (RepeatLabel.FLAKY, RepeatLabel.STABLE_FAIL, RepeatLabel.NOT_EVALUATED, RepeatLabel.STABLE_PASS)
    return [(label, sum(1 for c in cases if c.label == label)) for label in order]


def print_summary(record: RunRecord, out: TextIO, *, verbose: bool = True) -> None:
    """Per eval set: counts, then every case that did not pass with why. Each line is one line: ids and
    reasons are escaped (safe_line), so no text can move the cursor or forge a line."""
    # `--num-runs N`: one block per case (k/N runs passed), not one block per repetition.
    repeated = record.num_runs > 1 and print_repeats(record, out, verbose=verbose)
    for result in () if repeated else record.results:
        print(f"{safe_line(result.eval_set_id)} ({safe_line(result.eval_set_file)}): "
              f"{_counts_text(result.counts(), _gaps(result.case_results))}", file=out)
        if not verbose:
            continue
        for case in result.case_results:
            for line in case_lines(case, case.eval_id):
                print(line, file=out)
    total = record.counts()
    tail = " (cancelled: unfinished cases are not counted)" if record.cancelled else ""
    gaps = sum(_gaps(r.case_results) for r in record.results)
    if record.num_runs > 1:
        # Counted per run of a case: 9 cases run 3 times are 27 results, not 27 cases.
        n = sum(len(r.case_results) for r in record.results)
        cases = n // record.num_runs if n % record.num_runs == 0 else None
        what = f" ({cases} cases × {record.num_runs} runs)" if cases is not None else ""
        print(f"Total case runs{what}: {_counts_text(total, gaps)}{tail}", file=out)
    else:
        print(f"Total: {_counts_text(total, gaps)}{tail}", file=out)
    efficiency = run_efficiency([c for r in record.results for c in r.case_results])
    if efficiency is not None:
        print(f"efficiency: {efficiency}", file=out)
    judge = record.judge_stats
    if judge.requests:
        print(
            f"Judge: {judge.requests} answer(s), {judge.calls} call(s), {judge.cache_hits} from cache, "
            f"{judge.retries} retried, {judge.failures + judge.parse_failures} failed"
            + (f" ({judge.parse_failures} unparseable)" if judge.parse_failures else "")
            + f", {judge.total_tokens} tokens",
            file=out,
        )
    if record.executor is not None and record.executor.kind.startswith("ray"):  # the local pool goes unsaid
        print(f"Executor: {safe_line(record.executor.text())}", file=out)
    for line in insight_lines(record):
        print(line, file=out)
    for line in kind_lines(record):
        print(line, file=out)
    rerun = rerun_line(record)
    if rerun is not None:
        print(rerun, file=out)
    print(f"Run id: {safe_line(record.run_id)}", file=out)
    for path in record.saved:
        print(f"Saved eval history: {safe_line(path)}", file=out)


def kind_lines(record: RunRecord) -> list[str]:
    """What kind of run it was (`share.kind_lines_of`: the same words in Markdown), escaped."""
    from .share import kind_lines_of

    return [safe_line(line) for line in kind_lines_of(list(record.kinds.values()), record.executor)]


def print_outcome(outcome: Outcome | None, out: TextIO, *, written: bool = True) -> None:
    """The last line of a run: its exit code and why (`Result: exit 3 (incomplete): nothing failed, but …`)."""
    if not written or outcome is None:
        print("Result: exit 2 (error): results could not be written (see the errors above)", file=out)
        return
    print(f"Result: {safe_line(outcome.text())}", file=out)


def print_baseline(report: BaselineReport, out: TextIO, *, verbose: bool = True) -> None:
    """`--baseline`: the counts, then regressions, fixes, still failing and not run, each with its reason."""
    print(safe_line(report.headline()), file=out)
    if not verbose:
        return
    for name, cases in report.sections():
        if not cases:
            continue
        print(f"  {name}:", file=out)
        for c in cases:
            moved = f"{c.before.label if c.before else '-'} → {c.after.label if c.after else '-'}"
            print(f"    {safe_line(c.eval_set_id)} / {safe_line(c.eval_id)} ({moved}): {safe_line(c.reason)}", file=out)


def print_causes(groups: list[CauseGroup], out: TextIO) -> None:
    """Failures by cause: one line per cause with its count and cases (plain text, escaped)."""
    if not groups:
        return
    print("Failures by cause:", file=out)
    for line in groups_text(groups):
        print(f"  {safe_line(line)}", file=out)


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
                    print(f"expected tools:    {calls_text(expected.tool_calls)}", file=out)
                print(f"actual tools:      {calls_text(actual.tool_calls)}", file=out)
                if actual.nested_calls:
                    # The trajectory as a tree: each call with the calls made inside it (an AgentTool's agent).
                    print("tool tree:", file=out)
                    for row in call_tree(actual):
                        mark = "  (inside a tool: outside ADK's trajectory)" if row.nested and row.depth == 1 else ""
                        print(f"  {'  ' * row.depth}{row.label}{mark}", file=out)
                for m in case.metrics:
                    if i < len(m.per_invocation):
                        inv = m.per_invocation[i]
                        why = f" ({_safe(inv.reason)})" if inv.reason else ""
                        print(f"  {m.metric_name}: {inv.status.name} {score_text(inv.score)}{why}", file=out)
                        for line in detail_lines(inv.details):
                            print(f"    {line}", file=out)
            if case.final_session_state is not None:
                state = json.dumps(case.final_session_state, ensure_ascii=False, sort_keys=True, default=str)
                print(f"final session state: {state}", file=out)
            for m in case.metrics:
                why = f" ({m.reason})" if m.reason and m.status != EvalStatus.NOT_EVALUATED else ""
                print(f"  case {metric_line(m)}{why}", file=out)
            causes = causes_of(case)
            if causes and case.status != EvalStatus.PASSED:
                print(f"  causes: {'; '.join(c.label for c in causes)}", file=out)
    print_causes(group_by_cause(record.results, record.repetitions or None), out)


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
            lines.append(f"rubric {_safe(r.rubric_id)}: {r.verdict or 'not evaluated (the judge gave no verdict)'} "
                         f"({votes})"
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


def write_json(record: RunRecord, path: Path, outcome: Outcome | None = None,
               baseline: BaselineReport | None = None) -> None:
    """A JSON list of ADK EvalSetResult objects, one per eval set (and repetition). ADK accepts extra keys on
    eval set and case results (not on metric results): each eval set result carries the run's `gate` (run
    id, exit code, why, the baseline run and this set's regressions, fixes, still failing, not run, not
    evaluated), each case its `gate` (how it moved against the baseline, and why) and `not_evaluated`
    (metric -> why it was not evaluated) and `stale` (why an edit during the run made it stale: agent code,
    eval case or criteria changed; empty when it is current)."""
    from .engine.gate import run_outcome

    if outcome is None:
        outcome = run_outcome(record.results, cancelled=record.cancelled, strict=record.strict,
                              num_runs=record.num_runs)
    moved = {(c.eval_set_id, c.eval_id): c for c in baseline.cases} if baseline is not None else {}
    out = []
    for result in record.results:
        data = result.to_adk()
        mine = [c for c in (baseline.cases if baseline is not None else []) if c.eval_set_id == result.eval_set_id]
        data["gate"] = {
            "run_id": record.run_id, "exit_code": outcome.code, "result": outcome.word,
            "reasons": list(outcome.reasons),
            "baseline_run": baseline.run_id if baseline is not None else None,
            "baseline_missing": (baseline.why_missing.get(result.eval_set_id) if baseline is not None else None),
            **{key: [c.eval_id for c in mine if c.kind == kind] for key, kind in _GATE_KINDS},
        }
        for case_data, case in zip(data["eval_case_results"], result.case_results):
            change = moved.get((result.eval_set_id, case.eval_id))
            case_data["gate"] = ({"change": change.kind, "reason": change.reason} if change is not None else None)
            case_data["not_evaluated"] = {m.metric_name: m.reason or "no reason given" for m in case.metrics
                                          if m.status == EvalStatus.NOT_EVALUATED}
            # What an edit during the run changed of what this result was computed from (empty: current).
            case_data["stale"] = list(record.stale.get((case.eval_set_file, case.eval_id), ()))
        out.append(data)
    write_output(path, dump_json(out))


#: The gate's lists, as --json and JUnit name them, and the change kind each holds (engine/store.CHANGE_KINDS).
_GATE_KINDS = (("regressions", "regression"), ("fixes", "fixed"), ("still_failing", "still failing"),
               ("not_run", "not run"), ("not_evaluated", "not evaluated"))


def _failure_text(case: CaseResult) -> str:
    lines = []
    if case.error:
        lines.append(f"agent error: {case.error}")
    for m in case.metrics:
        if m.went_wrong:
            lines.append(metric_line(m))
            lines.extend(f"  {reason}" for reason in trajectory_reasons(m))
    return "\n".join(lines)


def write_junit(record: RunRecord, path: Path, outcome: Outcome | None = None,
                baseline: BaselineReport | None = None) -> None:
    """One testsuite per eval set, one testcase per eval case; failures carry the failing metrics.
    Every testsuite's properties say the run's outcome (`tui_eval.exit_code` 0, 1 or 3,
    `tui_eval.outcome` passed / failed / incomplete and why, `tui_eval.run_id`) and, with a baseline, the
    gate's (`tui_eval.baseline_run`, `tui_eval.regressions`, ... as comma-separated case ids); a case that
    moved against the baseline has a `tui_eval.change` property."""
    from .engine.gate import run_outcome

    if outcome is None:
        outcome = run_outcome(record.results, cancelled=record.cancelled, num_runs=record.num_runs)
    suites = ET.Element("testsuites")
    # A cancelled (or timed out) run's unfinished cases are testcases too, skipped: CI shows what did not run.
    unfinished: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for file, set_id, eval_id, rep in record.unfinished:
        unfinished.setdefault((file, rep), []).append((set_id, eval_id))
    why_unfinished = "not run: the run was cancelled before this case finished"
    repetitions = record.repetitions if len(record.repetitions) == len(record.results) else [1] * len(record.results)

    def case_name(eval_id: str, rep: int) -> str:
        # --num-runs: one testcase per run of a case, each with its own name.
        return f"{eval_id} (run {rep})" if record.num_runs > 1 else eval_id

    for result, rep in zip(record.results, repetitions):
        left = unfinished.pop((result.eval_set_file, rep), [])
        counts = result.counts()
        # A case an outage of the agent's model API failed is a JUnit error, not a failure.
        outages = {c.eval_id: o for c in result.case_results
                   if c.status == EvalStatus.FAILED and (o := infrastructure_error(c.error)) is not None}
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=_xml_text(result.eval_set_id),
            tests=str(len(result.case_results) + len(left)),
            failures=str(counts[EvalStatus.FAILED] - len(outages)),
            skipped=str(counts[EvalStatus.NOT_EVALUATED] + len(left)),
            errors=str(len(outages)),
            file=_xml_text(result.eval_set_file),
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="tui_eval.exit_code", value=str(outcome.code))
        ET.SubElement(props, "property", name="tui_eval.outcome", value=_xml_text(outcome.text()))
        ET.SubElement(props, "property", name="tui_eval.run_id", value=_xml_text(record.run_id))
        if baseline is not None:
            ET.SubElement(props, "property", name="tui_eval.baseline_run", value=_xml_text(baseline.run_id or ""))
            why = baseline.why_missing.get(result.eval_set_id)
            if why:
                ET.SubElement(props, "property", name="tui_eval.baseline_missing", value=_xml_text(why))
            mine = [c for c in baseline.cases if c.eval_set_id == result.eval_set_id]
            for key, kind in _GATE_KINDS:
                ET.SubElement(props, "property", name=f"tui_eval.{key}",
                              value=_xml_text(",".join(c.eval_id for c in mine if c.kind == kind)))
        moved = {c.eval_id: c for c in baseline.cases if c.eval_set_id == result.eval_set_id} if baseline else {}
        for case in result.case_results:
            tc = ET.SubElement(
                suite,
                "testcase",
                name=_xml_text(case_name(case.eval_id, rep)),
                classname=_xml_text(result.eval_set_id),
                time=f"{case.wall_seconds:.3f}",
            )
            coverage = case.coverage_text()
            stale = record.stale.get((case.eval_set_file, case.eval_id))
            change = moved.get(case.eval_id)
            if coverage is not None or stale or (change is not None and change.kind != "unchanged"):
                props = ET.SubElement(tc, "properties")
            if coverage is not None:
                # Passed (or not) with metrics that never ran: a property CI tools list, and the
                # output most of them show beside the test.
                ET.SubElement(props, "property", name="metrics_evaluated",
                              value=f"{case.evaluated_metrics} of {case.metrics_total}")
            if change is not None and change.kind != "unchanged":
                ET.SubElement(props, "property", name="tui_eval.change", value=_xml_text(change.kind))
            if stale:
                # An edit during the run changed what this result was computed from.
                ET.SubElement(props, "property", name="tui_eval.stale", value=_xml_text(", ".join(stale)))
            if case.eval_id in outages:
                error = ET.SubElement(tc, "error", message=_xml_text(f"infrastructure error: {outages[case.eval_id]}"),
                                      type="InfrastructureError")
                error.text = _xml_text(_failure_text(case))
            elif case.status == EvalStatus.FAILED:
                failing = [m.metric_name for m in case.metrics if m.status == EvalStatus.FAILED]
                message = ("agent error" if case.error else "failed: " + ", ".join(failing) if failing
                           else f"failed (--strict): {case.coverage_text() or 'metrics not evaluated'}")
                failure = ET.SubElement(tc, "failure", message=_xml_text(message), type="EvalFailure")
                failure.text = _xml_text(_failure_text(case))
            elif case.status == EvalStatus.NOT_EVALUATED:
                skipped = ET.SubElement(tc, "skipped", message=EvalStatus.NOT_EVALUATED.label)
                skipped.text = _xml_text("\n".join(metric_line(m) for m in case.metrics))
            elif coverage is not None:
                out = ET.SubElement(tc, "system-out")
                out.text = _xml_text("\n".join([f"passed with {coverage}"] + [
                    metric_line(m) for m in case.metrics if m.status == EvalStatus.NOT_EVALUATED]))
        for _set_id, eval_id in left:
            tc = ET.SubElement(suite, "testcase", name=_xml_text(case_name(eval_id, rep)),
                               classname=_xml_text(result.eval_set_id), time="0.000")
            ET.SubElement(tc, "skipped", message=why_unfinished)
    for (file, rep), left in unfinished.items():  # eval sets none of whose cases finished
        set_id = left[0][0]
        suite = ET.SubElement(suites, "testsuite", name=_xml_text(set_id), tests=str(len(left)), failures="0",
                              skipped=str(len(left)), errors="0", file=_xml_text(file))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="tui_eval.exit_code", value=str(outcome.code))
        ET.SubElement(props, "property", name="tui_eval.outcome", value=_xml_text(outcome.text()))
        ET.SubElement(props, "property", name="tui_eval.run_id", value=_xml_text(record.run_id))
        for _set_id, eval_id in left:
            tc = ET.SubElement(suite, "testcase", name=_xml_text(case_name(eval_id, rep)), classname=_xml_text(set_id),
                               time="0.000")
            ET.SubElement(tc, "skipped", message=why_unfinished)
    ET.indent(suites)
    write_output(path, ET.tostring(suites, encoding="utf-8", xml_declaration=True))
