"""Load errors that name the file, the JSON path of each fault and, for syntax errors, line and column."""

from __future__ import annotations

import difflib
import logging
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

logger = logging.getLogger(__name__)

# Union tags of the slim models (model.PartType, ...) start so; their errors repeat the full model's.
SLIM_TAG = "#~"

# A file reports at most this many faults at once; the rest are counted.
MAX_ISSUES = 20


@dataclass(frozen=True, slots=True)
class Issue:
    """One fault of a file: where (a JSON path such as `$.eval_cases[2].eval_id`) and what."""

    json_path: str
    message: str


class LoadError(Exception):
    """A file that could not be read as what it claims to be; carries every fault found (up to 20).

    `json_path` and `message` are those of the first fault. A plain exception class, not a slotted
    frozen dataclass: Python must be able to set `__traceback__` on it (contextlib and asyncio do).
    """

    def __init__(
        self,
        path: str,
        message: str,
        json_path: str = "$",
        line: int | None = None,
        column: int | None = None,
        issues: Sequence[Issue] = (),
        more: int = 0,
    ) -> None:
        super().__init__(path, message, json_path, line, column)
        self.path = path
        self.message = message
        self.json_path = json_path
        self.line = line
        self.column = column
        self.issues: list[Issue] = list(issues) or [Issue(json_path, message)]
        self.more = more

    @classmethod
    def of(cls, path: str | Path, issues: Sequence[Issue], more: int = 0) -> LoadError:
        first = issues[0]
        return cls(str(path), first.message, first.json_path, issues=issues, more=more)

    def _line(self, issue: Issue) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}:{self.column or 0}"
        if issue.json_path and issue.json_path != "$":
            where += f" at {issue.json_path}"
        return f"{where}: {issue.message}"

    def __str__(self) -> str:
        lines = [self._line(issue) for issue in self.issues]
        if self.more:
            lines.append(f"{self.path}: ... and {self.more} more error(s)")
        return "\n".join(lines)


class SchemaError(Exception):
    """Raised by the readers: every fault found, each with its JSON path (the first one is `json_path`)."""

    def __init__(self, json_path: str, message: str, issues: Sequence[Issue] = (), more: int = 0) -> None:
        super().__init__(message)
        self.json_path = json_path
        self.message = message
        self.issues: list[Issue] = list(issues) or [Issue(json_path, message)]
        self.more = more

    @classmethod
    def of(cls, issues: Sequence[Issue], more: int = 0) -> SchemaError:
        return cls(issues[0].json_path, issues[0].message, issues, more)

    def __str__(self) -> str:
        return "\n".join(f"{i.json_path}: {i.message}" for i in self.issues)

    def at(self, path: str | Path) -> LoadError:
        return LoadError.of(path, self.issues, self.more)


def not_utf8(raw: bytes, exc: UnicodeDecodeError) -> tuple[str, int, int]:
    """What is wrong with bytes that are not UTF-8, and where: (`byte 0xE9 is not UTF-8`, line, column),
    the column counted in characters of the line before it."""
    start = exc.start
    line_start = raw.rfind(b"\n", 0, start) + 1
    column = len(raw[line_start:start].decode("utf-8", "replace")) + 1
    return f"byte 0x{raw[start]:02X} is not UTF-8", raw.count(b"\n", 0, start) + 1, column


def syntax_error(path: str | Path, exc: ValueError) -> LoadError:
    """A LoadError for invalid JSON, with line and column when the decoder gives them."""
    msg = getattr(exc, "msg", None) or str(exc)
    line = getattr(exc, "lineno", None)
    col = getattr(exc, "colno", None)
    if "unexpected end" in msg.lower() or "eof" in msg.lower():
        msg += " (the file may be half-saved)"
    return LoadError(str(path), f"invalid JSON: {msg}", "$", line, col)


# ---- pydantic errors in our words ---------------------------------------------------------------


