"""EvalStatus: ADK's verdict numbering and the one status vocabulary (words, glyphs, report marks).

A module of its own, free of pydantic, so the dashboard can colour statuses without loading the result
models at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class EvalStatus(IntEnum):
    """ADK's EvalStatus numbering, which the JSON results carry as integers; the only status vocabulary.

    Every face (summary, JUnit, watch, dashboard) takes its words and glyphs from here.
    """

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    # ADK's informational metrics (token usage, call counts): shown, never passed or failed.
    INFORMATIONAL = 4

    @property
    def label(self) -> str:
        """The word users read: "passed", "failed", "not evaluated", "informational"."""
        return _LABEL[self]

    @property
    def glyph(self) -> str:
        """One character for lists and chips: ✔ ✘ – ℹ."""
        return _GLYPH[self]

    @property
    def mark(self) -> str:
        """A four-character tag for plain-text reports: PASS, FAIL, N/E, INFO."""
        return _MARK[self]


#: The statuses a case can have, in the order counts list them (an informational verdict never is one).
CASE_STATUSES: tuple[EvalStatus, ...] = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)

_LABEL = {EvalStatus.PASSED: "passed", EvalStatus.FAILED: "failed", EvalStatus.NOT_EVALUATED: "not evaluated",
          EvalStatus.INFORMATIONAL: "informational"}
_GLYPH = {EvalStatus.PASSED: "✔", EvalStatus.FAILED: "✘", EvalStatus.NOT_EVALUATED: "–",
          EvalStatus.INFORMATIONAL: "ℹ"}
_MARK = {EvalStatus.PASSED: "PASS", EvalStatus.FAILED: "FAIL", EvalStatus.NOT_EVALUATED: "N/E ",
         EvalStatus.INFORMATIONAL: "INFO"}


def combine_statuses(statuses: Iterable[int], *, otherwise: EvalStatus = EvalStatus.NOT_EVALUATED) -> EvalStatus:
    """The one rule that combines verdicts (a case's metrics, a turn's metrics, a metric's turns): FAILED
    if any failed, else PASSED if any passed, else `otherwise` (NOT_EVALUATED; INFORMATIONAL never
    decides). Takes EvalStatus members or their ADK integers (as a run's case summaries carry them)."""
    seen = set(statuses)
    if EvalStatus.FAILED in seen:
        return EvalStatus.FAILED
    if EvalStatus.PASSED in seen:
        return EvalStatus.PASSED
    return otherwise
