"""One case in two saved runs, turn by turn: the earlier run's answer beside the later one's, diffed as
expected vs actual is (words of the response, the tool calls in each run's order)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker

from ..text import call_signature, one_line, plain, status_content, word_diff
from ..widgets.footer import KeyFooter
from ..worker_utils import worker_succeeded

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.results import CaseResult


def _calls_lines(before: CaseResult | None, after: CaseResult | None, index: int) -> list[Content]:
    """The tool calls of turn `index` in each run, each in its own run's order; a call only one run
    made is marked (− earlier only, + later only)."""
    def calls(result: CaseResult | None) -> list[str]:
        if result is None or index >= len(result.actual):
            return []
        return [call_signature(c.name or "", c.args, 80) for c in result.actual[index].tool_calls]

    old, new = calls(before), calls(after)
    lines: list[Content] = []
    for title, mine, other, mark, style in (("earlier", old, new, "−", "$text-error"),
                                            ("later", new, old, "+", "$text-success")):
        lines.append(Content.styled(f"{title} ({len(mine)})", "bold $text-muted"))
        rest = list(other)
        for sig in mine:
            if sig in rest:
                rest.remove(sig)
                lines.append(Content.assemble("  ", plain(sig)))
            else:
                lines.append(Content.assemble((f"{mark} ", style), plain(sig, style)))
        if not mine:
            lines.append(Content.styled("  no tool calls", "$text-muted"))
    return lines


def turn_blocks(before: CaseResult | None, after: CaseResult | None) -> list[Content]:
    """Per turn: the user message, the earlier and later response word-diffed, the tool calls of each."""
    n = max(len(before.actual) if before else 0, len(after.actual) if after else 0)
    blocks: list[Content] = []
    for i in range(n):
        old = before.actual[i] if before is not None and i < len(before.actual) else None
        new = after.actual[i] if after is not None and i < len(after.actual) else None
        shown = new or old
        user = shown.user_content.text if shown is not None else ""
        old_text = old.final_response.text if old is not None and old.final_response else ""
        new_text = new.final_response.text if new is not None and new.final_response else ""
        left, right = word_diff(old_text[:20_000], new_text[:20_000])
        lines = [Content.styled(f"Turn {i + 1}", "bold $text-accent"),
                 Content.assemble(("user ", "$text-muted"), plain(one_line(user, 200))),
                 Content.styled("earlier response", "bold $text-muted"), left,
                 Content.styled("later response", "bold $text-muted"), right,
                 *_calls_lines(before, after, i), Content("")]
        blocks.append(Content("\n").join(lines))
    return blocks


class RunsDiffScreen(Screen[None]):
    """A case in two saved runs side by side, turn by turn; escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="runs_diff.back"),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, before: Path, after: Path, eval_id: str, title: str) -> None:
        super().__init__(id="runs-diff")
        self.before_path, self.after_path, self.eval_id, self.title_text = before, after, eval_id, title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="runs-diff-body"):
            yield Static(Content.styled("Reading the two runs…", "$text-muted"), id="runs-diff-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        body = self.query_one("#runs-diff-body", VerticalScroll)
        body.border_title = self.title_text
        body.focus()
        self.load()

    @work(thread=True, group="runs-diff", exclusive=True, exit_on_error=False)
    def load(self) -> tuple[CaseResult | None, CaseResult | None]:
        from ...engine.store import load_record

        def case(path: Path) -> CaseResult | None:
            _meta, result = load_record(path)
            return next((c for c in result.case_results if c.eval_id == self.eval_id), None)

        return case(self.before_path), case(self.after_path)

    @on(Worker.StateChanged)
    def _loaded(self, event: Worker.StateChanged) -> None:
        text = self.query_one("#runs-diff-text", Static)
        if worker_succeeded(event, "runs-diff", text, "Could not read the runs") and event.worker.result is not None:
            before, after = event.worker.result
            head = Content.assemble(("earlier ", "$text-muted"),
                                    status_content(before.status if before else None, word=True),
                                    ("   later ", "$text-muted"),
                                    status_content(after.status if after else None, word=True))
            blocks = turn_blocks(before, after)
            if not blocks:
                blocks = [Content.styled("Neither run kept this case's turns.", "$text-muted")]
            text.update(Content("\n").join([head, Content(""), *blocks]))
