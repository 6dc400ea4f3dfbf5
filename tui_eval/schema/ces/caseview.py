"""What a case pulled from CES says about itself: golden or scenario, and its last CES results.

Read from the case's `ces` remainder (see mapping.py), where `pull` keeps `lastCompletedResult` and
`lastTenResults`. `marker` is cheap (dict look-ups, for tree labels: this module imports neither the
CES models nor the mapping until `results_of` is called); `results_of` validates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .model import EvaluationResult

logger = logging.getLogger(__name__)

#: The EvalCase key holding what the case itself cannot say (mapping.py keeps its remainder there). Here,
#: in the light module, so that tagging a case in the tree imports no CES model.
CES_KEY = "ces"


def _remainder(extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    data = (extra or {}).get(CES_KEY)
    if not isinstance(data, dict):
        return None
    evaluation = data.get("evaluation")
    return evaluation if isinstance(evaluation, dict) else {}


@dataclass(frozen=True)
class CesMarker:
    """Enough to tag a case in the browser: its kind and the status of its last CES result."""

    kind: str  # "golden" | "scenario"
    status: str | None  # PASS | FAIL | None (never run in CES)


def marker(extra: Mapping[str, Any] | None, *, scenario: bool) -> CesMarker | None:
    """The case's CES tag, or None when it did not come from CES. `extra` is the case's `model_extra`."""
    evaluation = _remainder(extra)
    if evaluation is None:
        return None
    last = evaluation.get("lastCompletedResult")
    status = last.get("evaluationStatus") if isinstance(last, dict) else None
    return CesMarker("scenario" if scenario else "golden", status if isinstance(status, str) else None)


@dataclass
class CesResults:
    """A CES case's results: the last completed one and the last ten (newest first, as CES lists them)."""

    name: str | None
    last: EvaluationResult | None
    history: list[EvaluationResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def all(self) -> list[EvaluationResult]:
        """History if there is one, else the last result alone."""
        if self.history:
            return self.history
        return [self.last] if self.last is not None else []


def _result(raw: Any, where: str, problems: list[str]) -> EvaluationResult | None:
    from pydantic import ValidationError

    from .model import EvaluationResult

    if not isinstance(raw, dict):
        return None
    try:
        return EvaluationResult.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        problems.append(f"{where}: {first['msg']} at {'.'.join(str(p) for p in first['loc'])}")
        logger.info("unreadable CES result %s: %s", where, first["msg"])
        return None


#: The last case asked about and its results: the turn view asks on every redraw (a turn or sentence
#: move, a tick), and validating up to eleven results each time was most of the redraw. A case's
#: `model_extra` is a new dict whenever its file reloads, so the same dict means the same results.
_last_asked: tuple[Mapping[str, Any] | None, CesResults | None] = (None, None)


def results_of(extra: Mapping[str, Any] | None) -> CesResults | None:
    """The case's CES results, or None when it did not come from CES."""
    global _last_asked
    if extra is not None and _last_asked[0] is extra:
        return _last_asked[1]
    results = _read_results(extra)
    _last_asked = (extra, results)
    return results


def _read_results(extra: Mapping[str, Any] | None) -> CesResults | None:
    evaluation = _remainder(extra)
    if evaluation is None:
        return None
    problems: list[str] = []
    last = _result(evaluation.get("lastCompletedResult"), "lastCompletedResult", problems)
    history = [r for i, raw in enumerate(evaluation.get("lastTenResults") or [])
               if (r := _result(raw, f"lastTenResults[{i}]", problems)) is not None]
    name = evaluation.get("name")
    return CesResults(name if isinstance(name, str) else None, last, history, problems)
