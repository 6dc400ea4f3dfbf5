"""The data model of ADK eval files: eval sets, cases, invocations and their genai contents.

Pydantic v2 models that mirror google-adk 2.13's (`evaluation/eval_case.py`, `eval_set.py`, ...): the same
aliases, the same `extra=` per model and the same lax coercions, so what ADK accepts loads and what ADK
rejects is an error. genai's Content/Part are slim copies of our own: the fields our metrics read are
typed, genai's other Part fields are accepted and kept as written, and a key genai does not know is an
error (genai's own models forbid unknown keys). `to_dict()` on each writes the snake_case shape that
google-adk 2.13 reads back.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .base import EvalBaseModel
from .runrecord import NestedCall

# Values a genai field holds that we carry without reading (arbitrary JSON).
JsonAny = Any


class FunctionCall(EvalBaseModel):
    """A tool call: name and arguments (`id` is a correlation id, never compared).

    `name` stays None when the file has none, as in genai: a nameless call never matches one named "".
    A call with genai's rarer fields (partial_args, will_continue) is a `GenaiFunctionCall`.
    """

    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class GenaiFunctionCall(FunctionCall):
    partial_args: list[JsonAny] | None = None
    will_continue: bool | None = None


class FunctionResponse(EvalBaseModel):
    """A tool's answer to a FunctionCall (with genai's rarer fields: a `GenaiFunctionResponse`)."""

    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class GenaiFunctionResponse(FunctionResponse):
    will_continue: bool | None = None
    scheduling: str | None = None
    parts: list[JsonAny] | None = None


# The common value validates against the slim model's few fields; one with genai's rarer fields falls
# back to the full one. Tags name the member in an error's location: `errors` skips "#~" (slim) errors,
# which the full member repeats, and leaves tags out of JSON paths.
FunctionCallType = Annotated[
    Annotated[FunctionCall, Tag("#~FunctionCall")] | Annotated[GenaiFunctionCall, Tag("#GenaiFunctionCall")],
    Field(union_mode="left_to_right"),
]
FunctionResponseType = Annotated[
    Annotated[FunctionResponse, Tag("#~FunctionResponse")]
    | Annotated[GenaiFunctionResponse, Tag("#GenaiFunctionResponse")],
    Field(union_mode="left_to_right"),
]


class Part(EvalBaseModel):
    """One part of a genai Content: text, a function call or a function response (what metrics read).

    A part with any of genai's other fields (inline_data, thought, ...) is a `GenaiPart`.
    """

    text: str | None = None
    function_call: FunctionCallType | None = None
    function_response: FunctionResponseType | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class GenaiPart(Part):
    """A Part with genai 2.34's other fields: accepted (a file ADK reads loads) and written back, never read.

    A separate class so the common part validates against three fields only (the bench file has
    tens of thousands of parts); `PartType` tries Part first and falls back to this one.
    """

    inline_data: JsonAny = None
    file_data: JsonAny = None
    thought: bool | None = None
    thought_signature: JsonAny = None
    executable_code: JsonAny = None
    code_execution_result: JsonAny = None
    video_metadata: JsonAny = None
    media_resolution: JsonAny = None
    tool_call: JsonAny = None
    tool_response: JsonAny = None
    part_metadata: JsonAny = None
    audio_transcription: JsonAny = None
    media_processing: JsonAny = None
    speech_metadata: JsonAny = None


PartType = Annotated[
    Annotated[Part, Tag("#~Part")] | Annotated[GenaiPart, Tag("#GenaiPart")],
    Field(union_mode="left_to_right"),
]


class Content(EvalBaseModel):
    """A genai Content: a role and its parts."""

    parts: list[PartType] | None = None
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
        return self.model_dump(exclude_none=True)


def content_text(content: Content | None) -> str:
    """Text of an optional Content ("" for None)."""
    return content.text if content is not None else ""


class IntermediateData(EvalBaseModel):
    """The first intermediate-data shape: tool uses, tool responses and intermediate texts."""

    tool_uses: list[FunctionCallType] = Field(default_factory=list)
    tool_responses: list[FunctionResponseType] = Field(default_factory=list)
    # (author, parts) pairs: progress texts from sub-agents, distinct from the final response.
    intermediate_responses: list[tuple[str, list[PartType]]] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_uses": [c.to_dict() for c in self.tool_uses],
            "tool_responses": [r.to_dict() for r in self.tool_responses],
            "intermediate_responses": [
                [author, [p.to_dict() for p in parts]] for author, parts in self.intermediate_responses
            ],
        }


class InvocationEvent(EvalBaseModel):
    """One event of the second intermediate-data shape."""

    # As ADK: the adk web editor writes UI-only keys (invocationIndex, toolUseIndex) on events.
    model_config = ConfigDict(extra="ignore")

    author: str
    content: Content | None = None
    grounding_metadata: JsonAny = None
    usage_metadata: JsonAny = None
    model_version: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _note_ignored_keys(cls, data: Any, info: ValidationInfo) -> Any:
        # ADK drops unknown event keys silently; we drop them too, but say so once per file.
        if isinstance(data, dict) and isinstance(info.context, LoadContext):
            unknown = data.keys() - _EVENT_KEYS
            if unknown:
                info.context.ignored_event_keys.update(unknown)
        return data

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"author": self.author}
        out["content"] = self.content.to_dict() if self.content is not None else None
        out.update(self.model_dump(exclude={"author", "content"}, exclude_none=True))
        return out


_EVENT_KEYS = frozenset(
    key
    for name, info in InvocationEvent.model_fields.items()
    for key in (name, info.alias or name)
)


class InvocationEvents(EvalBaseModel):
    """The second intermediate-data shape: the raw events of the turn."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"invocation_events": [e.to_dict() for e in self.invocation_events]}


