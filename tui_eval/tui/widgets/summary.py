"""The summary pane beside the browser: what the highlighted eval file, case or turn is and how it did."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from ..text import one_line, plain, status_content
from .browser import CaseEntry, Entry, MoreEntry, SetEntry, TurnEntry
from .marks import cost_text, latency_rows, marks, tokens_text
from .trends import CaseTrends

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.usage import TokenUsage
    from ...schema.model import Invocation
    from ...schema.results import CaseResult
    from ..listing import CaseListing


def joined(lines: list[Content]) -> Content:
    return Content("\n").join(lines)


def _title(kind: str, name: str) -> Content:
    return Content.assemble((f"{kind} ", "$text-muted"), (name, "bold"))


def _hint(text: str) -> Content:
    return Content.styled(text, "$text-muted italic")


class Summary(Static):
    """Renders one browser entry; `show(entry)` redraws it from the listing."""

    def __init__(self, listing: CaseListing, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.listing = listing
        self.entry: Entry = None
        self._height = self._width = -1
        self._trends: CaseTrends | None = None

    def on_mount(self) -> None:
        # The trend sparklines are widgets, not text: they sit right under this pane in its scroll view.
        parent = self.parent
        if isinstance(parent, Widget):
            self._trends = CaseTrends(self.listing, id="case-trends")
            parent.mount(self._trends, after=self)

    def show(self, entry: Entry) -> None:
        self.entry = entry
        self._update(self.render_entry(entry))
        if self._trends is not None and self._trends.is_mounted:
            self._trends.show(entry)

    def refresh_entry(self) -> None:
        self._update(self.render_entry(self.entry))
        if self._trends is not None and self._trends.is_mounted:
            self._trends.refresh_if_stale()

    def _update(self, content: Content) -> None:
        """Update, with a layout pass only when the height changes (a layout costs more than the
        repaint, and moving between similar cases seldom changes the height)."""
        width = self.content_region.width
        # RenderStyles reads like the RulesMap the signature names; Textual's Widget passes it the same way.
        height = content.get_height(self.styles, width) if width > 0 else -1  # type: ignore[arg-type]
        same = height >= 0 and height == self._height and width == self._width
        self._height, self._width = height, width
        self.update(content, layout=not same)

    def render_entry(self, entry: Entry) -> Content:
        if isinstance(entry, SetEntry):
            return self._set(entry.path)
        if isinstance(entry, CaseEntry):
            return self._case(entry)
        if isinstance(entry, TurnEntry):
            return self._turn(entry)
        if isinstance(entry, MoreEntry):
            return _hint(f"{entry.total - entry.start:,} more cases of {self.listing.relpath(entry.path)}: enter shows "
                         "the next page; / searches and f shows failures only.")
        if not self.listing.loaded:
            return _hint("Looking for agents, eval files and configs…")
        if self.listing.filter.active and self.listing.files:
            # The folder has eval files: the filter hides them all, which is not "no eval files".
            return _hint(f"No case matches ({self.listing.filter.describe()}). esc clears the filter.")
        return _hint("No eval files found below this folder (*.evalset.json, *.test.json).")

    # ---- an eval file ----------------------------------------------------------------------

    def _set(self, path: Path) -> Content:
        cat = self.listing
        state = cat.file_state(path)
        lines: list[Content] = [_title("Eval set", one_line(state.eval_set.eval_set_id if state and state.eval_set else path.name, 60))]
        lines.append(plain(cat.relpath(path), "$text-muted"))
        if state is not None and state.error is not None:
            lines.append(plain(f"⚠ {cat.error_text(state.error)}", "$text-error"))
            if state.eval_set is not None:
                lines.append(_hint("The file is broken; showing its last good version."))
        if state is not None and state.eval_set is not None:
            es = state.eval_set
            if es.name and es.name != es.eval_set_id:
                lines.append(plain(es.name))
            if es.description:
                lines.append(plain(es.description, "italic"))
            counts = cat.counts(path)
            lines.append(Content.assemble(
                f"{len(es.eval_cases)} cases  ",
                (f"✔ {counts[1]}  ", "$text-success"), (f"✘ {counts[2]}  ", "$text-error"),
                (f"– {counts[3]}  ", "$text-warning"), (f"· {counts[None]} no result", "$text-muted"),
            ))
            if state.legacy:
                lines.append(_hint("Legacy .test.json format (tui-eval migrate converts it)."))
        lines.append(Content(""))
        lines.extend(self._config_lines(path))
        ws = cat.workspace
        agent = ws.agent_for(path) if ws is not None else None
        lines.append(Content.assemble(("agent ", "$text-muted"), plain(cat.display_agent(agent))))
        lines.append(Content(""))
        lines.append(_hint("r runs this file · enter expands · / searches"))
        return joined(lines)

    def _config_lines(self, path: Path) -> list[Content]:
        ws = self.listing.workspace
        if ws is None:
            return []
        cstate = ws.config_state_for(path)
        lines = [Content.assemble(("config ", "$text-muted"),
                                  plain(self.listing.relpath(cstate.path) if cstate else "defaults (no test_config.json)"))]
        if cstate is not None and cstate.error is not None:
            lines.append(plain(f"⚠ {self.listing.error_text(cstate.error)}", "$text-error"))
        if cstate is not None and cstate.config is None and cstate.error is not None:
            return lines  # a broken config with no good version: the error is shown above
        config = ws.config_for(path)
        for name, crit in config.criteria.items():
            extra = ""
            if name == "tool_trajectory_avg_score":
                extra = f" {crit.match_type.name}" + (" ignore_args" if crit.ignore_args else "")
            lines.append(plain(f"  {name} ≥ {crit.threshold:g}{extra}"))
        for warning in config.warnings:
            lines.append(plain(f"  ⚠ {warning}", "$text-warning"))
        return lines

    # ---- a case ----------------------------------------------------------------------------

    def _case(self, entry: CaseEntry) -> Content:
        cat = self.listing
        key = entry.key
        case = cat.case(key)
        result = cat.result(key)
        lines: list[Content] = [_title("Case", one_line(key.eval_id, 60))]
        turns = len(case.conversation or []) if case is not None else 0
        kind = "scenario" if case is not None and case.is_scenario else f"{turns} turn(s)"
        lines.append(plain(f"{cat.relpath(Path(key.eval_file))} · {kind}", "$text-muted"))
        if case is not None and case.conversation_scenario is not None:
            lines.append(Content.assemble(("starting prompt ", "$text-muted"),
                                          plain(one_line(case.conversation_scenario.starting_prompt, 200))))
        lines.append(Content(""))
        if key in cat.running:
            lines.append(Content.styled("◌ running…", "$text-accent"))
        if result is None and cat.results.loading(key):
            lines.append(Content.styled("◌ loading this result from the engine…", "$text-muted"))
        elif result is None:
            lines.append(_hint("No result yet: r runs this case."))
        else:
            from ..verdicts import case_metric_lines, evaluated_note

            note = evaluated_note(result)
            status = Content.assemble(status_content(result.status, word=True),
                                      (f" · {note}", "$text-warning") if note else "")
            origin = f"   {cat.origin_text(key)}"
            if status.cell_length + len(origin) > self.content_region.width > 0:
                # At 80x24 the date and age would wrap and push a metric line off the pane.
                origin = f"   {cat.origin_text(key, short=True)}"
            lines.append(Content.assemble(status, (origin, "$text-muted")))
            stale = cat.stale_reasons(key)
            if stale:
                lines.append(Content.styled(f"⚠ stale: {', '.join(stale)} since it ran; r runs it again, "
                                            "S every stale case", "$text-warning"))
            runs = cat.run_book.statuses_of(key)
            if runs:  # this session's --num-runs repetitions, right under the latest one's status
                lines.append(Content.assemble(("runs  ", "$text-muted"), marks(runs)))

            # ◂ marks the metric whose score is the number beside the case in the tree.
            marked = cat.score_metric(key)
            lines.extend(case_metric_lines(result, marked=marked.name if marked is not None else None))
            from ..reviews import human_lines

            lines.extend(human_lines(cat, key))
            lines.append(Content(""))
            n = max(turns, len(result.actual))
            chips: list[Content | str] = [Content.styled("turns ", "$text-muted")]
            for i in range(n):
                chips.extend([f"{i + 1}", status_content(cat.turn_status(key, i)), " "])
            lines.append(Content.assemble(*chips))
            lines.extend(self._insight_lines(result))
            expected_state = case.final_session_state if case is not None else None
            if expected_state or result.final_session_state:
                from .trajectory import state_lines

                lines.append(Content.styled("session state", "$text-muted"))
                lines.extend(state_lines(expected_state, result.final_session_state, max(30, self.size.width - 2)))
        lines.append(Content(""))
        lines.append(_hint("enter lists turns · r runs · a accepts the run as expected · d deletes"))
        return joined(lines)

    def _insight_lines(self, result: CaseResult) -> list[Content]:
        """The case's tokens and estimated cost, and its per-tool count, pass/fail, mean and p95 latency."""
        from ...engine.trends import case_tool_latency, case_usage

        lines = self._usage_line(case_usage(result))
        tools = case_tool_latency(result)
        if tools:
            lines.extend(latency_rows(tools))
        return lines

    def _turn_usage(self, actual: Invocation) -> list[Content]:
        """The turn's tokens and estimated cost (agent model calls recorded in its events)."""
        from ...engine.trends import usage_by_model

        return self._usage_line(usage_by_model([actual]))

    def _usage_line(self, per_model: dict[str, TokenUsage]) -> list[Content]:
        """`agent 1,234 tok (…) · est. $0.0012` for some tokens per model (none without tokens), priced as
        the run panel prices them."""
        if not per_model:
            return []
        from ...engine.pricing import UsageKey, estimate_cost
        from ...schema.usage import TokenUsage

        prices = self.listing.run_book.price_table()
        cost = estimate_cost({UsageKey("agent", m): u for m, u in per_model.items()}, prices)
        total = TokenUsage.total(per_model.values())
        return [Content.styled(f"agent {tokens_text(total)} · {cost_text(cost)}", "$text-muted")]

    # ---- a turn ----------------------------------------------------------------------------

    def _turn(self, entry: TurnEntry) -> Content:
        cat = self.listing
        key, i = entry.key, entry.index
        case = cat.case(key)
        result = cat.result(key)
        expected = case.conversation[i] if case is not None and case.conversation and i < len(case.conversation) else None
        actual = result.actual[i] if result is not None and i < len(result.actual) else None
        lines: list[Content] = [_title(f"Turn {i + 1} of", one_line(key.eval_id, 50))]
        shown = expected or actual
        user = shown.user_content.text if shown is not None else ""
        lines.append(Content.assemble(("user ", "$text-muted"), plain(one_line(user, 300))))
        if expected is not None:
            lines.append(Content.assemble(("expected ", "$text-muted"),
                                          plain(one_line(expected.final_response.text if expected.final_response else "", 300))))
        if actual is not None:
            lines.append(Content.assemble(("actual ", "$text-muted"),
                                          plain(one_line(actual.final_response.text if actual.final_response else "", 300))))
        lines.append(Content(""))
        if result is not None:
            from ..verdicts import turn_metric_lines

            lines.extend(turn_metric_lines(result, i))
            if actual is not None and actual.duration is not None:
                lines.append(plain(f"took {actual.duration:.2f} s", "$text-muted"))
            if actual is not None:
                lines.extend(self._turn_usage(actual))
        else:
            lines.append(_hint("No result yet: r runs this case."))
        lines.append(Content(""))
        lines.append(_hint("enter opens the turn: diffs, trajectory, judge verdicts"))
        return joined(lines)

