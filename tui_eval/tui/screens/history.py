"""Run history: every saved run, newest first, and a case-by-case comparison of two runs, regressions first."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.worker import Worker

from ...schema.status import CASE_STATUSES, EvalStatus
from ..messages import JumpTo
from ..text import STATUS_GLYPH, STATUS_VAR, STATUS_WORD, cut_middle, fmt_score, literal, plain, rich_style
from ..widgets.footer import KeyFooter
from ..worker_utils import worker_succeeded

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.codestate import CodeChange
    from ...engine.store import CaseChange, HistoryEntry
    from ..app import EvalApp
    from ..listing import CaseListing

log = logging.getLogger(__name__)

# change kind -> theme variable of its colour (Rich Text cells cannot use CSS variables directly)
# In store.CHANGE_KINDS's order (regressions first): the compare lists kinds in this order.
_KIND_VAR = {"regression": "error", "fixed": "success", "still failing": "error", "changed": "warning",
             "not evaluated": "warning", "not run": "secondary", "unchanged": ""}


def change_kind(change: CaseChange) -> str:
    """How a case moved, as the compare view shows it: a case in only one of the two runs was not run in
    the other (a failures-only or cancelled run), never a regression or a fix."""
    if (change.before is None) != (change.after is None):
        return "not run"
    return change.kind


def coverage_of(entry: HistoryEntry, cases_in_set: int | None) -> str:
    """`all`, `failures`, `selection` or `cancelled`: the record's own word when it has one, else inferred
    from the number of cases it holds against the eval set's (records from before coverage was saved)."""
    if entry.kind is not None and entry.kind.selection != "all" and not entry.cancelled:
        return entry.kind.selection  # the run's kind says it (an F run is `failures`, not `selection`)
    if entry.coverage:
        return entry.coverage
    if entry.cancelled:
        return "cancelled"
    held = sum(entry.counts.values())
    if cases_in_set is not None and held < cases_in_set:
        return "selection"
    return "all"


# The history table's count columns: one per case status, headed by its glyph.
_COUNT_COLUMNS = {EvalStatus.PASSED: "passed", EvalStatus.FAILED: "failed", EvalStatus.NOT_EVALUATED: "ne"}


#: Eval sets whose pass-rate trend the history shows above its table (the screen is short at 80x24).
MAX_TREND_SETS = 3
#: Cells a run id and an eval set id take in the history table from 100 columns (cut in the middle past
#: that); narrower, 12 and 14, so that with the tags before the id a row fits 80 columns.
RUN_ID_WIDTH = 28
SET_ID_WIDTH = 24


def run_tags(entry: HistoryEntry, cases_in_set: int | None) -> list[tuple[str, str]]:
    """What kind of run a record is, as the history tags it (word, style): `replay` (recorded turns
    scored again, not the agent), `run k of N` (one repetition: its counts are one repetition's), and a
    partial run's coverage (`failures 5/9`: its missing cases kept their older results)."""
    tags: list[tuple[str, str]] = []
    kind = entry.kind
    if entry.replay:
        tags.append(("replay", "text-accent"))
    if kind is not None:
        # What else the run's kind says that sets it apart from the agent's own live run (run/3 records).
        if kind.rescore_of:
            tags.append(("re-score", "text-accent"))
        if kind.tools != "live":
            tags.append(("mock tools" if kind.tools == "mock-strict" else "mock+live tools", "text-accent"))
        if kind.judge is not None and kind.judge.endpoint:
            tags.append(("stand-in judge", "text-accent"))
        if kind.strict:
            tags.append(("strict", "text-accent"))
    if entry.num_runs > 1:
        tags.append((f"run {entry.repetition} of {entry.num_runs}", "bold"))
    coverage = coverage_of(entry, cases_in_set)
    if coverage != "all":
        held = sum(entry.counts.values())
        of = f" {held}/{cases_in_set}" if cases_in_set else ""
        tags.append((f"{coverage}{of}", "text-warning"))
    return tags