class LoadContext:
    """Validation context of one file: what it loaded with a warning (ADK would ignore it silently)."""

    def __init__(self, *, adk_file: bool = True) -> None:
        self.adk_file = adk_file
        self.ignored_event_keys: set[str] = set()

    def warnings(self) -> list[str]:
        """What the file loaded with that ADK would have ignored silently."""
        if not self.ignored_event_keys:
            return []
        keys = ", ".join(sorted(self.ignored_event_keys))
        return [f"invocation_events: unknown event key(s) {keys} ignored (as ADK does)"]


_SHAPE1 = frozenset(("tool_uses", "toolUses", "tool_responses", "toolResponses", "intermediate_responses",
                     "intermediateResponses"))
_SHAPE2 = frozenset(("invocation_events", "invocationEvents"))
# Tags of the two intermediate-data shapes; a JSON path skips them (`errors.render_loc`).
TAG_DATA = "#IntermediateData"
TAG_EVENTS = "#InvocationEvents"


def _shape(value: Any) -> str | None:
    """Which intermediate-data shape a value is: a dict with any events key is the second, `{}` the first.

    Keys of both shapes give None, an error: ADK's union rejects it too (each shape forbids the other's
    keys).
    """
    # A dict first: what every file gives, and isinstance() against a pydantic class runs its
    # metaclass's Python __instancecheck__ (a noticeable part of a big folder's load went there).
    if isinstance(value, dict):
        if value.keys().isdisjoint(_SHAPE2):
            return TAG_DATA
        return TAG_EVENTS if value.keys().isdisjoint(_SHAPE1) else None
    if isinstance(value, InvocationEvents):
        return TAG_EVENTS
    return TAG_DATA


IntermediateDataType = Annotated[
    Annotated[IntermediateData, Tag(TAG_DATA)] | Annotated[InvocationEvents, Tag(TAG_EVENTS)],
    Discriminator(
        _shape,
        custom_error_type="mixed_shapes",
        custom_error_message="mixes both intermediate_data shapes (tool_uses, tool_responses or"
        " intermediate_responses with invocation_events); use one",
    ),
]


class RubricContent(EvalBaseModel):
    text_property: str | None = None


class Rubric(EvalBaseModel):
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


class AgentDetails(EvalBaseModel):
    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class AppDetails(EvalBaseModel):
    """What the judges need to know of the app: each agent's instructions and tool declarations."""

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class ToolTiming(EvalBaseModel):
    """Latency of one tool call in an actual invocation (kept in our own record, not ADK's)."""

    name: str
    seconds: float
    call_id: str | None = None
    # Answered from the case's recorded tool_responses (--mock-tools): the real tool did not run.
    mocked: bool = False


