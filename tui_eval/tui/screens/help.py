"""The help screen: what the dashboard does and every key, generated from the screens' own bindings."""

from __future__ import annotations

from typing import ClassVar, Mapping

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

FLOWS = (
    "Browse eval sets > cases > turns with their last status and score (this session's runs, else the "
    "newest saved run). y copies a case or a turn as JSON. The number beside a case is the score of its lowest failed metric, else of its "
    "lowest passed one (marked ◂ in the summary; never a count, tokens or seconds); s sorts the cases by "
    "it, then by duration. Filter to failed cases (f), view one metric (m), search (/), or jump to any case "
    "with the command palette (ctrl+p).\n\n"
    "Run the highlighted file or case (r), everything (R) or the failures (F). Runs go on in the "
    "background; x cancels and keeps what finished.\n\n"
    "Open a turn (enter) for the response word diff, the tool-trajectory diff (m switches EXACT, IN_ORDER "
    "and ANY_ORDER), hallucination labels (s picks a sentence), rubric verdicts with their votes, and why "
    "a metric was not evaluated.\n\n"
    "Accept the actual turn or case as the new expected one (a / A) or delete it (d / D): the eval file is "
    "rewritten atomically after you confirm. E edits a case as JSON in $EDITOR, I imports an ADK session as "
    "a case, z undoes the last edit. V gives your own verdict (pass/fail, a reason) beside the automatic one; "
    "P walks the judged verdicts that need a person. Saved files reload by themselves; live mode (l) also re-runs "
    "what a save changed. h opens the run history: compare two runs, regressions first. w groups the "
    "failures by cause (missing call, wrong args, rubric failed, not evaluated…), each with its cases. W "
    "(what if) changes a metric's threshold or match type and shows which cases would flip, from the "
    "stored results; s writes it to the config."
)


# Sections the help does not list as rows: the yes/no question and this help show their keys already,
# and the tree's arrows are in the closing line.
_SELF_EXPLAINING = ("Questions", "Help", "Tree")


def binding_sections() -> list[tuple[str, list[BindingType]]]:
    """Every screen's bindings under the title the help shows them with (also the ids a keymap may use)."""
    from ..app import EvalApp
    from ..widgets.browser import EvalBrowser
    from .case_editor import CaseEditorScreen
    from .confirm import ConfirmScreen
    from .import_session import ImportSessionScreen
    from .chat import ChatScreen, SaveChatScreen
    from .inflight import InFlightScreen, TranscriptScreen
    from .review import ReviewScreen
    from .verdict import VerdictScreen
    from .diff import DiffScreen
    from .fulltext import FullTextScreen
    from .runs_diff import RunsDiffScreen
    from .history import CompareScreen, HistoryScreen
    from .main import MainScreen
    from .causes import CausesScreen
    from .whatif import WhatIfScreen
    from .timeline import TimelineScreen
    from .turn import TurnScreen

    return [
        ("Browser", list(MainScreen.BINDINGS)),
        ("Turn view", list(TurnScreen.BINDINGS)),
        ("History", list(HistoryScreen.BINDINGS)),
        ("Comparison", list(CompareScreen.BINDINGS)),
        ("Code diff", list(DiffScreen.BINDINGS)),
        ("Whole text", list(FullTextScreen.BINDINGS)),
        ("Case in two runs", list(RunsDiffScreen.BINDINGS)),
        ("Timeline", list(TimelineScreen.BINDINGS)),
        ("Failures by cause", list(CausesScreen.BINDINGS)),
        ("What if", list(WhatIfScreen.BINDINGS)),
        ("Everywhere", list(EvalApp.BINDINGS)),
        ("Questions", list(ConfirmScreen.BINDINGS)),
        ("Case editor", list(CaseEditorScreen.BINDINGS)),
        ("Session import", list(ImportSessionScreen.BINDINGS)),
        ("Human verdict", list(VerdictScreen.BINDINGS)),
        ("Review", list(ReviewScreen.BINDINGS)),
        ("Cases in flight", list(InFlightScreen.BINDINGS)),
        ("Live transcript", list(TranscriptScreen.BINDINGS)),
        ("Chat", list(ChatScreen.BINDINGS)),
        ("Save a chat", list(SaveChatScreen.BINDINGS)),
        ("Help", list(HelpScreen.BINDINGS)),
        ("Tree", list(EvalBrowser.BINDINGS)),
    ]


def _binding_rows(app: App[object], title: str, bindings: list[BindingType], keymap: Mapping[str, str]) -> list[Content]:
    """One line a binding: its keys (as remapped by the keymap) and what it does."""
    rows = [Content.styled(title, "bold $text-accent")]
    for b in bindings:
        if not isinstance(b, Binding) or not b.description:
            continue
        key_list = (keymap.get(b.id) if b.id else None) or b.key
        keys = ", ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in key_list.split(","))
        # The id is what a keymap file names (`run.all = "ctrl+r"`).
        rows.append(Content.assemble((f"  {keys:<14}", "bold"), b.description,
                                     (f"  {b.id}", "$text-muted") if b.id else ""))
    return rows


class HelpScreen(ModalScreen[None]):
    """Keys and flows; any of escape, q or ? closes it."""

    CSS_PATH = "../modals.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, keymap: Mapping[str, str] | None = None) -> None:
        super().__init__()
        #: The user's keymap (binding id -> keys), so the help shows the keys that really work.
        self.keymap = dict(keymap or {})

    def compose(self) -> ComposeResult:
        lines: list[Content] = [Content.styled("tui-eval", "bold"), Content(FLOWS), Content("")]
        for title, bindings in binding_sections():
            if title in _SELF_EXPLAINING:
                continue
            lines.extend(_binding_rows(self.app, title, bindings, self.keymap))
            lines.append(Content(""))
        lines.append(Content.styled("Tree: ↑ ↓ move, → ← expand / collapse, enter opens. Text panes scroll "
                                    "with ↑ ↓ pgup pgdn; tab moves focus.", "$text-muted"))
        with VerticalScroll(id="help-body"):
            yield Static(Content("\n").join(lines))

    def on_mount(self) -> None:
        self.query_one("#help-body").border_title = "Help"
        self.query_one("#help-body").border_subtitle = "escape closes"
