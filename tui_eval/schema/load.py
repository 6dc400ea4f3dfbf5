"""Read eval set files (current schema and both legacy `.test.json` forms) into the data model.

One pass over the parsed JSON, checking types and key names as google-adk's pydantic models would
(snake_case at the top level, camelCase aliases below it, unknown keys rejected where ADK rejects
them) and raising SchemaError with the JSON path of the first fault.
"""

from __future__ import annotations

import gc
import uuid
from pathlib import Path
from typing import Any, NoReturn

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


class Aliases(dict[str, str]):
    """key as written -> field name, accepting snake_case and camelCase spellings."""

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__({n: n for n in names})
        self.update({_camel(n): n for n in names})
        self.snake = frozenset(names)


def _aliases(*names: str) -> Aliases:
    return Aliases(names)


# A JSON path is a str (the root, "$") or a chain (parent, key) with key a field name or an index.
# Chains are built only where a fault is found, so a 40 MB file pays for no path strings.
JPath = Any


def render_path(path: JPath) -> str:
    parts: list[str] = []
    while isinstance(path, tuple):
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return str(path) + "".join(reversed(parts))


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _fail(path: JPath, what: str, value: Any) -> NoReturn:
    raise SchemaError(render_path(path), f"expected {what}, got {_type_name(value)}")


def _obj(value: Any, path: JPath) -> dict[str, Any]:
    if type(value) is not dict:
        _fail(path, "an object", value)
    return value


def _list(value: Any, path: JPath) -> list[Any]:
    if type(value) is not list:
        _fail(path, "an array", value)
    return value


def _str(value: Any, path: JPath) -> str:
    if type(value) is not str:
        _fail(path, "a string", value)
    return value


def _opt_str(value: Any, path: JPath) -> str | None:
    if value is not None and type(value) is not str:
        _fail(path, "a string", value)
    return value


def _num(value: Any, path: JPath) -> float:
    if type(value) is float:
        return value
    if type(value) is not int:
        _fail(path, "a number", value)
    return float(value)


def _opt_num(value: Any, path: JPath) -> float | None:
    return None if value is None else _num(value, path)


_EMPTY: dict[str, Any] = {}


