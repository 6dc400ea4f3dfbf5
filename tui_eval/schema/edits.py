"""Edit an eval file in place, like ADK web's "edit eval case": accept actual turns, delete turns or cases.

Every edit reads the file's raw JSON, changes only what it must and writes it back atomically, so the
diff a user sees is the edit itself: unknown keys, ids, key order, every other case, the indentation and
the trailing newline stay as they were, and no id is invented. Each edit first checks that the turn on
disk is still the one the user looked at, so a file changed behind our back is never clobbered.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from .fileio import atomic_write
from .model import Content, Invocation

# Keys whose value is one tool call or response, and keys whose value is a list of them.
_CALL_KEYS = frozenset({"function_call", "functionCall", "function_response", "functionResponse"})
_CALL_LIST_KEYS = frozenset({"tool_uses", "toolUses", "tool_responses", "toolResponses"})


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


# ---- reading and writing in the file's own style ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Style:
    """How a JSON file is laid out, so a rewrite changes only the values an edit changes."""

    indent: str | None  # None: one line
    separators: tuple[str, str]
    ensure_ascii: bool
    tail: str  # whatever followed the document (usually "\n" or "")
    newline: str = "\n"
    bom: bool = False

    def dump(self, data: Any) -> bytes:
        text = json.dumps(data, indent=self.indent, separators=self.separators, ensure_ascii=self.ensure_ascii)
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return _encode(text + self.tail, self.bom)


def _encode(text: str, bom: bool) -> bytes:
    """The file's bytes: UTF-8, with the BOM it was read with."""
    return (("\ufeff" if bom else "") + text).encode("utf-8")


_INDENT = re.compile(r"\n([ \t]+)\S")
_COLON = re.compile(r'"\s*:( ?)')
_COMMA = re.compile(r'[\]}"\d],( ?)[\[{"\-\dtfn]')


def _style(text: str, bom: bool) -> _Style:
    style = _layout(text)
    return replace(style, newline="\r\n" if "\r\n" in text else "\n", bom=bom)


def _layout(text: str) -> _Style:
    body = text.rstrip()
    tail = text[len(body):]
    colon = _COLON.search(body)
    key_sep = ":" + (colon.group(1) if colon else " ")
    indent_match = _INDENT.search(body)
    if indent_match is not None:
        return _Style(indent_match.group(1), (",", key_sep), _escaped(text), tail)
    comma = _COMMA.search(body)
    item_sep = "," + (comma.group(1) if comma else " ")
    return _Style(None, (item_sep, key_sep), _escaped(text), tail)


def _escaped(text: str) -> bool:
    """Whether the file spells non-ASCII text as \\u escapes (Python's json default), so new text does too."""
    return text.isascii() and "\\u" in text


