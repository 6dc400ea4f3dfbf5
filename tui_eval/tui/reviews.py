"""People's verdicts from the dashboard: `V` asks for one (pass/fail and a short reason) on a case, a turn or
a metric and keeps it in the run record of the shown result; review mode lists what still needs a person.
Owned by the app; UI thread but for reading and writing records."""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..engine.reviews import Reviewed, Target, passed, target_label
from ..schema.criteria import CATALOG
from ..schema.runrecord import HumanVerdict
from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from textual.content import Content

    from .app import EvalApp
    from .listing import CaseListing
    from .reviewbook import ReviewBook


@dataclass(frozen=True, slots=True)
class VerdictTarget:
    """What a verdict is about, and what the run said of it (shown beside the choice)."""

    target: Target
    turn: int | None
    metric: str | None
    automatic: EvalStatus | None

    @property
    def label(self) -> str:
        what = ("the case" if self.target == "case" else f"turn {(self.turn or 0) + 1}" if self.target == "turn"
                else f"metric {self.metric}")
        said = self.automatic.label if self.automatic is not None else "no verdict"
        return f"{what}  (run: {said})"


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """A judged metric of a case that needs a person: never reviewed, review stale, or a disagreement."""

    key: CaseKey
    metric: str
    judge: EvalStatus
    why: str  # "not reviewed" | "review stale" | "disagrees: human pass"


def _status(value: int) -> EvalStatus | None:
    try:
        return EvalStatus(value)
    except ValueError:
        return None


