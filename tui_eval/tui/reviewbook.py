"""The human verdicts the dashboard knows, read from the history folders, by case: which stand for the
shown result and which are "review stale". Nothing here imports Textual."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.reviews import Reviewed, is_current, latest_per_target

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..schema.model import EvalCase, Invocation


@dataclass(frozen=True, slots=True)
class Standing:
    """The newest human verdict on one target of a case, and whether it speaks for the shown result."""

    reviewed: Reviewed
    current: bool


@dataclass(slots=True)
class ReviewBook:
    """Human verdicts per history folder (read once, then kept up to date as verdicts are added)."""

    _by_dir: dict[Path, list[Reviewed]] = field(default_factory=dict)
    #: Bumped on every change, so views can tell.
    version: int = 0

    def loaded(self, history: Path) -> bool:
        return history in self._by_dir

    def set_dir(self, history: Path, reviews: list[Reviewed]) -> None:
        self._by_dir[history] = list(reviews)
        self.version += 1

    def add(self, history: Path, reviewed: Reviewed) -> None:
        self._by_dir.setdefault(history, []).append(reviewed)
        self.version += 1

    def judged(self, eval_id: str) -> bool:
        """Whether any verdict names a case of this id (cheap: asked on every cursor move)."""
        return any(r.eval_id == eval_id for reviews in self._by_dir.values() for r in reviews)

    def all(self) -> list[Reviewed]:
        return [r for reviews in self._by_dir.values() for r in reviews]

    def of_case(self, history: Path, key: CaseKey) -> list[Reviewed]:
        # A record names its eval file as the run was given it: the file's name and the case id match.
        name = Path(key.eval_file).name
        return [r for r in self._by_dir.get(history, ()) if r.eval_id == key.eval_id and Path(r.eval_file).name == name]

    def standing(self, history: Path, key: CaseKey, case: EvalCase | None,
                 actual: list[Invocation]) -> list[Standing]:
        """The newest verdict per target of the case (case, turns, metrics), each current or stale."""
        return [Standing(r, is_current(r.verdict, case, actual))
                for r in latest_per_target(self.of_case(history, key)).values()]
