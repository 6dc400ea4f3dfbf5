"""The CI gate: a run's exit code, which tells a regression from an outage, and `--baseline` compares.

Exit codes (`tui-eval run`, the README and `--help` say the same):
  0  every case passed, every metric evaluated
  1  a case failed (with `--fail-on-regression`: a case that passed in the baseline fails now)
  2  bad arguments, unreadable input, or results (history, --json, --junit, --md) not written
  3  nothing failed but the run is incomplete: a metric not evaluated (no judge credentials, a judge
     that failed after retries), a case not evaluated (a user-simulator outage), a case stopped by an
     outage of the agent's model API (`causes.infrastructure_error`), a cancelled run.
     `--strict` folds 3 into 1.
The comparison with a baseline uses `store.compare_results`, the rule of the dashboard's history compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from ..schema.results import CaseResult, EvalSetResult
from ..schema.runrecord import GateRecord
from ..schema.status import EvalStatus
from .causes import causes_of, infrastructure_error, verdict_status
from .exitcodes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from .history import Found
from .store import NOT_EVALUATED, NOT_RUN, STILL_FAILING, compare_results

OUTCOME_WORDS = {EXIT_OK: "passed", EXIT_FAILED: "failed", EXIT_BAD_INPUT: "error", EXIT_INCOMPLETE: "incomplete"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """A run's verdict for CI: its exit code and why, in words."""

    code: int
    reasons: tuple[str, ...] = ()

    @property
    def word(self) -> str:
        return OUTCOME_WORDS[self.code]

    def text(self) -> str:
        """`exit 3 (incomplete): nothing failed, but 4 metrics were not evaluated (no judge credentials)`."""
        head = f"exit {self.code} ({self.word})"
        return f"{head}: {'; '.join(self.reasons)}" if self.reasons else head


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def incomplete_reasons(results: Iterable[EvalSetResult], cancelled: bool, stopped: str | None = None) -> list[str]:
    """Why a run is not complete: cases and metrics not evaluated (with their reasons), a cancel (`stopped`:
    why it stopped, when not a cancel: `--timeout`)."""
    cases = 0
    outages: dict[str, int] = {}
    metrics: dict[str, int] = {}
    for result in results:
        for case in result.case_results:
            if case.status == EvalStatus.NOT_EVALUATED:
                cases += 1
            outage = infrastructure_error(case.error) if case.status == EvalStatus.FAILED else None
            if outage is not None:
                outages[outage] = outages.get(outage, 0) + 1
            for m in case.metrics:
                if m.status == EvalStatus.NOT_EVALUATED and not case.error:
                    reason = (m.reason or "no reason given").split("\n", 1)[0]
                    metrics[reason] = metrics.get(reason, 0) + 1
    out = []
    if stopped:
        out.append(stopped)
    elif cancelled:
        out.append("the run was cancelled: unfinished cases were not evaluated")
    if outages:
        n = sum(outages.values())
        out.append(f"{_plural(n, 'case')} stopped by an infrastructure error: "
                   + ", ".join(f"{k} ({v})" if len(outages) > 1 else k for k, v in outages.items()))
    if cases:
        out.append(f"{_plural(cases, 'case')} not evaluated")
    if metrics:
        n = sum(metrics.values())
        why = ", ".join(f"{k} ({v})" if len(metrics) > 1 else k for k, v in sorted(metrics.items(), key=lambda kv: -kv[1]))
        out.append(f"{_plural(n, 'metric')} not evaluated: {why}")
    return out