class ExpectedNestedCall(EvalBaseModel):
    """One call an eval case expects inside a tool call (its `expected_nested_calls`): the agent that makes
    it, the tool and its arguments (`depth` is read for display only)."""

    agent: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    depth: int = 1

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class Invocation(EvalBaseModel):
    """One turn: the user's message, what happened in between, and the final response."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateDataType | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None
    # Per tool-call latency of an actual turn; ADK's Invocation has no field for it, so it is never
    # written to ADK files (`to_dict`) and an ADK file that has it is rejected, as ADK would.
    tool_timings: list[ToolTiming] = Field(default_factory=list, exclude=True)
    # Calls made inside tool calls (an AgentTool's agent), in the order they started; as tool_timings,
    # tui-eval's own and never written to ADK files.
    nested_calls: list[NestedCall] = Field(default_factory=list, exclude=True)

    _RARE: ClassVar[frozenset[str]] = frozenset(
        ("duration", "model_duration", "tool_duration", "rubrics", "app_details")
    )

    @field_validator("tool_timings", "nested_calls", mode="before")
    @classmethod
    def _not_in_adk_files(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(info.context, LoadContext) and info.context.adk_file:
            raise ValueError(f"unknown key {info.field_name!r}")
        return value

    @property
    def tool_calls(self) -> list[FunctionCall]:
        """Every tool call of the turn in order (a transfer_to_agent call counts)."""
        return self._calls_or_responses("tool_uses", "function_call")

    @property
    def tool_responses(self) -> list[FunctionResponse]:
        return self._calls_or_responses("tool_responses", "function_response")

    def _calls_or_responses(self, listed: str, in_part: str) -> list[Any]:
        """The turn's `listed` (first intermediate-data shape), or its events' parts' `in_part` (second)."""
        data = self.intermediate_data
        if data is None:
            return []
        if type(data) is IntermediateData or isinstance(data, IntermediateData):  # the common case first
            return getattr(data, listed)  # type: ignore[no-any-return]
        found: list[Any] = []
        for event in data.invocation_events:
            if event.content is not None and event.content.parts:
                found.extend(value for p in event.content.parts if (value := getattr(p, in_part)))
        return found

    @property
    def intermediate_texts(self) -> list[tuple[str, str]]:
        """(author, text) of every natural-language response before the final one."""
        data = self.intermediate_data
        if data is None:
            return []
        out: list[tuple[str, str]] = []
        if type(data) is IntermediateData or isinstance(data, IntermediateData):  # the common case first
            for author, parts in data.intermediate_responses:
                text = "\n".join(p.text for p in parts if p.text)
                if text:
                    out.append((author, text))
            return out
        for event in data.invocation_events:
            if event.content is not None and event.content.parts:
                text = "\n".join(p.text for p in event.content.parts if p.text)
                if text:
                    out.append((event.author, text))
        return out

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

    def to_wire(self) -> dict[str, Any]:
        """The turn as it crosses from an agent process to the engine: the ADK shape plus our own per-turn
        fields (read back with `schema.load.read_invocation`)."""
        out = self.to_dict()
        if self.tool_timings:
            out["tool_timings"] = [t.model_dump() for t in self.tool_timings]
        if self.nested_calls:
            out["nested_calls"] = [c.model_dump(exclude_none=True) for c in self.nested_calls]
        return out


class SessionInput(EvalBaseModel):
    """Values that initialise the agent's session; other keys are kept (ADK: `extra="allow"`)."""

    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude={"session_id"} if self.session_id is None else None)


class ConversationScenario(EvalBaseModel):
    """A goal for the simulated user: the first message and the plan to follow after it."""

    starting_prompt: str
    conversation_plan: str
    # A persona id or a persona object (ADK's UserPersona); carried, not read.
    user_persona: str | dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class EvalCase(EvalBaseModel):
    """One conversation to evaluate: either static turns or a scenario for the user simulator."""

    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)
    # tui-eval's own key (ADK's EvalCase keeps unknown keys; its Invocation would refuse one): the calls
    # each turn should make inside its tool calls, keyed by the expected turn's invocation_id.
    expected_nested_calls: dict[str, list[ExpectedNestedCall]] | None = None

    @model_validator(mode="after")
    def _conversation_xor_scenario(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError("exactly one of 'conversation' and 'conversation_scenario' must be given")
        return self

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
        if self.expected_nested_calls is not None:
            out["expected_nested_calls"] = {inv_id: [c.to_dict() for c in calls]
                                            for inv_id, calls in self.expected_nested_calls.items()}
        if self.model_extra:
            out.update(self.model_extra)
        return out


class EvalSet(BaseModel):
    """A named list of eval cases, as stored in one `*.evalset.json` / `*.test.json` file.

    As in ADK, a plain model: top-level keys are snake_case only and unknown ones are ignored (the
    loader warns about them).
    """

    model_config = ConfigDict(defer_build=True)

    eval_set_id: str
    eval_cases: list[EvalCase]
    name: str | None = None
    description: str | None = None
    creation_timestamp: float = 0.0

    # What the loader accepted but ADK would ignore silently (unknown top-level keys, ...).
    _load_warnings: list[str] = PrivateAttr(default_factory=list)

    @property
    def load_warnings(self) -> list[str]:
        return self._load_warnings

    @load_warnings.setter
    def load_warnings(self, warnings: list[str]) -> None:
        self._load_warnings = warnings

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
