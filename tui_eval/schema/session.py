"""An ADK session as an eval case, invocation by invocation, the way `adk web`'s "add session to eval set" does.

The input is what a user has at hand: the JSON `adk api_server` returns for
`GET /apps/{app}/users/{user}/sessions/{id}` (camelCase keys) or a `Session.model_dump_json()` (snake_case).
Its events are grouped by invocation id, in order; each group becomes one Invocation as google-adk 2.13's
`EvaluationGenerator.convert_events_to_eval_invocations` builds it: the user's message, the last final
response, and the agent's events (tool calls and responses, texts, transfers) as `invocation_events`, the
final response's text not repeated among them. The session input keeps the app and user, with an empty
state, as ADK's does. Anything else (an eval set, a run's results, a list, a session without events) is one
`SessionImportError` saying what the file is and what was expected.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import either_spelling
from .errors import SchemaError
from .load import read_content
from .model import Content, EvalCase, Invocation, InvocationEvent, InvocationEvents, SessionInput

_USER = "user"
#: What was expected, said once in every error about the file's shape.
EXPECTED = ("an ADK session: the JSON of `adk api_server`'s GET /apps/{app}/users/{user}/sessions/{id}, "
            "or a Session.model_dump_json()")


class SessionImportError(Exception):
    """The file is not an ADK session this can import; the message says why (one line)."""


# Session and Event use camelCase aliases (the API server's JSON); model_dump writes snake_case.
_get = either_spelling


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _snake_keys(value: Any) -> Any:
    """genai metadata as ADK's files spell it (snake_case): the API server sends it camelCase. Its keys
    are all field names of genai models (no user data), so every key is converted."""
    if isinstance(value, dict):
        return {_snake(str(k)): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


def _what_it_is(data: Any) -> str:
    if isinstance(data, list):
        return "a JSON list (one session per file, please)"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}"
    if "eval_cases" in data or "eval_set_id" in data:
        return "an eval set"
    if "eval_set_result_id" in data or "eval_case_results" in data:
        return "an eval set result"
    if str(data.get("format", "")).startswith("tui-eval.run"):
        return "a tui-eval run record"
    keys = ", ".join(sorted(str(k) for k in data)[:6]) or "no keys"
    return f"an object with {keys}"


@dataclass(frozen=True, slots=True)
class _Event:
    """The fields of one session event that decide where it goes."""

    invocation_id: str
    author: str
    content: Content | None
    raw: dict[str, Any]

    def parts(self) -> list[Any]:
        return list(self.content.parts or []) if self.content is not None else []

    def has_calls(self) -> bool:
        return any(p.function_call is not None for p in self.parts())

    def has_responses(self) -> bool:
        return any(p.function_response is not None for p in self.parts())

    def is_final_response(self) -> bool:
        """google-adk 2.13's Event.is_final_response, on the event's JSON."""
        actions = _get(self.raw, "actions")
        if isinstance(actions, dict) and _get(actions, "skip_summarization"):
            return True
        if _get(self.raw, "long_running_tool_ids"):
            return True
        partial = bool(_get(self.raw, "partial"))
        if _get(self.raw, "error_code") and not partial and not self.has_calls():
            return True
        parts = self.parts()
        trailing_code_result = bool(parts) and getattr(parts[-1], "code_execution_result", None) is not None
        return not self.has_calls() and not self.has_responses() and not partial and not trailing_code_result

    def worth_keeping(self) -> bool:
        """ADK keeps an agent event with a call, a response, text or inline data, or grounding metadata."""
        if _get(self.raw, "grounding_metadata") is not None:
            return True
        return any(p.function_call is not None or p.function_response is not None or p.text
                   or getattr(p, "inline_data", None) is not None for p in self.parts())


def _event(raw: Any, n: int) -> _Event:
    where = f"$.events[{n}]"
    if not isinstance(raw, dict):
        raise SessionImportError(f"{where}: an event must be an object, not {_what_it_is(raw)}")
    invocation_id = _get(raw, "invocation_id")
    if not isinstance(invocation_id, str) or not invocation_id:
        raise SessionImportError(f"{where}: no invocation id (invocation_id / invocationId); {EXPECTED}")
    author = _get(raw, "author")
    if not isinstance(author, str):
        raise SessionImportError(f"{where}: no author")
    content_raw = raw.get("content")
    try:
        content = read_content(content_raw, f"{where}.content") if content_raw is not None else None
    except SchemaError as exc:
        raise SessionImportError(str(exc).splitlines()[0]) from None
    return _Event(invocation_id, author, content, raw)


def _invocation(invocation_id: str, events: list[_Event]) -> Invocation:
    user_content = Content(parts=[])
    created = 0.0
    final: _Event | None = None
    kept: list[_Event] = []
    for event in events:
        if event.author.lower() == _USER:
            if event.content is not None:
                user_content = event.content
                stamp = _get(event.raw, "timestamp")
                created = float(stamp) if isinstance(stamp, (int, float)) else 0.0
            continue
        if event.parts():
            if event.is_final_response():
                # A live response is audio plus a text transcript: the text one is the gradable response.
                final_has_text = final is not None and any(p.text for p in final.parts())
                if not final_has_text or any(p.text for p in event.parts()):
                    final = event
            if event.worth_keeping():
                kept.append(event)
        elif _get(event.raw, "grounding_metadata") is not None:
            kept.append(event)
    invocation_events = [
        InvocationEvent(
            author=e.author,
            # The final response's text is on final_response; its calls stay here for the trajectory.
            content=e.content if e is not final or e.has_calls() else None,
            grounding_metadata=_snake_keys(_get(e.raw, "grounding_metadata")),
            usage_metadata=_snake_keys(_get(e.raw, "usage_metadata")),
            model_version=_get(e.raw, "model_version"),
        )
        for e in kept
    ]
    return Invocation(
        invocation_id=invocation_id,
        user_content=user_content,
        final_response=final.content if final is not None else None,
        intermediate_data=InvocationEvents(invocation_events=invocation_events),
        creation_timestamp=created,
    )


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """What a session file holds, as a case: its id, app and user, and its turns."""

    session_id: str
    case: EvalCase


def case_from_session(data: Any, *, eval_id: str | None, now: float) -> ImportedSession:
    """The eval case a session's JSON makes (`eval_id` defaults to the session's id). Raises
    SessionImportError for anything that is not an ADK session with at least one invocation."""
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise SessionImportError(f"this is {_what_it_is(data)}, not {EXPECTED}")
    session_id = data.get("id")
    app_name = _get(data, "app_name")
    user_id = _get(data, "user_id")
    for name, value in (("id", session_id), ("app_name (appName)", app_name), ("user_id (userId)", user_id)):
        if not isinstance(value, str) or not value:
            raise SessionImportError(f"the session has no {name}; expected {EXPECTED}")
    assert isinstance(session_id, str) and isinstance(app_name, str) and isinstance(user_id, str)
    groups: dict[str, list[_Event]] = {}
    for n, raw in enumerate(data["events"]):
        event = _event(raw, n)
        groups.setdefault(event.invocation_id, []).append(event)
    if not groups:
        raise SessionImportError(f"session {session_id!r} has no events: nothing to import")
    conversation = [_invocation(invocation_id, events) for invocation_id, events in groups.items()]
    if not any(inv.user_content.parts for inv in conversation):
        raise SessionImportError(f"session {session_id!r} has no user message: nothing to replay")
    case_id = eval_id if eval_id is not None else session_id
    if not case_id.strip():
        raise SessionImportError("the case id must not be empty")
    case = EvalCase(
        eval_id=case_id,
        conversation=conversation,
        session_input=SessionInput(app_name=app_name, user_id=user_id, state={}),
        creation_timestamp=now,
    )
    return ImportedSession(session_id, case)


@dataclass(frozen=True, slots=True)
class SessionImport:
    """What an import wrote: the case's id, its number of turns, the eval set file and whether it is new."""

    eval_id: str
    session_id: str
    turns: int
    eval_set: Path
    created: bool


