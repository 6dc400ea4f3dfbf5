"""EvalStatus: ADK's verdict numbering and the one status vocabulary (words, glyphs, report marks).

A module of its own, free of pydantic, so the dashboard can colour statuses without loading the result
models at start-up.
"""

from __future__ import annotations

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


_LABEL = {EvalStatus.PASSED: "passed", EvalStatus.FAILED: "failed", EvalStatus.NOT_EVALUATED: "not evaluated",
          EvalStatus.INFORMATIONAL: "informational"}
_GLYPH = {EvalStatus.PASSED: "✔", EvalStatus.FAILED: "✘", EvalStatus.NOT_EVALUATED: "–",
          EvalStatus.INFORMATIONAL: "ℹ"}
_MARK = {EvalStatus.PASSED: "PASS", EvalStatus.FAILED: "FAIL", EvalStatus.NOT_EVALUATED: "N/E ",
         EvalStatus.INFORMATIONAL: "INFO"}
