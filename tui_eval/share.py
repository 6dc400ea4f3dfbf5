"""A run to share: the static Markdown / HTML report of a run (`tui-eval report`, `run --md/--html`), and
the words every text output of a run uses (the one verdict line, scores, counts, calls, repeat marks),
which the terminal summary and CI files (`report.py`, the layer above) print too.

Agent, judge and user text is escaped at this boundary: control characters through textsafe, then
Markdown's `|`, backticks, `<`, `>`, `&` (and the other inline markers) or html.escape.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import ValidationError

from .metrics.efficiency import EFFICIENCY_METRICS
from .engine.codestate import CodeState
from .engine.insight import RunInsight
from .engine.repeats import CaseRepeats, RepeatLabel, order_for_summary
from .engine.reviews import Reviewed, kappa_text, review_lines, reviews_in, target_label
from .engine.store import load_record
from .judge.client import JudgeStats
from .schema.details import RougeDetails, TrajectoryDetails, alignment_counts
from .schema.model import FunctionCall, Invocation, content_text
from .schema.results import CaseResult, EvalSetResult, EvalStatus, MetricResult, counts_text
from .schema.runrecord import ExecutorInfo, RunKind
from .textsafe import safe_line, safe_text

if TYPE_CHECKING:  # pragma: no cover
    from .engine.gate import BaselineReport, Outcome
    from .engine.runner import RunRecord

log = logging.getLogger(__name__)

# A shared report lists at most this many failing cases in full (a PR comment has a size limit).
MAX_FAILURES = 20
# Characters of one response shown in a report cell.
MAX_CELL = 300


#: What a report says of a run that was killed before it ended.
INTERRUPTED_TEXT = ("interrupted: the run was stopped before it finished; these are the cases it finished "
                    "(`tui-eval run ... --resume` finishes it)")


class ShareError(Exception):
    """A report cannot be made from what was named (no record, unreadable)."""


# ---- the run, from memory or from eval history ----------------------------------------------------


@dataclass(slots=True)
class SharedRun:
    """What a report shows: every eval set result of one run (each repetition's), and its insight."""

    run_id: str
    results: list[EvalSetResult]
    repetitions: list[int]
    num_runs: int = 1
    cancelled: bool = False
    insight: RunInsight | None = None
    code_state: CodeState | None = None
    judge_stats: JudgeStats = field(default_factory=JudgeStats)
    #: What produced the run (engine.store.provenance): an agent folder or a replay, models, credentials.
    source: dict[str, Any] | None = None
    #: The run's exit code and why (None: read from the results, as `tui-eval report` does).
    outcome: Outcome | None = None
    #: `--baseline`: this run against a saved one.
    baseline: BaselineReport | None = None
    #: (eval file, case id) -> why the result is stale (`versions.stale_of`): for a run just made, what an
    #: edit during it changed; for a saved run, what changed on disk since.
    stale: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    #: finished, cancelled, or interrupted (a saved run that was killed before it ended: its finished cases).
    state: str = "finished"
    #: What kind of run it was, in words (`Kind: agent, mocked tools (strict), judge ...; executor: ...`).
    kind_lines: list[str] = field(default_factory=list)
    #: People's verdicts kept in the run's records (`engine.reviews`).
    human: list[Reviewed] = field(default_factory=list)

    @property
    def replay(self) -> bool:
        return bool(self.source) and self.source.get("kind") == "replay"  # type: ignore[union-attr]

    @classmethod
    def of(cls, record: RunRecord, *, outcome: Outcome | None = None,
           baseline: BaselineReport | None = None) -> SharedRun:
        reps = record.repetitions or [1] * len(record.results)
        return cls(record.run_id, list(record.results), list(reps), record.num_runs, record.cancelled,
                   record.insight, record.code_state, record.judge_stats.copy(), record.source,
                   outcome, baseline, dict(record.stale), record.state,
                   kind_lines_of(list(record.kinds.values()), record.executor))

    def verdict(self) -> Outcome:
        """The exit code the run gave (or, for a saved run, would give without --strict)."""
        from .engine.gate import run_outcome

        return self.outcome or run_outcome(self.results, cancelled=self.cancelled, num_runs=self.num_runs,
                                           stopped=INTERRUPTED_TEXT if self.state == "interrupted" else None)

    def state_note(self) -> str:
        """` (cancelled)` or ` (interrupted: ...)` after the headline; empty for a finished run."""
        if self.state == "interrupted":
            return f" ({INTERRUPTED_TEXT})"
        return " (cancelled)" if self.cancelled else ""

    def counts(self) -> dict[EvalStatus, int]:
        out = dict.fromkeys(EvalStatus, 0)
        for r in self.results:
            for c in r.case_results:
                out[c.status] += 1
        return out

    def repeats(self) -> list[CaseRepeats]:
        return self.insight.all_repeats if self.insight is not None else []


def _records_of(path: Path) -> list[Path]:
    """The record files of the run a path names (`engine.history.records_of_run`, the one resolver): a
    record (its run's other records beside it), a folder (its eval history's newest agent run), `latest`
    or a run id (in the current folder's eval history)."""
    from .engine.history import ResolveError, records_of_run

    try:
        return records_of_run(str(path))
    except ResolveError as exc:
        raise ShareError(str(exc)) from None


def load_shared_run(path: Path) -> SharedRun:
    """A run from eval history: a `.tui-eval.json` record or a folder (its newest run)."""
    loaded: list[tuple[dict[str, Any], EvalSetResult]] = []
    records = _records_of(Path(path))
    for p in records:
        try:
            loaded.append(load_record(p))
            if isinstance(loaded[-1][0].get("insight"), dict):  # load_record leaves the insight to its readers
                RunInsight.model_validate(loaded[-1][0]["insight"])
        except ValidationError as exc:
            where = ".".join(str(x) for x in exc.errors()[0]["loc"]) if exc.errors() else ""
            raise ShareError(f"cannot read this run record: {p}: insight.{where}: "
                             f"{exc.errors()[0]['msg'] if exc.errors() else exc}") from None
        except (OSError, ValueError) as exc:
            raise ShareError(f"cannot read this run record: {exc}") from None
    loaded.sort(key=lambda m: (str(m[0].get("eval_file", "")), int(m[0].get("repetition") or 1)))
    meta = loaded[0][0]
    insight = RunInsight.model_validate(meta["insight"]) if isinstance(meta.get("insight"), dict) else None
    state = CodeState.model_validate(meta["code_state"]) if isinstance(meta.get("code_state"), dict) else None
    source = _source_of(meta)
    from .engine.versions import stale_of_saved

    return SharedRun(
        run_id=str(meta.get("run_id", "")),
        results=[r for _, r in loaded],
        repetitions=[int(m.get("repetition") or 1) for m, _ in loaded],
        num_runs=int(meta.get("num_runs") or 1),
        cancelled=any(bool(m.get("cancelled")) for m, _ in loaded),
        kind_lines=kind_lines_of([RunKind.model_validate(m["kind"]) for m, _ in loaded if isinstance(m.get("kind"), dict)],
                                 ExecutorInfo.model_validate(meta["executor"])
                                 if isinstance(meta.get("executor"), dict) else None),
        state=("interrupted" if any(m.get("state") == "interrupted" for m, _ in loaded)
               else "cancelled" if any(m.get("state") == "cancelled" or m.get("cancelled") for m, _ in loaded)
               else "finished"),
        insight=insight,
        code_state=state,
        source=source,
        stale=stale_of_saved(loaded),
        human=reviews_in(records[0].parent, records),
    )


def _source_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """A record's provenance; records from before it was kept say only their agent's name."""
    from .engine.store import is_replay_record

    source = meta.get("source")
    if isinstance(source, dict):
        return source
    return {"kind": "replay"} if is_replay_record(meta) else None


def kind_lines_of(kinds: Sequence[RunKind], executor: ExecutorInfo | None) -> list[str]:
    """`Kind: agent, mocked tools (strict), judge gemini:gemini-2.5-flash; executor: local pool`, one line per
    distinct kind of the run's eval sets (the summary, Markdown and HTML say the same)."""
    tail = f"; executor: {executor.text()}" if executor is not None else ""
    return [f"Kind: {text}{tail}" for text in dict.fromkeys(k.text() for k in kinds)]


def source_line(source: dict[str, Any] | None) -> str | None:
    """`replay of recorded.evalset.json (not an agent run)` or `agent folder …; judge …`, for reports."""
    if not source:
        return None
    parts: list[str] = []
    if source.get("kind") == "replay":
        file = source.get("replay_file")
        parts.append(f"replay of {Path(str(file)).name if file else 'recorded turns'} (not an agent run)")
    elif source.get("kind") == "agent" and source.get("agent_dir"):
        parts.append(f"agent {Path(str(source['agent_dir'])).name}")
    models = source.get("models")
    if models:
        parts.append("model " + ", ".join(str(m) for m in models))
    judges = source.get("judge_models")
    if judges:
        creds = source.get("judge_credentials")
        parts.append("judge " + ", ".join(str(j) for j in judges)
                     + ("" if creds is None else " (credentials present)" if creds else " (no judge credentials)"))
    return "; ".join(parts) or None


# ---- the words every text report of a run uses (the CLI summary, JUnit, Markdown, HTML) -----------


def count_text(value: int) -> str:
    """A count with thousands separators: `1,200`."""
    return f"{value:,}"


def latency_text(seconds: float) -> str:
    """`120 ms` under a second, else `1.50 s`."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def repeat_marks(statuses: Sequence[EvalStatus]) -> str:
    """A case's runs as marks, run 1 first (`✔✘✔✔`)."""
    return "".join(s.glyph for s in statuses)


def calls_text(calls: list[FunctionCall]) -> str:
    """Tool calls with their arguments as JSON: `lookup({"id": 3}); reply({})`, `(none)`."""
    if not calls:
        return "(none)"
    return "; ".join(f"{c.name}({json.dumps(c.args, ensure_ascii=False, sort_keys=True)})" for c in calls)


def score_text(value: float | None) -> str:
    """A score in a text report: three decimals, `-` for none."""
    return "-" if value is None else f"{value:.3f}"


def metric_line(m: MetricResult) -> str:
    """The one plain-text verdict line of a metric on a case, as every text output writes it (summary,
    JUnit, API failures, Markdown, HTML): `tool_trajectory_avg_score: 0.500 < 1 FAILED`,
    `x: not evaluated (why)`, `token_usage_v1: 812.000 (informational)`. Reasons are escaped (safe_text)."""
    if m.status == EvalStatus.NOT_EVALUATED:
        return f"{m.metric_name}: {m.status.label} ({safe_text(m.reason or 'no reason given')})"
    if m.status == EvalStatus.INFORMATIONAL:
        return f"{m.metric_name}: {score_text(m.score)} ({m.status.label})"
    op = ">=" if m.status == EvalStatus.PASSED else "<"
    line = f"{m.metric_name}: {score_text(m.score)} {op} {m.threshold:g} {m.status.name}"
    # A metric may fail on a rule beyond its score (CES's extra tool calls): its reason says which.
    return f"{line} ({safe_text(m.reason)})" if m.status == EvalStatus.FAILED and m.reason else line


# ---- Markdown -------------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def md(text: str, limit: int | None = None) -> str:
    """Agent text as inert Markdown on one line: control characters shown (safe_line), `&` as an
    entity, and every character Markdown or GitHub's HTML would act on backslash-escaped."""
    text = safe_line(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;"))


def _turn_rows(case: CaseResult) -> list[tuple[int, Invocation, Invocation | None]]:
    return [(i, inv, case.expected[i] if case.expected and i < len(case.expected) else None)
            for i, inv in enumerate(case.actual)]


def _detail_text(case: CaseResult, turn: int) -> list[str]:
    """What the typed details say of one turn (read, never recomputed)."""
    out: list[str] = []
    for m in case.metrics:
        if turn >= len(m.per_invocation):
            continue
        inv = m.per_invocation[turn]
        details = inv.details
        if isinstance(details, TrajectoryDetails):
            counts = alignment_counts(details.alignment())
            shown = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "no tool calls"
            out.append(f"{m.metric_name} ({details.match_type}): {inv.status.label}: {shown}")
        elif isinstance(details, RougeDetails):
            out.append(f"{m.metric_name}: {inv.status.label}: precision {details.precision:.3f}, "
                       f"recall {details.recall:.3f}")
        elif inv.status != EvalStatus.PASSED and m.metric_name not in EFFICIENCY_METRICS:
            out.append(f"{m.metric_name}: {inv.status.label} {score_text(inv.score)}"
                       + (f" ({inv.reason})" if inv.reason else ""))
    return out


def _summary_table(run: SharedRun) -> list[str]:
    rows = ["| eval set | run | passed | failed | not evaluated |", "| --- | ---: | ---: | ---: | ---: |"]
    for result, rep in zip(run.results, run.repetitions):
        c = result.counts()
        rows.append(f"| {md(result.eval_set_id)} | {rep} | {c[EvalStatus.PASSED]} | {c[EvalStatus.FAILED]} | "
                    f"{c[EvalStatus.NOT_EVALUATED]} |")
    return rows


def _failures(run: SharedRun) -> list[tuple[int, EvalSetResult, CaseResult]]:
    """Failed cases; over repeated runs each case once, at its first failing run."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[int, EvalSetResult, CaseResult]] = []
    for result, rep in zip(run.results, run.repetitions):
        for case in result.case_results:
            key = (result.eval_set_file, case.eval_id)
            if case.status == EvalStatus.FAILED and key not in seen:
                seen.add(key)
                out.append((rep, result, case))
    return out


def render_markdown(run: SharedRun) -> str:
    """The report as GitHub-flavoured Markdown (a PR comment, $GITHUB_STEP_SUMMARY)."""
    counts = run.counts()
    total = sum(counts.values())
    title = ", ".join(dict.fromkeys(md(r.eval_set_id) for r in run.results))
    lines = [f"## tui-eval: {title}", ""]
    verdict = "all passed" if counts[EvalStatus.PASSED] == total and total else \
        f"{counts[EvalStatus.PASSED]} of {total} case results passed"
    gaps = sum(1 for r in run.results for c in r.case_results
               if c.status == EvalStatus.PASSED and c.coverage_text() is not None)
    if gaps:
        # The headline keeps the caveat the CLI summary gives: a pass that rests on part of its metrics.
        verdict += f", {gaps} with metrics not evaluated"
    runs = f" over {run.num_runs} runs" if run.num_runs > 1 else ""
    if run.replay:
        verdict = f"replay: {verdict}"
    lines.append(f"**{verdict}**{runs} ({counts_text(counts)})" + md(run.state_note()))
    source = source_line(run.source)
    if source:
        lines.append(f"\nSource: {md(source)}")
    for kind in run.kind_lines:
        lines.append(f"\n{md(kind)}")
    outcome = run.verdict()
    lines += ["", f"**Exit {outcome.code} ({outcome.word})**" + (f": {md('; '.join(outcome.reasons))}"
                                                                  if outcome.reasons else "")]
    lines += [""] + _summary_table(run) + [""]
    lines += _stale_md(run)
    lines += _baseline_md(run.baseline)
    lines += _causes_md(run)
    repeats = [r for r in order_for_summary(run.repeats()) if r.label != RepeatLabel.STABLE_PASS]
    if run.num_runs > 1 and repeats:
        lines += ["### Cases across runs", "", "| case | runs passed | label | pass@k | pass^k |",
                  "| --- | --- | --- | ---: | ---: |"]
        for r in repeats:
            lines.append(f"| {md(r.case_id)} | {r.passed}/{r.runs} {repeat_marks(r.statuses)} | {r.label.value} | "
                         f"{r.pass_at_k[-1]:.2f} | {r.pass_hat_k[-1]:.2f} |")
        lines.append("")
    failures = _failures(run)
    if failures:
        lines += ["### Failures", ""]
        for rep, result, case in failures[:MAX_FAILURES]:
            where = f" (run {rep})" if run.num_runs > 1 else ""
            lines.append(f"#### {md(result.eval_set_id)} / {md(case.eval_id)}{where}")
            lines.append("")
            if case.error:
                lines.append(f"- agent error: {md(case.error.split(chr(10), 1)[0])}")
            lines.extend(f"- {md(metric_line(m))}" for m in case.metrics if m.went_wrong)
            for i, actual, expected in _turn_rows(case):
                lines += ["", f"Turn {i + 1}: {md(content_text(actual.user_content), MAX_CELL)}", "",
                          "| | expected | actual |", "| --- | --- | --- |"]
                exp_calls = md(calls_text(expected.tool_calls)) if expected is not None else "-"
                exp_text = md(content_text(expected.final_response), MAX_CELL) if expected is not None else "-"
                lines.append(f"| tools | {exp_calls} | {md(calls_text(actual.tool_calls))} |")
                lines.append(f"| response | {exp_text} | {md(content_text(actual.final_response), MAX_CELL)} |")
                details = _detail_text(case, i)
                if details:
                    lines.append("")
                    lines.extend(f"- {md(d)}" for d in details)
            lines.append("")
        if len(failures) > MAX_FAILURES:
            lines += [f"({len(failures) - MAX_FAILURES} more failures in the run record)", ""]
    lines += _cost_md(run)
    lines += _human_md(run)
    return "\n".join(lines).rstrip("\n") + "\n"


def _stale_md(run: SharedRun) -> list[str]:
    """The stale results: what they were computed from is no longer what the files say."""
    if not run.stale:
        return []
    lines = [f"### Stale: {len(run.stale)} result(s)", "",
             "Computed from other files than are on disk now: run them again to check.", ""]
    lines += [f"- {md(eval_id)} ({md(Path(file).name)}): {md(', '.join(why))}" for (file, eval_id), why in run.stale.items()]
    return lines + [""]


def _human_md(run: SharedRun) -> list[str]:
    """People's verdicts on this run: per metric n, raw agreement and Cohen's κ, then each disagreement."""
    if not run.human:
        return []
    agreement, disagreements = review_lines(run.human)
    lines = ["### Human review", "", f"{len(run.human)} human verdict(s), {len(disagreements)} disagreeing with the run.", ""]
    if agreement:
        lines += ["| metric | n | agreement | Cohen's κ |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {md(a.metric)} | {a.n} | {a.raw:.0%} | {kappa_text(a.kappa)} |" for a in agreement]
        lines.append("")
    for r in disagreements:
        said = r.automatic.label if r.automatic is not None else "no verdict"
        reason = f' ("{md(r.verdict.reason, MAX_CELL)}")' if r.verdict.reason else ""
        lines.append(f"- {md(r.eval_id)}, {md(target_label(r.verdict))}: human {r.verdict.verdict}{reason}, run {said}")
    return lines + [""]


def _baseline_md(report: BaselineReport | None) -> list[str]:
    """`--baseline`: regressions, fixes, still failing and not run, each case with its reason."""
    if report is None:
        return []
    lines = [f"### {md(report.headline())}", ""]
    for name, cases in report.sections():
        if not cases:
            continue
        lines += [f"**{name}** ({len(cases)})", "", "| case | before | now | why |", "| --- | --- | --- | --- |"]
        for c in cases[:MAX_FAILURES * 5]:
            lines.append(f"| {md(c.eval_set_id)} / {md(c.eval_id)} | {c.before.label if c.before else '-'} | "
                         f"{c.after.label if c.after else '-'} | {md(c.reason, MAX_CELL)} |")
        if len(cases) > MAX_FAILURES * 5:
            lines.append(f"| … {len(cases) - MAX_FAILURES * 5} more | | | |")
        lines.append("")
    return lines


def _causes_md(run: SharedRun) -> list[str]:
    """Failures grouped by cause: count, cause, the cases (the first few by name)."""
    from .engine.causes import group_by_cause

    groups = group_by_cause(run.results, run.repetitions)
    if not groups:
        return []
    lines = ["### Failures by cause", "", "| cases | cause | which |", "| ---: | --- | --- |"]
    for g in groups:
        ids = ", ".join(md(c.eval_id) for c in g.cases[:8]) + (f", … {g.count - 8} more" if g.count > 8 else "")
        lines.append(f"| {g.count} | {md(g.label)} | {ids} |")
    return lines + [""]


def _cost_md(run: SharedRun) -> list[str]:
    insight = run.insight
    out: list[str] = []
    if insight is not None and insight.cost is not None:
        out += ["### Tokens and estimated cost", "", "| who | model | prompt | cached | output | est. cost (USD) |",
                "| --- | --- | ---: | ---: | ---: | ---: |"]
        for line in insight.cost.lines:
            cost = "unknown" if line.cost_usd is None else f"{line.cost_usd:.4f}"
            out.append(f"| {line.who} | {md(line.model)} | {count_text(line.usage.prompt_tokens)} | "
                       f"{count_text(line.usage.cached_tokens)} | {count_text(line.usage.output_tokens)} | {cost} |")
        out += ["", f"{md(insight.cost.text())}; prices: {md('; '.join(insight.cost.sources))}", ""]
    if insight is not None and insight.tool_latency:
        out += ["### Tool latency", "", "| tool | calls | ok | failed | mean | p95 |",
                "| --- | ---: | ---: | ---: | ---: | ---: |"]
        out += [f"| {md(t.name)} | {t.count} | {t.passed} | {t.failed} | {latency_text(t.mean_seconds)} | "
                f"{latency_text(t.p95_seconds)} |" for t in insight.tool_latency]
        out.append("")
    state = run.code_state
    if state is not None and state.commit:
        dirty = " with uncommitted changes" if state.dirty else ""
        out += [f"Code: commit `{state.commit[:12]}`{dirty}", ""]
    return out


# ---- HTML -----------------------------------------------------------------------------------------


def render_html(run: SharedRun) -> str:
    """The same report as one static HTML page (every text html.escape'd; no script, no remote asset)."""
    import html  # here: every run's summary imports this module; only an HTML report needs html

    e = html.escape
    counts = run.counts()
    title = ", ".join(dict.fromkeys(r.eval_set_id for r in run.results))
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>tui-eval: {e(safe_line(title))}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}</style>",
             "</head><body>", f"<h1>tui-eval: {e(safe_line(title))}</h1>",
             f"<p><strong>{e(counts_text(counts))}</strong>"
             + (f" over {run.num_runs} runs" if run.num_runs > 1 else "")
             + e(run.state_note()) + "</p>",
             *([f"<p>Source: {e(safe_line(src))}</p>"] if (src := source_line(run.source)) else []),
             *(f"<p>{e(safe_line(kind))}</p>" for kind in run.kind_lines),
             "<table><tr><th>eval set</th><th>run</th><th>passed</th><th>failed</th><th>not evaluated</th></tr>"]
    for result, rep in zip(run.results, run.repetitions):
        c = result.counts()
        parts.append(f"<tr><td>{e(safe_line(result.eval_set_id))}</td><td>{rep}</td><td>{c[EvalStatus.PASSED]}</td>"
                     f"<td>{c[EvalStatus.FAILED]}</td><td>{c[EvalStatus.NOT_EVALUATED]}</td></tr>")
    parts.append("</table>")
    repeats = [r for r in order_for_summary(run.repeats()) if r.label != RepeatLabel.STABLE_PASS]
    if run.num_runs > 1 and repeats:
        parts.append("<h2>Cases across runs</h2><table><tr><th>case</th><th>runs passed</th><th>label</th>"
                     "<th>pass@k</th><th>pass^k</th></tr>")
        parts += [f"<tr><td>{e(safe_line(r.case_id))}</td><td>{r.passed}/{r.runs} {repeat_marks(r.statuses)}</td>"
                  f"<td>{r.label.value}</td><td>{r.pass_at_k[-1]:.2f}</td><td>{r.pass_hat_k[-1]:.2f}</td></tr>"
                  for r in repeats]
        parts.append("</table>")
    failures = _failures(run)
    if failures:
        parts.append("<h2>Failures</h2>")
    for rep, result, case in failures[:MAX_FAILURES]:
        where = f" (run {rep})" if run.num_runs > 1 else ""
        parts.append(f"<h3>{e(safe_line(result.eval_set_id))} / {e(safe_line(case.eval_id))}{where}</h3><ul>")
        if case.error:
            parts.append(f"<li>agent error: {e(safe_line(case.error.split(chr(10), 1)[0]))}</li>")
        parts += [f"<li>{e(safe_line(metric_line(m)))}</li>" for m in case.metrics if m.went_wrong]
        parts.append("</ul>")
        for i, actual, expected in _turn_rows(case):
            exp_calls = calls_text(expected.tool_calls) if expected is not None else "-"
            exp_text = content_text(expected.final_response) if expected is not None else "-"
            parts.append(f"<p>Turn {i + 1}: {e(safe_line(content_text(actual.user_content)))}</p>"
                         "<table><tr><th></th><th>expected</th><th>actual</th></tr>"
                         f"<tr><td>tools</td><td>{e(safe_line(exp_calls))}</td>"
                         f"<td>{e(safe_line(calls_text(actual.tool_calls)))}</td></tr>"
                         f"<tr><td>response</td><td>{e(safe_line(exp_text))}</td>"
                         f"<td>{e(safe_line(content_text(actual.final_response)))}</td></tr></table>")
            details = _detail_text(case, i)
            if details:
                parts.append("<ul>" + "".join(f"<li>{e(safe_line(d))}</li>" for d in details) + "</ul>")
    insight = run.insight
    if insight is not None and insight.cost is not None:
        parts.append("<h2>Tokens and estimated cost</h2><table><tr><th>who</th><th>model</th><th>prompt</th>"
                     "<th>cached</th><th>output</th><th>est. cost (USD)</th></tr>")
        for line in insight.cost.lines:
            cost = "unknown" if line.cost_usd is None else f"{line.cost_usd:.4f}"
            parts.append(f"<tr><td>{line.who}</td><td>{e(safe_line(line.model))}</td><td>{line.usage.prompt_tokens}</td>"
                         f"<td>{line.usage.cached_tokens}</td><td>{line.usage.output_tokens}</td><td>{cost}</td></tr>")
        parts.append(f"</table><p>{e(safe_line(insight.cost.text()))}</p>")
    if run.human:
        agreement, disagreements = review_lines(run.human)
        parts.append(f"<h2>Human review</h2><p>{len(run.human)} human verdict(s), {len(disagreements)} disagreeing "
                     "with the run.</p><table><tr><th>metric</th><th>n</th><th>agreement</th><th>Cohen's κ</th></tr>")
        parts += [f"<tr><td>{e(safe_line(a.metric))}</td><td>{a.n}</td><td>{a.raw:.0%}</td><td>{kappa_text(a.kappa)}</td></tr>"
                  for a in agreement]
        parts.append("</table><ul>")
        parts += [f"<li>{e(safe_line(r.eval_id))}, {e(safe_line(target_label(r.verdict)))}: human {r.verdict.verdict}"
                  + (f" ({e(safe_line(r.verdict.reason))})" if r.verdict.reason else "")
                  + f", run {r.automatic.label if r.automatic is not None else 'no verdict'}</li>" for r in disagreements]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ---- writing ---------------------------------------------------------------------------------------


def write_reports(run: SharedRun, md_out: str | None, html_out: str | None) -> list[str]:
    """Write the Markdown and/or HTML report; the messages of what could not be written. Markdown
    written to $GITHUB_STEP_SUMMARY is appended, as GitHub expects of a step summary (each step adds its
    part); a device or a pipe is written through (`schema.fileio.write_output`)."""
    from .schema.fileio import write_output

    errors: list[str] = []
    for flag, path, render in (("--md", md_out, render_markdown), ("--html", html_out, render_html)):
        if not path:
            continue
        try:
            write_output(Path(path), render(run).encode("utf-8"),
                         append=flag == "--md" and _is_step_summary(path))
        except OSError as exc:
            log.debug("writing %s failed", flag, exc_info=True)
            errors.append(f"could not write {flag} {path}: {exc.strerror or exc}")
    return errors


def _is_step_summary(path: str) -> bool:
    """Whether `path` is the GitHub Actions step summary file ($GITHUB_STEP_SUMMARY)."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return False
    if os.path.abspath(path) == os.path.abspath(summary):
        return True
    try:
        return os.path.samefile(path, summary)
    except OSError:  # either does not exist yet
        return False


def report_command(record_path: str, md_out: str | None, html_out: str | None, out: TextIO, err: TextIO) -> int:
    """`tui-eval report RUN_RECORD [--md OUT] [--html OUT]`: Markdown on stdout unless written to files.
    Exit 0 written, 2 no such record or a file that could not be written."""
    try:
        run = load_shared_run(Path(record_path))
    except ShareError as exc:
        print(f"error: {safe_line(str(exc))}", file=err)
        return 2
    if not md_out and not html_out:
        out.write(render_markdown(run))
        return 0
    for flag, path in (("--md", md_out), ("--html", html_out)):
        if path and Path(path).exists() and (Path(path).is_dir() or os.path.samefile(path, record_path)):
            print(f"error: {safe_line(f'{flag} {path}: is the run record or a folder; name another file')}", file=err)
            return 2
    errors = write_reports(run, md_out, html_out)
    for message in errors:
        print(f"error: {safe_line(message)}", file=err)
    return 2 if errors else 0
