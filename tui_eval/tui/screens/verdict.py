"""A person's verdict: what it is about (the case, a turn, a metric), pass or fail, and a short reason."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static

from ..text import plain


class VerdictScreen(ModalScreen[tuple[int, str, str] | None]):
    """Dismisses with (target index, "pass" | "fail", reason) once the reason is entered, None on escape.
    `p` / `f` pick the verdict (up/down the target first); enter keeps it with the reason typed."""

    CSS_PATH = "../modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "choose('pass')", "Pass", id="verdict.pass"),
        Binding("f", "choose('fail')", "Fail", id="verdict.fail"),
        Binding("escape", "cancel", "Cancel", id="verdict.cancel"),
    ]

    def __init__(self, eval_id: str, targets: list[str], chosen: int, label: str | None = None) -> None:
        super().__init__()
        self.eval_id = eval_id
        self.targets = targets
        self.chosen = chosen
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical(id="verdict-box"):
            yield Static(Content.assemble("Your verdict on ", plain(self.eval_id, "bold"),
                                          ("  ↑↓ what it is about · p pass · f fail · enter keeps it",
                                           "$text-muted")))
            yield OptionList(*[Content(t) for t in self.targets], id="verdict-targets")
            yield Static(id="verdict-label")
            yield Input(placeholder="a short reason (enter keeps the verdict)", id="verdict-reason", disabled=True)

    def on_mount(self) -> None:
        self.query_one("#verdict-box").border_title = "Human verdict"
        targets = self.query_one(OptionList)
        targets.highlighted = self.chosen
        targets.focus()
        if self.label is not None:
            self.action_choose(self.label)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":  # letters go to the reason once it is being typed
            return not self.query_one("#verdict-reason", Input).has_focus
        return True

    def action_choose(self, label: str) -> None:
        self.label = label
        self.query_one("#verdict-label", Static).update(Content.assemble(
            "verdict: ", ("✔ pass", "bold $text-success") if label == "pass" else ("✘ fail", "bold $text-error"),
            ("  (escape cancels)", "$text-muted")))
        reason = self.query_one("#verdict-reason", Input)
        reason.disabled = False
        reason.focus()

    @on(Input.Submitted, "#verdict-reason")
    def _keep(self, event: Input.Submitted) -> None:
        if self.label is None:
            return
        index = self.query_one(OptionList).highlighted
        self.dismiss((self.chosen if index is None else index, self.label, event.value.strip()))

    def action_cancel(self) -> None:
        self.dismiss(None)