def _read_text(path: Path) -> tuple[str, bool]:
    """The file's text (without a UTF-8 BOM) and whether it starts with one."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise EditError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise EditError(f"{path}: the file is not UTF-8 ({exc.reason}); fix it first") from None
    return text, raw.startswith(b"\xef\xbb\xbf")


def _not_json(path: Path, exc: Exception) -> EditError:
    return EditError(f"{path}: the file is not valid JSON right now ({exc}); fix it first")


def _read(path: Path) -> tuple[Any, _Style]:
    text, bom = _read_text(path)
    try:
        # The stdlib parser, not a faster one: it keeps every number as written (big ints too) and
        # every key in order, so what is written back is what was read.
        return json.loads(text), _style(text, bom)
    except ValueError as exc:
        raise _not_json(path, exc) from None


def _write(path: Path, data: Any, style: _Style) -> None:
    # atomic_write keeps the file's permissions.
    atomic_write(path, style.dump(data))


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
            rows = entry.get("data") if isinstance(entry, dict) and entry.get("name") == eval_id else None
            if isinstance(rows, list):
                return rows
        raise EditError(f"{path}: no legacy case named {eval_id!r}")
    return data


def _check_turn(raw_user: Any, expect_user_text: str | None, index: int, eval_id: str) -> None:
    if expect_user_text is not None and _raw_text(raw_user) != expect_user_text:
        raise EditError(
            f"turn {index + 1} of case {eval_id!r} changed on disk since it was loaded; reload and try again"
        )


# ---- accepting actual turns -----------------------------------------------------------------------


def _content_dict(content: Content | None) -> dict[str, Any] | None:
    return content.to_dict() if content is not None else None


def _fit(new: Any, old: Any, *, calls: bool = False) -> Any:
    """`new` laid out like `old`: keys `old` has keep its order (new keys follow), list items follow
    the item at the same place (or the last one). `calls` marks a tool call or response, or a list of
    them: a run's correlation id is not an expectation, so an id is kept only where the file already
    had one for the same call, and none is invented."""
    if isinstance(new, list):
        olds = old if isinstance(old, list) else []
        return [_fit(item, olds[min(i, len(olds) - 1)] if olds else None, calls=calls) for i, item in enumerate(new)]
    if not isinstance(new, dict):
        return new
    template = old if isinstance(old, dict) else {}
    out: dict[str, Any] = {}
    for key in list(k for k in template if k in new) + [k for k in new if k not in template]:
        out[key] = _fit(new[key], template.get(key), calls=key in _CALL_KEYS or key in _CALL_LIST_KEYS)
    if calls and "id" in out:
        if template.get("id") is not None and template.get("name") == out.get("name"):
            out["id"] = template["id"]
        else:
            del out["id"]
    return out


def _accept_into(raw: dict[str, Any], actual: Invocation) -> None:
    """Replace the final response and intermediate data of a raw invocation, in the spelling and layout it uses."""
    response_key = _first_key(raw, "final_response", "finalResponse") or "final_response"
    data_key = _first_key(raw, "intermediate_data", "intermediateData") or "intermediate_data"
    old_response = raw.get(response_key)
    # A turn with no expected response yet takes the layout of its own user message.
    template = old_response if isinstance(old_response, dict) else raw.get(
        _first_key(raw, "user_content", "userContent") or "user_content")
    raw[response_key] = _fit(_content_dict(actual.final_response), template)
    data = actual.intermediate_data
    raw[data_key] = _fit(data.to_dict() if data is not None else None, raw.get(data_key))


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
    case_keys: dict[str, Any] | None = None,
) -> None:
    """Make the given actual invocations the expected ones of turns (by index) of a case; `case_keys` are
    case-level keys to write too (the final session state)."""
    path = Path(path)
    data, style = _read(path)
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
        for name, value in (case_keys or {}).items():
            # The key as the case spells it (snake or camel case), else snake case.
            camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
            case[_first_key(case, name, camel) or name] = value
    _write(path, data, style)


def accept_turn(path: Path, eval_id: str, index: int, actual: Invocation, expect_user_text: str | None = None) -> None:
    """Make one actual turn the expected one; invocation_id, user_content and other keys are kept."""
    accept_turns(path, eval_id, {index: actual}, {index: expect_user_text} if expect_user_text is not None else None)


def accept_case(path: Path, eval_id: str, actual: list[Invocation], expected_turns: int,
                final_session_state: dict[str, Any] | None = None) -> None:
    """Make every actual turn of a case the expected one (the turn counts must agree), and the session state
    the run left (when it is known) the case's final_session_state."""
    if len(actual) != expected_turns:
        raise EditError(
            f"the run has {len(actual)} turn(s) but case {eval_id!r} expects {expected_turns}; "
            "accept turns one by one instead"
        )
    keys = {"final_session_state": final_session_state} if final_session_state is not None else None
    accept_turns(path, eval_id, dict(enumerate(actual)), case_keys=keys)


# ---- deleting -------------------------------------------------------------------------------------


def delete_turn(path: Path, eval_id: str, index: int, expect_user_text: str | None = None) -> None:
    """Remove one turn of a case; the case keeps its other turns in order."""
    path = Path(path)
    data, style = _read(path)
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
    _write(path, data, style)


