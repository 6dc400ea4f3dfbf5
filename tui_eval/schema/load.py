"""Read eval set files (current schema and both legacy `.test.json` forms) into the data model.

One pass over the parsed JSON, checking types and key names as google-adk's pydantic models would
(snake_case at the top level, camelCase aliases below it, unknown keys rejected where ADK rejects
them) and raising SchemaError with the JSON path of the first fault.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from .errors import LoadError, SchemaError, syntax_error
from .model import (
    AgentDetails,
    AppDetails,
    Content,
    ConversationScenario,
    EvalCase,
    EvalSet,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
    Rubric,
    RubricContent,
    SessionInput,
)

EVAL_FILE_SUFFIXES = (".evalset.json", ".test.json")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _aliases(*names: str) -> dict[str, str]:
    """key as written -> field name, accepting snake_case and camelCase spellings."""
    out = {n: n for n in names}
    out.update({_camel(n): n for n in names})
    return out


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _expect(value: Any, kind: type | tuple[type, ...], path: str, what: str) -> Any:
    if not isinstance(value, kind) or (kind in (int, float, (int, float)) and isinstance(value, bool)):
        raise SchemaError(path, f"expected {what}, got {_type_name(value)}")
    return value


def _obj(value: Any, path: str) -> dict[str, Any]:
    return _expect(value, dict, path, "an object")


def _str(value: Any, path: str) -> str:
    return _expect(value, str, path, "a string")


def _opt_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _num(value: Any, path: str) -> float:
    return float(_expect(value, (int, float), path, "a number"))


def _opt_num(value: Any, path: str) -> float | None:
    return None if value is None else _num(value, path)


def _list(value: Any, path: str) -> list[Any]:
    return _expect(value, list, path, "an array")


def _fields(
    data: dict[str, Any], path: str, aliases: dict[str, str], *, extra: str = "forbid"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split an object into known fields (by snake name) and the rest; reject the rest if forbidden."""
    known: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in data.items():
        name = aliases.get(key)
        if name is None:
            if extra == "forbid":
                raise SchemaError(f"{path}.{key}", f"unknown key {key!r}")
            if extra == "allow":
                rest[key] = value
            continue
        if name in known:
            raise SchemaError(f"{path}.{key}", f"{name!r} is given twice (snake_case and camelCase)")
        known[name] = value
    return known, rest


def _require(known: dict[str, Any], name: str, path: str) -> Any:
    if name not in known:
        raise SchemaError(path, f"missing required key {name!r}")
    return known[name]


_FC = _aliases("id", "name", "args", "partial_args", "will_continue")
_FR = _aliases("id", "name", "response", "will_continue", "scheduling", "parts")


def read_function_call(data: Any, path: str) -> FunctionCall:
    known, _ = _fields(_obj(data, path), path, _FC)
    args = known.get("args")
    if args is not None:
        _obj(args, path + ".args")
    extra = {k: v for k, v in known.items() if k not in ("id", "name", "args") and v is not None}
    name = known.get("name")
    return FunctionCall(
        name=_str(name, path + ".name") if name is not None else "",
        args=args,
        id=_opt_str(known.get("id"), path + ".id"),
        extra=extra,
    )


def read_function_response(data: Any, path: str) -> FunctionResponse:
    known, _ = _fields(_obj(data, path), path, _FR)
    response = known.get("response")
    if response is not None:
        _obj(response, path + ".response")
    extra = {k: v for k, v in known.items() if k not in ("id", "name", "response") and v is not None}
    name = known.get("name")
    return FunctionResponse(
        name=_str(name, path + ".name") if name is not None else "",
        response=response,
        id=_opt_str(known.get("id"), path + ".id"),
        extra=extra,
    )


def read_part(data: Any, path: str) -> Part:
    data = _obj(data, path)
    part = Part()
    for key, value in data.items():
        if key == "text":
            part.text = _opt_str(value, path + ".text")
        elif key in ("function_call", "functionCall"):
            if value is not None:
                part.function_call = read_function_call(value, f"{path}.{key}")
        elif key in ("function_response", "functionResponse"):
            if value is not None:
                part.function_response = read_function_response(value, f"{path}.{key}")
        elif value is not None:
            # Other genai Part fields (inline_data, thought, ...) are kept as written, unread.
            part.extra[key] = value
    return part


_CONTENT = _aliases("parts", "role")


def read_content(data: Any, path: str) -> Content:
    known, _ = _fields(_obj(data, path), path, _CONTENT)
    parts = known.get("parts")
    if parts is not None:
        parts = [read_part(p, f"{path}.parts[{i}]") for i, p in enumerate(_list(parts, path + ".parts"))]
    return Content(parts=parts, role=_opt_str(known.get("role"), path + ".role"))


