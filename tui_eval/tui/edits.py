"""The four eval-file edits the dashboard offers (accept a turn or a case, delete a turn or a case): what
each confirmation says, the rewrite it runs once the user agrees, and how the edited case is shown."""

from __future__ import annotations

import json

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from textual.content import Content

from .text import one_line, plain

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from .app import EvalApp
    from .listing import CaseListing
    from .messages import EditRequested


@dataclass(frozen=True, slots=True)
class Edit:
    """A confirmed rewrite: `change` writes `path`; `done` is the notification once written. `stale`: the
    case's shown result was scored against turns the file no longer has. `leave_screens`: the case is
    gone, so the screens showing it close first."""

    title: str
    body: Content
    done: str
    path: Path
    change: Callable[[], None]
    key: CaseKey | None
    stale: bool = False
    leave_screens: bool = False


#: What accept says while the result it would write is on its way from the engine.
LOADING = "The result is still loading from the engine: press the key again in a moment."

def _turn_texts(listing: CaseListing, key: CaseKey, index: int) -> tuple[str | None, str]:
    case = listing.case(key)
    expected = case.conversation[index] if case and case.conversation and index < len(case.conversation) else None
    return (expected.user_content.text if expected is not None else None), listing.relpath(Path(key.eval_file))


def _run_words(listing: CaseListing, key: CaseKey, repetition: int | None) -> str:
    """` (run 2 of 4)` for a repeated case's shown run, else nothing: the dialog says which it writes."""
    return f" (run {repetition} of {listing.run_book.num_runs})" if repetition is not None else ""


def accept_turn(listing: CaseListing, key: CaseKey, index: int, repetition: int | None = None) -> Edit | str:
    """The edit, or why there is none (a warning line). With --num-runs it writes the run on screen
    (`repetition`, else the latest) and says which."""
    from ..schema.edits import accept_turn as rewrite

    result, rep = listing.result_of_run(key, repetition)
    run = _run_words(listing, key, rep)
    if result is None and (rep is not None or listing.results.loading(key)):
        return LOADING  # a finished run whose result is on its way from the engine
    if result is None or index >= len(result.actual):
        return "No actual turn to accept: run the case first."
    user, rel = _turn_texts(listing, key, index)
    if user is None:
        return "The eval file has no such turn any more."
    actual = result.actual[index]
    calls = ", ".join(c.name or "(unnamed)" for c in actual.tool_calls) or "none"
    body = Content("\n").join([
        Content.assemble("Make the actual turn ", (f"{index + 1}", "bold"), " of case ", plain(key.eval_id, "bold"),
                         (run, "bold"), " the expected one in ", plain(rel, "bold"), "?"),
        Content(""),
        Content.assemble(("response  ", "$text-muted"), plain(one_line(actual.final_response.text if actual.final_response else "", 200))),
        Content.assemble(("tool calls ", "$text-muted"), plain(one_line(calls, 200))),
        Content(""),
        Content.styled("The file is rewritten atomically; invocation ids, the user message and every other key are kept.", "$text-muted"),
    ])
    path = Path(key.eval_file)
    return Edit("Accept turn", body, f"Accepted turn {index + 1} of {key.eval_id}{run}", path,
                partial(rewrite, path, key.eval_id, index, actual, user), key)


def accept_case(listing: CaseListing, key: CaseKey, repetition: int | None = None) -> Edit | str:
    from ..schema.edits import accept_case as rewrite

    result, rep = listing.result_of_run(key, repetition)
    run = _run_words(listing, key, rep)
    case = listing.case(key)
    if result is None and (rep is not None or listing.results.loading(key)):
        return LOADING  # a finished run whose result is on its way from the engine
    if result is None or not result.actual or case is None:
        return "No actual turns to accept: run the case first."
    expected_turns = len(case.conversation or [])
    rel = listing.relpath(Path(key.eval_file))
    body = Content("\n").join([
        Content.assemble("Make all ", (f"{len(result.actual)}", "bold"), " actual turns of case ", plain(key.eval_id, "bold"),
                         (run, "bold"), " the expected ones in ", plain(rel, "bold"), "?"),
        Content(""),
        *([Content.assemble(("final session state ", "$text-muted"),
                            plain(one_line(json.dumps(result.final_session_state, ensure_ascii=False), 200)))]
          if result.final_session_state is not None else []),
        Content.styled("The file is rewritten atomically; invocation ids, user messages and every other key are kept.", "$text-muted"),
    ])
    path = Path(key.eval_file)
    return Edit("Accept case", body, f"Accepted case {key.eval_id}{run}", path,
                partial(rewrite, path, key.eval_id, list(result.actual), expected_turns,
                        result.final_session_state), key)


def delete_turn(listing: CaseListing, key: CaseKey, index: int) -> Edit | str:
    from ..schema.edits import delete_turn as rewrite

    user, rel = _turn_texts(listing, key, index)
    if user is None:
        return "The eval file has no such turn."
    body = Content("\n").join([
        Content.assemble("Delete turn ", (f"{index + 1}", "bold"), " of case ", plain(key.eval_id, "bold"), " from ", plain(rel, "bold"), "?"),
        Content.assemble(("user  ", "$text-muted"), plain(one_line(user, 200))),
    ])
    path = Path(key.eval_file)
    return Edit("Delete turn", body, f"Deleted turn {index + 1} of {key.eval_id}", path,
                partial(rewrite, path, key.eval_id, index, user), key, stale=True)


