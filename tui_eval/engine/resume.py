"""`tui-eval run --resume [RUN|latest]` and `--rerun failed|errored|stale`: which saved run, which cases.

`--resume` finds an interrupted run (its records say `interrupted`; its journal holds every case it
finished, turns included) through the one resolver's rules (engine/history.py), refuses when this run is
of another kind or its agent or criteria versions differ, and hands the runner the finished cases to keep:
only the others run, under the interrupted run's id, and its records are replaced by complete ones.

`--rerun` takes the latest saved run of the same kind of each eval set and narrows the plan to the cases
that failed (a failing verdict), errored (the agent or its model API raised) or are stale (their recorded
versions differ from the current ones).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .history import LATEST, EvalSetPlace, _same_file, _usable, entries_of, kind_differences, run_order
from .journal import JOURNAL_SUFFIX, journal_name, read_journal
from .store import HistoryEntry, RecordError, load_record, read_record_head

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.results import CaseResult, EvalSetResult
    from .gate import Outcome
    from .plan import RunPlan

log = logging.getLogger(__name__)


class ResumeError(ValueError):
    """The run cannot be resumed (or re-run) as asked; the message says why (exit 2)."""


@dataclass(slots=True)
class Interrupted:
    """An interrupted run to finish: its id, the cases it finished (eval file as this run names it,
    eval_id, repetition), and its records and journals, replaced once the resumed run is saved."""

    run_id: str
    done: dict[tuple[str, str, int], CaseResult]
    records: list[Path] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)

    def take_journals(self) -> None:
        """The resumed run writes its own journal (the same file name): the old one is read, so it goes.
        The interrupted records still hold every finished case until the new run's are saved."""
        for path in self.journals:
            path.unlink(missing_ok=True)

    def remove_replaced(self) -> None:
        """The interrupted run's records, once the resumed run's complete records are saved."""
        for path in self.records:
            path.unlink(missing_ok=True)


def _interrupted_entries(place: EvalSetPlace) -> list[HistoryEntry]:
    import time

    now = time.time()
    return [e for e in entries_of(place) if e.state == "interrupted" and _usable(e, now)]


def find_interrupted(spec: str, places: list[EvalSetPlace]) -> Interrupted:
    """The interrupted run `spec` names (`latest`: the newest interrupted run of these eval sets; a run id;
    its record or journal file), checked against this run's kind (`check_versions` checks the versions).
    Raises ResumeError naming what differs."""
    by_place = {p.eval_file: _interrupted_entries(p) for p in places}
    everything = sorted((e for es in by_place.values() for e in es), key=run_order, reverse=True)
    if spec == LATEST:
        if not everything:
            raise ResumeError("--resume: no interrupted run of these eval sets (a run that was killed, or lost its "
                              "machine, before it finished)")
        run_id = everything[0].run_id
    elif spec.endswith(JOURNAL_SUFFIX):
        run_id = Path(spec).name.removesuffix(JOURNAL_SUFFIX)
    elif Path(spec).is_file():
        try:
            run_id = str(read_record_head(Path(spec))["run_id"])
        except (OSError, RecordError) as exc:
            raise ResumeError(f"--resume {spec}: not a readable run record: {exc}") from None
    else:
        run_id = spec
    mine = {f: [e for e in es if e.run_id == run_id] for f, es in by_place.items()}
    if not any(mine.values()):
        raise ResumeError(f"--resume {spec}: run {run_id} is not an interrupted run of the eval sets named here")
    out = Interrupted(run_id, {})
    for place in places:
        entries = mine[place.eval_file]
        if not entries:
            continue
        diff = kind_differences(place.kind, entries[0])
        if diff:
            raise ResumeError(f"--resume: run {run_id} is of another kind than this run: " + "; ".join(diff))
        out.records += [e.path for e in entries]
        journal = entries[0].path.parent / journal_name(run_id)
        if journal.exists() and journal not in out.journals:
            out.journals.append(journal)
    contents = []
    for journal in out.journals:
        try:
            contents.append(read_journal(journal))
        except RecordError as exc:
            raise ResumeError(f"--resume: {exc}") from None
    for place in places:
        for got in contents:
            for (file, rep), cases in got.cases.items():
                if _same_file(file, place.eval_file):
                    for case in cases:
                        out.done[(place.eval_file, case.eval_id, rep)] = case
    if not out.journals:
        # No journal (removed by hand): the records' cases are kept, without their turns.
        for place in places:
            for entry in mine[place.eval_file]:
                try:
                    _meta, result = load_record(entry.path, with_turns=False)
                except RecordError as exc:
                    raise ResumeError(f"--resume: {exc}") from None
                for case in result.case_results:
                    out.done[(place.eval_file, case.eval_id, entry.repetition)] = case
    return out