def _opt_content(data: Any, path: str) -> Content | None:
    return None if data is None else read_content(data, path)


_ID1 = _aliases("tool_uses", "tool_responses", "intermediate_responses")
_ID2 = _aliases("invocation_events")
_EVENT = _aliases("author", "content", "grounding_metadata", "usage_metadata", "model_version")


def read_intermediate_data(data: Any, path: str) -> IntermediateData | InvocationEvents | None:
    if data is None:
        return None
    data = _obj(data, path)
    shape1 = [k for k in data if k in _ID1]
    shape2 = [k for k in data if k in _ID2]
    if shape1 and shape2:
        raise SchemaError(
            path,
            f"mixes both intermediate_data shapes ({shape1[0]!r} and {shape2[0]!r}); use one",
        )
    if shape2:
        known, _ = _fields(data, path, _ID2)
        events = []
        for i, ev in enumerate(_list(known["invocation_events"], path + ".invocation_events")):
            epath = f"{path}.invocation_events[{i}]"
            ek, _ = _fields(_obj(ev, epath), epath, _EVENT, extra="ignore")
            events.append(
                InvocationEvent(
                    author=_str(_require(ek, "author", epath), epath + ".author"),
                    content=_opt_content(ek.get("content"), epath + ".content"),
                    extra={
                        k: v
                        for k, v in ek.items()
                        if k not in ("author", "content") and v is not None
                    },
                )
            )
        return InvocationEvents(events)
    known, _ = _fields(data, path, _ID1)
    tool_uses = [
        read_function_call(c, f"{path}.tool_uses[{i}]")
        for i, c in enumerate(_list(known.get("tool_uses", []), path + ".tool_uses"))
    ]
    tool_responses = [
        read_function_response(r, f"{path}.tool_responses[{i}]")
        for i, r in enumerate(_list(known.get("tool_responses", []), path + ".tool_responses"))
    ]
    responses: list[tuple[str, list[Part]]] = []
    for i, pair in enumerate(_list(known.get("intermediate_responses", []), path + ".intermediate_responses")):
        ppath = f"{path}.intermediate_responses[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise SchemaError(ppath, "expected an [author, [parts]] pair")
        author = _str(pair[0], ppath + "[0]")
        parts = [read_part(p, f"{ppath}[1][{j}]") for j, p in enumerate(_list(pair[1], ppath + "[1]"))]
        responses.append((author, parts))
    return IntermediateData(tool_uses, tool_responses, responses)


_RUBRIC = _aliases("rubric_id", "rubric_content", "description", "type")
_RUBRIC_CONTENT = _aliases("text_property")


def read_rubric(data: Any, path: str) -> Rubric:
    known, _ = _fields(_obj(data, path), path, _RUBRIC)
    cpath = path + ".rubric_content"
    ck, _ = _fields(_obj(_require(known, "rubric_content", path), cpath), cpath, _RUBRIC_CONTENT)
    return Rubric(
        rubric_id=_str(_require(known, "rubric_id", path), path + ".rubric_id"),
        rubric_content=RubricContent(_opt_str(ck.get("text_property"), cpath + ".text_property")),
        description=_opt_str(known.get("description"), path + ".description"),
        type=_opt_str(known.get("type"), path + ".type"),
    )


def read_rubrics(data: Any, path: str) -> list[Rubric] | None:
    if data is None:
        return None
    return [read_rubric(r, f"{path}[{i}]") for i, r in enumerate(_list(data, path))]


_AGENT_DETAILS = _aliases("name", "instructions", "tool_declarations")


def read_app_details(data: Any, path: str) -> AppDetails | None:
    if data is None:
        return None
    known, _ = _fields(_obj(data, path), path, _aliases("agent_details"))
    details = {}
    dpath = path + ".agent_details"
    for name, agent in _obj(known.get("agent_details", {}), dpath).items():
        apath = f"{dpath}.{name}"
        ak, _ = _fields(_obj(agent, apath), apath, _AGENT_DETAILS)
        details[name] = AgentDetails(
            name=_str(_require(ak, "name", apath), apath + ".name"),
            instructions=_str(ak.get("instructions", ""), apath + ".instructions"),
            tool_declarations=_list(ak.get("tool_declarations", []), apath + ".tool_declarations"),
        )
    return AppDetails(details)


_INVOCATION = _aliases(
    "invocation_id",
    "user_content",
    "final_response",
    "intermediate_data",
    "creation_timestamp",
    "duration",
    "model_duration",
    "tool_duration",
    "rubrics",
    "app_details",
)


