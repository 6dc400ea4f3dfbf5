"""A person's verdict on a case, a turn or a metric, beside the automatic one, and how far people and
judges agree.

A human verdict (`schema.runrecord.HumanVerdict`) is kept in the run record of the result it judged, in
that case's `human_verdicts` place, with the versions it was given against: the case (the version its
result carries, `versions.case_version`) and the judged actual turns (the hash of what the agent said and
did in them). A verdict with a `metric` is about that metric (of one turn when `turn` is set), one with a
`turn` only about that turn, one with neither about the case. It speaks for a later result of the same
case while both are unchanged; otherwise the case shows "review stale".

Agreement, per metric a person judged: n verdicts compared with the metric's own verdict in the same run
(a metric not evaluated is left out), the raw agreement and Cohen's κ. κ is undefined ("—") when either
side used a single label: it then says nothing about agreement beyond chance (and 1 - p_e may be 0).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

import orjson
from ..schema.fileio import atomic_write
from ..schema.runrecord import HumanVerdict
from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.model import EvalCase, Invocation

log = logging.getLogger(__name__)

#: The per-case place of human verdicts in a run record.
VERDICTS_KEY = "human_verdicts"
_MARK = b'"' + VERDICTS_KEY.encode() + b'"'

Target = Literal["case", "turn", "metric"]


class ReviewError(Exception):
    """A verdict that cannot be kept (no saved run holds the result, the record is unreadable); says why."""


def target_of(verdict: HumanVerdict) -> Target:
    """What a verdict is about: a metric (of one turn when `turn` is set), a turn, else the case."""
    return "metric" if verdict.metric is not None else "turn" if verdict.turn is not None else "case"


def target_label(verdict: HumanVerdict) -> str:
    """`case`, `turn 2`, `metric hallucinations_v1` (`… of turn 2`)."""
    target = target_of(verdict)
    if target == "case":
        return "case"
    if target == "turn":
        return f"turn {(verdict.turn or 0) + 1}"
    return f"metric {verdict.metric}" + (f" of turn {verdict.turn + 1}" if verdict.turn is not None else "")


def passed(verdict: HumanVerdict) -> bool:
    return verdict.verdict == "pass"


def _digest(data: object) -> str:
    return hashlib.blake2b(orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS),
                           digest_size=12).hexdigest()


def case_version(case: EvalCase | None) -> str:
    """A case's version, as results carry it (`versions.case_version`; "" when the case is gone)."""
    from .versions import case_version as version

    return version(case) if case is not None else ""


def _judged(turn: Invocation) -> dict[str, Any]:
    """What a judge reads of an actual turn: the messages, the calls and their answers (never timings)."""
    return {
        "user": turn.user_content.to_dict(),
        "final": turn.final_response.to_dict() if turn.final_response is not None else None,
        "calls": [c.to_dict() | {"id": None} for c in turn.tool_calls],
        "responses": [r.to_dict() | {"id": None} for r in turn.tool_responses],
        "texts": turn.intermediate_texts,
    }


def turns_version(actual: list[Invocation], turn: int | None = None) -> str:
    """The content hash of the judged actual turns: one turn's, or all of them (turn None)."""
    turns = actual if turn is None else actual[turn:turn + 1]
    return _digest([_judged(t) for t in turns])


def automatic_status(case: dict[str, Any], verdict: HumanVerdict) -> EvalStatus | None:
    """What the run itself said about a verdict's target, from a record's case entry: the case's status,
    the metric's (or its status on the turn), or a turn's worst metric status."""
    def status(value: object) -> EvalStatus | None:
        try:
            return EvalStatus(value) if isinstance(value, int) else None
        except ValueError:
            return None

    target = target_of(verdict)
    if target == "case":
        return status(case.get("status"))
    metrics = [m for m in case.get("metrics") or [] if isinstance(m, dict)]
    if target == "metric":
        for m in metrics:
            if m.get("metric_name") == verdict.metric:
                if verdict.turn is None:
                    return status(m.get("status"))
                turns = m.get("per_invocation") or []
                return status(turns[verdict.turn].get("status")) if verdict.turn < len(turns) else None
        return None
    found = [status(m["per_invocation"][verdict.turn].get("status")) for m in metrics
             if isinstance(m.get("per_invocation"), list) and verdict.turn is not None
             and verdict.turn < len(m["per_invocation"]) and isinstance(m["per_invocation"][verdict.turn], dict)]
    marks = [s for s in found if s in (EvalStatus.PASSED, EvalStatus.FAILED)]
    if not marks:
        return None
    return EvalStatus.FAILED if EvalStatus.FAILED in marks else EvalStatus.PASSED


# ---- keeping a verdict ------------------------------------------------------------------------------


def _read(path: Path) -> Any:
    from .store import MAX_RECORD_BYTES, _loads, _read_bounded

    return _loads(_read_bounded(path, MAX_RECORD_BYTES), path)


def _case_entry(data: Any, eval_id: str, session_id: str) -> dict[str, Any] | None:
    cases = data.get("cases") if isinstance(data, dict) else None
    for case in cases if isinstance(cases, list) else []:
        if isinstance(case, dict) and case.get("eval_id") == eval_id and case.get("session_id", "") == session_id:
            return case
    return None


def find_record(history: Path, eval_id: str, session_id: str) -> Path | None:
    """The saved run record holding this result of a case (its session id names the one run of it)."""
    from .store import RecordError, list_history

    needle = orjson.dumps(session_id) if session_id else None
    for entry in list_history(history):
        try:
            raw = entry.path.read_bytes()
        except OSError:
            continue
        if needle is not None and needle not in raw:
            continue
        try:
            if _case_entry(orjson.loads(raw), eval_id, session_id) is not None:
                return entry.path
        except (orjson.JSONDecodeError, RecordError):
            continue
    return None


