"""The two legacy `.test.json` list forms (SPEC 2.4), read into the current EvalSet.

Rows of `{query, expected_tool_use, expected_intermediate_agent_responses, reference}` are ONE case, one
row one turn; the older `[{name, data, initial_session}]` is one case per entry. `tui-eval migrate`
writes the result with `EvalSet.to_dict()`.
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

from .errors import SchemaError, json_type_name
from .model import Content, EvalCase, EvalSet, FunctionCall, IntermediateData, Invocation, Part, SessionInput


def _fail(path: str, what: str, value: Any) -> NoReturn:
    raise SchemaError(path, f"expected {what}, got {json_type_name(value)}")


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(path, "an object", value)
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        _fail(path, "an array", value)
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _fail(path, "a string", value)
    return value


def _require(data: dict[str, Any], key: str, path: str) -> Any:
    if key not in data:
        raise SchemaError(path, f"missing required key {key!r}")
    return data[key]


def _tool_use(use: Any, path: str) -> FunctionCall:
    use = _obj(use, path)
    args = use.get("tool_input", {})
    # ADK builds FunctionCall(name=tool_name, args=tool_input): a null tool_input is a call without args.
    if args is not None:
        _obj(args, path + ".tool_input")
    return FunctionCall(name=_str(_require(use, "tool_name", path), path + ".tool_name"), args=args)


def _turn(row: Any, path: str, stable_id: str) -> Invocation:
    row = _obj(row, path)
    query = _str(_require(row, "query", path), path + ".query")
    reference = row.get("reference", "")
    reference = _str(reference, path + ".reference") if reference is not None else ""
    uses = row.get("expected_tool_use", []) or []
    tool_uses = [_tool_use(u, f"{path}.expected_tool_use[{i}]")
                 for i, u in enumerate(_list(uses, path + ".expected_tool_use"))]
    responses: list[tuple[str, list[Part]]] = []
    rows = row.get("expected_intermediate_agent_responses", []) or []
    for i, resp in enumerate(_list(rows, path + ".expected_intermediate_agent_responses")):
        rpath = f"{path}.expected_intermediate_agent_responses[{i}]"
        resp = _obj(resp, rpath)
        author = _str(_require(resp, "author", rpath), rpath + ".author")
        responses.append((author, [Part(text=_str(_require(resp, "text", rpath), rpath + ".text"))]))
    # ADK gives legacy turns a random id and the load time; ours are derived from the turn's place,
    # so reloading an unchanged file changes nothing (the live loop re-runs only real edits).
    return Invocation(
        invocation_id=str(uuid.uuid5(uuid.NAMESPACE_URL, stable_id)),
        user_content=Content.from_text(query, "user"),
        final_response=Content.from_text(reference, "model"),
        intermediate_data=IntermediateData(tool_uses=tool_uses, intermediate_responses=responses),
    )


def _session(data: Any, path: str) -> SessionInput | None:
    if not data:
        return None
    data = _obj(data, path)
    state = data.get("state", {})
    return SessionInput(
        app_name=_str(data.get("app_name", ""), path + ".app_name"),
        user_id=_str(data.get("user_id", ""), path + ".user_id"),
        state=_obj(state, path + ".state"),
    )


def is_legacy(data: Any) -> bool:
    """A legacy file is a JSON list; the current schema is an object."""
    return isinstance(data, list)


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
                        _turn(t, f"{path}.data[{j}]", f"tui-eval:{eval_set_id}/{i}/{j}")
                        for j, t in enumerate(turns)
                    ],
                    session_input=_session(entry.get("initial_session"), path + ".initial_session"),
                )
            )
    else:
        turns = [_turn(row, f"$[{i}]", f"tui-eval:{eval_set_id}/0/{i}") for i, row in enumerate(data)]
        cases = [EvalCase(eval_id=eval_set_id, conversation=turns)]
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=cases)
