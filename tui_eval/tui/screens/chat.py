"""Talk to an agent, keep it as a case: type a message and watch the agent's answer, its tool calls and
their responses arrive turn by turn (the agent runs in the same worker processes as a run); edit or retry
the last message; save the conversation as a new case of an eval set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from ..chatlog import ChatLog
from ..messages import ChatPlay, ChatSave
from ..text import one_line, plain
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ..app import EvalApp
    from ..readmodel import Changes

#: What every play costs, said on the screen.
REPLAY_NOTE = ("Each message plays the whole conversation again from a fresh session, in the agent's worker "
               "processes: tools with side effects run again.")


class ChatScreen(Screen[None]):
    app: EvalApp
    CSS_PATH = "../views.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "retry", "Retry last", id="chat.retry", priority=True),
        Binding("ctrl+t", "edit_last", "Edit last", id="chat.edit_last", priority=True),
        Binding("ctrl+s", "save", "Save as case", id="chat.save", priority=True),
        Binding("escape", "app.pop_screen", "Back", id="chat.back"),
    ]

    def __init__(self, agent_ref: str, eval_file: Path) -> None:
        super().__init__(id="chat")
        self.chat = ChatLog(agent_ref)
        self.eval_file = eval_file

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="chat-scroll"):
            yield Static(id="chat-body")
        yield Static(id="chat-status")
        yield Input(placeholder="a message to the agent (enter sends)", id="chat-input")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#chat-scroll").border_title = f"Chat with {one_line(Path(self.chat.agent_ref).name, 50)}"
        self.app.watch_changes(self, self._changed)
        self.redraw()
        self.query_one(Input).focus()

    def _changed(self, changes: Changes) -> None:
        if changes.chat:
            self.redraw()

    @on(Input.Submitted, "#chat-input")
    def _send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.chat.playing:
            self.notify("The agent is still answering; wait for it.", markup=False)
            return
        event.input.value = ""
        self.chat.messages.append(text)
        self._play()

    def _play(self) -> None:
        self.post_message(ChatPlay(self.chat))
        self.call_after_refresh(self.redraw)

    def action_retry(self) -> None:
        if self.chat.messages and not self.chat.playing:
            self._play()

    def action_edit_last(self) -> None:
        if not self.chat.messages or self.chat.playing:
            return
        text = self.chat.messages.pop()
        self.chat.turns.pop(len(self.chat.messages), None)
        field = self.query_one(Input)
        field.value = text
        field.cursor_position = len(text)
        field.focus()
        self.redraw()

    def action_save(self) -> None:
        if not self.chat.complete:
            self.notify("Nothing to save yet: every message needs its answer first.", severity="warning", markup=False)
            return

        def answered(answer: tuple[str, str] | None) -> None:
            if answer is not None:
                self.post_message(ChatSave(self.chat, Path(answer[0]).expanduser(), answer[1]))

        self.app.push_screen(SaveChatScreen(str(self.eval_file)), answered)

    def redraw(self) -> None:
        chat = self.chat
        lines: list[Content] = []
        for i, message in enumerate(chat.messages):
            lines.append(Content.assemble(("you    ", "bold $text-accent"), plain(message)))
            turn = chat.turns.get(i)
            if turn is None:
                if chat.playing:
                    lines.append(Content.styled("◌ the agent is answering…", "$text-muted"))
                lines.append(Content(""))
                continue
            for call in turn.tool_calls:
                args = json.dumps(call.args or {}, ensure_ascii=False, default=str)
                lines.append(Content.assemble(("  tool call     ", "$text-muted"), plain(f"{call.name}({args})")))
            for response in turn.tool_responses:
                body = json.dumps(response.response, ensure_ascii=False, default=str)
                lines.append(Content.assemble(("  tool response ", "$text-muted"),
                                              plain(f"{response.name} → {one_line(body, 300)}")))
            for author, text in turn.intermediate_texts:
                lines.append(Content.assemble((f"  {author}  ", "$text-muted"), plain(text)))
            answer = turn.final_response.text if turn.final_response is not None else ""
            lines.append(Content.assemble(("agent  ", "bold $text-success"), plain(answer)))
            lines.append(Content(""))
        self.query_one("#chat-body", Static).update(Content("\n").join(lines) if lines else Content.styled(
            "Say something to the agent.", "$text-muted italic"))
        status = [Content.styled(REPLAY_NOTE, "$text-muted")]
        if chat.error is not None:
            status.insert(0, plain(f"⚠ {one_line(chat.error, 300)}", "$text-error"))
        elif chat.complete:
            status.insert(0, Content.styled("ctrl+s saves this conversation as a case; ctrl+r asks again; "
                                            "ctrl+t edits your last message", "$text-muted"))
        self.query_one("#chat-status", Static).update(Content("\n").join(status))
        self.query_one("#chat-scroll", VerticalScroll).scroll_end(animate=False)


class SaveChatScreen(ModalScreen[tuple[str, str] | None]):
    """Which eval set, and the new case's id (an id the set has is refused when saving)."""

    CSS_PATH = "../modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="chat_save.cancel"),
    ]

    def __init__(self, eval_file: str) -> None:
        super().__init__()
        self.eval_file = eval_file

    def compose(self) -> ComposeResult:
        with Vertical(id="import-box"):
            yield Static(Content.assemble("Save the conversation as a new case",
                                          ("\n(its tool calls and responses become the expected trajectory)",
                                           "$text-muted")))
            yield Input(value=self.eval_file, placeholder="eval set file", id="save-path")
            yield Input(placeholder="case id", id="save-id")

    def on_mount(self) -> None:
        self.query_one("#import-box").border_title = "Save as case"
        self.query_one("#save-id", Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        path = self.query_one("#save-path", Input).value.strip()
        eval_id = self.query_one("#save-id", Input).value.strip()
        if not path or not eval_id:
            self.notify("Give the eval set and the case id.", severity="warning", markup=False)
            return
        self.dismiss((path, eval_id))

    def action_cancel(self) -> None:
        self.dismiss(None)
