"""Trends under the summary: a case's score per metric over its last saved runs, an eval set's pass rate
over time, as Textual Sparklines. History is read in a thread worker and cached per eval file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Sparkline, Static
from textual.worker import Worker, WorkerState

from ..text import STATUS_GLYPH, STATUS_STYLE, fmt_score, plain
from .browser import CaseEntry, Entry, SetEntry, TurnEntry

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.store import HistoryEntry
    from ...engine.trends import RunPoint, RunScores
    from ..catalog import Catalog

log = logging.getLogger(__name__)

#: Cells a sparkline may take (one value a cell): the newest values when there are more.
SPARK_WIDTH = 24
#: Metrics a case's trend shows at most (the pane is short at 80x24).
MAX_METRICS = 4
_NAME_WIDTH = 16


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

    entries = [e for e in (listed if listed is not None else list_history(history)) if e.eval_set_id == eval_set_id]
    return FileTrends(run_points(entries, eval_set_id), load_run_scores(entries, eval_set_id))


def spark_row(name: str, values: Sequence[float], *, rate: bool = False) -> Horizontal:
    """`name  ▁▃█  first→last (n)`: one row, the sparkline one cell a value."""
    shown = list(values)[-SPARK_WIDTH:]
    label = name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH - 1] + "…"
    spark = Sparkline(shown, classes="trend-spark")
    spark.styles.width = max(1, len(shown))
    fmt = (lambda v: f"{v:.0%}") if rate else fmt_score
    tail = f" {fmt(shown[0])}→{fmt(shown[-1])} ({len(values)})" if len(shown) > 1 else f" {fmt(shown[0])} (1)"
    return Horizontal(Label(plain(f"{label:<{_NAME_WIDTH}} "), classes="trend-name"), spark,
                      Label(Content.styled(tail, "$text-muted"), classes="trend-tail"), classes="trend-row")


class CaseTrends(Vertical):
    """Shown under the summary: the highlighted case's (or eval set's) trend over its saved runs."""

    DEFAULT_CSS = """
    CaseTrends { height: auto; margin-top: 1; }
    CaseTrends .trend-row { height: 1; }
    CaseTrends .trend-name, CaseTrends .trend-tail { width: auto; }
    """

    def __init__(self, catalog: Catalog, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.catalog = catalog
        self.entry: Entry = None
        # eval file -> (generation, trends); the generation counts this session's finished runs.
        self._cache: dict[Path, tuple[int, FileTrends]] = {}
        self._loading: set[Path] = set()
        # history folder -> (generation, its listing)
        self._listings: dict[Path, tuple[int, list[HistoryEntry]]] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="trends-title")

    def _generation(self) -> int:
        return len(self.catalog.run_book.timeline)

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
            return self.catalog.path_of(entry.key)
        return None

    def _load(self, path: Path) -> None:
        if not self.catalog.loaded:
            return  # never compete with the start-up scan: the summary refreshes once it is done
        ws = self.catalog.workspace
        state = self.catalog.file_state(path)
        if ws is None or state is None or state.eval_set is None or path in self._loading:
            return
        from ..loader import history_dir_for

        history = history_dir_for(ws, path)
        eval_set_id = state.eval_set.eval_set_id
        generation = self._generation()
        self._loading.add(path)

        # Eval files often share one history folder: it is listed once per generation, not once per file
        # (listing parses every record: ~0.7 s CPU for a 5,000-case one).
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
        for row in self.query(".trend-row"):
            row.remove()
        title = self.query_one("#trends-title", Static)
        rows, heading = self._rows(trends)
        title.update(heading if heading is not None else "")
        self.display = heading is not None
        if rows:
            self.mount_all(rows)

    def _rows(self, trends: FileTrends | None) -> tuple[list[Any], Content | None]:
        entry = self.entry
        if trends is None:
            return [], None
        from ...engine.trends import case_series, case_status_series, pass_rate_series

        if isinstance(entry, SetEntry):
            rates = pass_rate_series(trends.points)
            if not rates:
                return [], None
            return [spark_row("pass rate", rates, rate=True)], Content.styled("Trend (full runs)", "bold $text-muted")
        if not isinstance(entry, (CaseEntry, TurnEntry)):
            return [], None
        eval_id = entry.key.eval_id
        statuses = case_status_series(trends.runs, eval_id)
        series = case_series(trends.runs, eval_id)
        if not statuses and not series:
            return [], None
        glyphs: list[tuple[str, str] | str] = [("Trend ", "bold $text-muted")]
        for s in statuses[-SPARK_WIDTH:]:
            glyphs.append((STATUS_GLYPH[int(s)], STATUS_STYLE[int(s)]))
        n = len(trends.runs)
        glyphs.append((f" last {n} saved run{'s' if n != 1 else ''}", "$text-muted"))
        rows = [spark_row(name, values) for name, values in list(series.items())[:MAX_METRICS]]
        return rows, Content.assemble(*glyphs)
