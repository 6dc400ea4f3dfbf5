"""The data model of ADK eval files: eval sets, cases, invocations and their genai contents.

These are plain slotted dataclasses, not pydantic models: google-adk validates every genai type with
pydantic and spends ~10 s loading 40 MB of eval data; a hand-written reader (`schema.load`) builds
these in a fraction of that while still naming the exact JSON path of every fault. `to_dict()` on each
writes the snake_case shape that google-adk 2.13 reads back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class FunctionCall:
    """A tool call: name and arguments (`id` is a correlation id, never compared).

    `name` stays None when the file has none, as in genai: a nameless call never matches one named "".
    """

    name: str | None
    args: dict[str, Any] | None = None
    id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.name is not None:
            out["name"] = self.name
        if self.args is not None:
            out["args"] = self.args
        out.update(self.extra)
        return out


@dataclass(slots=True)
class FunctionResponse:
    """A tool's answer to a FunctionCall."""

    name: str | None
    response: dict[str, Any] | None = None
    id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.name is not None:
            out["name"] = self.name
        if self.response is not None:
            out["response"] = self.response
        out.update(self.extra)
        return out


@dataclass(slots=True)
class Part:
    """One part of a genai Content. Fields we do not read (inline_data, thought...) ride in `extra`."""

    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.text is not None:
            out["text"] = self.text
        if self.function_call is not None:
            out["function_call"] = self.function_call.to_dict()
        if self.function_response is not None:
            out["function_response"] = self.function_response.to_dict()
        out.update(self.extra)
        return out


@dataclass(slots=True)
class Content:
    """A genai Content: a role and its parts."""

    parts: list[Part] | None = None
    role: str | None = None

    @classmethod
    def from_text(cls, text: str, role: str = "user") -> Content:
        return cls(parts=[Part(text=text)], role=role)

    @property
    def text(self) -> str:
        """The text parts joined with newlines, as ADK's metrics read a response."""
        if not self.parts:
            return ""
        return "\n".join([p.text for p in self.parts if p.text])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.parts is not None:
            out["parts"] = [p.to_dict() for p in self.parts]
        if self.role is not None:
            out["role"] = self.role
        return out


def content_text(content: Content | None) -> str:
    """Text of an optional Content ("" for None)."""
    return content.text if content is not None else ""


@dataclass(slots=True)
class IntermediateData:
    """The first intermediate-data shape: tool uses, tool responses and intermediate texts."""

    tool_uses: list[FunctionCall] = field(default_factory=list)
    tool_responses: list[FunctionResponse] = field(default_factory=list)
    # (author, parts) pairs: progress texts from sub-agents, distinct from the final response.
    intermediate_responses: list[tuple[str, list[Part]]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_uses": [c.to_dict() for c in self.tool_uses],
            "tool_responses": [r.to_dict() for r in self.tool_responses],
            "intermediate_responses": [
                [author, [p.to_dict() for p in parts]] for author, parts in self.intermediate_responses
            ],
        }


@dataclass(slots=True)
class InvocationEvent:
    """One event of the second intermediate-data shape."""

    author: str
    content: Content | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"author": self.author}
        out["content"] = self.content.to_dict() if self.content is not None else None
        out.update(self.extra)
        return out


@dataclass(slots=True)
class InvocationEvents:
    """The second intermediate-data shape: the raw events of the turn."""

    invocation_events: list[InvocationEvent] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"invocation_events": [e.to_dict() for e in self.invocation_events]}


@dataclass(slots=True)
class RubricContent:
    text_property: str | None = None


@dataclass(slots=True)
class Rubric:
    """A yes/no property a judge checks; `type` routes case rubrics to the matching metric."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rubric_id": self.rubric_id,
            "rubric_content": {"text_property": self.rubric_content.text_property},
        }
        if self.description is not None:
            out["description"] = self.description
        if self.type is not None:
            out["type"] = self.type
        return out


@dataclass(slots=True)
class AgentDetails:
    name: str
    instructions: str = ""
    tool_declarations: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instructions": self.instructions,
            "tool_declarations": self.tool_declarations,
        }


@dataclass(slots=True)
class AppDetails:
    """What the judges need to know of the app: each agent's instructions and tool declarations."""

    agent_details: dict[str, AgentDetails] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"agent_details": {k: v.to_dict() for k, v in self.agent_details.items()}}


@dataclass(slots=True)
class ToolTiming:
    """Latency of one tool call in an actual invocation (kept in our own record, not ADK's)."""

    name: str
    seconds: float
    call_id: str | None = None