def read_invocation(data: Any, path: str) -> Invocation:
    known, _ = _fields(_obj(data, path), path, _INVOCATION)
    return Invocation(
        user_content=read_content(_require(known, "user_content", path), path + ".user_content"),
        invocation_id=_str(known.get("invocation_id", ""), path + ".invocation_id"),
        final_response=_opt_content(known.get("final_response"), path + ".final_response"),
        intermediate_data=read_intermediate_data(known.get("intermediate_data"), path + ".intermediate_data"),
        creation_timestamp=_num(known.get("creation_timestamp", 0.0), path + ".creation_timestamp"),
        duration=_opt_num(known.get("duration"), path + ".duration"),
        model_duration=_opt_num(known.get("model_duration"), path + ".model_duration"),
        tool_duration=_opt_num(known.get("tool_duration"), path + ".tool_duration"),
        rubrics=read_rubrics(known.get("rubrics"), path + ".rubrics"),
        app_details=read_app_details(known.get("app_details"), path + ".app_details"),
    )


_SESSION = _aliases("app_name", "user_id", "session_id", "state")
_SCENARIO = _aliases("starting_prompt", "conversation_plan", "user_persona")
_CASE = _aliases(
    "eval_id",
    "conversation",
    "conversation_scenario",
    "session_input",
    "creation_timestamp",
    "rubrics",
    "final_session_state",
)


def read_eval_case(data: Any, path: str) -> EvalCase:
    known, extra = _fields(_obj(data, path), path, _CASE, extra="allow")
    eval_id = _str(_require(known, "eval_id", path), path + ".eval_id")
    conversation = known.get("conversation")
    scenario = known.get("conversation_scenario")
    if (conversation is None) == (scenario is None):
        raise SchemaError(path, "exactly one of 'conversation' and 'conversation_scenario' must be given")
    if conversation is not None:
        conversation = [
            read_invocation(inv, f"{path}.conversation[{i}]")
            for i, inv in enumerate(_list(conversation, path + ".conversation"))
        ]
    if scenario is not None:
        spath = path + ".conversation_scenario"
        sk, _ = _fields(_obj(scenario, spath), spath, _SCENARIO)
        scenario = ConversationScenario(
            starting_prompt=_str(_require(sk, "starting_prompt", spath), spath + ".starting_prompt"),
            conversation_plan=_str(_require(sk, "conversation_plan", spath), spath + ".conversation_plan"),
            user_persona=sk.get("user_persona"),
        )
    session_input = known.get("session_input")
    if session_input is not None:
        spath = path + ".session_input"
        sk, sextra = _fields(_obj(session_input, spath), spath, _SESSION, extra="allow")
        session_input = SessionInput(
            app_name=_str(_require(sk, "app_name", spath), spath + ".app_name"),
            user_id=_str(_require(sk, "user_id", spath), spath + ".user_id"),
            state=_obj(sk.get("state", {}), spath + ".state"),
            session_id=_opt_str(sk.get("session_id"), spath + ".session_id"),
            extra=sextra,
        )
    final_state = known.get("final_session_state", {})
    if final_state is not None:
        _obj(final_state, path + ".final_session_state")
    return EvalCase(
        eval_id=eval_id,
        conversation=conversation,
        conversation_scenario=scenario,
        session_input=session_input,
        creation_timestamp=_num(known.get("creation_timestamp", 0.0), path + ".creation_timestamp"),
        rubrics=read_rubrics(known.get("rubrics"), path + ".rubrics"),
        final_session_state=final_state,
        extra=extra,
    )


_SET_KEYS = ("eval_set_id", "name", "description", "eval_cases", "creation_timestamp")


def read_eval_set(data: Any) -> EvalSet:
    """The current schema. Top-level keys are snake_case only, as in google-adk."""
    data = _obj(data, "$")
    for key in data:
        if key not in _SET_KEYS:
            hint = ""
            snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
            if snake in _SET_KEYS:
                hint = f" (top-level keys are snake_case: use {snake!r})"
            raise SchemaError(f"$.{key}", f"unknown top-level key {key!r}{hint}")
    eval_set_id = _str(_require(data, "eval_set_id", "$"), "$.eval_set_id")
    cases = [
        read_eval_case(c, f"$.eval_cases[{i}]")
        for i, c in enumerate(_list(_require(data, "eval_cases", "$"), "$.eval_cases"))
    ]
    seen: set[str] = set()
    for i, case in enumerate(cases):
        if case.eval_id in seen:
            raise SchemaError(f"$.eval_cases[{i}].eval_id", f"duplicate eval_id {case.eval_id!r}")
        seen.add(case.eval_id)
    return EvalSet(
        eval_set_id=eval_set_id,
        eval_cases=cases,
        name=_opt_str(data.get("name"), "$.name"),
        description=_opt_str(data.get("description"), "$.description"),
        creation_timestamp=_num(data.get("creation_timestamp", 0.0), "$.creation_timestamp"),
    )


