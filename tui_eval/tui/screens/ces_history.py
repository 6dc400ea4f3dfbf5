"""A CES case's last ten results (`lastTenResults`): one line each (time, pass/fail, scores); the
highlighted one is shown in full below."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...schema.ces.caseview import CesResults, results_of
from ...schema.ces.model import EvaluationResult
from ..text import plain
from ..widgets.ces_result import CesResultView, outcome_chip
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.events import CaseKey
    from ..app import EvalApp
    from ..listing import CaseListing


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def scores_text(result: EvaluationResult) -> str:
    """The scores of a result in a few words: semantic similarity and tool invocation (golden), task
    completion and user goal (scenario)."""
    parts: list[str] = []
    golden = result.golden_result
    if golden is not None:
        turns = golden.turn_replay_results or []
        sims = [float(t.semantic_similarity_result.score) for t in turns
                if t.semantic_similarity_result is not None and t.semantic_similarity_result.score is not None]
        tools = [t.overall_tool_invocation_result.tool_invocation_score if t.overall_tool_invocation_result
                 is not None else t.tool_invocation_score for t in turns]
        tool_scores = [float(x) for x in tools if x is not None]
        sim = _mean(sims)
        tool = _mean(tool_scores)
        if sim is not None:
            parts.append(f"similarity {sim:.1f}/4")
        if tool is not None:
            parts.append(f"tools {tool:.2f}")
    scenario = result.scenario_result
    if scenario is not None:
        if scenario.task_completion_result is not None and scenario.task_completion_result.score is not None:
            parts.append(f"task {scenario.task_completion_result.score}")
        if scenario.user_goal_satisfaction_result is not None and scenario.user_goal_satisfaction_result.score is not None:
            parts.append(f"user goal {scenario.user_goal_satisfaction_result.score}")
    return "  ".join(parts)


def history_line(result: EvaluationResult) -> Content:
    status = result.evaluation_status or result.execution_state
    return Content.assemble(
        outcome_chip(status), "  ", plain(result.create_time or "time unknown"),
        plain(f"  {scores_text(result)}", "$text-muted"),
    )


class CesHistoryScreen(Screen[None]):
    """The last ten CES results of one case; enter (or moving) shows one in full."""

    app: EvalApp

    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="ces_history.back"),
    ]

    def __init__(self, listing: CaseListing, key: CaseKey) -> None:
        super().__init__(id="ces-history")
        self.listing = listing
        self.key = key
        self.results: CesResults | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="ces-history-title")
        yield OptionList(id="ces-history-list")
        with VerticalScroll(id="ces-history-body"):
            yield CesResultView(id="ces-history-result")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.app.watch_changes(self, lambda changes: self.refresh_keys(changes.dirty))
        self.query_one("#ces-history-list").border_title = "CES results, newest first"
        self.query_one("#ces-history-body").border_title = "Result"
        self.render_history()
        self.query_one(OptionList).focus()

    def render_history(self) -> None:
        case = self.listing.case(self.key)
        self.results = results_of(case.model_extra if case is not None else None)
        shown = self.results.all() if self.results is not None else []
        title = Content.assemble(("CES history › ", "$text-muted"), plain(self.key.eval_id, "bold"),
                                 (f"  {len(shown)} result(s)", "$text-muted"))
        self.query_one("#ces-history-title", Static).update(title)
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(history_line(r), id=str(i)) for i, r in enumerate(shown)])
        view = self.query_one(CesResultView)
        if shown:
            options.highlighted = 0
            view.show(shown[0])
        else:
            view.show(None, empty="no CES results: run it in CES (C in the browser), then they are pulled")

    def refresh_keys(self, keys: set[CaseKey]) -> None:
        if self.key in keys:
            self.render_history()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        shown = self.results.all() if self.results is not None else []
        index = event.option_index
        if 0 <= index < len(shown):
            self.query_one(CesResultView).show(shown[index])
            self.query_one("#ces-history-body", VerticalScroll).scroll_home(animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#ces-history-body", VerticalScroll).focus()