def _fields(
    data: dict[str, Any], path: JPath, aliases: Aliases, *, extra: str = "forbid"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split an object into known fields (by snake name) and the rest; reject the rest if forbidden.

    The common case, every key already a snake_case field name, returns `data` itself (read-only).
    """
    if data.keys() <= aliases.snake:
        return data, _EMPTY
    known: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in data.items():
        name = aliases.get(key)
        if name is None:
            if extra == "forbid":
                raise SchemaError(render_path((path, key)), f"unknown key {key!r}")
            if extra == "allow":
                rest[key] = value
            continue
        if name in known:
            raise SchemaError(render_path((path, key)), f"{name!r} is given twice (snake_case and camelCase)")
        known[name] = value
    return known, rest


def _require(known: dict[str, Any], name: str, path: JPath) -> Any:
    try:
        return known[name]
    except KeyError:
        raise SchemaError(render_path(path), f"missing required key {name!r}") from None


_FC = _aliases("id", "name", "args", "partial_args", "will_continue")
_FR = _aliases("id", "name", "response", "will_continue", "scheduling", "parts")
_FC_BASIC = frozenset(("id", "name", "args"))
_FR_BASIC = frozenset(("id", "name", "response"))


def _read_named_payload(
    data: Any, path: JPath, aliases: Aliases, basic: frozenset[str], payload: str
) -> tuple[str | None, dict[str, Any] | None, str | None, dict[str, Any] | None]:
    """(name, payload object, id, extra keys or None) of a function call or response: both are a name,
    an id and one object (`args` / `response`), plus rarer genai fields kept as written."""
    if type(data) is not dict:
        _fail(path, "an object", data)
    known = data if data.keys() <= basic else _fields(data, path, aliases)[0]
    get = known.get
    name, body, call_id = get("name"), get(payload), get("id")
    if body is not None and type(body) is not dict:
        _fail((path, payload), "an object", body)
    if name is not None and type(name) is not str:
        _fail((path, "name"), "a string", name)
    if call_id is not None and type(call_id) is not str:
        _fail((path, "id"), "a string", call_id)
    extra = None if known is data else {k: v for k, v in known.items() if k not in basic and v is not None}
    return name, body, call_id, extra


def read_function_call(data: Any, path: JPath) -> FunctionCall:
    name, args, call_id, extra = _read_named_payload(data, path, _FC, _FC_BASIC, "args")
    return FunctionCall(name, args, call_id) if extra is None else FunctionCall(name, args, call_id, extra)


def read_function_response(data: Any, path: JPath) -> FunctionResponse:
    name, response, call_id, extra = _read_named_payload(data, path, _FR, _FR_BASIC, "response")
    if extra is None:
        return FunctionResponse(name, response, call_id)
    return FunctionResponse(name, response, call_id, extra)


def read_part(data: Any, path: JPath) -> Part:
    data = _obj(data, path)
    text = data.get("text")
    if len(data) == 1 and type(text) is str:  # the overwhelmingly common text-only part
        return Part(text)
    part = Part()
    for key, value in data.items():
        if key == "text":
            part.text = _opt_str(value, (path, "text"))
        elif key in ("function_call", "functionCall"):
            if value is not None:
                part.function_call = read_function_call(value, (path, key))
        elif key in ("function_response", "functionResponse"):
            if value is not None:
                part.function_response = read_function_response(value, (path, key))
        elif value is not None:
            # Other genai Part fields (inline_data, thought, ...) are kept as written, unread.
            part.extra[key] = value
    return part


_CONTENT = _aliases("parts", "role")


def read_content(data: Any, path: JPath) -> Content:
    if type(data) is not dict:
        _fail(path, "an object", data)
    known = data if data.keys() <= _CONTENT.snake else _fields(data, path, _CONTENT)[0]
    parts = known.get("parts")
    role = known.get("role")
    if role is not None and type(role) is not str:
        _fail((path, "role"), "a string", role)
    if parts is None:
        return Content(None, role)
    if type(parts) is not list:
        _fail((path, "parts"), "an array", parts)
    out = []
    for i, p in enumerate(parts):
        # Inline the overwhelmingly common text-only part: this loop runs for every turn's contents.
        if type(p) is dict and len(p) == 1 and type(text := p.get("text")) is str:
            out.append(Part(text))
        else:
            out.append(read_part(p, ((path, "parts"), i)))
    return Content(out, role)


def _opt_content(data: Any, path: JPath) -> Content | None:
    return None if data is None else read_content(data, path)


_ID1 = _aliases("tool_uses", "tool_responses", "intermediate_responses")
_ID2 = _aliases("invocation_events")
_EVENT = _aliases("author", "content", "grounding_metadata", "usage_metadata", "model_version")


def read_intermediate_data(data: Any, path: JPath) -> IntermediateData | InvocationEvents | None:
    if data is None:
        return None
    data = _obj(data, path)
    shape2 = [] if data.keys() <= _ID1.keys() else [k for k in data if k in _ID2]
    if shape2:
        shape1 = [k for k in data if k in _ID1]
        if shape1:
            raise SchemaError(
                render_path(path),
                f"mixes both intermediate_data shapes ({shape1[0]!r} and {shape2[0]!r}); use one",
            )
        known, _ = _fields(data, path, _ID2)
        events = []
        epath_list = (path, "invocation_events")
        for i, ev in enumerate(_list(known["invocation_events"], epath_list)):
            epath = (epath_list, i)
            ek, _ = _fields(_obj(ev, epath), epath, _EVENT, extra="ignore")
            events.append(
                InvocationEvent(
                    author=_str(_require(ek, "author", epath), (epath, "author")),
                    content=_opt_content(ek.get("content"), (epath, "content")),
                    extra={k: v for k, v in ek.items() if k not in ("author", "content") and v is not None},
                )
            )
        return InvocationEvents(events)
    known = data if data.keys() <= _ID1.snake else _fields(data, path, _ID1)[0]
    upath = (path, "tool_uses")
    tool_uses = [read_function_call(c, (upath, i)) for i, c in enumerate(_list(known.get("tool_uses", []), upath))]
    rpath = (path, "tool_responses")
    tool_responses = [
        read_function_response(r, (rpath, i)) for i, r in enumerate(_list(known.get("tool_responses", []), rpath))
    ]
    responses: list[tuple[str, list[Part]]] = []
    ipath = (path, "intermediate_responses")
    for i, pair in enumerate(_list(known.get("intermediate_responses", []), ipath)):
        ppath = (ipath, i)
        if type(pair) is not list or len(pair) != 2:
            raise SchemaError(render_path(ppath), "expected an [author, [parts]] pair")
        author = _str(pair[0], (ppath, 0))
        parts_path = (ppath, 1)
        parts = [read_part(p, (parts_path, j)) for j, p in enumerate(_list(pair[1], parts_path))]
        responses.append((author, parts))
    return IntermediateData(tool_uses, tool_responses, responses)


_RUBRIC = _aliases("rubric_id", "rubric_content", "description", "type")
_RUBRIC_CONTENT = _aliases("text_property")


def read_rubric(data: Any, path: JPath) -> Rubric:
    known, _ = _fields(_obj(data, path), path, _RUBRIC)
    cpath = (path, "rubric_content")
    ck, _ = _fields(_obj(_require(known, "rubric_content", path), cpath), cpath, _RUBRIC_CONTENT)
    return Rubric(
        rubric_id=_str(_require(known, "rubric_id", path), (path, "rubric_id")),
        rubric_content=RubricContent(_opt_str(ck.get("text_property"), (cpath, "text_property"))),
        description=_opt_str(known.get("description"), (path, "description")),
        type=_opt_str(known.get("type"), (path, "type")),
    )


def read_rubrics(data: Any, path: JPath) -> list[Rubric] | None:
    if data is None:
        return None
    return [read_rubric(r, (path, i)) for i, r in enumerate(_list(data, path))]


_AGENT_DETAILS = _aliases("name", "instructions", "tool_declarations")


def read_app_details(data: Any, path: JPath) -> AppDetails | None:
    if data is None:
        return None
    known, _ = _fields(_obj(data, path), path, _aliases("agent_details"))
    details = {}
    dpath = (path, "agent_details")
    for name, agent in _obj(known.get("agent_details", {}), dpath).items():
        apath = (dpath, name)
        ak, _ = _fields(_obj(agent, apath), apath, _AGENT_DETAILS)
        details[name] = AgentDetails(
            name=_str(_require(ak, "name", apath), (apath, "name")),
            instructions=_str(ak.get("instructions", ""), (apath, "instructions")),
            tool_declarations=_list(ak.get("tool_declarations", []), (apath, "tool_declarations")),
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


# An invocation with only these keys has none of the rarer fields (a count is not enough: a hand-written
# turn may leave out creation_timestamp and still carry rubrics or app_details).
_COMMON_INVOCATION_KEYS = frozenset(
    {"invocation_id", "user_content", "final_response", "intermediate_data", "creation_timestamp"}
)


def read_invocation(data: Any, path: JPath) -> Invocation:
    known, _ = _fields(_obj(data, path), path, _INVOCATION)
    get = known.get
    final = get("final_response")
    inter = get("intermediate_data")
    ts = get("creation_timestamp", 0.0)
    inv = Invocation(
        read_content(_require(known, "user_content", path), (path, "user_content")),
        _str(get("invocation_id", ""), (path, "invocation_id")),
        None if final is None else read_content(final, (path, "final_response")),
        None if inter is None else read_intermediate_data(inter, (path, "intermediate_data")),
        ts if type(ts) is float else _num(ts, (path, "creation_timestamp")),
    )
    if not known.keys() <= _COMMON_INVOCATION_KEYS:  # the rarer fields
        inv.duration = _opt_num(get("duration"), (path, "duration"))
        inv.model_duration = _opt_num(get("model_duration"), (path, "model_duration"))
        inv.tool_duration = _opt_num(get("tool_duration"), (path, "tool_duration"))
        inv.rubrics = read_rubrics(get("rubrics"), (path, "rubrics"))
        inv.app_details = read_app_details(get("app_details"), (path, "app_details"))
    return inv


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


def read_eval_case(data: Any, path: JPath) -> EvalCase:
    known, extra = _fields(_obj(data, path), path, _CASE, extra="allow")
    eval_id = _str(_require(known, "eval_id", path), (path, "eval_id"))
    conversation = known.get("conversation")
    scenario = known.get("conversation_scenario")
    if (conversation is None) == (scenario is None):
        raise SchemaError(
            render_path(path), "exactly one of 'conversation' and 'conversation_scenario' must be given"
        )
    if conversation is not None:
        cpath = (path, "conversation")
        conversation = [read_invocation(inv, (cpath, i)) for i, inv in enumerate(_list(conversation, cpath))]
    if scenario is not None:
        spath = (path, "conversation_scenario")
        sk, _ = _fields(_obj(scenario, spath), spath, _SCENARIO)
        scenario = ConversationScenario(
            starting_prompt=_str(_require(sk, "starting_prompt", spath), (spath, "starting_prompt")),
            conversation_plan=_str(_require(sk, "conversation_plan", spath), (spath, "conversation_plan")),
            user_persona=sk.get("user_persona"),
        )
    session_input = known.get("session_input")
    if session_input is not None:
        spath = (path, "session_input")
        sk, sextra = _fields(_obj(session_input, spath), spath, _SESSION, extra="allow")
        session_input = SessionInput(
            app_name=_str(_require(sk, "app_name", spath), (spath, "app_name")),
            user_id=_str(_require(sk, "user_id", spath), (spath, "user_id")),
            state=_obj(sk.get("state", {}), (spath, "state")),
            session_id=_opt_str(sk.get("session_id"), (spath, "session_id")),
            extra=dict(sextra),
        )
    final_state = known.get("final_session_state", {})
    if final_state is not None:
        _obj(final_state, (path, "final_session_state"))
    return EvalCase(
        eval_id=eval_id,
        conversation=conversation,
        conversation_scenario=scenario,
        session_input=session_input,
        creation_timestamp=_num(known.get("creation_timestamp", 0.0), (path, "creation_timestamp")),
        rubrics=read_rubrics(known.get("rubrics"), (path, "rubrics")),
        final_session_state=final_state,
        extra=dict(extra),
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
    cases_path = ("$", "eval_cases")
    cases = [
        read_eval_case(c, (cases_path, i)) for i, c in enumerate(_list(_require(data, "eval_cases", "$"), cases_path))
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


def _legacy_turn(row: Any, path: str, stable_id: str) -> Invocation:
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
    # ADK gives legacy turns a random id and the load time; ours are derived from the turn's place,
    # so reloading an unchanged file changes nothing (the live loop re-runs only real edits).
    return Invocation(
        invocation_id=str(uuid.uuid5(uuid.NAMESPACE_URL, stable_id)),
        user_content=Content.from_text(query, "user"),
        final_response=Content.from_text(reference, "model"),
        intermediate_data=IntermediateData(tool_uses=tool_uses, intermediate_responses=responses),
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
                    conversation=[
                        _legacy_turn(t, f"{path}.data[{j}]", f"tui-eval:{eval_set_id}/{i}/{j}")
                        for j, t in enumerate(turns)
                    ],
                    session_input=_legacy_session(entry.get("initial_session"), path + ".initial_session"),
                )
            )
    else:
        cases = [
            EvalCase(
                eval_id=eval_set_id,
                conversation=[
                    _legacy_turn(row, f"$[{i}]", f"tui-eval:{eval_set_id}/0/{i}") for i, row in enumerate(data)
                ],
            )
        ]
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=cases)


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
    # Building ~10^5 small objects triggers the cyclic GC over and over, for nothing: none are garbage.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(raw, path)
    finally:
        if gc_was_enabled:
            gc.enable()


def _parse(raw: bytes, path: Path) -> tuple[EvalSet, bool]:
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