def keep_verdict(record: Path, eval_id: str, session_id: str, verdict: HumanVerdict) -> EvalStatus | None:
    """Add a verdict to its case in a run record (rewritten atomically, every other byte's meaning kept);
    returns what the run itself said about the target."""
    from .store import RecordError, record_json

    try:
        data = _read(record)
    except RecordError as exc:
        raise ReviewError(str(exc)) from None
    if isinstance(data, dict) and data.get("state") == "running":
        raise ReviewError(f"{record}: the run is still going; judge its cases once it has finished")
    case = _case_entry(data, eval_id, session_id)
    if case is None:
        raise ReviewError(f"{record}: case {eval_id!r} of this run is not in the record any more")
    verdicts = case.get(VERDICTS_KEY)
    case[VERDICTS_KEY] = (verdicts if isinstance(verdicts, list) else []) + [verdict.model_dump(mode="json",
                                                                                                  exclude_none=True)]
    atomic_write(record, record_json(data))
    return automatic_status(case, verdict)


# ---- reading them back --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A human verdict as a saved run keeps it, with what that run said about the same target."""

    eval_file: str
    eval_id: str
    verdict: HumanVerdict
    automatic: EvalStatus | None
    run_id: str
    record: Path

    @property
    def disagrees(self) -> bool:
        """The person and the run disagree (a target the run did not evaluate never disagrees)."""
        if self.automatic not in (EvalStatus.PASSED, EvalStatus.FAILED):
            return False
        return passed(self.verdict) != (self.automatic is EvalStatus.PASSED)


def reviews_in(history: Path, records: Iterable[Path] | None = None) -> list[Reviewed]:
    """Every human verdict kept in a history folder's run records (or only in `records`), oldest first."""
    from .store import RecordError, list_history

    found: list[Reviewed] = []
    only = {Path(r) for r in records} if records is not None else None
    for entry in reversed(list_history(history)):
        if only is not None and entry.path not in only:
            continue
        try:
            raw = entry.path.read_bytes()
            if _MARK not in raw:
                continue
            data = orjson.loads(raw)
        except (OSError, orjson.JSONDecodeError, RecordError) as exc:
            log.warning("%s: human verdicts not read: %s", entry.path, exc)
            continue
        for case in data.get("cases") or []:
            if not isinstance(case, dict) or not isinstance(case.get(VERDICTS_KEY), list):
                continue
            for raw_verdict in case[VERDICTS_KEY]:
                try:
                    verdict = HumanVerdict.model_validate(raw_verdict)
                except ValueError as exc:
                    log.warning("%s: a human verdict of %s is not valid: %s", entry.path, case.get("eval_id"), exc)
                    continue
                found.append(Reviewed(entry.eval_file or str(data.get("eval_file", "")), str(case.get("eval_id")),
                                      verdict, automatic_status(case, verdict), entry.run_id, entry.path))
    return found


def latest_per_target(reviews: Iterable[Reviewed]) -> dict[tuple[str, str, int | None, str | None], Reviewed]:
    """The newest verdict for each (eval file, case, target)."""
    out: dict[tuple[str, str, int | None, str | None], Reviewed] = {}
    for r in sorted(reviews, key=lambda r: r.verdict.at or 0.0):
        v = r.verdict
        out[(r.eval_file, r.eval_id, v.turn, v.metric)] = r
    return out


def is_current(verdict: HumanVerdict, case: EvalCase | None, actual: list[Invocation]) -> bool:
    """The verdict speaks for this result of the case as it is now: the same case (by version) and the
    same judged turns."""
    return verdict.case_version == case_version(case) and verdict.turns_version == turns_version(actual, verdict.turn)


# ---- agreement ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Agreement:
    """People against one metric: n pairs, how many agree, and Cohen's κ (None where undefined)."""

    metric: str
    n: int
    agree: int
    kappa: float | None

    @property
    def raw(self) -> float:
        return self.agree / self.n if self.n else 0.0


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's κ of two raters' pass/fail labels; None when either used one label only (or none)."""
    n = len(pairs)
    if n == 0:
        return None
    a_pass = sum(1 for a, _ in pairs if a) / n
    b_pass = sum(1 for _, b in pairs if b) / n
    if a_pass in (0.0, 1.0) or b_pass in (0.0, 1.0):
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    chance = a_pass * b_pass + (1 - a_pass) * (1 - b_pass)
    return (observed - chance) / (1 - chance)


def agreement_by_metric(reviews: Iterable[Reviewed]) -> list[Agreement]:
    """Per metric people judged (in name order): n, agreements and κ against the metric's own verdicts."""
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    for r in reviews:
        if r.verdict.metric and r.automatic in (EvalStatus.PASSED, EvalStatus.FAILED):
            pairs.setdefault(r.verdict.metric, []).append((passed(r.verdict), r.automatic is EvalStatus.PASSED))
    return [Agreement(metric, len(p), sum(1 for a, b in p if a == b), cohen_kappa(p))
            for metric, p in sorted(pairs.items())]


def review_lines(reviews: list[Reviewed]) -> tuple[list[Agreement], list[Reviewed]]:
    """What a report says of people's verdicts: agreement per metric, and every disagreement."""
    return agreement_by_metric(reviews), [r for r in reviews if r.disagrees]


def kappa_text(kappa: float | None) -> str:
    """κ as every face shows it: two decimals, or "—" where it is undefined."""
    return "—" if kappa is None else f"{kappa:.2f}"
