"""The four eval-file edits the dashboard offers (accept a turn or a case, delete a turn or a case): what
each confirmation says, the rewrite it runs once the user agrees, and how the edited case is shown."""

from __future__ import annotations

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


def accept_turn(listing: CaseListing, key: CaseKey, index: int) -> Edit | str:
    """The edit, or why there is none (a warning line)."""
    from ..schema.edits import accept_turn as rewrite

    result = listing.result(key)
    if result is None and listing.results.loading(key):
        return LOADING
    if result is None or index >= len(result.actual):
        return "No actual turn to accept: run the case first."
    user, rel = _turn_texts(listing, key, index)
    if user is None:
        return "The eval file has no such turn any more."
    actual = result.actual[index]
    calls = ", ".join(c.name or "(unnamed)" for c in actual.tool_calls) or "none"
    body = Content("\n").join([
        Content.assemble("Make the actual turn ", (f"{index + 1}", "bold"), " of case ", plain(key.eval_id, "bold"),
                         " the expected one in ", plain(rel, "bold"), "?"),
        Content(""),
        Content.assemble(("response  ", "$text-muted"), plain(one_line(actual.final_response.text if actual.final_response else "", 200))),
        Content.assemble(("tool calls ", "$text-muted"), plain(one_line(calls, 200))),
        Content(""),
        Content.styled("The file is rewritten atomically; invocation ids, the user message and every other key are kept.", "$text-muted"),
    ])
    path = Path(key.eval_file)
    return Edit("Accept turn", body, f"Accepted turn {index + 1} of {key.eval_id}", path,
                partial(rewrite, path, key.eval_id, index, actual, user), key)


def accept_case(listing: CaseListing, key: CaseKey) -> Edit | str:
    from ..schema.edits import accept_case as rewrite

    result = listing.result(key)
    case = listing.case(key)
    if result is None and listing.results.loading(key):
        return LOADING
    if result is None or not result.actual or case is None:
        return "No actual turns to accept: run the case first."
    expected_turns = len(case.conversation or [])
    rel = listing.relpath(Path(key.eval_file))
    body = Content("\n").join([
        Content.assemble("Make all ", (f"{len(result.actual)}", "bold"), " actual turns of case ", plain(key.eval_id, "bold"),
                         " the expected ones in ", plain(rel, "bold"), "?"),
        Content(""),
        Content.styled("The file is rewritten atomically; invocation ids, user messages and every other key are kept.", "$text-muted"),
    ])
    path = Path(key.eval_file)
    return Edit("Accept case", body, f"Accepted case {key.eval_id}", path,
                partial(rewrite, path, key.eval_id, list(result.actual), expected_turns), key)


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
        return accept_turn(listing, key, request.index)
    if kind is EditKind.ACCEPT_CASE:
        return accept_case(listing, key)
    if kind is EditKind.DELETE_TURN:
        return delete_turn(listing, key, request.index)
    return delete_case(listing, key)


QUIT_DURING_RUN = ("Quit during a run?", Content.assemble(
    "A run is in progress. Quitting cancels it; ", ("finished cases are kept", "bold"), " in the history either way."))


class EditControl:
    """The edits a screen asks for: confirmed by the user, written in a thread worker, then shown. Owned by
    the app; UI thread but for the writing."""

    def __init__(self, app: EvalApp) -> None:
        self.app = app

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

        def work() -> None:
            edit.change()
            app.engine.reload_edited(edit.path)

        app.jobs.start(work, group="edit", name=edit.done, failure="Edit not saved", then=partial(self._written, edit))

    def _written(self, edit: Edit) -> None:
        key = edit.key
        if key is not None:
            if edit.stale:
                self.app.listing.set_result(key, None)
            else:
                # An accepted turn or case: its result was scored against the old expected turns.
                self.app.listing.stale.add(key)
            self.app.pump.redraw({key})
        self.app.notify(edit.done, markup=False)