def delete_case(listing: CaseListing, key: CaseKey) -> Edit | str:
    from ..schema.edits import delete_case as rewrite

    rel = listing.relpath(Path(key.eval_file))
    body = Content.assemble("Delete case ", plain(key.eval_id, "bold"), " from ", plain(rel, "bold"), "?")
    path = Path(key.eval_file)
    return Edit("Delete case", body, f"Deleted case {key.eval_id}", path, partial(rewrite, path, key.eval_id),
                None, leave_screens=True)


def edit_for(listing: CaseListing, request: EditRequested) -> Edit | str:
    """The edit a screen asked for, or why it cannot be made (a line for the user)."""
    from .messages import EditKind

    key, kind = request.key, request.kind
    if kind is EditKind.ACCEPT_TURN:
        return accept_turn(listing, key, request.index, request.repetition)
    if kind is EditKind.ACCEPT_CASE:
        return accept_case(listing, key, request.repetition)
    if kind is EditKind.DELETE_TURN:
        return delete_turn(listing, key, request.index)
    return delete_case(listing, key)


QUIT_DURING_RUN = ("Quit during a run?", Content.assemble(
    "A run is in progress. Quitting cancels it; ", ("finished cases are kept", "bold"), " in the history either way."))


class EditControl:
    """The edits a screen asks for: confirmed by the user, written in a thread worker, then shown; and the
    session's undo of every accept, delete, case edit and import. Owned by the app; UI thread but for the
    writing."""

    def __init__(self, app: EvalApp) -> None:
        from ..schema.edits import UndoStack

        self.app = app
        #: Every edit of this session, newest last (`z` takes the newest back).
        self.undo_stack = UndoStack()
        # The case each undoable edit touched, to mark its result stale again once taken back.
        self._undo_keys: dict[int, CaseKey | None] = {}

    def request(self, request: EditRequested) -> None:
        edit = edit_for(self.app.listing, request)
        if isinstance(edit, str):
            self.app.notify(edit, severity="warning")
            return
        from .screens.confirm import confirm

        confirm(self.app, edit.title, edit.body, partial(self._write, edit))

    def _write(self, edit: Edit) -> None:
        """Write a confirmed edit in a thread worker and re-read the file. Once written, the edited case
        redraws everywhere at once (tree, summary, turn view); with `stale` its result is dropped first,
        since it was scored against turns the file no longer has (a deleted turn stayed on screen, paired
        with the wrong actual)."""
        app = self.app
        if edit.leave_screens:
            while len(app.screen_stack) > 1:
                app.pop_screen()
        self.write(edit.path, edit.done, edit.change, edit.key, then=partial(self._written, edit),
                   failure="Edit not saved")

    def write(self, path: Path, label: str, change: Callable[[], object], key: CaseKey | None, *,
              then: Callable[[], None], failure: str, failed: Callable[[BaseException], None] | None = None) -> None:
        """Run an edit of `path` in a thread worker, undoably (`label` says what `z` takes back), and
        re-read the file; `then` runs on the UI thread once it is written."""
        app = self.app

        def work() -> None:
            self.undo_stack.record(path, label, change)
            self._undo_keys[len(self.undo_stack)] = key
            app.engine.reload_edited(path)

        app.jobs.start(work, group="edit", name=label, failure=failure, then=then, failed=failed)

    def _written(self, edit: Edit) -> None:
        key = edit.key
        if key is not None:
            if edit.stale:
                self.app.listing.set_result(key, None)
            else:
                # An accepted turn or case: its result was scored against the old expected turns (the
                # engine says the same once it re-reads the file; this shows it at once).
                from ..engine.versions import REASONS

                self.app.listing.mark_stale(key, (REASONS["case"],))
            self.app.pump.redraw({key})
        self.app.notify(edit.done, markup=False)

    def undo(self) -> None:
        """Take the session's newest edit back, byte for byte; refused (and said why) when there is none or
        its file changed since."""
        from ..schema.edits import EditError

        app = self.app
        last = self.undo_stack.peek()
        if last is None:
            app.notify("Nothing to undo: no accept, delete, edit or import in this session.", markup=False)
            return
        key = self._undo_keys.get(len(self.undo_stack))
        outcome: list[str] = []

        def work() -> None:
            try:
                done = self.undo_stack.undo()
            except EditError as exc:
                outcome.append(str(exc))
                return
            self._undo_keys.pop(len(self.undo_stack) + 1, None)
            app.engine.reload_edited(done.path)

        def then() -> None:
            if outcome:
                app.notify(outcome[0], title="Not undone", severity="warning", markup=False, timeout=8)
                return
            if key is not None:
                # The case reads again as its result was scored against (an accept or edit taken back).
                app.listing.mark_stale(key, ())
                app.pump.redraw({key})
            app.notify(f"Undone: {last.label}", markup=False)

        if last.before is None or key is None:
            while len(app.screen_stack) > 1:  # the file or case may be gone: screens showing it close
                app.pop_screen()
        app.jobs.start(work, group="edit", name="undo", failure="Undo failed", then=then)