def duration_text(seconds: float) -> str:
    """`0.8s`, `42s`, `3m05s`; `—` for records that did not say."""
    if seconds <= 0:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def code_lines(change: CodeChange | None) -> list[str]:
    """What changed in the code between two runs, as plain lines (records without a code state say so)."""
    if change is None:
        return ["code state unknown (a run recorded before code states were saved)"]
    return change.lines() or ["no code change (same commit, same agent files)"]


def fmt_time(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _status_text(app: Any, status: EvalStatus | None, *, glyph_only: bool = False) -> Text:
    """`✔ passed` (`✔` alone below 100 columns, where the scores column needs the room)."""
    if status is None:
        return Text("—", style="dim")
    text = STATUS_GLYPH[status] if glyph_only else f"{STATUS_GLYPH[status]} {STATUS_WORD[status]}"
    return Text(text, style=rich_style(app, f"text-{STATUS_VAR[status]}"))


class _RunsScreen(Screen[None]):
    """What the history and the compare screens share: their stylesheet and the app they read."""

    CSS_PATH = "../views.tcss"

    app: EvalApp


class HistoryScreen(_RunsScreen):
    """Saved runs of every eval set below the folder."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="history.back"),
        Binding("enter", "compare", "Compare with previous", id="history.compare", priority=True),
        Binding("space", "mark", "Mark as base", id="history.mark"),
        # Out of the footer (it is full at 80 columns): `?` and docs/keys.md list it.
        Binding("s", "rescore", "Re-score", show=False, id="history.rescore"),
    ]

    def __init__(self, listing: CaseListing) -> None:
        super().__init__(id="history")
        self.listing = listing
        self.entries: dict[str, HistoryEntry] = {}
        self.base: str | None = None
        #: A re-score just saved: (the run it re-scored, the new run's id), compared once the history reloads.
        self._rescored: tuple[HistoryEntry, str] | None = None
        #: Records in the history folders that could not be read, each as "path: why".
        self.unreadable: list[str] = []
        #: Record path -> how many results of that (an eval file's newest) run are stale now.
        self.stale: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("Loading run history…", "$text-muted"), id="history-status")
        trends = Vertical(id="history-trends")
        trends.display = False
        yield trends
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.border_title = "Run history"
        table.add_column("", key="mark", width=1)
        table.add_column("when", key="when")
        table.add_column("eval set", key="set")
        for status, key in _COUNT_COLUMNS.items():
            table.add_column(status.glyph, key=key)
        # "took" before the run id: the id is the longest cell, and at 80 columns what follows it is cut.
        table.add_column("took", key="took")
        table.add_column("run", key="run")
        self.load_history()

    @work(thread=True, group="history", exclusive=True, exit_on_error=False)
    def load_history(self) -> list[HistoryEntry]:
        from ...engine.store import scan_history
        from ..loader import history_dir_for

        ws = self.listing.workspace
        dirs: dict[Path, None] = {}
        if ws is not None:
            for path in list(self.listing.files):
                dirs.setdefault(history_dir_for(ws, path), None)
        entries: list[HistoryEntry] = []
        unreadable: list[str] = []
        for directory in dirs:
            found, bad = scan_history(directory)
            entries.extend(found)
            unreadable.extend(u.reason for u in bad)
        for reason in unreadable:
            log.warning("unreadable run record: %s", reason)
        self.unreadable = unreadable  # shown under the table once the entries are
        # Newest first; the repetitions of one run stay together, in order (run 1 of N first).
        entries.sort(key=lambda e: (e.creation_timestamp, e.run_id, e.eval_set_id, -e.repetition), reverse=True)
        self.stale = self._stale_of_newest(entries)
        return entries

    @staticmethod
    def _stale_of_newest(entries: list[HistoryEntry]) -> dict[str, int]:
        """How many results of each eval file's newest run are stale against the files on disk now (by
        record path): what the dashboard shows as the latest results. Older runs are history."""
        from ...engine.store import RecordError, load_record
        from ...engine.versions import stale_of_saved

        out: dict[str, int] = {}
        seen: set[str] = set()
        for e in entries:
            if e.eval_file in seen:
                continue
            seen.add(e.eval_file)
            try:
                loaded = load_record(e.path, with_turns=False)
            except (RecordError, OSError) as exc:
                log.warning("could not read %s: %s", e.path, exc)
                continue
            stale = stale_of_saved([loaded])
            if stale:
                out[str(e.path)] = len(stale)
        return out

    @on(Worker.StateChanged)
    def _loaded(self, event: Worker.StateChanged) -> None:
        if worker_succeeded(event, "history", self.query_one("#history-status", Static),
                            "Could not read the history"):
            self.show_entries(event.worker.result or [])
            self._compare_rescored()

    def action_rescore(self) -> None:
        """Score the highlighted run again from its stored turns (`tui-eval rescore`, no agent call), then
        compare the re-score with it."""
        entry = self._selected()
        if entry is None:
            return
        self.notify(f"Re-scoring {entry.run_id} from its stored turns…", markup=False)
        self._rescore(entry)

    @work(thread=True, group="history-rescore", exclusive=True, exit_on_error=False)
    def _rescore(self, entry: HistoryEntry) -> tuple[HistoryEntry, str | None, str]:
        """`tui-eval rescore RECORD` in a process of its own (it saves the new run, as every run is saved by a
        process other than the dashboard's): the new run's id, or None and why."""
        import subprocess
        import sys

        proc = subprocess.run([sys.executable, "-m", "tui_eval.cli", "rescore", str(entry.path)],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        run_id = next((line.removeprefix("Run id: ").strip() for line in proc.stdout.splitlines()
                       if line.startswith("Run id: ")), None)
        if proc.returncode == 2 or run_id is None:
            why = next((line.removeprefix("error: ") for line in proc.stderr.splitlines() if line.startswith("error: ")),
                       proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
            return entry, None, why
        return entry, run_id, ""

    @on(Worker.StateChanged)
    def _rescore_done(self, event: Worker.StateChanged) -> None:
        if not worker_succeeded(event, "history-rescore", self.query_one("#history-status", Static),
                                "Could not re-score the run"):
            return
        result: tuple[HistoryEntry, str | None, str] | None = event.worker.result
        if result is None:
            return
        entry, run_id, why = result
        if run_id is None:
            self.notify(f"Could not re-score {entry.run_id}: {why}", severity="error", markup=False)
            return
        self._rescored = (entry, run_id)
        self.load_history()

    def _compare_rescored(self) -> None:
        """Once the history holds a re-score just made, compare it with the run it re-scored."""
        if self._rescored is None:
            return
        before, run_id = self._rescored
        self._rescored = None
        after = next((e for e in self.entries.values()
                      if e.run_id == run_id and e.eval_set_id == before.eval_set_id), None)
        if after is None:
            self.notify(f"Re-scored as {run_id}, but its record is not in the history.", markup=False)
            return
        self.notify(f"Re-scored {before.run_id} as {run_id}.", markup=False)
        self.app.push_screen(CompareScreen(self.listing, before, after))

    def show_entries(self, entries: list[HistoryEntry]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        self.entries = {}
        sizes: dict[str, int] = {}
        for path in self.listing.files:
            state = self.listing.file_state(path)
            if state is not None and state.eval_set is not None:
                sizes[state.eval_set.eval_set_id] = len(state.eval_set.eval_cases)
        # Below 100 columns the time loses its year and seconds and the ids are cut shorter: the run
        # column's tags stay on screen.
        narrow = self.app.size.width < 100
        set_width, run_width = (14, 12) if narrow else (SET_ID_WIDTH, RUN_ID_WIDTH)

        def when(ts: float) -> str:
            return time.strftime("%m-%d %H:%M", time.localtime(ts)) if narrow else fmt_time(ts)

        for e in entries:
            key = str(e.path)
            self.entries[key] = e
            # What kind of run it was comes first, the run's id last and cut in the middle: at 80
            # columns the tags after a long id were off the screen.
            run = Text()
            for tag, style in run_tags(e, sizes.get(e.eval_set_id)):
                run.append(f"{tag} ", style=rich_style(self.app, style) if style.startswith("text-") else style)
            run.append(cut_middle(literal(e.run_id), run_width), style="dim")
            if key in self.stale:
                # The newest run's results, computed from other files than are on disk now.
                run.append(f" {self.stale[key]} stale", style=rich_style(self.app, "text-warning"))
            table.add_row(
                Text(""), Text(when(e.creation_timestamp)), Text(cut_middle(literal(e.eval_set_id), set_width)),
                # A record counts its cases by status name (`"PASSED": 3`).
                *(Text(str(e.counts.get(s.name, 0)), style=rich_style(self.app, f"text-{STATUS_VAR[s]}"))
                  for s in CASE_STATUSES),
                Text(duration_text(e.duration), style="dim"), run, key=key,
            )
        self._show_pass_rates(entries)
        hint = self.app.keys_in("{history.compare} compares a run with the one before it; {history.mark} marks a base "
                                "run to compare against")
        status = Content.styled(f"{len(entries)} saved runs. {hint}" if entries
                                else self.app.keys_in("No saved runs yet: run something ({run.selection})."), "$text-muted")
        if self.unreadable:
            # A record is data from a file: its reason is shown literally, one line each.
            lines = [Content.styled(f"{len(self.unreadable)} unreadable run record(s):", "$text-warning")]
            lines += [plain(f"  {reason}", "$text-warning") for reason in self.unreadable[:5]]
            if len(self.unreadable) > 5:
                lines.append(Content.styled(f"  … and {len(self.unreadable) - 5} more (see the log)", "$text-warning"))
            status = Content("\n").join([status, *lines])
        status = Content("\n").join([status, *self._human_lines()]) if self.listing.reviews.all() else status
        self.query_one("#history-status", Static).update(status)
        table.focus()

    def _human_lines(self) -> list[Content]:
        """People's verdicts across the saved runs: per metric n, agreement and κ, then the disagreements."""
        from ...engine.reviews import kappa_text, review_lines, target_label

        reviews = self.listing.reviews.all()
        agreement, disagreements = review_lines(reviews)
        lines = [Content.assemble((f"{len(reviews)} human verdict(s), ", "$text-muted"),
                                  (f"{len(disagreements)} disagreeing with the run", "$text-warning" if disagreements
                                   else "$text-muted"),
                                  *(plain(f"   {a.metric}: n {a.n}, agree {a.raw:.0%}, κ {kappa_text(a.kappa)}",
                                          "$text-muted") for a in agreement))]
        for r in disagreements[:5]:
            said = r.automatic.label if r.automatic is not None else "no verdict"
            lines.append(plain(f"  ≠ {r.eval_id}, {target_label(r.verdict)}: human {r.verdict.verdict}, run {said}"
                               + (f" ({r.verdict.reason})" if r.verdict.reason else ""), "$text-warning"))
        if len(disagreements) > 5:
            lines.append(Content.styled(f"  … and {len(disagreements) - 5} more (P: review mode)", "$text-warning"))
        return lines

    def _show_pass_rates(self, entries: list[HistoryEntry]) -> None:
        """Per eval set, the pass rate of its full runs over time (oldest first), as sparklines."""
        from ...engine.trends import pass_rate_series, run_points
        from ..widgets.trends import spark_row, trend_entries

        box = self.query_one("#history-trends", Vertical)
        box.remove_children()
        # The agent's trend: replays, mocked tools, --strict and stand-in judges are left out (unless
        # there is nothing else).
        entries = trend_entries(entries)
        ids = sorted({e.eval_set_id for e in entries})
        rows: list[Widget] = []
        for eval_set_id in ids[:MAX_TREND_SETS]:
            rates = pass_rate_series(run_points(entries, eval_set_id))
            if rates:
                rows.append(spark_row(eval_set_id, rates, rate=True))
        if len(ids) > MAX_TREND_SETS:
            # The others are in the table below; the trend block says it lists only some.
            rows.append(Static(Content.styled(f"+ {len(ids) - MAX_TREND_SETS} more eval set"
                                              f"{'s' if len(ids) - MAX_TREND_SETS != 1 else ''} (in the table)",
                                              "$text-muted")))
        box.display = bool(rows)
        if rows:
            box.mount_all(rows)

    def _selected(self) -> HistoryEntry | None:
        table = self.query_one(DataTable)
        if not self.entries or table.cursor_row < 0:
            return None
        row_key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        return self.entries.get(str(row_key.value))

    def action_mark(self) -> None:
        entry = self._selected()
        if entry is None:
            return
        table = self.query_one(DataTable)
        if self.base is not None and self.base in self.entries:
            table.update_cell(self.base, "mark", Text(""))
        key = str(entry.path)
        self.base = None if self.base == key else key
        if self.base is not None:
            table.update_cell(key, "mark", Text("●", style="bold"))

    def action_compare(self) -> None:
        after = self._selected()
        if after is None:
            return
        if self.base is not None and self.base != str(after.path):
            before = self.entries[self.base]
            if before.creation_timestamp > after.creation_timestamp:
                before, after = after, before
        else:
            older = [e for e in self.entries.values()
                     if e.eval_set_id == after.eval_set_id and e.creation_timestamp < after.creation_timestamp]
            if not older:
                self.notify("No earlier run of this eval set to compare with.", markup=False)
                return
            # An agent run is compared with the agent's previous run, a replay with a replay, when there is one.
            older = [e for e in older if e.replay == after.replay] or older
            before = max(older, key=lambda e: e.creation_timestamp)
        self.app.push_screen(CompareScreen(self.listing, before, after))


def score_deltas_text(deltas: dict[str, tuple[float | None, float | None]], kind: str, name_width: int = 0) -> str:
    """`tool_trajectory_avg_score 0.50→1.00`: the scores that moved first; a count, tokens or seconds
    (informational metrics) after them with its unit (`invocation_duration_v1 0.09→0.03 s/turn`); a
    case still failing with the same scores says so, rather than show only how long it took."""
    from ...schema.criteria import INFORMATIONAL_METRICS
    from ..text import INFO_UNITS, info_figure

    def shown(name: str) -> str:  # `name_width`: metric names cut in the middle past it (0: whole)
        return cut_middle(name, name_width) if name_width else name

    scored = [f"{shown(name)} {fmt_score(a)}→{fmt_score(b)}" for name, (a, b) in deltas.items()
              if name not in INFORMATIONAL_METRICS]
    info = [f"{shown(name)} {info_figure(name, a)}→{info_figure(name, b)}" + (f" {INFO_UNITS[name]}/turn" if name in INFO_UNITS else "")
            for name, (a, b) in deltas.items() if name in INFORMATIONAL_METRICS]
    if not scored and kind in ("still failing", "unchanged"):
        scored = ["same scores"]
    return "; ".join([*scored, *info])


class CompareScreen(_RunsScreen):
    """Two runs of an eval set, case by case: regressions first, then fixes, then the rest."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="compare.back"),
        Binding("enter", "open_case", "Show case", id="compare.open", priority=True),
        Binding("u", "toggle_unchanged", "Hide unchanged", id="compare.unchanged"),
        Binding("g", "open_diff", "Code diff", id="compare.diff"),
        Binding("t", "open_turns", "Turns side by side", id="compare.turns"),
    ]

    def __init__(self, listing: CaseListing, before: HistoryEntry, after: HistoryEntry) -> None:
        super().__init__(id="compare")
        self.listing = listing
        self.before = before
        self.after = after
        self.changes: list[CaseChange] = []
        #: The later run's results that are stale against the files on disk now: case id -> why.
        self.stale: dict[str, tuple[str, ...]] = {}
        self.hide_unchanged = False
        #: What changed in the code between the two runs (plain lines), and the later run's saved dirty diff.
        self.code_lines: list[str] = []
        self.diff_path: Path | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="compare-status")
        with VerticalScroll(id="compare-code"):
            yield Static(id="compare-code-text")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.border_title = Content(
            f"{literal(self.after.eval_set_id)}: {fmt_time(self.before.creation_timestamp)} → "
            f"{fmt_time(self.after.creation_timestamp)}"
        )
        table.add_column("change", key="kind")
        table.add_column("case", key="case")
        table.add_column("before", key="before")
        table.add_column("after", key="after")
        table.add_column("scores", key="scores")
        self.query_one("#compare-status", Static).update(Content.styled("Comparing…", "$text-muted"))
        self.compare()

    @work(thread=True, group="compare", exclusive=True, exit_on_error=False)
    def compare(self) -> list[CaseChange]:
        from ...engine.store import code_change, compare_results, load_record

        m1, before = load_record(self.before.path, with_turns=False)
        m2, after = load_record(self.after.path, with_turns=False)
        # What changed in the code between the two runs (git runs here, off the UI thread).
        self.code_lines = code_lines(code_change(m1, m2))
        diff = m2.get("code_diff_file")
        self.diff_path = None
        if isinstance(diff, str) and diff:
            from ...engine.store import RecordError, record_side_file

            try:  # only a regular file inside the record's own history folder
                self.diff_path = record_side_file(self.after.path, diff, "code diff file")
            except RecordError as exc:
                log.warning("%s", exc)
        from ...engine.versions import stale_of_saved

        self.stale = {eval_id: why for (_file, eval_id), why in stale_of_saved([(m2, after)]).items()}
        return compare_results(before, after)

    @on(Worker.StateChanged)
    def _compared(self, event: Worker.StateChanged) -> None:
        if worker_succeeded(event, "compare", self.query_one("#compare-status", Static), "Could not compare"):
            self.changes = event.worker.result or []
            self.show_code_change()
            self.show_changes()

    def show_changes(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        kinds: dict[str, int] = {}
        order = list(_KIND_VAR)
        # Below 100 columns: statuses as glyphs, ids and metric names cut in the middle, so the scores
        # column (what moved) stays on screen.
        narrow = self.app.size.width < 100
        for c in sorted(self.changes, key=lambda c: (order.index(change_kind(c)), c.eval_id)):
            kind = change_kind(c)
            kinds[kind] = kinds.get(kind, 0) + 1
            if self.hide_unchanged and kind == "unchanged":
                continue  # a case still failing is still news: u keeps it
            deltas = score_deltas_text(c.score_deltas, kind, name_width=14 if narrow else 0)
            table.add_row(
                Text(kind, style=rich_style(self.app, _KIND_VAR.get(kind, ""), bold=kind == "regression")),
                Text.assemble(cut_middle(literal(c.eval_id), 20) if narrow else literal(c.eval_id),
                              ("  stale", rich_style(self.app, "text-warning")) if c.eval_id in self.stale else ""),
                _status_text(self.app, c.before, glyph_only=narrow), _status_text(self.app, c.after, glyph_only=narrow),
                Text(literal(deltas), style="dim"), key=c.eval_id,
            )
        summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: list(_KIND_VAR).index(kv[0])))
        keys = self.app.keys_in
        if table.row_count == 0 and self.changes:
            hidden = kinds.get("unchanged", 0)
            status = Content.styled(keys(f"{summary}: every case is unchanged, and {{compare.unchanged}} hides the "
                                         f"{hidden} unchanged ({{compare.unchanged}} shows them)."), "$text-warning")
        else:
            hint = " · {compare.unchanged} shows the unchanged" if self.hide_unchanged else ""
            status = Content.styled(keys((summary or "no cases") + ". {compare.open} shows a case in the browser, "
                                         "{compare.turns} its turns in both runs" + hint + "."), "$text-muted")
        warnings = self.warnings()
        if self.stale:
            reasons = ", ".join(dict.fromkeys(r for why in self.stale.values() for r in why))
            warnings.append(f"{len(self.stale)} of the later run's results are stale against the files now "
                            f"({reasons})")
        if warnings:
            status = Content("\n").join([*(Content.styled(f"⚠ {w}", "$text-warning") for w in warnings), status])
        self.query_one("#compare-status", Static).update(status)
        table.focus()

    def warnings(self) -> list[str]:
        """What makes the two runs not like for like: two eval sets (or files), a replay against an agent run."""
        out = []
        before, after = self.before, self.after
        if before.eval_set_id != after.eval_set_id:
            out.append(f"these are runs of two different eval sets ({literal(before.eval_set_id)} and "
                       f"{literal(after.eval_set_id)}): "
                       "cases are matched by id only")
        elif before.eval_file and after.eval_file and Path(before.eval_file).name != Path(after.eval_file).name:
            out.append(f"the runs used different eval files ({literal(Path(before.eval_file).name)} and "
                       f"{literal(Path(after.eval_file).name)})")
        if self.before.replay != self.after.replay:
            which = "earlier" if self.before.replay else "later"
            out.append(f"the {which} run is a replay of recorded turns, the other ran the agent")
        return out

    def show_code_change(self) -> None:
        """Beside the regressions: the commit range and files, or agent files changed (not committed)."""
        # Paths are file names: literal, never markup.
        lines = [Content.assemble(("code: " if i == 0 else "      ", "bold $text-muted"), plain(line))
                 for i, line in enumerate(self.code_lines)]
        if self.diff_path is not None:
            lines.append(Content.assemble(("g", "bold $accent"), (" shows the later run's uncommitted diff", "$text-muted")))
        box = self.query_one("#compare-code", VerticalScroll)
        box.display = bool(lines)
        box.border_title = "Code change"
        self.query_one("#compare-code-text", Static).update(Content("\n").join(lines))
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_diff":
            return self.diff_path is not None  # hidden unless the later run saved a diff
        if action in ("open_turns", "open_case"):
            return self.query_one(DataTable).row_count > 0 or None
        return True

    def cannot_act(self, action: str, parameters: tuple[object, ...]) -> str | None:
        """Why a key of this screen cannot act now (see `check_action`), as a short notice."""
        if action == "open_diff":
            return "The later run saved no uncommitted diff (its agent files were committed, or not in git)."
        if action in ("open_turns", "open_case"):
            return self.app.keys_in("No case in the table: {compare.unchanged} shows the unchanged ones.")
        return None

    def action_open_diff(self) -> None:
        if self.diff_path is not None:
            from .diff import DiffScreen

            self.app.push_screen(DiffScreen(self.diff_path, title=f"Uncommitted diff of the run at {fmt_time(self.after.creation_timestamp)}"))

    def action_toggle_unchanged(self) -> None:
        self.hide_unchanged = not self.hide_unchanged
        self.show_changes()

    def action_open_turns(self) -> None:
        """The highlighted case's turns in the earlier run beside the later one's."""
        from .runs_diff import RunsDiffScreen

        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        eval_id = str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        title = (f"{literal(eval_id)}: {fmt_time(self.before.creation_timestamp)} → "
                 f"{fmt_time(self.after.creation_timestamp)}")
        self.app.push_screen(RunsDiffScreen(self.before.path, self.after.path, eval_id, title))

    def action_open_case(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        eval_id = str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        path = self._eval_file()
        if path is None:
            self.notify("That eval file is no longer loaded.", markup=False)
            return
        self.post_message(JumpTo(self.listing.key(path, eval_id)))

    def _eval_file(self) -> Path | None:
        cat = self.listing
        for path in cat.files:
            state = cat.file_state(path)
            if self.after.eval_file and Path(self.after.eval_file).name == path.name and state and state.eval_set \
                    and state.eval_set.eval_set_id == self.after.eval_set_id:
                return path
        for path in cat.files:
            state = cat.file_state(path)
            if state and state.eval_set and state.eval_set.eval_set_id == self.after.eval_set_id:
                return path
        return None
