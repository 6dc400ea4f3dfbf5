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
    from .chatlog import ChatLog


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


@dataclass
class CaseEditRequested(Message):
    """Edit this case as JSON: in $VISUAL/$EDITOR, else in the in-app editor."""

    key: CaseKey


@dataclass
class UndoRequested(Message):
    """Take the session's newest edit (accept, delete, case edit, import) back."""


@dataclass
class ImportSessionRequested(Message):
    """Ask for an ADK session file and import it as a new case of this eval set."""

    eval_file: Path


@dataclass
class VerdictRequested(Message):
    """A person's verdict on this case: on a turn (`turn`), a metric (`metric`), else the whole case.
    `label` ("pass"/"fail") when already chosen (review mode), else asked."""

    key: CaseKey
    turn: int | None = None
    metric: str | None = None
    label: str | None = None


@dataclass
class OpenReview(Message):
    """Show the review mode: the cases whose judged verdicts need a person."""


@dataclass
class SkipRequested(Message):
    """Stop this running case without cancelling the run (it ends not evaluated, "skipped")."""

    key: CaseKey


@dataclass
class ChatPlay(Message):
    """Play this chat's messages with its agent (again, from a fresh session)."""

    chat: ChatLog


@dataclass
class ChatSave(Message):
    """Save this chat's conversation as a new case `eval_id` of the eval set `eval_file`."""

    chat: ChatLog
    eval_file: Path
    eval_id: str