class ReviewControl:
    def __init__(self, app: EvalApp) -> None:
        self.app = app

    @property
    def book(self) -> ReviewBook:
        return self.app.listing.reviews

    def history_of(self, key: CaseKey) -> Path | None:
        from ..engine.saved import history_dir_for

        ws = self.app.listing.workspace
        return history_dir_for(ws, Path(key.eval_file)) if ws is not None else None

    def load(self, histories: set[Path], then: Callable[[], None] | None = None) -> None:
        """Read the human verdicts of these history folders (those not read yet) in a thread worker."""
        from ..engine.reviews import reviews_in

        todo = sorted(h for h in histories if not self.book.loaded(h))
        if not todo:
            if then is not None:
                then()
            return
        found: dict[Path, list[Reviewed]] = {}

        def work() -> None:
            for history in todo:
                found[history] = reviews_in(history)

        def done() -> None:
            for history, reviews in found.items():
                self.book.set_dir(history, reviews)
            if then is not None:
                then()

        self.app.jobs.start(work, group="reviews", name="read human verdicts", failure="Could not read human verdicts",
                            then=done)

    # ---- one verdict ------------------------------------------------------------------------------

    def targets(self, key: CaseKey) -> list[VerdictTarget]:
        summary = self.app.listing.results.summary(key)
        if summary is None:
            return []
        out = [VerdictTarget("case", None, None, _status(summary.status))]
        for turn in range(summary.turns):
            marks = [s for m in summary.metrics if turn < len(m.turns)
                     if (s := _status(m.turns[turn])) in (EvalStatus.PASSED, EvalStatus.FAILED)]
            worst = (EvalStatus.FAILED if EvalStatus.FAILED in marks else EvalStatus.PASSED) if marks else None
            out.append(VerdictTarget("turn", turn, None, worst))
        for m in summary.metrics:
            status = _status(m.status)
            if status in (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED):
                out.append(VerdictTarget("metric", None, m.name, status))
        return out

    def ask(self, key: CaseKey, turn: int | None = None, metric: str | None = None, label: str | None = None) -> None:
        targets = self.targets(key)
        if not targets:
            self.app.notify("No result to judge yet: run the case first.", severity="warning", markup=False)
            return
        want = ("metric", None, metric) if metric is not None else ("turn", turn, None) if turn is not None \
            else ("case", None, None)
        chosen = next((i for i, t in enumerate(targets) if (t.target, t.turn, t.metric) == want), 0)
        self.app.listing.result(key)  # asks the engine for the full result now, if it holds it
        from .screens.verdict import VerdictScreen

        def answered(answer: tuple[int, str, str] | None) -> None:
            if answer is not None:
                index, verdict, reason = answer
                self.keep(key, targets[index], verdict, reason)

        self.app.push_screen(VerdictScreen(key.eval_id, [t.label for t in targets], chosen, label), answered)

    def keep(self, key: CaseKey, target: VerdictTarget, label: str, reason: str) -> None:
        """Keep a verdict in the run record of the shown result (a thread worker), then show it."""
        from ..engine.reviews import ReviewError, case_version, find_record, keep_verdict, target_label, turns_version

        listing = self.app.listing
        result = listing.result(key)
        history = self.history_of(key)
        if result is None or history is None:
            waiting = listing.results.loading(key)
            self.app.notify("The result is still on its way from the engine: try again in a moment." if waiting
                            else "No result to judge yet: run the case first.", severity="warning", markup=False)
            return
        verdict = HumanVerdict(verdict="pass" if label == "pass" else "fail", reason=reason,
                               turn=target.turn, metric=target.metric, by=_user() or None, at=time.time(),
                               # The case as the result ran it (its version), else as the file has it now.
                               case_version=(result.versions.case if result.versions is not None
                                             and result.versions.case else case_version(listing.case(key))),
                               turns_version=turns_version(list(result.actual), target.turn))
        kept: list[Reviewed] = []

        def work() -> None:
            record = find_record(history, key.eval_id, result.session_id)
            if record is None:
                raise ReviewError("this result is in no saved run (run with --no-save, or still going): "
                                  "run the case again, then judge it")
            automatic = keep_verdict(record, key.eval_id, result.session_id, verdict)
            kept.append(Reviewed(key.eval_file, key.eval_id, verdict, automatic, "", record))

        def done() -> None:
            reviewed = kept[0]
            if not self.book.loaded(history):
                self.load({history}, then=lambda: self.app.pump.redraw({key}))
            else:
                self.book.add(history, reviewed)
            said = reviewed.automatic.label if reviewed.automatic is not None else "no verdict"
            clash = ": people and the run disagree" if reviewed.disagrees else ""
            self.app.notify(f"Human verdict kept: {label} on {target_label(verdict)} of {key.eval_id} "
                            f"(run: {said}){clash}", markup=False)
            self.app.pump.redraw({key})

        self.app.jobs.start(work, group="reviews", name="keep a human verdict", failure="Human verdict not kept",
                            then=done)

    # ---- review mode ------------------------------------------------------------------------------

    def needing(self) -> list[ReviewItem]:
        """Every judged metric verdict of the shown results that a person has not confirmed: never
        reviewed, reviewed against other turns (stale), or reviewed the other way (disagreement)."""
        listing = self.app.listing
        items: list[ReviewItem] = []
        histories: dict[str, Path | None] = {}  # one lookup per eval file, not per case
        for key in sorted(listing.results.keys(), key=lambda k: (k.eval_file, k.eval_id)):
            summary = listing.results.summary(key)
            if key.eval_file not in histories:
                histories[key.eval_file] = self.history_of(key)
            history = histories[key.eval_file]
            if summary is None or history is None:
                continue
            judged = [(m.name, s) for m in summary.metrics
                      if (info := CATALOG.get(m.name)) is not None and info.needs_judge
                      and (s := _status(m.status)) in (EvalStatus.PASSED, EvalStatus.FAILED)]
            if not judged:
                continue
            # The full result (fetched from the engine) only for a case a person has judged before.
            reviewed = self.book.of_case(history, key)
            result = listing.result(key) if reviewed else None
            standing = {s.reviewed.verdict.metric: s for s in self.book.standing(
                history, key, listing.case(key), list(result.actual) if result is not None else [])
                if s.reviewed.verdict.metric is not None and s.reviewed.verdict.turn is None} if reviewed else {}
            for name, status in judged:
                found = standing.get(name)
                if found is None:
                    items.append(ReviewItem(key, name, status, "not reviewed"))
                elif not found.current:
                    items.append(ReviewItem(key, name, status, "review stale"))
                elif passed(found.reviewed.verdict) != (status is EvalStatus.PASSED):
                    items.append(ReviewItem(key, name, status, f"disagrees: human {found.reviewed.verdict.verdict}"))
        return items

    def histories(self) -> set[Path]:
        """The history folders of every eval file shown."""
        from ..engine.saved import history_dir_for

        ws = self.app.listing.workspace
        return {history_dir_for(ws, path) for path in self.app.listing.files} if ws is not None else set()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment (a container without passwd)
        return ""


def human_lines(listing: CaseListing, key: CaseKey) -> list[Content]:
    """The summary's lines on people's verdicts of a case: each target's newest verdict with its reason,
    or "review stale" when it was given on other turns or another version of the case."""
    from textual.content import Content

    from ..engine.saved import history_dir_for
    from .text import one_line, plain

    ws = listing.workspace
    if ws is None or not listing.reviews.judged(key.eval_id):
        return []
    result = listing.result(key)
    if result is None:
        return []
    history = history_dir_for(ws, Path(key.eval_file))
    lines: list[Content] = []
    for standing in listing.reviews.standing(history, key, listing.case(key), list(result.actual)):
        v = standing.reviewed.verdict
        if not standing.current:
            lines.append(Content.assemble(("human  ", "$text-muted"), (f"review stale: {target_label(v)}", "$text-warning"),
                                          ("  (given on other turns or another version of the case; V again)",
                                           "$text-muted")))
            continue
        mark = ("✔ pass", "$text-success") if passed(v) else ("✘ fail", "$text-error")
        clash = ("  ≠ run", "bold $text-warning") if standing.reviewed.disagrees else ""
        lines.append(Content.assemble(("human  ", "$text-muted"), mark, f" {target_label(v)}", clash,
                                      plain(f"  {one_line(v.reason, 120)}" if v.reason else "", "italic")))
    return lines
