"""The trajectory diff: expected and actual tool calls side by side, under a switchable match type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.content import Content
from textual.widgets import Static

from ...schema.results import EvalStatus
from ..text import STATUS_STYLE, call_signature, fmt_value, plain
from ..verdicts import MATCH_TYPES, alignment_summary, arg_diff_lines, joined, trajectory_rows

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.details import Alignment
    from ...schema.model import FunctionCall, Invocation


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


# ---- the trajectory as a tree, the turn's time, the session state ---------------------------------


def tree_lines(inv: Invocation, width: int = 76) -> list[Content]:
    """The turn's tool calls with the calls made inside each (an AgentTool's agent) indented under it,
    each attributed (`dice_agent › roll_die(sides=6)`) with what it returned and its time."""
    from ...schema.calls import call_tree

    lines: list[Content] = []
    for row in call_tree(inv):
        indent = "  " * row.depth + ("└ " if row.depth else "")
        agent = f"{row.agent} › " if row.agent else ""
        took = f"  {row.seconds:.2f} s" if row.seconds is not None else ""
        room = max(12, width - len(indent) - len(agent) - len(took))
        lines.append(Content.assemble((indent, "$text-muted"), plain(agent, "$text-muted"),
                                      plain(call_signature(row.name, row.args, room), "bold" if not row.depth else ""),
                                      (took, "$text-muted")))
        if row.response is not None:
            answer = fmt_value(row.response, max(12, width - len(indent) - 4))
            lines.append(Content.assemble(("  " * row.depth + ("  " if row.depth else "") + "  ← ", "$text-muted"),
                                          plain(answer, "$text-muted")))
    return lines


#: Waterfall segment styles: model, then tools in turn (a slow tool stands out by its width), framework.
_MODEL_STYLE, _FRAMEWORK_STYLE = "$primary", "$panel-lighten-2"
_TOOL_STYLES = ("$warning", "$accent")


def waterfall_lines(inv: Invocation, width: int = 76) -> list[Content]:
    """Where the turn's time went, as one bar (model, each tool, framework: ADK 2.13's duration details,
    the tool share split by each call's own time) and a legend under it with nested calls under their
    agent. No lines when the turn was not timed."""
    from ...schema.details import framework_seconds

    total = inv.duration
    if total is None or total <= 0:
        return []
    timed = [t for t in inv.tool_timings if not t.mocked]
    nested_by_parent: dict[str, float] = {}
    for call in inv.nested_calls:
        if call.depth == 1 and call.parent and call.seconds is not None:
            nested_by_parent[call.parent] = nested_by_parent.get(call.parent, 0.0) + call.seconds
    if inv.model_duration is None or inv.tool_duration is None:
        # Not split by ADK's clock (another google-adk, a native agent): tools by their own time, the rest
        # as one "model + framework" remainder.
        tools_total = sum(t.seconds for t in timed)
        model, framework = max(total - tools_total, 0.0), 0.0
        model_label = "model + framework"
    else:
        # ADK 2.13's duration details: the model's and the tools' busy time, the framework's the rest.
        tools_total = inv.tool_duration
        model, framework = inv.model_duration, framework_seconds(total, model=inv.model_duration,
                                                                 tool=inv.tool_duration) or 0.0
        model_label = "model"
    own = sum(t.seconds for t in timed) or 1.0
    tools = [(t.name, tools_total * t.seconds / own, t.call_id) for t in timed] if timed else (
        [("tools", tools_total, None)] if tools_total else [])
    segments: list[tuple[str, float, str]] = [(model_label, model, _MODEL_STYLE)]
    segments += [(name, secs, _TOOL_STYLES[k % 2]) for k, (name, secs, _id) in enumerate(tools)]
    segments.append(("framework", framework, _FRAMEWORK_STYLE))
    head = f"{total:.2f} s "
    bar_width = max(10, width - len(head))
    span = sum(s for _n, s, _st in segments) or 1.0
    cells = [round(bar_width * s / span) for _n, s, _st in segments]
    # Rounding may leave the bar a cell short or long: the widest segment absorbs it.
    cells[cells.index(max(cells))] += bar_width - sum(cells)
    parts: list[Any] = [(head, "bold")]
    for (name, _secs, style), n in zip(segments, cells):
        if n <= 0:
            continue
        label = name[: n - 1] if n > 3 else ""
        parts.append(Content.styled(label.ljust(n), f"{style} reverse"))
    entries: list[tuple[str, str, float]] = []
    for (name, secs, style), (_n2, _s2, call_id) in zip(segments[1:-1], tools):
        inner = nested_by_parent.get(call_id or "")
        extra = f" ({inner:.2f} inside)" if inner is not None else ""
        entries.append((f"■ {name} {secs:.2f}{extra}", style, secs))
    # The legend is one line too: the slowest tools first to go in, "+N more" for the rest.
    fixed = [(f"■ {model_label} {model:.2f}", _MODEL_STYLE), (f"■ framework {framework:.2f}", "$text-muted")]
    room = width - sum(len(t) + 2 for t, _s in fixed)
    kept: set[int] = set()
    for k in sorted(range(len(entries)), key=lambda k: -entries[k][2]):
        if len(entries[k][0]) + 2 + (9 if len(kept) + 1 < len(entries) else 0) <= room:
            kept.add(k)
            room -= len(entries[k][0]) + 2
    legend: list[Any] = [(fixed[0][0] + "  ", fixed[0][1])]
    legend += [(text + "  ", style) for k, (text, style, _secs) in enumerate(entries) if k in kept]
    if len(kept) < len(entries):
        legend.append((f"+{len(entries) - len(kept)} more  ", "$text-muted"))
    legend.append(fixed[1])
    return [Content.assemble(*parts), Content.assemble(*legend)]


def state_lines(expected: dict[str, Any] | None, actual: dict[str, Any] | None, width: int = 76) -> list[Content]:
    """The session state key by key: expected and actual side by side, each key marked ✔ (equal), ✘
    (changed), − (missing from the session) or + (not expected), in `width` columns."""
    from ...schema.details import state_diff

    expected = expected or {}
    if actual is None:
        return [Content.styled("actual: unknown (the agent keeps no state, or the run did not record it)",
                               "$text-muted"), *(plain(f"  {k} = {fmt_value(v, 60)}") for k, v in expected.items())]
    diffs = {d.key: d for d in state_diff(expected, actual)}
    keys = list(dict.fromkeys([*expected, *actual]))
    # At 80 columns (the summary is ~35 wide) a quarter is 8: keys up to 12 stay whole.
    key_width = min(max(12, width // 4), max((len(k) for k in keys), default=3))
    value_width = max(6, (width - key_width - 6) // 2)
    lines = [Content.styled(f"  {'key'.ljust(key_width)}  {'expected'.ljust(value_width)}  actual", "$text-muted")]
    for key in keys:
        diff = diffs.get(key)
        mark, style = ("✔", "$text-success") if diff is None else (
            {"changed": ("✘", "$text-error"), "missing": ("−", "$text-error"), "unexpected": ("+", "$text-warning")}
            [diff.status])
        want = fmt_value(expected[key], value_width) if key in expected else "—"
        got = fmt_value(actual[key], value_width) if key in actual else "—"
        lines.append(Content.assemble((f"{mark} ", style), plain(key[:key_width].ljust(key_width), "bold"), "  ",
                                      plain(want.ljust(value_width)), "  ",
                                      plain(got, style if diff is not None else "")))
    return lines