@dataclass(slots=True)
class Invocation:
    """One turn: the user's message, what happened in between, and the final response."""

    user_content: Content
    invocation_id: str = ""
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None
    # Per tool-call latency of an actual turn; ADK's Invocation has no field for it.
    tool_timings: list[ToolTiming] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[FunctionCall]:
        """Every tool call of the turn in order (a transfer_to_agent call counts)."""
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            return data.tool_uses
        calls: list[FunctionCall] = []
        for event in data.invocation_events:
            if event.content is not None and event.content.parts:
                calls.extend(p.function_call for p in event.content.parts if p.function_call)
        return calls

    @property
    def tool_responses(self) -> list[FunctionResponse]:
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            return data.tool_responses
        responses: list[FunctionResponse] = []
        for event in data.invocation_events:
            if event.content is not None and event.content.parts:
                responses.extend(p.function_response for p in event.content.parts if p.function_response)
        return responses

    @property
    def intermediate_texts(self) -> list[tuple[str, str]]:
        """(author, text) of every natural-language response before the final one."""
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            out = []
            for author, parts in data.intermediate_responses:
                text = "\n".join(p.text for p in parts if p.text)
                if text:
                    out.append((author, text))
            return out
        texts = []
        for event in data.invocation_events:
            if event.content is not None and event.content.parts:
                text = "\n".join(p.text for p in event.content.parts if p.text)
                if text:
                    texts.append((event.author, text))
        return texts

    def to_dict(self) -> dict[str, Any]:
        """The ADK 2.13 Invocation shape (no keys ADK would reject)."""
        out: dict[str, Any] = {
            "invocation_id": self.invocation_id,
            "user_content": self.user_content.to_dict(),
            "final_response": self.final_response.to_dict() if self.final_response is not None else None,
            "intermediate_data": (
                self.intermediate_data.to_dict() if self.intermediate_data is not None else None
            ),
            "creation_timestamp": self.creation_timestamp,
        }
        if self.duration is not None:
            out["duration"] = self.duration
        if self.model_duration is not None:
            out["model_duration"] = self.model_duration
        if self.tool_duration is not None:
            out["tool_duration"] = self.tool_duration
        if self.rubrics is not None:
            out["rubrics"] = [r.to_dict() for r in self.rubrics]
        if self.app_details is not None:
            out["app_details"] = self.app_details.to_dict()
        return out


@dataclass(slots=True)
class SessionInput:
    app_name: str
    user_id: str
    state: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"app_name": self.app_name, "user_id": self.user_id, "state": self.state}
        if self.session_id is not None:
            out["session_id"] = self.session_id
        out.update(self.extra)
        return out


@dataclass(slots=True)
class ConversationScenario:
    """A goal for the simulated user: the first message and the plan to follow after it."""

    starting_prompt: str
    conversation_plan: str
    user_persona: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "starting_prompt": self.starting_prompt,
            "conversation_plan": self.conversation_plan,
        }
        if self.user_persona is not None:
            out["user_persona"] = self.user_persona
        return out


@dataclass(slots=True)
class EvalCase:
    """One conversation to evaluate: either static turns or a scenario for the user simulator."""

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_scenario(self) -> bool:
        return self.conversation_scenario is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"eval_id": self.eval_id}
        if self.conversation is not None:
            out["conversation"] = [inv.to_dict() for inv in self.conversation]
        if self.conversation_scenario is not None:
            out["conversation_scenario"] = self.conversation_scenario.to_dict()
        out["session_input"] = self.session_input.to_dict() if self.session_input is not None else None
        out["creation_timestamp"] = self.creation_timestamp
        if self.rubrics is not None:
            out["rubrics"] = [r.to_dict() for r in self.rubrics]
        out["final_session_state"] = self.final_session_state
        out.update(self.extra)
        return out


@dataclass(slots=True)
class EvalSet:
    """A named list of eval cases, as stored in one `*.evalset.json` / `*.test.json` file."""

    eval_set_id: str
    eval_cases: list[EvalCase]
    name: str | None = None
    description: str | None = None
    creation_timestamp: float = 0.0

    def case(self, eval_id: str) -> EvalCase | None:
        for c in self.eval_cases:
            if c.eval_id == eval_id:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_set_id": self.eval_set_id,
            "name": self.name,
            "description": self.description,
            "eval_cases": [c.to_dict() for c in self.eval_cases],
            "creation_timestamp": self.creation_timestamp,
        }
