"""Edit an eval file in place, like ADK web's "edit eval case": accept actual turns, delete turns or cases.

Every edit reads the file's raw JSON, changes only what it must (unknown keys, ids, order and every
other case stay as they were) and writes it back atomically. Each edit first checks that the turn on
disk is still the one the user looked at, so a file changed behind our back is never clobbered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ..engine.store import dump_json
from ..fileio import atomic_write
from ..schema.model import Invocation


class EditError(Exception):
    """The edit cannot be made (file changed, case gone, shapes differ); the message says why."""


def _first_key(obj: dict[str, Any], *names: str) -> str | None:
    for name in names:
        if name in obj:
            return name
    return None


def _raw_text(content: Any) -> str:
    """Text of a raw genai Content dict, as Content.text reads it."""
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts") or []
    return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"])


def _read(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise EditError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise EditError(f"{path}: the file is not valid JSON right now ({exc}); fix it first") from None


def _write(path: Path, data: Any) -> None:
    mode = path.stat().st_mode & 0o7777
    atomic_write(path, dump_json(data))
    # The replacement gets default permissions; an edit should not change the file's.
    os.chmod(path, mode)


# ---- locating a case ----------------------------------------------------------------------------


def _cases(data: Any, path: Path) -> list[Any]:
    if isinstance(data, dict):
        cases = data.get("eval_cases")
        if not isinstance(cases, list):
            raise EditError(f"{path}: no eval_cases list")
        return cases
    raise EditError(f"{path}: not an eval set")


def _find_case(cases: list[Any], eval_id: str, path: Path) -> int:
    for i, case in enumerate(cases):
        if isinstance(case, dict) and case.get(_first_key(case, "eval_id", "evalId") or "eval_id") == eval_id:
            return i
    raise EditError(f"{path}: no eval case {eval_id!r} (the file changed since it was loaded?)")


def _conversation(case: dict[str, Any], eval_id: str) -> list[Any]:
    conv = case.get("conversation")
    if not isinstance(conv, list):
        raise EditError(f"case {eval_id!r} has no static conversation (a scenario case has no expected turns)")
    return conv


def _legacy_rows(data: list[Any], eval_id: str, path: Path) -> list[Any]:
    """The turn rows of a legacy case: the whole file, or the `data` of the entry named eval_id."""
    if data and isinstance(data[0], dict) and "data" in data[0] and "query" not in data[0]:
        for entry in data:
            if isinstance(entry, dict) and entry.get("name") == eval_id and isinstance(entry.get("data"), list):
                return entry["data"]
        raise EditError(f"{path}: no legacy case named {eval_id!r}")
    return data


def _check_turn(raw_user: Any, expect_user_text: str | None, index: int, eval_id: str) -> None:
    if expect_user_text is not None and _raw_text(raw_user) != expect_user_text:
        raise EditError(
            f"turn {index + 1} of case {eval_id!r} changed on disk since it was loaded; reload and try again"
        )


# ---- accepting actual turns -----------------------------------------------------------------------


def _accept_into(raw: dict[str, Any], actual: Invocation) -> None:
    """Replace the final response and intermediate data of a raw invocation, in the spelling it uses."""
    new = actual.to_dict()
    raw[_first_key(raw, "final_response", "finalResponse") or "final_response"] = new["final_response"]
    raw[_first_key(raw, "intermediate_data", "intermediateData") or "intermediate_data"] = new["intermediate_data"]


def _accept_legacy(row: dict[str, Any], actual: Invocation) -> None:
    row["reference"] = actual.final_response.text if actual.final_response is not None else ""
    row["expected_tool_use"] = [{"tool_name": c.name, "tool_input": c.args or {}} for c in actual.tool_calls]
    texts = actual.intermediate_texts
    if texts or "expected_intermediate_agent_responses" in row:
        row["expected_intermediate_agent_responses"] = [{"author": a, "text": t} for a, t in texts]


def accept_turns(
    path: Path,
    eval_id: str,
    turns: dict[int, Invocation],
    expect_user_texts: dict[int, str] | None = None,
) -> None:
    """Make the given actual invocations the expected ones of turns (by index) of a case."""
    path = Path(path)
    data = _read(path)
    expect = expect_user_texts or {}
    if isinstance(data, list):
        rows = _legacy_rows(data, eval_id, path)
        for index, actual in turns.items():
            if not 0 <= index < len(rows) or not isinstance(rows[index], dict):
                raise EditError(f"case {eval_id!r} has no turn {index + 1}")
            row = rows[index]
            if index in expect and str(row.get("query", "")) != expect[index]:
                raise EditError(f"turn {index + 1} of case {eval_id!r} changed on disk; reload and try again")
            _accept_legacy(row, actual)
    else:
        cases = _cases(data, path)
        case = cases[_find_case(cases, eval_id, path)]
        conv = _conversation(case, eval_id)
        for index, actual in turns.items():
            if not 0 <= index < len(conv) or not isinstance(conv[index], dict):
                raise EditError(f"case {eval_id!r} has no turn {index + 1}")
            raw = conv[index]
            _check_turn(raw.get(_first_key(raw, "user_content", "userContent") or "user_content"),
                        expect.get(index), index, eval_id)
            _accept_into(raw, actual)
    _write(path, data)


def accept_turn(path: Path, eval_id: str, index: int, actual: Invocation, expect_user_text: str | None = None) -> None:
    """Make one actual turn the expected one; invocation_id, user_content and other keys are kept."""
    accept_turns(path, eval_id, {index: actual}, {index: expect_user_text} if expect_user_text is not None else None)


def accept_case(path: Path, eval_id: str, actual: list[Invocation], expected_turns: int) -> None:
    """Make every actual turn of a case the expected one (the turn counts must agree)."""
    if len(actual) != expected_turns:
        raise EditError(
            f"the run has {len(actual)} turn(s) but case {eval_id!r} expects {expected_turns}; "
            "accept turns one by one instead"
        )
    accept_turns(path, eval_id, dict(enumerate(actual)))


# ---- deleting -------------------------------------------------------------------------------------


def delete_turn(path: Path, eval_id: str, index: int, expect_user_text: str | None = None) -> None:
    """Remove one turn of a case; the case keeps its other turns in order."""
    path = Path(path)
    data = _read(path)
    if isinstance(data, list):
        rows = _legacy_rows(data, eval_id, path)
        if not 0 <= index < len(rows):
            raise EditError(f"case {eval_id!r} has no turn {index + 1}")
        if len(rows) == 1:
            raise EditError("a legacy file's only turn cannot be deleted; delete the file instead")
        if expect_user_text is not None and isinstance(rows[index], dict) and str(rows[index].get("query", "")) != expect_user_text:
            raise EditError(f"turn {index + 1} of case {eval_id!r} changed on disk; reload and try again")
        del rows[index]
    else:
        cases = _cases(data, path)
        conv = _conversation(cases[_find_case(cases, eval_id, path)], eval_id)
        if not 0 <= index < len(conv):
            raise EditError(f"case {eval_id!r} has no turn {index + 1}")
        raw = conv[index]
        if isinstance(raw, dict):
            _check_turn(raw.get(_first_key(raw, "user_content", "userContent") or "user_content"),
                        expect_user_text, index, eval_id)
        del conv[index]
    _write(path, data)


def delete_case(path: Path, eval_id: str) -> None:
    """Remove one case from an eval set; every other case stays, in order."""
    path = Path(path)
    data = _read(path)
    if isinstance(data, list):
        if data and isinstance(data[0], dict) and "data" in data[0] and "query" not in data[0]:
            for i, entry in enumerate(data):
                if isinstance(entry, dict) and entry.get("name") == eval_id:
                    del data[i]
                    break
            else:
                raise EditError(f"{path}: no legacy case named {eval_id!r}")
        else:
            raise EditError("a legacy single-case file cannot lose its only case; delete the file instead")
    else:
        cases = _cases(data, path)
        del cases[_find_case(cases, eval_id, path)]
    _write(path, data)
