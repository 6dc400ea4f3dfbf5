"""A saved code diff (`<run_id>.code.diff`) in a scrollable view: every line literal, never markup."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from ..text import plain
from ..widgets.footer import KeyFooter

log = logging.getLogger(__name__)

#: Lines shown at most (the saved diff is capped at 256 KiB already; this keeps the paint quick).
MAX_LINES = 5000


@dataclass(frozen=True, slots=True)
class RunDiff:
    """The saved code diff of the run a result came from (`path`), or why there is none (`reason`)."""

    path: Path | None
    reason: str
    run_id: str | None = None


NOT_SAVED = "not saved yet: the code diff is there once the run's record is saved"


def _same_file(recorded: str, eval_file: str) -> bool:
    try:
        return Path(recorded).resolve() == Path(eval_file).resolve()
    except (OSError, ValueError):
        return recorded == eval_file


def find_run_diff(records: Iterable[Path], eval_file: str) -> RunDiff:
    """Of a run's saved records (`.tui-eval.json`), the one of `eval_file` names the run and its side
    diff file. Reads only the records' metadata keys (`store.read_record_head`)."""
    from ...engine.store import RECORD_FORMAT, read_record_head

    for record in records:
        try:
            data = read_record_head(record)
        except (OSError, ValueError) as exc:
            log.warning("could not read the run record %s: %s", record, exc)
            continue
        if not isinstance(data, dict) or not _same_file(str(data.get("eval_file") or ""), eval_file):
            continue
        run_id = data.get("run_id") if isinstance(data.get("run_id"), str) else None
        name = data.get("code_diff_file")
        if isinstance(name, str) and name:
            from ...engine.store import RecordError, record_side_file

            try:  # only a regular file inside the record's own history folder is followed
                return RunDiff(record_side_file(record, name, "code diff file"), "", run_id)
            except RecordError as exc:
                log.warning("%s", exc)
                return RunDiff(None, f"the code diff of this run ({name}) cannot be shown: {exc}", run_id)
        state = data.get("code_state")
        if not isinstance(state, dict):
            older = "" if data.get("format") == RECORD_FORMAT else " (an older record)"
            return RunDiff(None, f"no code state recorded for this run{older}", run_id)
        if state.get("dirty") is False:
            return RunDiff(None, "no code diff saved for this run (the tree was clean)", run_id)
        if state.get("dirty") is None:
            return RunDiff(None, "no code diff saved for this run (not a git repository)", run_id)
        return RunDiff(None, "no code diff saved for this run (its changes were untracked files only)", run_id)
    return RunDiff(None, "no saved record of this run was found")


def diff_content(text: str, limit: int = MAX_LINES) -> Content:
    """Colour a unified diff by line kind; the text itself stays literal (control characters shown)."""
    lines = text.splitlines()
    out: list[Content] = []
    for line in lines[:limit]:
        if line.startswith(("+++", "---", "diff ", "index ")):
            style = "bold"
        elif line.startswith("+"):
            style = "$text-success"
        elif line.startswith("-"):
            style = "$text-error"
        elif line.startswith("@@"):
            style = "$text-accent"
        else:
            style = ""
        out.append(plain(line, style))
    if len(lines) > limit:
        out.append(Content.styled(f"… {len(lines) - limit:,} more lines in the file", "$text-muted italic"))
    return Content("\n").join(out)


class DiffScreen(Screen[None]):
    """One saved diff file; escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="diff.back"),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, path: Path, *, title: str = "Code diff") -> None:
        super().__init__(id="diff")
        self.path = path
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="diff-body"):
            yield Static(id="diff-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        body = self.query_one("#diff-body", VerticalScroll)
        body.border_title = self.title_text
        from ...engine.store import read_code_diff

        try:  # bounded, and never a FIFO or a device: a diff file is data from the history folder
            text = read_code_diff(self.path)
        except (OSError, ValueError) as exc:
            log.warning("could not read the diff %s: %s", self.path, exc)
            content = plain(f"Could not read {self.path}: {exc}", "$text-error")
        else:
            content = diff_content(text) if text else Content.styled("(empty diff)", "$text-muted")
        self.query_one("#diff-text", Static).update(content)
        body.focus()
