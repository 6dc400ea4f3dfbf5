"""Writing cases from the dashboard: one case edited as JSON (in $VISUAL/$EDITOR with the dashboard
suspended, else in the in-app editor), and an ADK session file imported as a new case. Each write goes
through the app's EditControl, so `z` takes it back like an accept or a delete."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.content import Content

from .text import plain

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from .app import EvalApp
    from .chatlog import ChatLog

log = logging.getLogger(__name__)


def editor_command() -> list[str] | None:
    """The user's editor ($VISUAL, else $EDITOR) as a command line, or None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            return shlex.split(value)
    return None


class _CannotSuspend(Exception):
    """The terminal cannot hand itself to another program (a headless driver, `textual serve`)."""


class Authoring:
    """The case editor and session imports. Owned by the app; UI thread but for the writing."""

    def __init__(self, app: EvalApp) -> None:
        self.app = app

    # ---- editing one case ----------------------------------------------------------------------

    def edit_case(self, key: CaseKey) -> None:
        """Read the case as its file has it (a thread worker: the file may be large), then edit it."""
        from ..schema.edits import case_json

        found: list[str] = []

        def read() -> None:
            found.append(case_json(Path(key.eval_file), key.eval_id))

        self.app.jobs.start(read, group="edit", name=f"read case {key.eval_id}", failure="Cannot edit the case",
                            then=lambda: self._edit(key, found[0], found[0]))

    def _edit(self, key: CaseKey, original: str, draft: str, error: str | None = None) -> None:
        """Open `draft` in the user's editor, or in the in-app one; `original` is what the file had."""
        command = editor_command()
        if command is not None:
            try:
                edited = self._in_editor(command, draft)
            except _CannotSuspend:
                log.info("the terminal cannot suspend: the in-app editor edits case %s", key.eval_id)
            else:
                if edited is not None:
                    self._check_then_save(key, original, edited)
                return
        from .screens.case_editor import CaseEditorScreen

        def done(text: str | None) -> None:
            if text is not None:
                self._save(key, original, text)

        self.app.push_screen(CaseEditorScreen(key.eval_id, self.app.listing.relpath(Path(key.eval_file)),
                                              draft, error), done)

    def _in_editor(self, command: list[str], draft: str) -> str | None:
        """The text after the user's editor ran on it (in a private 0600 file), with the dashboard
        suspended; None (said) when the editor failed."""
        from textual.app import SuspendNotSupported

        fd, name = tempfile.mkstemp(prefix="tui-eval-case-", suffix=".json")  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(draft)
            try:
                with self.app.suspend():
                    completed = subprocess.run([*command, name], check=False)
            except SuspendNotSupported:
                raise _CannotSuspend from None
            except OSError as exc:
                self.app.notify(f"Could not start the editor {shlex.join(command)}: {exc.strerror or exc}",
                                title="Case not edited", severity="error", markup=False)
                return None
            if completed.returncode != 0:
                self.app.notify(f"The editor exited with status {completed.returncode}: the case was left as it was.",
                                severity="warning", markup=False)
                return None
            return Path(name).read_text(encoding="utf-8")
        finally:
            os.unlink(name)

    def _check_then_save(self, key: CaseKey, original: str, edited: str) -> None:
        from ..schema.edits import EditError, check_case_text

        if edited == original:
            self.app.notify(f"No change: case {key.eval_id} was left as it was.", markup=False)
            return
        try:
            check_case_text(edited)
        except EditError as exc:
            self._offer_again(key, original, edited, str(exc))
            return
        self._save(key, original, edited)

    def _offer_again(self, key: CaseKey, original: str, edited: str, error: str) -> None:
        """The edit was not saved: say why, and offer it again with the user's text kept."""
        from .screens.confirm import confirm

        body = Content("\n").join([
            Content.assemble("Case ", plain(key.eval_id, "bold"), " was not saved; the eval file is untouched."),
            Content(""),
            plain(error, "$text-error"),
            Content(""),
            Content("Edit it again (your text is kept)?"),
        ])
        confirm(self.app, "Edit not saved", body, partial(self._edit, key, original, edited, error))

    def _save(self, key: CaseKey, original: str, edited: str) -> None:
        from ..schema.edits import EditError, replace_case

        if edited == original:
            self.app.notify(f"No change: case {key.eval_id} was left as it was.", markup=False)
            return
        path = Path(key.eval_file)
        new_id: list[str] = []

        def change() -> None:
            new_id.append(replace_case(path, key.eval_id, original, edited))

        def written() -> None:
            listing = self.app.listing
            from ..engine.versions import REASONS

            listing.mark_stale(key, (REASONS["case"],))
            self.app.pump.redraw({key})
            self.app.notify(f"Saved case {new_id[0]}", markup=False)
            if new_id[0] != key.eval_id:
                self.app.pull()
                self.app.call_after_refresh(self.app.jump_to, listing.key(path, new_id[0]))

        def failed(exc: BaseException) -> None:
            if isinstance(exc, EditError):
                self._offer_again(key, original, edited, str(exc))

        self.app.edits.write(path, f"edit of case {key.eval_id}", change, key, then=written,
                             failure="Edit not saved", failed=failed)

    # ---- importing a session -------------------------------------------------------------------

    def ask_session(self, eval_file: Path) -> None:
        from .screens.import_session import ImportSessionScreen

        def answered(answer: tuple[str, str] | None) -> None:
            if answer is not None:
                self.import_session(eval_file, Path(answer[0]).expanduser(), answer[1] or None)

        self.app.push_screen(ImportSessionScreen(self.app.listing.relpath(eval_file)), answered)

    def import_session(self, eval_file: Path, session_file: Path, eval_id: str | None) -> None:
        from ..schema.session import SessionImport, import_session

        app = self.app
        if not session_file.is_absolute():
            session_file = app.listing.root / session_file if app.listing.root.is_dir() else session_file
        done: list[SessionImport] = []

        def change() -> None:
            done.append(import_session(session_file, eval_file, eval_id=eval_id))

        def written() -> None:
            result = done[0]
            app.notify(f"Imported session {result.session_id} as case {result.eval_id} "
                       f"({result.turns} turn(s)); z takes it back.", markup=False)
            app.pull()
            # After the tree re-listed the file's cases (it keeps the cursor where it was, then).
            app.call_after_refresh(app.jump_to, app.listing.key(eval_file, result.eval_id))

        app.edits.write(eval_file, f"import of {session_file.name}", change, None, then=written,
                        failure="Session not imported (the eval set was not changed)")


