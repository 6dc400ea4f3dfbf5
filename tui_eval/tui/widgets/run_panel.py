"""The run panel: what is running, live passed / failed / not-evaluated counts, one progress bar per metric."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, ProgressBar, Static

from ..runbook import RunBook
from ..progress import RunPhase, RunSnapshot
from ...schema.status import CASE_STATUSES
from ..inflight import IN_FLIGHT_LINES, InFlight
from ..text import STATUS_GLYPH, STATUS_STYLE, one_line, plain
from .marks import cost_text, latency_inline, tokens_text

_PHASE_WORDS: dict[RunPhase, str] = {
    "starting": "starting",
    "running": "running",
    "cancelling": "cancelling…",
    "finished": "finished",
    "cancelled": "cancelled",
    "failed": "failed",
}


class MetricBar(Horizontal):
    """One metric's name and a bar that fills as its invocations are scored.

    The bar and the note are made with the widget, so `set_progress` lands on them at once, whether the
    widget has mounted yet or not (the run panel makes a bar and sets its progress in one go; the bar used to
    keep that aside until its Mount handler ran, and looked empty until then).
    """

    def __init__(self, metric: str) -> None:
        super().__init__(classes="metric-bar")
        self.metric = metric
        self.not_evaluated = False
        # No ETA: it is a clock, and the bar must never be indeterminate (total is always set).
        #: The bar itself (its progress and total are the metric's, from the first `set_progress` on).
        self.bar = ProgressBar(total=1, show_eta=False)
        self._progress = (0, 1)
        self._note = Label(Content.styled("not evaluated", "$text-warning"), classes="metric-note")
        self._note.display = False

    def compose(self) -> ComposeResult:
        yield Label(plain(self.metric), classes="metric-name")
        yield self.bar
        yield self._note

    def set_progress(self, done: int, total: int, *, evaluated: int = 1) -> None:
        """Fill the bar (its children exist from the start, so this works before the bar is mounted)."""
        total = max(total, 1)
        progress = (min(done, total), total)
        #: Scored invocations but not one verdict (a judge without credentials): not `100%`.
        not_evaluated = done > 0 and evaluated == 0
        if progress != self._progress:
            self._progress = progress
            self.bar.update(total=total, progress=progress[0])
        if not_evaluated != self.not_evaluated:
            self.not_evaluated = not_evaluated
            self.set_class(not_evaluated, "-not-evaluated")
            self._note.display = not_evaluated
            self.bar.display = not not_evaluated


class RunPanel(Vertical):
    """Shows the current (or last) run; the app feeds it snapshots from its timer."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-idle")
        self._version = -1
        self._phase: str | None = None
        self._bars: dict[str, MetricBar] = {}
        self._insight_stamp: object = None
        self._status = Static(self._idle_line(), id="run-status")
        self._status_height = -1

    def compose(self) -> ComposeResult:
        yield self._status
        # Tokens, estimated cost and tool latency of the run (see show_insight); hidden until there are some.
        insight = Static(id="run-insight")
        insight.display = False
        yield insight
        # The cases in flight, their turn and last tool call (see show_in_flight); hidden when none.
        in_flight = Static(id="run-in-flight")
        in_flight.display = False
        yield in_flight
        # Two bars a row: eight metrics take four lines, not eight, at 80x24.
        yield Grid(id="metric-bars")

    def show_in_flight(self, lines: list[InFlight]) -> None:
        """The first cases in flight, one line each (`i` lists them all, enter shows one's transcript)."""
        widget = self.query_one("#run-in-flight", Static)
        widget.display = bool(lines)
        if not lines:
            return
        shown = [Content.assemble(("◌ ", "$text-accent"), plain(one_line(f.key.eval_id, 40), "bold"),
                                  (f"  turn {f.turn}", "$text-muted"),
                                  plain(f"  {one_line(f.last_call, 50)}" if f.last_call else "", "$text-muted"))
                 for f in lines[:IN_FLIGHT_LINES]]
        more = len(lines) - IN_FLIGHT_LINES
        hint = f"  … {more} more; i lists them" if more > 0 else "  i: in flight, enter a transcript, k skips"
        shown[-1] = Content.assemble(shown[-1], (hint, "$text-muted"))
        widget.update(Content("\n").join(shown))

    @staticmethod
    def _idle_line() -> Content:
        return Content.assemble(
            ("No run yet. ", "$text-muted"),
            ("r", "bold $accent"), (" runs the selection, ", "$text-muted"),
            ("R", "bold $accent"), (" everything, ", "$text-muted"),
            ("F", "bold $accent"), (" the failures.", "$text-muted"),
        )

    def show(self, snap: RunSnapshot, num_runs: int = 1) -> None:
        """Redraw from a snapshot (cheap when nothing changed: a run streaming thousands of cases a second
        changes the status line's numbers and the bars, not the layout). `num_runs`: each case runs this
        many times (--num-runs)."""
        if snap.version == self._version:
            return
        self._version = snap.version
        if snap.phase != self._phase:
            self._phase = snap.phase
            for phase in _PHASE_WORDS:
                self.set_class(snap.phase == phase, f"-{phase}")
            self.set_class(False, "-idle")
        line = self._status_line(snap, num_runs)
        # A new layout only when the status line's height changes (it wraps, errors come and go).
        status = self._status
        width = status.content_region.width
        height = len(line.wrap(width)) if width else -1
        status.update(line, layout=height != self._status_height or height < 0)
        self._status_height = height
        for name in snap.metric_total:
            bar = self._bars.get(name)
            if bar is None:
                bar = self._bars[name] = MetricBar(name)
                self.query_one("#metric-bars", Grid).mount(bar)
            bar.set_progress(snap.metric_done.get(name, 0), snap.metric_total[name],
                             evaluated=snap.metric_evaluated.get(name, 0))

    # ---- tokens, cost and tool latency (issue 11) ---------------------------------------------

    def show_insight(self, book: RunBook) -> None:
        """Redraw the tokens / est. cost line and the tool latency line (at most two lines at 80 columns)."""
        stamp = (id(book.usage), book.total_tokens(), id(book.tool_latency()))
        if stamp == self._insight_stamp:
            return
        self._insight_stamp = stamp
        widget = self.query_one("#run-insight", Static)
        content = self._insight_content(book, self.content_region.width or 78)
        widget.display = content is not None
        if content is not None:
            widget.update(content)

    @staticmethod
    def _insight_content(book: RunBook, width: int) -> Content | None:
        tokens = book.total_tokens()
        tools = book.tool_latency()
        if tokens is None and not tools:
            return None
        lines: list[Content] = []
        if tokens is not None:
            line = f"agent {tokens_text(tokens)} · {cost_text(book.cost())}"
            lines.append(Content.styled(_cut(line, width), "$text-muted"))
        if tools:
            lines.append(Content.assemble(("tools ", "$text-muted"), plain(_cut(latency_inline(tools), width - 6))))
        return Content("\n").join(lines)

    def reset(self) -> None:
        for bar in self._bars.values():
            bar.remove()
        self._bars.clear()
        self._version = -1
        self._phase = None

    @staticmethod
    def _status_line(snap: RunSnapshot, num_runs: int = 1) -> Content:
        phase = _PHASE_WORDS.get(snap.phase, snap.phase)
        if snap.saving is not None:
            # Nothing runs any more: a cancel is honoured though thousands of cases take seconds to save.
            phase = f"{'cancelled' if snap.phase == 'cancelling' else phase} · saving {snap.saving:,} cases…"
        parts: list[tuple[str, str] | str] = [
            (f"{snap.label}: {phase}", "bold"),
            # Until the engine has planned the run there is no total: never show `0/0`.
            f"  {snap.cases_done}/{snap.cases_total} {_unit(snap, num_runs)}  " if snap.cases_total else "  ",
        ]
        if snap.cases_total:
            for status in CASE_STATUSES:
                parts.append((f"{STATUS_GLYPH[status]} {snap.counts.get(status, 0)}  ", STATUS_STYLE[status]))
        if snap.phase in ("starting", "running") and snap.saving is None:
            parts.append(("x cancels", "$text-muted"))
        elif snap.phase in ("finished", "cancelled", "failed"):
            # The bars are hidden once the run is over (the panel shrinks to this line): name the metrics
            # that decided nothing, so a full bar never passes for a verdict.
            idle = [name for name in snap.metric_total
                    if snap.metric_done.get(name, 0) and not snap.metric_evaluated.get(name, 0)]
            if idle:
                # One line at 80 columns: the first few names, then how many more.
                shown = ", ".join(idle[:3]) + (f" +{len(idle) - 3} more" if len(idle) > 3 else "")
                parts.append((f"not evaluated: {shown}", "$text-warning"))
        line = Content.assemble(*parts)
        # Errors come from the engine and agents: literal text, never markup.
        errors = [plain(f"⚠ {e}", "$text-error") for e in snap.errors[-3:]]
        return Content("\n").join([line, *errors]) if errors else line


def _unit(snap: RunSnapshot, num_runs: int) -> str:
    """`cases`, or with --num-runs N `case runs (3 cases × 4)`: one case run four times is not 4 cases."""
    n = num_runs
    if n <= 1 or snap.cases_total % n:
        return "cases"
    return f"case runs ({snap.cases_total // n} cases × {n})"


def _cut(text: str, width: int) -> str:
    """One line of at most `width` cells (an ellipsis marks the cut, after a whole word)."""
    from ..text import cut_words

    return cut_words(text, max(2, width))