def check_versions(interrupted: Interrupted, runs: list[tuple[str | None, RunPlan]]) -> None:
    """Refuse a resume (ResumeError, naming what changed) when the agent code or the criteria of a case the
    interrupted run finished differ from what is on disk now (`engine.versions`, the one stale rule): its
    verdict would not be this agent's, or these criteria's. (The eval case itself may have changed: that
    case's finished result is kept, and `--rerun stale` runs it again.)"""
    from .versions import Current, criteria_version, stale_reasons, version_of_agent_ref

    for agent_ref, plan in runs:
        now_agent = version_of_agent_ref(agent_ref)
        for target in plan.targets:
            now = Current(agent=now_agent, criteria=criteria_version(target.config))
            for (file, eval_id, _rep), case in interrupted.done.items():
                if file != str(target.eval_file):
                    continue
                why = [r for r in stale_reasons(case.versions, now) if r.startswith(("agent", "criteria"))]
                if why:
                    raise ResumeError(f"--resume: run {interrupted.run_id} cannot be finished by this run: "
                                      f"{', '.join(why)} since it ran (case {eval_id} of {file}); run it afresh")


@dataclass(slots=True)
class Reruns:
    """What `--rerun` chose: how many cases per eval file, or nothing (with the stored run's outcome)."""

    mode: str
    chosen: dict[str, list[str]]
    stored_run: str | None
    stored_outcome: Outcome

    @property
    def nothing(self) -> bool:
        return not any(self.chosen.values())

    def nothing_text(self) -> str:
        what = {"failed": "failed", "errored": "errored", "stale": "is stale"}[self.mode]
        run = f"run {self.stored_run}" if self.stored_run else "the saved runs"
        return f"Nothing to re-run (--rerun {self.mode}): no case {what} in {run}; its outcome stands"


def _wanted(mode: str, case: CaseResult) -> bool:
    from ..schema.status import EvalStatus
    from .causes import verdict_status

    if mode == "failed":
        return verdict_status(case) == EvalStatus.FAILED
    if mode == "errored":
        return case.error is not None
    return False  # stale: chosen by `choose_reruns` against the versions on disk now


def _latest_per_case(mode: str, place: EvalSetPlace, entries: list[HistoryEntry]) -> EvalSetResult:
    """Each case's newest saved result across the eval set's runs of this kind, newest run first (a
    failures-only or selected run speaks for its cases, older runs for the rest), as one result."""
    from ..schema.results import EvalSetResult

    seen: dict[str, CaseResult] = {}
    newest: EvalSetResult | None = None
    for entry in entries:
        try:
            _meta, result = load_record(entry.path, with_turns=False)
        except RecordError as exc:
            raise ResumeError(f"--rerun {mode}: {exc}") from None
        newest = newest or result
        for case in result.case_results:
            seen.setdefault(case.eval_id, case)
        if not entry.partial:
            break  # a complete run covers every case
    assert newest is not None
    return newest.model_copy(update={"case_results": list(seen.values())})


def choose_reruns(mode: str, places: list[EvalSetPlace], runs: list[tuple[str | None, RunPlan]]) -> Reruns:
    """Narrow each plan to the cases `mode` picks in the latest saved run of the same kind of each eval
    set (plans are changed in place): failed, errored, or stale (their recorded versions differ from the
    agent, case and criteria on disk now: `engine.versions`, the one stale rule). Raises ResumeError when
    an eval set has no saved run to pick from."""
    from .gate import run_outcome
    from .versions import Current, case_version, criteria_version, stale_reasons, version_of_agent_ref

    targets = {str(t.eval_file): (ref, t) for ref, plan in runs for t in plan.targets}
    agents: dict[str | None, str | None] = {}
    chosen: dict[str, list[str]] = {}
    stored: list[EvalSetResult] = []
    stored_run: str | None = None
    for place in places:
        alike = [e for e in entries_of(place) if not kind_differences(place.kind, e)]
        if not alike:
            raise ResumeError(f"--rerun {mode}: no saved run of {place.eval_set_id} ({place.eval_file}) of the "
                              "same kind to re-run from")
        result = _latest_per_case(mode, place, alike)
        stored.append(result)
        stored_run = stored_run or alike[0].run_id
        if mode != "stale":
            chosen[place.eval_file] = [c.eval_id for c in result.case_results if _wanted(mode, c)]
            continue
        ref, target = targets[place.eval_file]
        if ref not in agents:
            agents[ref] = version_of_agent_ref(ref)
        cases = {c.eval_id: c for c in target.eval_set.eval_cases}
        criteria = criteria_version(target.config)
        chosen[place.eval_file] = [
            c.eval_id for c in result.case_results if c.eval_id in cases and stale_reasons(
                c.versions, Current(agent=agents[ref], case=case_version(cases[c.eval_id]), criteria=criteria))]
    for _ref, plan in runs:
        for target in plan.targets:
            ids = [c.eval_id for c in target.cases if c.eval_id in set(chosen.get(str(target.eval_file), []))]
            target.case_ids = ids
        plan.targets = [t for t in plan.targets if t.case_ids]
    return Reruns(mode, chosen, stored_run, run_outcome(stored))
