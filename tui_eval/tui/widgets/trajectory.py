"""The trajectory diff: expected and actual tool calls side by side, under a switchable match type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.content import Content
from textual.widgets import Static

from ...schema.results import EvalStatus
from ..text import STATUS_STYLE, call_signature, plain
from ..verdicts import MATCH_TYPES, alignment_summary, arg_diff_lines, joined, trajectory_rows

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.details import Alignment
    from ...schema.model import FunctionCall


def verdict_chips(alignments: dict[str, Alignment], shown: str, configured: str) -> Content:
    """`EXACT ✘  [IN_ORDER ✔]  ANY_ORDER ✔`: how each match type judges the turn; the shown one boxed."""
    parts: list[Any] = []
    for name in MATCH_TYPES:
        a = alignments.get(name)
        if a is None:
            continue
        status = EvalStatus.PASSED if a["passed"] else EvalStatus.FAILED
        glyph, style = status.glyph, STATUS_STYLE[status]
        label = f"{name}{'*' if name == configured else ''}"
        if name == shown:
            parts.extend([("[", "$text-accent"), (label, "bold reverse"), " ", (glyph, style), ("]", "$text-accent"), " "])
        else:
            parts.extend([f" {label} ", (glyph, style), "  "])
    return Content.assemble(*parts)


class TrajectoryDiff(Vertical):
    """Expected calls on the left, actual calls on the right, paired as the alignment says."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)

    def compose(self) -> ComposeResult:
        yield Static(id="trajectory-head")
        yield Grid(id="trajectory-grid")
        yield Static(id="trajectory-args")

    def show_calls(self, actual: list[FunctionCall]) -> None:
        """Only actual calls (a scenario turn has no expected trajectory to judge them against)."""
        self._list_calls("no expected calls (scenario case): the calls the agent made", None, actual)

    def show_unjudged(self, expected: list[FunctionCall], actual: list[FunctionCall], *,
                      head: str = "not judged: tool_trajectory_avg_score has no verdict on this turn") -> None:
        """Both sides' calls without a verdict (tool_trajectory_avg_score has not judged this turn, or
        judged expected calls the file no longer has)."""
        self._list_calls(head, expected, actual)

    def _list_calls(self, head: str, expected: list[FunctionCall] | None, actual: list[FunctionCall]) -> None:
        self.query_one("#trajectory-head", Static).update(Content.styled(head, "$text-muted"))
        grid = self.query_one("#trajectory-grid", Grid)
        grid.remove_children()
        exp_head = "expected (none)" if expected is None else f"expected ({len(expected)})"
        cells = [Static(Content.styled(exp_head, "bold"), classes="cell head"),
                 Static(Content.styled(f"actual ({len(actual)})", "bold"), classes="cell head")]
        left = expected or []
        for k in range(max(len(left), len(actual))):
            for calls in (left, actual):
                call = calls[k] if k < len(calls) else None
                body = (Content.assemble(("· ", "$text-muted"), call_signature(call.name or "", call.args))
                        if call is not None else Content(""))
                cells.append(Static(body, classes="cell"))
        grid.mount_all(cells)
        args = self.query_one("#trajectory-args", Static)
        args.update(Content(""))
        args.set_class(True, "-empty")

    def show(
        self,
        alignments: dict[str, Alignment],
        shown: str,
        configured: str,
        expected: list[FunctionCall],
        actual: list[FunctionCall],
        ignore_args: bool = False,
        switch_hint: str = "m switches",
    ) -> None:
        """`switch_hint`: the key that switches the match type, as the keymap has it."""
        alignment = alignments.get(shown) or alignments[configured]
        head = [
            verdict_chips(alignments, shown, configured),
            plain(f"{alignment_summary(alignment)}{'; arguments ignored' if ignore_args else ''}"
                  f" · * configured · {switch_hint}", "$text-muted"),
        ]
        self.query_one("#trajectory-head", Static).update(joined(head))
        grid = self.query_one("#trajectory-grid", Grid)
        grid.remove_children()
        cells: list[Static] = [
            Static(Content.styled(f"expected ({len(expected)})", "bold"), classes="cell head"),
            Static(Content.styled(f"actual ({len(actual)})", "bold"), classes="cell head"),
        ]
        # Each call fits its column (half the pane, less the gutter) on one line.
        cell = max(24, ((self.size.width or self.app.size.width - 4) - 2) // 2)
        rows = trajectory_rows(alignment, expected, actual, width=cell)
        if not rows and not expected and not actual:
            cells.append(Static(Content.styled("no tool calls", "$text-muted"), classes="cell"))
            cells.append(Static(Content.styled("no tool calls", "$text-muted"), classes="cell"))
        for row in rows:
            cells.append(Static(row.expected or Content(""), classes="cell"))
            cells.append(Static(row.actual or Content(""), classes="cell"))
        grid.mount_all(cells)
        diffs = arg_diff_lines(alignment)
        args = self.query_one("#trajectory-args", Static)
        args.update(joined([Content.styled("argument differences", "bold"), *diffs]) if diffs else Content(""))
        args.set_class(not diffs, "-empty")
