"""Trends under the summary: a case's score per metric over its last saved runs, an eval set's pass rate
over time, as bars on a fixed scale. History is read in a thread worker and cached per eval file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult, RenderResult as WidgetRenderResult
from textual.containers import Horizontal, Vertical
from textual.css.scalar import Scalar
from textual.content import Content
from textual.widgets import Label, Sparkline, Static
from textual.worker import Worker, WorkerState

from ...textsafe import safe_line
from ..text import STATUS_GLYPH, STATUS_STYLE, fmt_score, plain
from .browser import CaseEntry, Entry, SetEntry, TurnEntry

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.store import HistoryEntry
    from ...engine.trends import RunPoint, RunScores
    from ..listing import CaseListing

log = logging.getLogger(__name__)

#: Cells a sparkline may take (one value a cell): the newest values when there are more. With the name
#: and the tail a row fits the summary pane's ~40 columns at 80x24.
SPARK_WIDTH = 12
#: Metrics a case's trend shows at most (the pane is short at 80x24).
MAX_METRICS = 4
_NAME_WIDTH = 14
#: A case trend row's name takes at most this (the longest metric name's length) and its tail about this.
_LONGEST_NAME = 38
_TAIL_WIDTH = 10


class FileTrends:
    """One eval file's history, as the trend rows need it (built in a worker thread)."""

    def __init__(self, points: list[RunPoint], runs: list[RunScores]) -> None:
        self.points = points
        self.runs = runs


def load_file_trends(history: Path, eval_set_id: str, listed: list[HistoryEntry] | None = None) -> FileTrends:
    """Read an eval file's history folder (or use its listing, `listed`): pass rate per run, and
    scores of its newest runs."""
    from ...engine.store import list_history
    from ...engine.trends import load_run_scores, run_points

    entries = trend_entries([e for e in (listed if listed is not None else list_history(history))
                             if e.eval_set_id == eval_set_id])
    return FileTrends(run_points(entries, eval_set_id), load_run_scores(entries, eval_set_id))


def comparable(entry: HistoryEntry) -> bool:
    """Whether a saved run belongs in the agent's trend (`HistoryEntry.comparable`, the one rule)."""
    return entry.comparable


def trend_entries(entries: list[HistoryEntry]) -> list[HistoryEntry]:
    """The saved runs a trend draws: those `comparable` (unless there is nothing else), so a mocked,
    strict, stand-in-judge or replay run never moves the agent's line."""
    return [e for e in entries if comparable(e)] or entries


_BARS = "▁▂▃▄▅▆▇█"


def bars(values: Sequence[float], top: float | None = 1.0) -> str:
    """One bar a value on a fixed scale from 0 to `top` (scores and pass rates: 0..1, so a constant
    1.00 is a full bar, never the lowest); `top` None scales to the largest value (counts, seconds)."""
    if not values:
        return ""
    high = top if top is not None else max(max(values), 0.0)
    out = []
    for v in values:
        ratio = 0.0 if high <= 0 else min(max(v / high, 0.0), 1.0)
        out.append(_BARS[round(ratio * (len(_BARS) - 1))])
    return "".join(out)


def _is_score(name: str) -> bool:
    """Informational metrics (counts, tokens, seconds) are not scores on 0..1."""
    from ...schema.criteria import INFORMATIONAL_METRICS

    return name not in INFORMATIONAL_METRICS


_Parts = tuple[str, tuple[float, ...], str]


class _Shown:
    """What a trend row shows: the label, the values drawn (the newest SPARK_WIDTH) and the `last (n)` tail."""

    def __init__(self) -> None:
        self.parts: _Parts | None = None

    def change(self, name: str, values: Sequence[float], rate: bool, width: int | None = _NAME_WIDTH) -> _Parts | None:
        """The row's new parts; None when they are the ones shown (moving between cases with the same trend
        repaints nothing). `width`: the label's cells (its name cut in the middle past that); None keeps
        the whole name, for a row that cuts it to its own width when drawn."""
        from ..text import cut_middle

        shown = tuple(values)[-SPARK_WIDTH:]
        label = name if width is None else f"{cut_middle(name, width):<{width}} "
        fmt = (lambda v: f"{v:.0%}") if rate else fmt_score
        parts = (label, shown, f" {fmt(shown[-1])} ({len(values)})")
        if parts == self.parts:
            return None
        self.parts = parts
        return parts


