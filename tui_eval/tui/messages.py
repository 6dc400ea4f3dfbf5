"""What screens and widgets ask the app for: typed Messages that bubble up to `EvalApp`'s handlers.

Events flow up, data flows down: a screen never calls the app's business methods; it posts one of
these and the app (the one controller) starts the run, writes the edit or pushes the screen.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey


@dataclass
class RunRequested(Message):
    """Run these cases, or every case of these eval files (when `keys` is None)."""

    label: str
    keys: tuple[CaseKey, ...] | None = None
    files: tuple[Path, ...] | None = None


@dataclass
class CancelRequested(Message):
    """Cancel the run in progress; finished cases are kept."""


class EditKind(enum.Enum):
    """The four rewrites of an eval file the dashboard offers."""

    ACCEPT_TURN = "accept_turn"
    ACCEPT_CASE = "accept_case"
    DELETE_TURN = "delete_turn"
    DELETE_CASE = "delete_case"


@dataclass
class EditRequested(Message):
    """Rewrite an eval file (after the user confirms); `index` is the turn for the turn edits."""

    kind: EditKind
    key: CaseKey
    index: int = 0
    #: With --num-runs: the repetition (run k of N) whose turns an accept writes, as shown; None: the
    #: case's latest result.
    repetition: int | None = None


@dataclass
class OpenTurn(Message):
    """Show one turn of a case in the turn view."""

    key: CaseKey
    index: int


@dataclass
class OpenHistory(Message):
    """Show the saved-run history."""


@dataclass
class OpenTimeline(Message):
    """Show this session's timeline of runs and the cases each flipped."""


@dataclass
class LiveToggled(Message):
    """Switch live mode (re-run what a saved file changed) on or off."""

    on: bool


@dataclass
class AgentRerunsToggled(Message):
    """Switch whether an agent's source edits re-run its cases (in live mode)."""

    on: bool


@dataclass
class JumpTo(Message):
    """Show a case (and optionally a turn) in the browser, from any screen."""

    key: CaseKey
    turn: int | None = None


@dataclass
class CesRunRequested(Message):
    """Run evaluations in CES: this case's, or (None) every evaluation of the dashboard's CES app."""

    key: CaseKey | None = None


@dataclass
class OpenCesHistory(Message):
    """Show a CES case's last ten CES results."""

    key: CaseKey


@dataclass
class FilesRewritten(Message):
    """A screen rewrote these files (a what-if written to the configs): read them again, here and in
    the engine, whether or not the folder is watched."""

    paths: tuple[Path, ...]