def render_path(root: str, loc: Iterable[int | str]) -> str:
    """`$.eval_cases[2].conversation[0]` from a pydantic `loc` (union tags such as `#IntermediateData`
    are skipped: they name a shape, not a key of the file)."""
    out = root
    for key in loc:
        if isinstance(key, int):
            out += f"[{key}]"
        elif not key.startswith("#"):
            out += f".{key}"
    return out


def json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names = {dict: "object", list: "array", str: "string", type(None): "null"}
    return names.get(type(value), type(value).__name__)


_EXPECTED = {
    "string_type": "a string",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "list_type": "an array",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "finite_number": "a finite number",
}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or ""."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model class whose object holds the last key of `loc` (for a did-you-mean on that key)."""
    current: Any = model
    for key in loc:
        tag = key.lstrip("#~") if isinstance(key, str) and key.startswith("#") else None
        current = _unwrap(current, tag)
        if tag is not None:
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            current = _field(current, key) if isinstance(key, str) else None
        else:
            current = _element(current, key)
        if current is None:
            return None
    found = _unwrap(current, None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def _field(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info.annotation
    return None


def _unwrap(annotation: Any, tag: str | None) -> Any:
    """Strip Annotated and Optional; of a union of models, the one `tag` names (else the first)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            named = [a for a in args if tag and getattr(_unwrap(a, None), "__name__", None) == tag]
            annotation = (named or args)[0]
        else:
            return annotation


def _element(annotation: Any, key: int | str) -> Any:
    """The type one level down a list, tuple or dict annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is list and args:
        return args[0]
    if origin is tuple and isinstance(key, int) and key < len(args):
        return args[key]
    if origin is dict and args:
        return args[-1]
    return None


def _keys_of(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    return list(model.model_fields)


def issue_of(error: ErrorDetails, root_model: type[BaseModel] | None, root: str = "$") -> Issue:
    """One pydantic error as an Issue in our words ("expected a string, got number", "unknown key")."""
    loc = list(error["loc"])
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        return Issue(render_path(root, loc[:-1]), f"missing required key {loc[-1]!r}")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        hint = did_you_mean(key, _keys_of(_model_at(root_model, loc[:-1]) if root_model else None))
        return Issue(render_path(root, loc), f"unknown key {key!r}{hint}")
    path = render_path(root, loc)
    if kind in ("tuple_type", "too_short", "too_long") and len(loc) >= 2 and "intermediate_responses" in loc:
        return Issue(path, "expected an [author, [parts]] pair")
    if kind in _EXPECTED:
        return Issue(path, f"expected {_EXPECTED[kind]}, got {json_type_name(value)}")
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        ctx = error.get("ctx") or {}
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "?")
        return Issue(path, f"expected a number {sign} {bound}, got {value!r}")
    if kind in ("value_error", "assertion_error"):
        ctx = error.get("ctx") or {}
        return Issue(path, str(ctx.get("error", error["msg"])))
    if kind == "union_tag_invalid":
        return Issue(path, error["msg"])
    return Issue(path, error["msg"])


def _is_slim(key: int | str) -> bool:
    return isinstance(key, str) and key.startswith(SLIM_TAG)


def issues_of(exc: ValidationError, root_model: type[BaseModel] | None, root: str = "$") -> list[Issue]:
    """Each fault once, in our words.

    A part both Part and GenaiPart reject is reported as GenaiPart saw it (its keys are a superset, so
    its did-you-mean knows every genai key); the same for function calls and responses.
    """
    errors = [e for e in exc.errors(include_url=False) if not any(_is_slim(k) for k in e["loc"])]
    return list(dict.fromkeys(issue_of(e, root_model, root) for e in errors))


def schema_error(issues: list[Issue]) -> SchemaError:
    """A SchemaError carrying the first MAX_ISSUES issues (and how many more there were)."""
    if len(issues) > MAX_ISSUES:
        return SchemaError.of(issues[:MAX_ISSUES], len(issues) - MAX_ISSUES)
    return SchemaError.of(issues)