def delete_case(path: Path, eval_id: str) -> None:
    """Remove one case from an eval set; every other case stays, in order."""
    path = Path(path)
    data, style = _read(path)
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
    _write(path, data, style)


# ---- a config's criterion (the dashboard's what-if view) ---------------------------------------------


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _member_spans(text: str, start: int) -> dict[str, tuple[int, int]]:
    """The members of the JSON object whose `{` is at `start`: key -> (value start, value end)."""
    decoder = json.JSONDecoder()
    spans: dict[str, tuple[int, int]] = {}
    i = _skip_ws(text, start + 1)
    if text[i] == "}":
        return spans
    while True:
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip_ws(text, i)
        i = _skip_ws(text, i + 1)  # past ':'
        _, end = decoder.raw_decode(text, i)
        spans[key] = (i, end)
        i = _skip_ws(text, end)
        if text[i] == "}":
            return spans
        i = _skip_ws(text, i + 1)  # past ','


def _number(value: float) -> str:
    return json.dumps(round(value, 6))


def set_criterion(path: Path, metric: str, *, threshold: float | None = None, match_type: str | None = None) -> None:
    """Set a metric's threshold and/or trajectory match type in an EvalConfig file, changing only those
    characters: a number criterion stays a number unless a match type is added (then it becomes
    `{"threshold": …, "match_type": …}` in place); an object gets its key replaced, or added first."""
    text, bom = _read_text(path)
    try:
        data = json.loads(text)
        top = _member_spans(text, _skip_ws(text, 0)) if isinstance(data, dict) else {}
    except (ValueError, IndexError) as exc:
        raise _not_json(path, exc) from None
    criteria = data.get("criteria") if isinstance(data, dict) else None
    if not isinstance(criteria, dict) or metric not in criteria:
        raise EditError(f"{path}: no criterion {metric!r} in this config")
    start, end = _member_spans(text, top["criteria"][0])[metric]
    value = criteria[metric]
    edits: list[tuple[int, int, str]] = []
    if not isinstance(value, dict):
        new_threshold = _number(threshold) if threshold is not None else text[start:end]
        if match_type is None:
            edits.append((start, end, new_threshold))
        else:
            edits.append((start, end, f'{{"threshold": {new_threshold}, "match_type": {json.dumps(match_type)}}}'))
    else:
        members = _member_spans(text, start)
        added: list[str] = []
        for names, new in ((("threshold",), None if threshold is None else _number(threshold)),
                           (("match_type", "matchType"), None if match_type is None else json.dumps(match_type))):
            if new is None:
                continue
            key = next((n for n in names if n in members), None)
            if key is not None:
                edits.append((*members[key], new))
            else:
                added.append(f'"{names[0]}": {new}')
        if added:
            sep = ", " if members else ""
            edits.append((start + 1, start + 1, ", ".join(added) + sep))
    for s, e, new in sorted(edits, reverse=True):
        text = text[:s] + new + text[e:]
    atomic_write(path, _encode(text, bom))


# ---- adding and replacing a whole case (session import, the case editor) -------------------------------


def _case_id(case: Any) -> Any:
    return case.get(_first_key(case, "eval_id", "evalId") or "eval_id") if isinstance(case, dict) else None


def _writable_cases(path: Path) -> tuple[Any, _Style, list[Any]]:
    data, style = _read(path)
    if isinstance(data, list):
        raise EditError(f"{path}: a legacy .test.json file; run `tui-eval migrate {path}` first")
    return data, style, _cases(data, path)


def add_case(path: Path, case: dict[str, Any], *, eval_set_id: str | None = None) -> bool:
    """Append one case (ADK's shape) to an eval set, refusing an id the set already has. A file that does
    not exist yet becomes a new eval set named `eval_set_id`. Returns whether the file was created."""
    path = Path(path)
    eval_id = case.get("eval_id")
    if not path.exists():
        if eval_set_id is None:
            raise EditError(f"{path}: no such eval set")
        data = {"eval_set_id": eval_set_id, "name": eval_set_id, "description": None, "eval_cases": [case],
                "creation_timestamp": case.get("creation_timestamp", 0.0)}
        _write(path, data, _Style("  ", (",", ": "), False, "\n"))
        return True
    data, style, cases = _writable_cases(path)
    if any(_case_id(c) == eval_id for c in cases):
        raise EditError(f"{path}: case id {eval_id!r} is taken; choose another (--id)")
    cases.append(case)
    _write(path, data, style)
    return False