def run_outcome(results: Iterable[EvalSetResult], *, cancelled: bool = False, strict: bool = False,
                baseline: BaselineReport | None = None, fail_on_regression: bool = False,
                stopped: str | None = None, num_runs: int = 1) -> Outcome:
    """Exit 1 when a case failed (with `fail_on_regression`, when a case regressed against `baseline`),
    else 3 when the run is incomplete (1 with `strict`), else 0. Under `num_runs` > 1 failures are counted
    as case runs (a case run three times is three results)."""
    results = list(results)
    unit = "case run" if num_runs > 1 else "case"
    # A case an outage failed (its model API answered 503) says nothing of the agent: incomplete, not failed.
    failed = sum(1 for r in results for c in r.case_results if verdict_status(c) == EvalStatus.FAILED)
    incomplete = incomplete_reasons(results, cancelled or stopped is not None, stopped)
    reasons: list[str] = []
    if fail_on_regression and baseline is not None:
        regressions = len(baseline.of_kind("regression"))
        # Fails safe: an eval set with no baseline run cannot show a regression, so any failure there fails.
        unguarded = set(baseline.missing)
        failed_unguarded = sum(1 for r in results if r.eval_set_id in unguarded for c in r.case_results
                               if verdict_status(c) == EvalStatus.FAILED)
        if regressions or failed_unguarded:
            out = [f"{_plural(regressions, 'regression')} against the baseline"] if regressions else []
            if failed_unguarded:
                out.append(f"{_plural(failed_unguarded, unit)} failed with no baseline to compare with "
                           f"(--fail-on-regression fails on any failure then: {baseline.missing_text()})")
            return Outcome(EXIT_FAILED, tuple(out))
        if failed:
            reasons.append(f"{_plural(failed, unit)} failed, none of them a regression (--fail-on-regression)")
    elif failed:
        return Outcome(EXIT_FAILED, (f"{_plural(failed, unit)} failed", *incomplete))
    if incomplete:
        if strict:
            return Outcome(EXIT_FAILED, tuple(reasons + incomplete + ["--strict counts an incomplete run as failed"]))
        # One consistent line: after "2 cases failed, none of them a regression" it cannot say "nothing failed".
        lead = "and the run is incomplete: " if reasons else "nothing failed, but "
        return Outcome(EXIT_INCOMPLETE, tuple(reasons + [lead + incomplete[0], *incomplete[1:]]))
    return Outcome(EXIT_OK, tuple(reasons) or ("every case passed",))


# ---- --baseline -----------------------------------------------------------------------------------


class BaselineError(ValueError):
    """The named baseline run cannot be found or read (exit 2)."""


@dataclass(frozen=True, slots=True)
class BaselineCase:
    """One case of a baseline compare, with the reason shown beside it."""

    kind: str
    eval_set_id: str
    eval_id: str
    before: EvalStatus | None
    after: EvalStatus | None
    reason: str


@dataclass(slots=True)
class BaselineReport:
    """This run against a saved run of the same eval sets, case by case."""

    #: The baseline run's id and when it ran (None when no eval set had a saved run).
    run_id: str | None
    created: float | None
    cases: list[BaselineCase] = field(default_factory=list)
    #: Eval sets with no saved run to compare with, and why (`no saved run of the same kind ...`).
    missing: list[str] = field(default_factory=list)
    why_missing: dict[str, str] = field(default_factory=dict)

    def missing_text(self) -> str | None:
        """`gate: no saved run of the same kind (...)`, one clause per eval set without a baseline."""
        if not self.missing:
            return None
        return "; ".join(f"{s}: {self.why_missing.get(s, 'no saved run')}" for s in self.missing)

    def of_kind(self, kind: str) -> list[BaselineCase]:
        return [c for c in self.cases if c.kind == kind]

    def sections(self) -> list[tuple[str, list[BaselineCase]]]:
        """The lists a report shows: regressions, fixes, still failing, not run (and not evaluated)."""
        return [("regressions", self.of_kind("regression")), ("fixes", self.of_kind("fixed")),
                ("still failing", self.of_kind(STILL_FAILING)),
                ("not run", self.of_kind(NOT_RUN)), ("not evaluated", self.of_kind(NOT_EVALUATED))]

    def headline(self) -> str:
        """`Baseline run 20261126-…: 1 regression, 2 fixes, 3 still failing, 0 not run`."""
        if self.run_id is None:
            why = self.missing_text()
            return "Baseline: no saved run of these eval sets to compare with" + (f" ({why})" if why else "")
        singular = {"regressions": "regression", "fixes": "fix"}
        counts = ", ".join(f"{len(cases)} {singular.get(name, name) if len(cases) == 1 else name}"
                           for name, cases in self.sections() if cases or name != "not evaluated")
        return f"Baseline run {self.run_id}: {counts}"