def import_session(session_file: Path, eval_set: Path, *, eval_id: str | None = None,
                   now: float | None = None) -> SessionImport:
    """Read an ADK session file and append it as a case to an eval set file (created when it does not exist
    and is named `*.evalset.json`), written as the dashboard's accept writes it. Raises SessionImportError
    (the session), or EditError / LoadError (the eval set); the eval set is untouched on any error."""
    from .edits import add_case
    from .errors import LoadError
    from .load import eval_set_id_for, loads_json, read_regular_file

    session_file, eval_set = Path(session_file), Path(eval_set)
    try:
        data = loads_json(read_regular_file(session_file), session_file)
    except LoadError as exc:
        raise SessionImportError(str(exc).splitlines()[0]) from None
    try:
        imported = case_from_session(data, eval_id=eval_id, now=time.time() if now is None else now)
    except SessionImportError as exc:
        raise SessionImportError(f"{session_file}: {exc}") from None
    if not eval_set.exists() and not eval_set.name.endswith(".evalset.json"):
        raise SessionImportError(f"{eval_set}: no such eval set (a new one is made only for a name ending "
                                 "in .evalset.json)")
    case = imported.case
    created = add_case(eval_set, case.to_dict(), eval_set_id=eval_set_id_for(eval_set))
    return SessionImport(case.eval_id, imported.session_id, len(case.conversation or []), eval_set, created)