# ---- legacy forms ---------------------------------------------------------------------------


def _legacy_turn(row: Any, path: str) -> Invocation:
    row = _obj(row, path)
    query = _str(_require(row, "query", path), path + ".query")
    reference = row.get("reference", "")
    reference = _str(reference, path + ".reference") if reference is not None else ""
    tool_uses = []
    for i, use in enumerate(_list(row.get("expected_tool_use", []) or [], path + ".expected_tool_use")):
        upath = f"{path}.expected_tool_use[{i}]"
        use = _obj(use, upath)
        tool_uses.append(
            FunctionCall(
                name=_str(_require(use, "tool_name", upath), upath + ".tool_name"),
                args=_obj(use.get("tool_input", {}), upath + ".tool_input"),
            )
        )
    responses = []
    rows = row.get("expected_intermediate_agent_responses", []) or []
    for i, resp in enumerate(_list(rows, path + ".expected_intermediate_agent_responses")):
        rpath = f"{path}.expected_intermediate_agent_responses[{i}]"
        resp = _obj(resp, rpath)
        responses.append(
            (
                _str(_require(resp, "author", rpath), rpath + ".author"),
                [Part(text=_str(_require(resp, "text", rpath), rpath + ".text"))],
            )
        )
    return Invocation(
        invocation_id=str(uuid.uuid4()),
        user_content=Content.from_text(query, "user"),
        final_response=Content.from_text(reference, "model"),
        intermediate_data=IntermediateData(tool_uses=tool_uses, intermediate_responses=responses),
        creation_timestamp=time.time(),
    )


def _legacy_session(data: Any, path: str) -> SessionInput | None:
    if not data:
        return None
    data = _obj(data, path)
    return SessionInput(
        app_name=_str(data.get("app_name", ""), path + ".app_name"),
        user_id=_str(data.get("user_id", ""), path + ".user_id"),
        state=_obj(data.get("state", {}), path + ".state"),
    )


def read_legacy(data: list[Any], eval_set_id: str) -> EvalSet:
    """Both legacy list forms: rows of {query, ...} (one case), or [{name, data, initial_session}]."""
    if not data:
        raise SchemaError("$", "an empty list is not an eval set")
    first = data[0]
    if isinstance(first, dict) and "data" in first and "query" not in first:
        cases = []
        for i, entry in enumerate(data):
            path = f"$[{i}]"
            entry = _obj(entry, path)
            turns = _list(_require(entry, "data", path), path + ".data")
            cases.append(
                EvalCase(
                    eval_id=_str(_require(entry, "name", path), path + ".name"),
                    conversation=[_legacy_turn(t, f"{path}.data[{j}]") for j, t in enumerate(turns)],
                    session_input=_legacy_session(entry.get("initial_session"), path + ".initial_session"),
                    creation_timestamp=time.time(),
                )
            )
    else:
        cases = [
            EvalCase(
                eval_id=eval_set_id,
                conversation=[_legacy_turn(row, f"$[{i}]") for i, row in enumerate(data)],
                creation_timestamp=time.time(),
            )
        ]
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=cases, creation_timestamp=time.time())


def eval_set_id_for(path: Path) -> str:
    """The id a legacy file gets: its name without the eval-file suffix."""
    name = path.name
    for suffix in EVAL_FILE_SUFFIXES + (".json",):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def parse_eval_set(raw: bytes, path: str | Path) -> tuple[EvalSet, bool]:
    """Parse bytes into an EvalSet; returns (eval_set, is_legacy). Raises LoadError."""
    path = Path(path)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise syntax_error(path, exc) from None
    try:
        if isinstance(data, list):
            return read_legacy(data, eval_set_id_for(path)), True
        return read_eval_set(data), False
    except SchemaError as exc:
        raise exc.at(path) from None


def load_eval_set(path: str | Path) -> EvalSet:
    """Read one eval file. Raises LoadError naming the file (and place) on any fault."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LoadError(str(path), f"cannot read file: {exc.strerror or exc}") from None
    return parse_eval_set(raw, path)[0]


def is_eval_file(path: Path) -> bool:
    return path.name.endswith(EVAL_FILE_SUFFIXES)

