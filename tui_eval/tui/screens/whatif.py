"""What if: change a metric's threshold or the trajectory match type and see at once which cases would
flip, re-scored from their stored results (engine/whatif.py: no agent or judge call). The change lasts
until the dashboard closes; `s` writes it to the config files (a minimal diff) after a confirmation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Static

from ..messages import FilesRewritten, JumpTo
from ..text import STATUS_GLYPH, STATUS_VAR, STATUS_WORD, literal, plain, rich_style
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.events import CaseKey
    from ...engine.whatif import Flip, WhatIf
    from ...schema.results import CaseResult
    from ..app import EvalApp
    from ..listing import CaseListing
    from ..readmodel import Changes

log = logging.getLogger(__name__)

STEP = 0.05


@dataclass(slots=True)
class WhatIfState:
    """The session's what-if settings (kept by the main screen until the dashboard closes)."""

    metric: str | None = None
    settings: dict[str, WhatIf] = field(default_factory=dict)


class WhatIfScreen(Screen[None]):
    """One metric's hypothetical threshold / match type, and the cases that would flip."""

    app: EvalApp
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="whatif.back"),
        Binding("m", "next_metric", "Metric", id="whatif.metric"),
        Binding("t", "match_type", "Match type", id="whatif.match_type"),
        Binding("s", "save", "Write", id="whatif.save", tooltip="Write the what-if to the config files"),
        Binding("plus,equals_sign,right_square_bracket", "threshold(1)", "Raise threshold", id="whatif.up"),
        Binding("minus,left_square_bracket", "threshold(-1)", "Lower threshold", id="whatif.down"),
        Binding("backspace", "reset", "Reset", id="whatif.reset", show=False),
        Binding("enter", "open_case", "Show case", id="whatif.show_case", priority=True, show=False),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, listing: CaseListing, state: WhatIfState) -> None:
        super().__init__(id="whatif")
        self.listing = listing
        self.state = state
        self.flips: list[Flip] = []

    def compose(self) -> ComposeResult:
        yield Static(id="whatif-status")
        yield DataTable(id="whatif-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("would", key="would")
        table.add_column("case", key="case")
        table.add_column("eval set", key="set")
        table.add_column("now → then", key="change")
        metrics = self.metrics()
        if self.state.metric not in metrics:
            self.state.metric = metrics[0] if metrics else None
        self.show()
        table.focus()
        # A written what-if shows once the config is re-read; re-scored or stale results as they come.
        self.app.watch_changes(self, self._changed)

    def _changed(self, changes: Changes) -> None:
        if changes.files.configs_changed or changes.dirty:
            self.show()

    # ---- what is shown ---------------------------------------------------------------------------

    def results(self) -> list[tuple[CaseKey, CaseResult]]:
        cat = self.listing
        keys = cat.all_keys()
        found = cat.results.get_many([key for key in keys if key in cat.results])
        return [(key, found[key]) for key in keys if key in found]

    def metrics(self) -> list[str]:
        """Metrics with a threshold that decided some latest result (informational ones never do)."""
        names: dict[str, None] = {}
        for _, result in self.results():
            for m in result.scored_metrics:
                names.setdefault(m.metric_name, None)
        return list(names)

    def current(self) -> WhatIf:
        from ...engine.whatif import WhatIf

        metric = self.state.metric or ""
        return self.state.settings.get(metric) or WhatIf(metric)

    def configured(self) -> tuple[list[float], list[str]]:
        """The thresholds and match types this metric is configured with now: the config files of the
        shown results as the dashboard has them (a written what-if shows as soon as they are re-read);
        for a result no config names (ADK's defaults), what it was scored with."""
        from ...engine.whatif import TRAJECTORY
        from ...schema.details import TrajectoryDetails

        thresholds: dict[float, None] = {}
        types: dict[str, None] = {}
        metric = self.state.metric or ""
        ws = self.listing.workspace
        for key, result in self.results():
            m = result.metric(metric)
            if m is None:
                continue
            state = ws.config_state_for(Path(key.eval_file)) if ws is not None else None
            criterion = state.config.criteria.get(metric) if state is not None and state.config is not None else None
            if criterion is not None:
                thresholds.setdefault(criterion.threshold, None)
                if metric == TRAJECTORY:
                    types.setdefault(criterion.match_type.name, None)
                continue
            thresholds.setdefault(m.threshold, None)
            for inv in m.per_invocation:
                if isinstance(inv.details, TrajectoryDetails):
                    types.setdefault(inv.details.match_type, None)
                    break
        return list(thresholds), list(types)

    def show(self) -> None:
        from ...engine.whatif import flips

        status = self.query_one("#whatif-status", Static)
        table = self.query_one(DataTable)
        table.clear()
        results = self.listing.results
        loading = sum(1 for key in self.listing.all_keys() if results.loading(key))
        if self.state.metric is None:
            metrics = self.metrics()  # results may have arrived since the screen opened
            self.state.metric = metrics[0] if metrics else None
        if self.state.metric is None:
            status.update(Content.styled(f"◌ loading {loading} result(s) from the engine…" if loading else
                                         "No results yet: run something (R) first, or open a folder with saved runs.",
                                         "$text-muted"))
            self.flips = []
            return
        what = self.current()
        self.flips = flips(self.results(), what)
        thresholds, types = self.configured()
        config = ", ".join(f"{t:g}" for t in thresholds) or "-"
        if types:
            config += " " + "/".join(types)
        now = what.describe() if what.active else f"{what.metric}: as configured"
        fail = sum(1 for f in self.flips if not f.would_pass)
        passing = len(self.flips) - fail
        lines = [
            Content.assemble(("What if ", "bold"), plain(now, "bold $accent"), ("  (configured: ", "$text-muted"),
                             plain(config, "$text-muted"), (")", "$text-muted")),
            Content.assemble((f"{fail} would fail", "$text-error" if fail else "$text-muted"), ", ",
                             (f"{passing} would pass", "$text-success" if passing else "$text-muted"),
                             (" (from the stored results; s writes it to the config)", "$text-muted")),
        ]
        if loading:
            lines.append(Content.styled(f"◌ {loading} more result(s) loading from the engine…", "$text-muted"))
        stale = sum(1 for key, _r in self.results() if self.listing.stale_reasons(key))
        if stale:
            lines.append(Content.styled(f"⚠ {stale} of these results are stale (their files changed since they "
                                        "ran): S in the browser re-runs them", "$text-warning"))
        status.update(Content("\n").join(lines))
        for f in self.flips:
            result = self.listing.result(f.key)  # type: ignore[arg-type]
            set_id = result.eval_set_id if result is not None else ""
            word = "pass" if f.would_pass else "fail"
            table.add_row(
                Text(word, style=rich_style(self.app, "success" if f.would_pass else "error", bold=True)),
                Text(literal(f.eval_id)), Text(literal(set_id), style="dim"),
                Text.assemble((f"{STATUS_GLYPH[f.before]} {STATUS_WORD[f.before]}",
                               rich_style(self.app, STATUS_VAR[f.before])), " → ",
                              (f"{STATUS_GLYPH[f.after]} {STATUS_WORD[f.after]}",
                               rich_style(self.app, STATUS_VAR[f.after]))),
                key=str(f.key),
            )
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        from ...engine.whatif import TRAJECTORY

        if action == "match_type":
            return self.state.metric == TRAJECTORY
        if action in ("save", "reset"):
            return self.current().active
        return True

    # ---- actions ---------------------------------------------------------------------------------

    def _set(self, what: WhatIf) -> None:
        if what.active:
            self.state.settings[what.metric] = what
        else:
            self.state.settings.pop(what.metric, None)
        self.show()

    def action_next_metric(self) -> None:
        metrics = self.metrics()
        if not metrics:
            return
        current = self.state.metric
        self.state.metric = metrics[(metrics.index(current) + 1) % len(metrics)] if current in metrics else metrics[0]
        self.show()

    def action_threshold(self, direction: int) -> None:
        from dataclasses import replace

        what = self.current()
        if not what.metric:
            return
        thresholds, _ = self.configured()
        base = what.threshold if what.threshold is not None else (thresholds[0] if thresholds else 0.5)
        new = round(min(1.0, max(0.0, base + direction * STEP)), 4)
        self._set(replace(what, threshold=None if len(thresholds) == 1 and new == thresholds[0] else new))

    def action_match_type(self) -> None:
        from dataclasses import replace

        from ...engine.whatif import next_match_type

        what = self.current()
        _, types = self.configured()
        configured = types[0] if types else "EXACT"
        new = next_match_type(what.match_type, configured)  # type: ignore[arg-type]
        self._set(replace(what, match_type=None if new == configured and len(types) <= 1 else new))

    def action_reset(self) -> None:
        from ...engine.whatif import WhatIf

        self._set(WhatIf(self.current().metric))

    def action_open_case(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        key_text = str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        flip = next((f for f in self.flips if str(f.key) == key_text), None)
        if flip is not None:
            self.post_message(JumpTo(flip.key))  # type: ignore[arg-type]

    def config_files(self) -> list[Path]:
        """The config files the shown results of this metric were scored with (eval files' test_config.json)."""
        ws = self.listing.workspace
        if ws is None:
            return []
        files: dict[Path, None] = {}
        for key, result in self.results():
            if result.metric(self.state.metric or "") is None:
                continue
            state = ws.config_state_for(Path(key.eval_file))
            if state is not None and state.config is not None and self.state.metric in state.config.criteria:
                files.setdefault(state.path, None)
        return list(files)

    def action_save(self) -> None:
        from .confirm import ConfirmScreen

        what = self.current()
        files = self.config_files()
        if not what.active:
            return
        if not files:
            self.notify("No config file names this metric: the results used defaults or another config.",
                        severity="warning", markup=False)
            return
        body = Content("\n").join([
            Content.assemble("Write ", plain(what.describe(), "bold"), " to:"),
            *(plain("  " + self.listing.relpath(p)) for p in files),
            Content.styled("Only that value changes in each file.", "$text-muted"),
        ])

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(lambda: self._write(files, what), thread=True, group="whatif-save",
                                exit_on_error=False)

        self.app.push_screen(ConfirmScreen("Write the what-if to the config?", body), answered)

    def _write(self, files: list[Path], what: WhatIf) -> None:
        from ...schema.edits import EditError, set_criterion

        written, failed = [], []
        for path in files:
            try:
                set_criterion(path, what.metric, threshold=what.threshold, match_type=what.match_type)
                written.append(path)
            except EditError as exc:
                failed.append(str(exc))
        if written:
            self.post_message(FilesRewritten(tuple(written)))
        self.app.call_from_thread(self._written, what, written, failed)

    def _written(self, what: WhatIf, written: list[Path], failed: list[str]) -> None:
        for message in failed:
            self.notify(message, severity="error", markup=False)
        if written:
            self.state.settings.pop(what.metric, None)
            after = ("live mode re-scores the results with it" if self.app.live
                     else "the results scored before are marked stale: S re-runs them")
            self.notify(f"Wrote {what.describe()} to {len(written)} config file(s): {after}.", markup=False)
        self.show()