def case_json(path: Path, eval_id: str) -> str:
    """One case of an eval set, alone, as the JSON text a person edits (the file's keys, in its order)."""
    data, _style, cases = _writable_cases(Path(path))
    return _case_text(cases[_find_case(cases, eval_id, Path(path))])


def _case_text(case: Any) -> str:
    return json.dumps(case, indent=2, ensure_ascii=False) + "\n"


def check_case_text(text: str) -> dict[str, Any]:
    """An edited case's JSON text, parsed and checked as ADK would load it; EditError names the fault's
    place (line and column, or the JSON path) in the edited text."""
    from .errors import LoadError, SchemaError
    from .load import loads_json, read_eval_case

    try:
        new = loads_json(text.encode("utf-8"), "the edited case")
    except LoadError as exc:
        raise EditError(str(exc)) from None
    if not isinstance(new, dict):
        raise EditError("the edited case must be one JSON object (an eval case), not a list or a value")
    try:
        read_eval_case(new)
    except SchemaError as exc:
        raise EditError(str(exc.at("the edited case"))) from None
    return new


def replace_case(path: Path, eval_id: str, before: str, after: str) -> str:
    """Put an edited case (`after`, JSON text) in place of case `eval_id`, which must still read as
    `before` (the text the editor was given); checked first (`check_case_text`). Returns the case's id
    after the edit (a person may rename it; an id another case has is refused)."""
    path = Path(path)
    new = check_case_text(after)
    data, style, cases = _writable_cases(path)
    index = _find_case(cases, eval_id, path)
    if _case_text(cases[index]) != before:
        raise EditError(f"case {eval_id!r} changed in {path} while it was being edited; your edit is not saved")
    new_id = _case_id(new)
    if new_id != eval_id and any(_case_id(c) == new_id for c in cases):
        raise EditError(f"case id {new_id!r} is taken in {path}; choose another")
    cases[index] = new
    _write(path, data, style)
    return str(new_id)


# ---- undo ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Undoable:
    """One edit of this session: the file's bytes before (None: the edit created it) and after."""

    path: Path
    label: str
    before: bytes | None
    after: bytes


class UndoStack:
    """The edits of one session, newest last; `undo` puts the file back byte for byte, and refuses when the
    file no longer holds what the edit wrote (another edit, an editor, git): that change would be lost."""

    def __init__(self) -> None:
        self._done: list[Undoable] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._done)

    def record(self, path: Path, label: str, change: Callable[[], object]) -> None:
        """Run `change` (an edit of `path`) and remember how to take it back."""
        path = Path(path)
        try:
            before: bytes | None = path.read_bytes()
        except FileNotFoundError:
            before = None
        except OSError as exc:
            raise EditError(f"{path}: cannot read file: {exc.strerror or exc}") from None
        change()
        with self._lock:
            self._done.append(Undoable(path, label, before, path.read_bytes()))

    def peek(self) -> Undoable | None:
        with self._lock:
            return self._done[-1] if self._done else None

    def undo(self) -> Undoable:
        """Revert the newest edit; EditError (the edit stays undoable) when there is none or the file changed."""
        with self._lock:
            if not self._done:
                raise EditError("nothing to undo: no accept, delete, edit or import in this session")
            last = self._done[-1]
            try:
                now: bytes | None = last.path.read_bytes()
            except FileNotFoundError:
                now = None
            if now != last.after:
                raise EditError(f"cannot undo {last.label}: {last.path} changed since (saved by another edit "
                                "or program); undoing would lose that change")
            if last.before is None:
                last.path.unlink()
            else:
                atomic_write(last.path, last.before)
            self._done.pop()
            return last