def gate_record(outcome: Outcome, baseline: BaselineReport | None, *, fail_on_regression: bool) -> GateRecord:
    """The gate's outcome as the run record, --json and JUnit keep it."""
    def ids(kind: str) -> list[str]:
        return [f"{c.eval_set_id}/{c.eval_id}" for c in baseline.of_kind(kind)] if baseline is not None else []

    return GateRecord(code=outcome.code, word=outcome.word, reasons=list(outcome.reasons),
                      fail_on_regression=fail_on_regression,
                      baseline_run=baseline.run_id if baseline is not None else None,
                      baseline_missing=baseline.missing_text() if baseline is not None else None,
                      regressions=ids("regression"), fixes=ids("fixed"), still_failing=ids(STILL_FAILING),
                      not_run=ids(NOT_RUN), not_evaluated=ids(NOT_EVALUATED))


def _causes_text(case: CaseResult | None) -> str:
    if case is None:
        return ""
    labels = [c.label for c in causes_of(case)]
    return "; ".join(labels[:3]) + (f"; … {len(labels) - 3} more" if len(labels) > 3 else "")


def _reason(kind: str, old: CaseResult | None, new: CaseResult | None) -> str:
    if kind == NOT_RUN:
        return "not in this run" if new is None else "not in the baseline run"
    if kind == NOT_EVALUATED:
        if new is not None and verdict_status(new) == EvalStatus.NOT_EVALUATED:
            return "not evaluated now: " + (_causes_text(new) or "no verdict")
        return "not evaluated in the baseline: " + (_causes_text(old) or "no verdict")
    if kind == "fixed":
        return "failed there: " + (_causes_text(old) or "failed")
    if kind in ("regression", STILL_FAILING, "changed"):
        return _causes_text(new) or (new.status.label if new is not None else "")
    return ""


def compare_with(baseline: EvalSetResult, now: EvalSetResult) -> list[BaselineCase]:
    """Every case of two runs of one eval set, as history compare reads them, with a reason each."""
    old = {c.eval_id: c for c in baseline.case_results}
    new = {c.eval_id: c for c in now.case_results}
    out = []
    for change in compare_results(baseline, now):
        a, b = old.get(change.eval_id), new.get(change.eval_id)
        out.append(BaselineCase(change.kind, now.eval_set_id, change.eval_id, change.before, change.after,
                                _reason(change.kind, a, b)))
    return out


def baseline_report(records: Mapping[str, Found], results: list[EvalSetResult],
                    why_missing: dict[str, str] | None = None) -> BaselineReport:
    """Compare each eval set's first result of this run with its baseline record (`records`: eval file ->
    the record the resolver found; `why_missing`: eval file -> why it has none, as the resolver said)."""
    report = BaselineReport(None, None)
    done: set[str] = set()
    for result in results:
        if result.eval_set_file in done:
            continue  # --num-runs: the first repetition stands for the run
        done.add(result.eval_set_file)
        found = records.get(result.eval_set_file)
        if found is None:
            report.missing.append(result.eval_set_id)
            report.why_missing[result.eval_set_id] = (why_missing or {}).get(result.eval_set_file, "no saved run")
            report.cases += [BaselineCase(NOT_RUN, result.eval_set_id, c.eval_id, None, c.status,
                                          "not in the baseline run") for c in result.case_results]
            continue
        try:
            meta, before = found.load()
        except (OSError, ValueError) as exc:
            raise BaselineError(f"--baseline: cannot read {found.path}: {exc}") from None
        if report.run_id is None:
            report.run_id = str(meta.get("run_id") or "")
            created = meta.get("creation_timestamp")
            report.created = float(created) if isinstance(created, int | float) else None
        report.cases += compare_with(before, result)
    order = {"regression": 0, "fixed": 1, STILL_FAILING: 2, NOT_RUN: 3, NOT_EVALUATED: 4}
    report.cases.sort(key=lambda c: order.get(c.kind, 5))
    return report