def save_chat(app: EvalApp, chat: ChatLog, eval_file: Path, eval_id: str) -> None:
    """Append a chat's conversation to an eval set as a new case (undoable), then show it in the tree."""
    import time

    from ..schema.edits import add_case
    from ..schema.load import eval_set_id_for
    from .chatlog import case_of

    if not eval_file.is_absolute():
        eval_file = app.listing.root / eval_file if app.listing.root.is_dir() else eval_file
    case = case_of(chat, eval_id, Path(chat.agent_ref).name or "agent", time.time())

    def change() -> None:
        if not eval_file.exists() and not eval_file.name.endswith(".evalset.json"):
            from ..schema.edits import EditError

            raise EditError(f"{eval_file}: no such eval set (a new one is made only for a name ending in .evalset.json)")
        add_case(eval_file, case, eval_set_id=eval_set_id_for(eval_file))

    def written() -> None:
        app.notify(f"Saved the conversation as case {eval_id} ({len(case['conversation'])} turn(s)); z takes it back.",
                   markup=False)
        app.pull()
        app.call_after_refresh(app.jump_to, app.listing.key(eval_file, eval_id))

    app.edits.write(eval_file, f"chat saved as {eval_id}", change, None, then=written,
                    failure="Conversation not saved (the chat is kept)")