class TrendRow(Horizontal):
    """`name  ▁▃█  last (n)`: one row, the sparkline one cell a value; `set` redraws it in place."""

    def __init__(self, name: str = "", values: Sequence[float] = (0.0,), *, rate: bool = False) -> None:
        super().__init__(classes="trend-row")
        self._name_label = Label(classes="trend-name")
        self._spark_line = Label(classes="trend-spark")
        self._tail_label = Label(classes="trend-tail")
        self._shown = _Shown()
        #: The values drawn (the newest SPARK_WIDTH).
        self.values: list[float] = []
        self.set(name, values, rate=rate)

    def compose(self) -> ComposeResult:
        yield self._name_label
        yield self._spark_line
        yield self._tail_label

    def set(self, name: str, values: Sequence[float], *, rate: bool = False) -> None:
        parts = self._shown.change(name, values, rate)
        if parts is None:
            return
        label, shown, tail = parts
        # The name is padded to a fixed width and the tail fills the rest: neither changes the layout.
        self.values = list(shown)
        self._name_label.update(plain(label), layout=False)
        # A fixed scale (0..1 for rates and scores): a steady 100% is a full bar, not the lowest.
        self._spark_line.update(Content.styled(bars(shown, 1.0 if rate or _is_score(name) else None), "$accent"),
                                layout=False)
        width = Scalar.parse(str(max(1, len(shown))))
        if self._spark_line.styles.width != width:
            self._spark_line.styles.width = width
        self._tail_label.update(Content.styled(tail, "$text-muted"), layout=False)


class _Row:
    """`name ▁▃█ last (n)` as one renderable: the label and tail around Textual's sparkline renderable."""

    def __init__(self, label: str, spark: Segment, tail: str, tail_style: Style) -> None:
        self.label, self.spark, self.tail, self.tail_style = label, spark, tail, tail_style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.label)
        yield self.spark
        yield Segment(self.tail, self.tail_style)


class CaseTrendRow(Sparkline):
    """A trend row of the case summary as ONE widget (TrendRow is four): the summary's rows are redrawn on
    every cursor move, and four widgets a row made each move lay out and repaint all of them."""

    COMPONENT_CLASSES = Sparkline.COMPONENT_CLASSES | {"case-trend-row--tail"}

    def __init__(self) -> None:
        super().__init__(classes="trend-row")
        self.label = ""
        self.tail = ""
        self._score = True
        self._shown = _Shown()

    def set(self, name: str, values: Sequence[float], *, rate: bool = False) -> None:
        parts = self._shown.change(name, values, rate, width=None)
        if parts is None:
            return
        label, shown, tail = parts
        self._score = rate or _is_score(name)
        # Metric names come from a config file: one line, control characters escaped (never markup).
        # `label` is the whole name: it is cut to the row's width when drawn.
        self.label, self.tail = safe_line(label), tail
        self.data = shown  # a reactive: repaints this row, no layout (its height is always 1)
        self.refresh()

    def render(self) -> WidgetRenderResult:
        from ..text import cut_middle

        # Drawn on a fixed 0..1 scale (Textual's Sparkline scales min..max: a constant 1.00 drew as
        # the lowest bar); informational values scale to their own largest.
        top = 1.0 if self._score else None
        spark = Segment(bars(list(self.data or ()), top), self.get_component_rich_style("sparkline--max-color"))
        # The name takes what the sparkline and its tail leave (every row the same, so the bars line up),
        # cut in the middle past that: `rubric_based…quality_v1`, never `tool_trajecto…` at 120 columns.
        width = max(_NAME_WIDTH, min(_LONGEST_NAME, self.size.width - SPARK_WIDTH - _TAIL_WIDTH - 1))
        label = f"{cut_middle(self.label, width):<{width}} "
        return _Row(label, spark, self.tail, self.get_component_rich_style("case-trend-row--tail"))


def spark_row(name: str, values: Sequence[float], *, rate: bool = False) -> TrendRow:
    return TrendRow(name, values, rate=rate)


