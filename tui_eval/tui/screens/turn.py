"""The turn view: the user message, response word diff, trajectory diff and every judge's verdict on one turn."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from ...schema.details import HallucinationDetails, JudgeDetails, RubricDetails, SimulatorTurnDetails
from ..listing import turn_status_of
from ..messages import (
    CaseEditRequested,
    CesRunRequested,
    EditKind,
    EditRequested,
    OpenCesHistory,
    RunRequested,
    UndoRequested,
    VerdictRequested,
)
from ..text import clip, one_line, plain, status_content, word_diff
from ..verdicts import (
    MATCH_TYPES,
    configured_match_type,
    details_of,
    hallucination_blocks,
    joined,
    legend,
    not_evaluated_lines,
    rubric_lines,
    sentence_detail,
    stored_trajectory,
    turn_metric_lines,
    vote_lines,
)
from ..widgets.ces_panel import CesTurnPanel
from ..widgets.footer import KeyFooter
from ..widgets.marks import marks
from ..widgets.trajectory import TrajectoryDiff
from .diff import NOT_SAVED, DiffScreen, RunDiff, find_run_diff

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.workspace import Workspace
    from ...engine.events import CaseKey
    from ...schema.details import Alignment
    from ...schema.model import Invocation
    from ...schema.results import CaseResult
    from ..app import EvalApp
    from ..listing import CaseListing

def _saved_run_diff(workspace: Workspace, eval_file: Path, saved_at: float) -> RunDiff:
    """The diff of the saved run a loaded result came from: its record is the eval file's history entry
    saved at `saved_at` (worker thread: listing reads the folder's records)."""
    from ...engine.store import list_history
    from ..loader import history_dir_for

    entries = [e for e in list_history(history_dir_for(workspace, eval_file))
               if e.creation_timestamp == saved_at]
    return find_run_diff([e.path for e in entries], str(eval_file))


class TurnScreen(Screen[None]):
    """Everything known about one turn of one case."""

    CSS_PATH = "../turn.tcss"

    app: EvalApp
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="turn.back"),
        Binding("n", "step(1)", "Next turn", id="turn.next"),
        Binding("p", "step(-1)", "Prev turn", id="turn.prev"),
        Binding("m", "cycle_match_type", "Match type", id="turn.match_type"),
        Binding("s", "sentence(1)", "Next sentence", id="turn.sentence_next"),
        Binding("S", "sentence(-1)", "Prev sentence", show=False, id="turn.sentence_prev"),
        Binding("a", "accept_turn", "Accept turn", id="edit.accept_turn"),
        Binding("A", "accept_case", "Accept case", show=False, id="edit.accept_case"),
        Binding("d", "delete_turn", "Delete turn", show=False, id="edit.delete_turn"),
        Binding("D", "delete_case", "Delete case", show=False, id="edit.delete_case"),
        Binding("r", "rerun", "Re-run case", show=False, id="turn.rerun"),
        Binding("k", "cycle_repetition", "Run k of N", id="turn.repetition"),
        Binding("c", "ces_history", "CES history", id="turn.ces_history"),
        Binding("C", "ces_run", "Run in CES", show=False, id="turn.ces_run"),
        Binding("g", "code_diff", "Code diff", show=False, id="turn.diff"),
        # Shown when a text of the turn is too long to lay out at once (it is cut): the whole of it.
        Binding("v", "full_text", "Whole text", id="turn.full_text"),
        Binding("y", "copy", "Copy as JSON", show=False, id="turn.copy"),
        Binding("e", "toggle_trace", "Event trace", show=False, id="turn.trace"),
        Binding("E", "edit_case", "Edit case (JSON)", show=False, id="turn.in_editor"),
        Binding("z", "undo", "Undo last edit", show=False, id="turn.undo"),
        Binding("V", "verdict", "Your verdict (pass/fail)", show=False, id="turn.verdict"),
    ]

    def __init__(self, listing: CaseListing, key: CaseKey, index: int) -> None:
        super().__init__(id="turn")
        self.listing = listing
        self.key = key
        self.index = index
        self.match_type: str | None = None
        self.sentence = 0
        self._alignments: dict[str, Alignment] = {}
        #: Which repetition of a --num-runs run is shown (1-based); None: the latest result.
        self.repetition: int | None = None
        #: The turn's texts cut for the screen, (title, whole text) each: v shows them in full.
        self._clipped: list[tuple[str, str]] = []
        #: The event trace is folded until e unfolds it.
        self.show_trace = False

    def compose(self) -> ComposeResult:
        yield Static(id="turn-title")
        with VerticalScroll(id="turn-body"):
            yield Static("User", classes="section-title")
            yield Static(id="turn-user", classes="section")
            yield Static("Response", classes="section-title")
            yield Static(id="turn-response", classes="section")
            yield Static("Tool trajectory", classes="section-title", id="trajectory-title")
            yield TrajectoryDiff(id="trajectory")
            # The calls made inside tool calls (an AgentTool's agent): the tree, and its metric's diff.
            yield Static("Call tree", classes="section-title", id="tree-title")
            yield Static(id="turn-tree", classes="section")
            yield Static("Deep trajectory (deep_tool_trajectory_v1)", classes="section-title", id="deep-title")
            yield TrajectoryDiff(id="deep-trajectory")
            yield Static("Time", classes="section-title", id="time-title")
            yield Static(id="turn-time", classes="section")
            yield Static("Session state", classes="section-title", id="state-title")
            yield Static(id="turn-state", classes="section")
            yield Static("Hallucinations", classes="section-title", id="hallucinations-title")
            yield Static(id="turn-hallucinations", classes="section")
            yield Static("Judges", classes="section-title", id="judges-title")
            yield Static(id="turn-judges", classes="section")
            yield Static("Not evaluated and errors", classes="section-title", id="problems-title")
            yield Static(id="turn-problems", classes="section")
            # Below the verdicts: what the tools returned and the agent's whole turn (folded).
            yield Static("Tool responses", classes="section-title", id="responses-title")
            yield Static(id="turn-responses", classes="section")
            yield Static("Event trace", classes="section-title", id="trace-title")
            yield Static(id="turn-trace", classes="section")
            yield CesTurnPanel(id="turn-ces")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.app.watch_changes(self, lambda changes: self.refresh_keys(changes.dirty))
        self.query_one("#turn-body").border_title = "Turn"
        self.render_turn()
        self.query_one("#turn-body").focus()

    # ---- data --------------------------------------------------------------------------------

    def _turns(self) -> tuple[Invocation | None, Invocation | None, int]:
        cat = self.listing
        case = cat.case(self.key)
        result = self._result()
        # The expected turns as the file has them now (an accepted turn shows its new text at once); the
        # result's own copy only when the file has none (a scenario, a case no longer in the file).
        expected_list = (case.conversation if case is not None else None) or (
            result.expected if result is not None and result.expected is not None else None) or []
        actual_list = result.actual if result is not None else []
        i = self.index
        expected = expected_list[i] if i < len(expected_list) else None
        actual = actual_list[i] if i < len(actual_list) else None
        return expected, actual, max(len(expected_list), len(actual_list))

    def _result(self) -> CaseResult | None:
        """The result shown: the picked repetition of this session's run (k), else the latest."""
        return self.listing.result_of_run(self.key, self.repetition)[0]

    def show(self, key: CaseKey, index: int) -> None:
        """Show another turn in this screen."""
        if key != self.key:
            self.repetition = None
        self.key, self.index, self.sentence, self.match_type = key, index, 0, None
        self.render_turn()
        self.query_one("#turn-body", VerticalScroll).scroll_home(animate=False)

    def refresh_keys(self, keys: set[CaseKey]) -> None:
        if self.key in keys:
            # A deleted turn may have been the last one: stay on a turn that exists.
            _e, _a, n = self._turns()
            self.index = max(0, min(self.index, n - 1))
            self.render_turn()

    # ---- rendering ---------------------------------------------------------------------------

    def render_turn(self) -> None:
        cat = self.listing
        result = self._result()
        case = cat.case(self.key)
        expected, actual, n = self._turns()
        status = turn_status_of(result, self.index, cat.filter.metric)
        head = Content.assemble(
            plain(cat.set_label(Path(self.key.eval_file)), "$text-muted"), (" › ", "$text-muted"),
            plain(self.key.eval_id, "bold"), (f" › turn {self.index + 1}/{max(n, 1)}  ", "bold"),
            status_content(status, word=True),
        )
        origin = (f"   {cat.origin_text(self.key)}" if result is not None
                  else "   ◌ loading the result from the engine…" if cat.results.loading(self.key)
                  else "   no result yet: r runs the case")
        if result is not None and head.cell_length + len(origin) > (self.size.width or self.app.size.width):
            # At 80 columns the date and age wrapped onto a second line: the age alone fits.
            origin = f"   {cat.origin_text(self.key, short=True)}"
        title = Content.assemble(head, (origin, "$text-muted"))
        runs = cat.run_book.statuses_of(self.key)
        if runs:
            shown_rep = cat.result_of_run(self.key, self.repetition)[1] or len(runs)
            title = Content.assemble(title, "\n", (f"run {shown_rep} of {len(runs)}  ", "bold"),
                                     marks(runs, current=shown_rep), ("   k: next run", "$text-muted"))
        self.query_one("#turn-title", Static).update(title)

        had_clipped = bool(self._clipped)
        self._clipped = []

        def cut(title: str, text: str) -> str:
            head, was_cut = clip(text)
            if was_cut:
                self._clipped.append((title, text))
            return head

        shown = expected or actual
        user = cut("user", shown.user_content.text if shown is not None else "")
        self.query_one("#turn-user", Static).update(plain(user))

        # Response: the word diff, then the metrics that judge this turn.
        exp_text = cut("expected", expected.final_response.text if expected is not None and expected.final_response else "")
        act_text = cut("actual", actual.final_response.text if actual is not None and actual.final_response else "")
        lines: list[Content] = []
        if expected is None and actual is not None:
            # A scenario turn: the user simulator wrote the message; there is no reference to diff.
            lines += [Content.styled("expected", "bold $text-muted"),
                      Content.styled("none: a scenario case has no reference turns", "$text-muted italic"),
                      Content.styled("actual", "bold $text-muted"), plain(act_text)]
        elif actual is None:
            lines += [Content.styled("expected", "bold $text-muted"), plain(exp_text)]
        else:
            left, right = word_diff(exp_text, act_text)
            lines += [Content.styled("expected", "bold $text-muted"), left,
                      Content.styled("actual", "bold $text-muted"), right]
            for author, text in actual.intermediate_texts:
                lines.append(Content.assemble((f"intermediate ({one_line(author, 30)}) ", "$text-muted"),
                                              plain(cut(f"intermediate ({one_line(author, 30)})", text))))
        if self._clipped:
            sizes = ", ".join(f"{title} {len(text):,}" for title, text in self._clipped)
            lines.append(Content.styled(f"… cut for the screen ({sizes} characters): v shows the whole text",
                                        "$text-warning"))
        stale = self._stale(result, expected)
        if stale:
            reasons = self.listing.stale_reasons(self.key) or ("eval case changed",)
            lines.append(Content.styled(f"⚠ stale: {', '.join(reasons)} since this result was computed; r runs "
                                        "the case again", "$text-warning"))
        if result is not None:
            lines.append(Content(""))
            lines.extend(turn_metric_lines(result, self.index))
        self.query_one("#turn-response", Static).update(joined(lines))

        self._render_trajectory(result, expected, actual, stale=stale)
        self._render_deep(result, case, expected, actual)
        self._render_responses(expected, actual)
        self._render_hallucinations(result, actual)
        self._render_judges(result, case, expected)
        problems = not_evaluated_lines(result, self.index) if result is not None else []
        if result is not None and result.error:
            problems.insert(0, plain(f"agent error: {result.error}", "$text-error"))
        self._section("problems", joined(problems) if problems else None)
        ces = self.query_one(CesTurnPanel)
        had_ces = ces.display
        ces.show_case(case.model_extra if case is not None else None, self.index,
                      scenario=case is not None and case.conversation_scenario is not None)
        if ces.display != had_ces or had_clipped != bool(self._clipped):
            self.refresh_bindings()  # the CES history and whole-text keys come and go

    def _section(self, name: str, content: Content | None) -> None:
        body = self.query_one(f"#turn-{name}", Static)
        title = self.query_one(f"#{name}-title", Static)
        body.update(content or Content(""))
        hidden = content is None
        body.set_class(hidden, "-hidden")
        title.set_class(hidden, "-hidden")

    def _render_responses(self, expected: Invocation | None, actual: Invocation | None) -> None:
        """What each tool returned (expected and actual), and the agent's whole turn folded under e."""
        from ..verdicts import event_trace_lines, tool_response_lines

        recorded = any(inv is not None and inv.tool_responses for inv in (expected, actual))
        exp, act = (tool_response_lines(expected), tool_response_lines(actual)) if recorded else ([], [])
        lines: list[Content] = []
        if exp:
            lines += [Content.styled("expected", "bold $text-muted"), *exp]
        if act:
            lines += [Content.styled("actual", "bold $text-muted"), *act]
        self._section("responses", joined(lines) if lines else None)  # only when some tool answered
        trace = event_trace_lines(actual)
        if not trace:
            self._section("trace", None)
        elif not self.show_trace:
            self._section("trace", Content.styled(f"{len(trace)} step(s), folded: e shows them", "$text-muted"))
        else:
            self._section("trace", joined(trace))

    def action_toggle_trace(self) -> None:
        self.show_trace = not self.show_trace
        self.render_turn()

    def _stale(self, result: CaseResult | None, expected: Invocation | None) -> bool:
        """Whether the shown result was scored against other expected turns than the file's (accepted)."""
        if result is None or expected is None:
            return False
        if self.listing.stale_reasons(self.key):
            return True
        old = result.expected
        if old is None or self.index >= len(old):
            return False
        return old[self.index] is not expected and old[self.index].to_dict() != expected.to_dict()

    def _render_trajectory(self, result: Any, expected: Invocation | None, actual: Invocation | None,
                           *, stale: bool = False) -> None:
        traj = self.query_one(TrajectoryDiff)
        # --mock-tools: say which calls were answered from the recorded responses (no tool ran).
        mocked = list(dict.fromkeys(t.name for t in actual.tool_timings if t.mocked)) if actual is not None else []
        self.query_one("#trajectory-title", Static).update(
            Content.assemble("Tool trajectory", (f"  mocked: {', '.join(mocked)} (recorded responses)", "$text-warning"))
            if mocked else Content("Tool trajectory"))
        exp_calls = expected.tool_calls if expected is not None else []
        act_calls = actual.tool_calls if actual is not None else []
        if expected is None and actual is not None:
            traj.show_calls(act_calls)
            return
        if stale:
            # The stored verdicts judged the old expected calls: list the file's calls without them.
            traj.show_unjudged(exp_calls, act_calls, head="stale: the expected calls changed since this "
                                                          "result; r runs the case again")
            return
        # What the metric stored, under every match type: read, never recomputed.
        stored = stored_trajectory(result, self.index)
        configured, ignore_args = configured_match_type(result, stored)
        self._alignments = {name: a for name, a in stored.alignments().items()} if stored is not None else {}
        shown = self.match_type or configured
        if not self._alignments:
            # Not judged yet: list the calls without a verdict.
            traj.show_unjudged(exp_calls, act_calls)
            return
        traj.show(self._alignments, shown, configured, exp_calls, act_calls, ignore_args)

    def _render_deep(self, result: CaseResult | None, case: Any, expected: Invocation | None,
                     actual: Invocation | None) -> None:
        """The call tree and the turn's time (when it made calls inside tool calls / was timed), the
        deep trajectory diff (when its metric judged the turn), the session state (on the last turn)."""
        from ...schema.calls import attributed
        from ...schema.criteria import DEEP_TRAJECTORY as DEEP
        from ...schema.details import TrajectoryDetails
        from ..widgets.trajectory import state_lines, tree_lines, waterfall_lines

        width = max(40, (self.size.width or self.app.size.width) - 6)
        self._section("tree", joined(tree_lines(actual, width)) if actual is not None and actual.nested_calls else None)
        time = waterfall_lines(actual, width) if actual is not None else []
        self._section("time", joined(time) if time else None)
        deep = self.query_one("#deep-trajectory", TrajectoryDiff)
        metric = result.metric(DEEP) if result is not None else None
        turn = metric.turn(self.index) if metric is not None else None
        stored = turn.details if turn is not None and isinstance(turn.details, TrajectoryDetails) else None
        if stored is None or actual is None:
            deep.display = False
            self.query_one("#deep-title", Static).set_class(True, "-hidden")
        else:
            deep.display = True
            self.query_one("#deep-title", Static).set_class(False, "-hidden")
            table = case.expected_nested_calls if case is not None else None
            wanted = (table or {}).get(expected.invocation_id or f"#{self.index + 1}", []) if expected is not None else []
            alignments: dict[str, Alignment] = {name: a for name, a in stored.alignments().items()}
            shown = self.match_type if self.match_type in alignments else stored.match_type
            deep.show(alignments, shown, stored.match_type, [attributed(c.agent, c.name, c.args) for c in wanted],
                      [attributed(c.agent or "", c.name, c.arguments) for c in actual.nested_calls], stored.ignore_args)
        # The state the case left: shown on its last turn, as the case summary shows it.
        expected_state = case.final_session_state if case is not None else None
        actual_state = result.final_session_state if result is not None else None
        last = result is not None and self.index == len(result.actual) - 1
        if last and (expected_state or actual_state):
            self._section("state", joined(state_lines(expected_state, actual_state, width)))
        else:
            self._section("state", None)

    def _render_hallucinations(self, result: Any, actual: Invocation | None) -> None:
        found = details_of(result, self.index, HallucinationDetails) if result is not None else []
        inv = found[0][1] if found else None
        details = inv.details if inv is not None else None
        if inv is None or not isinstance(details, HallucinationDetails) or (not details.sentences and inv.reason is None):
            self._section("hallucinations", None)
            return
        sentences = details.sentences
        if not sentences:
            self._section("hallucinations", plain(inv.reason or "no sentences", "$text-warning"))
            return
        self.sentence = max(0, min(self.sentence, len(sentences) - 1))
        # Labelled on the text the response section shows (a cut text keeps the labels that fall in it).
        text = clip(actual.final_response.text if actual is not None and actual.final_response else "")[0]
        lines = [Content.assemble(status_chip_text(inv), legend())]
        lines.extend(hallucination_blocks(details, text, self.sentence))
        lines.append(Content(""))
        lines.extend(sentence_detail(self.sentence, len(sentences), sentences[self.sentence]))
        lines.append(Content.styled("s / S: next / previous sentence", "$text-muted italic"))
        self._section("hallucinations", joined(lines))

    def _render_judges(self, result: Any, case: Any, expected: Invocation | None) -> None:
        if result is None:
            self._section("judges", None)
            return
        lines: list[Content] = []
        for metric, inv in details_of(result, self.index, RubricDetails):
            assert isinstance(inv.details, RubricDetails)
            verdicts = rubric_lines(inv.details)
            if verdicts:
                lines.append(Content.assemble((metric.metric_name, "bold"), (f"  score {inv.score:.2f}" if inv.score is not None else "", "$text-muted")))
                lines.extend(verdicts)
        for metric, inv in details_of(result, self.index, (JudgeDetails, SimulatorTurnDetails)):
            lines.extend(vote_lines(metric.metric_name, inv))
        self._section("judges", joined(lines) if lines else None)

    # ---- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("accept_turn", "accept_case"):
            return self.key in self.listing.results or None
        if action == "rerun":
            return (self.app.ready and not self.app.busy) or None
        if action == "cycle_repetition":
            return bool(self.listing.run_book.runs_of(self.key))  # hidden unless the case ran N > 1 times
        if action in ("ces_history", "ces_run"):  # a CES case's keys, as in the browser
            return self.query_one(CesTurnPanel).display
        if action == "full_text":
            return bool(self._clipped)  # hidden unless a text of this turn was cut
        return True

    def action_copy(self) -> None:
        """The turn as the agent answered it (response, tool calls and responses), else as expected,
        as JSON on the clipboard."""
        import json

        expected, actual, _n = self._turns()
        turn, what = (actual, "actual") if actual is not None else (expected, "expected")
        if turn is None:
            self.notify("Nothing to copy: this turn has no result and no expected text.", markup=False)
            return
        text = json.dumps(turn.to_dict(), ensure_ascii=False, indent=2)
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied the {what} turn {self.index + 1} of {self.key.eval_id} as JSON "
                    f"({len(text):,} characters).", markup=False)

    def action_full_text(self) -> None:
        from .fulltext import FullTextScreen

        if self._clipped:
            title = f"{self.key.eval_id} › turn {self.index + 1}: whole text"
            self.app.push_screen(FullTextScreen(one_line(title, 70), list(self._clipped)))

    def action_step(self, delta: int) -> None:
        _e, _a, n = self._turns()
        new = self.index + delta
        if 0 <= new < n:
            self.index = new
            self.sentence = 0
            self.render_turn()
            self.query_one("#turn-body", VerticalScroll).scroll_home(animate=False)

    def action_cycle_match_type(self) -> None:
        names = [n for n in MATCH_TYPES if n in self._alignments] or list(MATCH_TYPES)
        result = self._result()
        current = self.match_type or configured_match_type(result, stored_trajectory(result, self.index))[0]
        self.match_type = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.render_turn()

    def action_sentence(self, delta: int) -> None:
        result = self._result()
        found = details_of(result, self.index, HallucinationDetails) if result is not None else []
        details = found[0][1].details if found else None
        if not isinstance(details, HallucinationDetails) or not details.sentences:
            # s / S step through hallucinations_v1's sentence labels: say why there is nothing to step.
            why = ("this turn has no result yet" if result is None
                   else "hallucinations_v1 did not score this turn" if not found
                   else found[0][1].reason or "hallucinations_v1 found no sentences in this answer")
            self.notify(f"No sentence labels: {why}.", markup=False)
            return
        self.sentence = max(0, self.sentence + delta)
        self.render_turn()

    def action_cycle_repetition(self) -> None:
        """Show the next repetition (run k of N) of this session's --num-runs run."""
        runs = self.listing.run_book.runs_of(self.key)
        if not runs:
            return
        current = self._shown_repetition() or len(runs)
        self.repetition = current % len(runs) + 1
        self.render_turn()

    def action_code_diff(self) -> None:
        """Open the code diff saved with the run this result came from (as history compare's `g` does),
        or say why there is none. The run's record is read in a thread."""
        from ..app import SESSION

        cat = self.listing
        key = self.key
        if cat.result(key) is None:
            self.notify("No result yet: no run, no code diff.", markup=False)
            return
        if cat.results.origin(key) == SESSION:
            saved = cat.run_book.saved.get(key)
            if saved is None:
                self.notify(f"Code diff {NOT_SAVED}.", markup=False)
                return
            from ...engine.store import ADK_SUFFIX, RECORD_SUFFIX

            records = [Path(p[: -len(ADK_SUFFIX)] + RECORD_SUFFIX) for p in saved if p.endswith(ADK_SUFFIX)]
            self.run_worker(partial(find_run_diff, records, key.eval_file), thread=True, group="code-diff",
                            exclusive=True, exit_on_error=False)
            return
        saved_at, ws = cat.results.saved_at(key), cat.workspace
        if saved_at is None or ws is None:
            self.notify("No saved run record for this result.", markup=False)
            return
        self.run_worker(partial(_saved_run_diff, ws, Path(key.eval_file), saved_at), thread=True,
                        group="code-diff", exclusive=True, exit_on_error=False)

    @on(Worker.StateChanged)
    def _code_diff_found(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "code-diff":
            return
        if event.state == WorkerState.ERROR:
            self.notify(f"Could not read the run record: {event.worker.error}", severity="error", markup=False)
        elif event.state == WorkerState.SUCCESS and isinstance(event.worker.result, RunDiff):
            found = event.worker.result
            if found.path is None:
                self.notify(f"No code diff: {found.reason}.", markup=False)
            else:
                self.app.push_screen(DiffScreen(found.path, title=f"Uncommitted diff of run {found.run_id or '?'}"))

    def _shown_repetition(self) -> int | None:
        """Which run k of N the screen shows (None without --num-runs): what an accept writes."""
        return self.listing.result_of_run(self.key, self.repetition)[1]

    def action_accept_turn(self) -> None:
        self.post_message(EditRequested(EditKind.ACCEPT_TURN, self.key, self.index, self._shown_repetition()))

    def action_accept_case(self) -> None:
        self.post_message(EditRequested(EditKind.ACCEPT_CASE, self.key, repetition=self._shown_repetition()))

    def action_delete_turn(self) -> None:
        self.post_message(EditRequested(EditKind.DELETE_TURN, self.key, self.index))

    def action_delete_case(self) -> None:
        self.post_message(EditRequested(EditKind.DELETE_CASE, self.key))

    def action_edit_case(self) -> None:
        self.post_message(CaseEditRequested(self.key))

    def action_verdict(self) -> None:
        self.post_message(VerdictRequested(self.key, turn=self.index))

    def action_undo(self) -> None:
        self.post_message(UndoRequested())

    def action_ces_history(self) -> None:
        self.post_message(OpenCesHistory(self.key))

    def action_ces_run(self) -> None:
        self.post_message(CesRunRequested(self.key))

    def action_rerun(self) -> None:
        self.post_message(RunRequested(f"Run {self.key.eval_id}", keys=(self.key,)))


def status_chip_text(inv: Any) -> Content:
    score = f" score {inv.score:.2f}  " if inv.score is not None else "  "
    return Content.assemble(status_content(inv.status), (score, "$text-muted"))
