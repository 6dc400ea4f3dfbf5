"""One case in two saved runs, turn by turn, side by side: the expected turn, the earlier run's answer and
the later one's, diffed as expected vs actual is (words of the response, the tool calls in each run's
order), then how each metric's verdict on the turn moved. Below 100 columns the three stack."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker

from ..text import call_signature, one_line, plain, status_content, word_diff
from ..widgets.footer import KeyFooter
from ..worker_utils import worker_succeeded

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.results import CaseResult


def _calls(result: CaseResult | None, index: int, expected: bool = False) -> list[str]:
    """The tool calls of turn `index` of a run (or of its expected turn), as signatures."""
    turns = (result.expected or []) if expected and result is not None else (result.actual if result is not None else [])
    if index >= len(turns):
        return []
    return [call_signature(c.name or "", c.args, 80) for c in turns[index].tool_calls]


def _marked_calls(mine: list[str], other: list[str], mark: str, style: str) -> list[Content]:
    """A run's calls in its order; a call only this run made is marked (`−` earlier only, `+` later only)."""
    rest = list(other)
    lines: list[Content] = [Content.styled(f"tool calls ({len(mine)})", "bold $text-muted")]
    for sig in mine:
        if sig in rest:
            rest.remove(sig)
            lines.append(Content.assemble("  ", plain(sig)))
        else:
            lines.append(Content.assemble((f"{mark} ", style), plain(sig, style)))
    if not mine:
        lines.append(Content.styled("  none", "$text-muted"))
    return lines


def metric_delta_lines(before: CaseResult | None, after: CaseResult | None, index: int) -> list[Content]:
    """How each metric judged turn `index` in each run: `✔→✘ tool_trajectory_avg_score 1.00→0.00`; a count,
    tokens or seconds with its unit (`invocation_duration_v1 0.09→0.03 s`)."""
    from ...schema.criteria import INFORMATIONAL_METRICS
    from ..text import INFO_UNITS, fmt_score, info_figure

    names = list(dict.fromkeys([m.metric_name for r in (after, before) if r is not None for m in r.metrics]))
    lines: list[Content] = []
    for name in names:
        verdicts = [(m.turn(index) if m is not None else None)
                    for m in ((r.metric(name) if r is not None else None) for r in (before, after))]
        if all(v is None for v in verdicts):
            continue
        a, b = (v.score if v is not None else None for v in verdicts)
        if name in INFORMATIONAL_METRICS:
            unit = f" {INFO_UNITS[name]}" if name in INFO_UNITS else ""
            lines.append(Content.styled(f"  ℹ {name} {info_figure(name, a)}→{info_figure(name, b)}{unit}", "$text-muted"))
            continue
        sa, sb = (status_content(v.status if v is not None else None) for v in verdicts)
        moved = "" if a == b else "  changed"
        lines.append(Content.assemble(sa, ("→", "$text-muted"), sb, " ", plain(name), " ",
                                      (f"{fmt_score(a)}→{fmt_score(b)}", "$text-muted"), (moved, "bold $text-warning")))
    if lines:
        lines.insert(0, Content.styled("metrics  earlier→later", "bold $text-muted"))
    return lines


@dataclass(frozen=True)
class TurnBlock:
    """One turn of the case in both runs: its head (user message), its three columns, its metric lines."""

    head: Content
    expected: Content
    earlier: Content
    later: Content
    metrics: Content


def turn_blocks(before: CaseResult | None, after: CaseResult | None) -> list[TurnBlock]:
    """Per turn: the user message; the expected response and calls, the earlier and later responses
    word-diffed and each run's calls; then each metric's verdict on the turn in both runs."""
    n = max(len(before.actual) if before else 0, len(after.actual) if after else 0)
    reference = (after.expected if after is not None else None) or (before.expected if before is not None else None) or []
    blocks: list[TurnBlock] = []
    for i in range(n):
        old = before.actual[i] if before is not None and i < len(before.actual) else None
        new = after.actual[i] if after is not None and i < len(after.actual) else None
        exp = reference[i] if i < len(reference) else None
        shown = new or old
        user = shown.user_content.text if shown is not None else ""
        old_text = old.final_response.text if old is not None and old.final_response else ""
        new_text = new.final_response.text if new is not None and new.final_response else ""
        exp_text = exp.final_response.text if exp is not None and exp.final_response else ""
        left, right = word_diff(old_text[:20_000], new_text[:20_000])
        old_calls, new_calls = _calls(before, i), _calls(after, i)
        exp_calls = _calls(after if after is not None and after.expected else before, i, expected=True)
        expected = ([Content.styled("expected", "bold $text-muted"), plain(exp_text[:20_000]), Content(""),
                     *_marked_calls(exp_calls, exp_calls, "", "")] if exp is not None
                    else [Content.styled("expected", "bold $text-muted"),
                          Content.styled("not kept in the runs (a scenario has none)", "$text-muted italic")])
        blocks.append(TurnBlock(
            head=Content.assemble((f"Turn {i + 1}  ", "bold $text-accent"), ("user ", "$text-muted"), plain(one_line(user, 200))),
            expected=Content("\n").join(expected),
            earlier=Content("\n").join([Content.styled("earlier", "bold $text-muted"), left, Content(""),
                                         *_marked_calls(old_calls, new_calls, "−", "$text-error")]),
            later=Content("\n").join([Content.styled("later", "bold $text-muted"), right, Content(""),
                                       *_marked_calls(new_calls, old_calls, "+", "$text-success")]),
            metrics=Content("\n").join(metric_delta_lines(before, after, i)),
        ))
    return blocks


class RunsDiffScreen(Screen[None]):
    """A case in two saved runs side by side, turn by turn; escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="runs_diff.back"),
    ]
    #: Below 100 columns the expected, earlier and later columns stack (views.tcss).
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (100, "-wide")]

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
            text.update(head if blocks else Content("\n").join(
                [head, Content(""), Content.styled("Neither run kept this case's turns.", "$text-muted")]))
            body = self.query_one("#runs-diff-body", VerticalScroll)
            for block in blocks:
                body.mount(Static(block.head, classes="runs-diff-head"))
                body.mount(Horizontal(*(Static(column, classes="runs-diff-column")
                                        for column in (block.expected, block.earlier, block.later)),
                                      classes="runs-diff-row"))
                if block.metrics:
                    body.mount(Static(block.metrics, classes="runs-diff-metrics"))