class CaseTrends(Vertical):
    """Shown under the summary: the highlighted case's (or eval set's) trend over its saved runs."""

    def __init__(self, listing: CaseListing, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.listing = listing
        self.entry: Entry = None
        # eval file -> (generation, trends); the generation counts this session's finished runs.
        self._cache: dict[Path, tuple[int, FileTrends]] = {}
        self._loading: set[Path] = set()
        self._heading: Content | None = None
        # Held, not queried: a DOM query per cursor move costs more than the redraw it leads to.
        self._title = Static(id="trends-title")
        self._rows_pool = [CaseTrendRow() for _ in range(MAX_METRICS)]
        for row in self._rows_pool:
            row.display = False
        # history folder -> (generation, its listing)
        self._listings: dict[Path, tuple[int, list[HistoryEntry]]] = {}

    def compose(self) -> ComposeResult:
        yield self._title
        # A fixed pool of rows, updated in place: mounting rows on every cursor move cost a layout a key.
        yield from self._rows_pool

    def _generation(self) -> int:
        return len(self.listing.run_book.timeline)

    def show(self, entry: Entry) -> None:
        self.entry = entry
        path = self._path(entry)
        if path is None:
            self._draw(None)
            return
        cached = self._cache.get(path)
        if cached is not None and cached[0] == self._generation():
            self._draw(cached[1])
        else:
            self._draw(cached[1] if cached is not None else None)
            self._load(path)

    def refresh_if_stale(self) -> None:
        """A run finished since the trend was read: read the history again (its record is new)."""
        path = self._path(self.entry)
        cached = self._cache.get(path) if path is not None else None
        if path is not None and (cached is None or cached[0] != self._generation()):
            self._load(path)

    def _path(self, entry: Entry) -> Path | None:
        if isinstance(entry, SetEntry):
            return entry.path
        if isinstance(entry, (CaseEntry, TurnEntry)):
            return self.listing.path_of(entry.key)
        return None

    def _load(self, path: Path) -> None:
        if not self.listing.loaded:
            return  # never compete with the start-up scan: the summary refreshes once it is done
        ws = self.listing.workspace
        state = self.listing.file_state(path)
        if ws is None or state is None or state.eval_set is None or path in self._loading:
            return
        from ..loader import history_dir_for

        history = history_dir_for(ws, path)
        eval_set_id = state.eval_set.eval_set_id
        generation = self._generation()
        self._loading.add(path)

        # Eval files often share one history folder: it is listed once per generation, not once per file
        # (listing parses every record, which is slow for a big one).
        cached = self._listings.get(history)
        listed = cached[1] if cached is not None and cached[0] == generation else None

        def work() -> tuple[Path, int, FileTrends]:
            from ...engine.store import list_history

            entries = listed if listed is not None else list_history(history)
            self._listings[history] = (generation, entries)  # a dict store: atomic under the GIL
            return path, generation, load_file_trends(history, eval_set_id, entries)

        self.run_worker(work, thread=True, group="trends", name=f"trends {path.name}", exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "trends":
            return
        event.stop()
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            path, generation, trends = event.worker.result
            self._loading.discard(path)
            self._cache[path] = (generation, trends)
            if self._path(self.entry) == path:
                self._draw(trends)
        elif event.state == WorkerState.ERROR:
            log.warning("could not read the trends: %s", event.worker.error)
            self._loading.clear()

    # ---- rendering ---------------------------------------------------------------------------

    def _draw(self, trends: FileTrends | None) -> None:
        rows, heading = self._rows(trends)
        if heading != self._heading:
            self._heading = heading
            # One line always (the glyphs are capped): no layout needed for a new heading.
            self._title.update(heading if heading is not None else "", layout=False)
        if self.display != (heading is not None):
            self.display = heading is not None
        for i, row in enumerate(self._rows_pool):
            if i < len(rows):
                name, values, rate = rows[i]
                row.set(name, values, rate=rate)
            if row.display != (i < len(rows)):
                row.display = i < len(rows)

    def _rows(self, trends: FileTrends | None) -> tuple[list[tuple[str, list[float], bool]], Content | None]:
        entry = self.entry
        if trends is None:
            return [], None
        from ...engine.trends import case_series, case_status_series, pass_rate_series

        if isinstance(entry, SetEntry):
            rates = pass_rate_series(trends.points)
            if not rates:
                return [], None
            return [("pass rate", rates, True)], Content.styled("Trend (full runs)", "bold $text-muted")
        if not isinstance(entry, (CaseEntry, TurnEntry)):
            return [], None
        eval_id = entry.key.eval_id
        statuses = case_status_series(trends.runs, eval_id)
        series = case_series(trends.runs, eval_id)
        if not statuses and not series:
            return [], None
        glyphs: list[tuple[str, str] | str] = [("Trend ", "bold $text-muted")]
        shown = statuses[-SPARK_WIDTH:]
        for s in shown:
            glyphs.append((STATUS_GLYPH[s], STATUS_STYLE[s]))
        # The caption counts the marks drawn: a run that left this case out (failures only) has none,
        # and repetitions of one run have one each.
        n = len(shown)
        caption = f" last {n} run{'s' if n != 1 else ''} of it"
        if len(statuses) > n:
            caption += f" (of {len(statuses)})"
        glyphs.append((caption, "$text-muted"))
        # Scores first (a case's verdicts), then the informational values.
        ordered = sorted(series.items(), key=lambda item: not _is_score(item[0]))
        rows = [(name, values, False) for name, values in ordered[:MAX_METRICS]]
        return rows, Content.assemble(*glyphs)
