"""Every fast path around pydantic, in one place, behind one switch.

Each one reaches past pydantic's public API (its slot descriptors, a model's `__dict__`) or is a second
code path beside a public one, for speed or memory on large runs (figures: bench/README.md, "Fast paths"):

- `share_fields_sets` / `share_loaded_fields_sets`: loaded models given the same keys share one
  `__pydantic_fields_set__` (a `SharedFieldsSet`); `assign_copying_shared_set` (the eval models'
  `__setattr__`) copies it before an assignment adds a name to it.
- `trusted(cls, **values)`: a model built from values our own code computed, without validation.
- `adk_json_default`: orjson's `default=` that writes an ADK model as its `to_dict()` would, from the
  model's `__dict__` (the second serializer).
- `read_one_case_at_a_time`: the eval-set reader that validates case by case (the second reader).

The switch: `$TUI_EVAL_PLAIN_PYDANTIC=1` (read at import) or `with fast_paths(False):` turns them all off,
and everything goes through plain pydantic: `trusted` validates (`cls(**values)`), fields-sets are
never shared, `adk_json_default` calls `to_dict()`, and eval sets are read whole by `model_validate`.
They are also off when the installed pydantic is outside `PYDANTIC_TESTED`, the range these paths are
tested against (pyproject.toml pins the same range; tests/unit/test_fast_paths.py checks that the fast
paths give what the plain ones give, for every model).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import compress
from operator import attrgetter, eq, not_
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import pydantic
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .model import EvalCase, EvalSet

__all__ = ["PLAIN_ENV", "PYDANTIC_TESTED", "SharedFieldsSet", "adk_json_default", "assign_copying_shared_set",
           "fast_paths", "fast_paths_on", "pydantic_tested", "read_one_case_at_a_time", "share_fields_sets",
           "share_loaded_fields_sets", "trusted"]

#: Set to 1 (any non-empty value but 0) to turn every fast path off.
PLAIN_ENV = "TUI_EVAL_PLAIN_PYDANTIC"
#: The pydantic versions the fast paths are tested against: >= the first, < the second (as pyproject.toml).
PYDANTIC_TESTED = ("2.14", "2.15")


def _major_minor(version: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        raise ValueError(f"not a version number: {version!r}")
    return int(found[1]), int(found[2])


def pydantic_tested(version: str = pydantic.VERSION) -> bool:
    """Whether this pydantic version is in `PYDANTIC_TESTED`."""
    low, high = PYDANTIC_TESTED
    return _major_minor(low) <= _major_minor(version) < _major_minor(high)


def _env_plain() -> bool:
    return os.environ.get(PLAIN_ENV, "").strip() not in ("", "0")


_on = pydantic_tested() and not _env_plain()


def fast_paths_on() -> bool:
    """Whether the fast paths are in use (see the module's docstring)."""
    return _on


@contextmanager
def fast_paths(on: bool) -> Iterator[None]:
    """The fast paths on or off (for this process) inside the block, then as they were. Fields-sets that
    were shared stay shared (they are safe either way: see `assign_copying_shared_set`)."""
    global _on
    was, _on = _on, on
    try:
        yield
    finally:
        _on = was


# BaseModel's own slot and __dict__ descriptors, called directly: a third faster than object.__setattr__,
# which looks each name up along the class's MRO (BaseModel.__setattr__ would validate, so it is bypassed).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_fields_set_of = attrgetter("__pydantic_fields_set__")
_new = object.__new__

M = TypeVar("M", bound=BaseModel)


# --- trusted construction ---------------------------------------------------------------------------
_fields_sets: dict[type[BaseModel], set[str]] = {}


def trusted(cls: type[M], /, **values: Any) -> M:
    """`cls(**values)`, without validation when the fast paths are on: for values our own code just
    computed with their types (the scoring hot path builds a result per metric, turn and case).

    pydantic's `model_construct` resolves aliases and defaults in Python on every call and costs more
    than validating, so this writes the model's slots itself. Every field must be given (no defaults
    are filled in): tests check that the result equals the validated model.
    """
    if not _on:
        return cls(**values)
    obj = _new(cls)
    _set_dict(obj, values)
    # Every field is given, so the fields-set is the class's field names: one set per class, shared.
    # Pydantic only ever adds a field's name to it on assignment, which changes nothing here; copies
    # get their own set.
    fields = _fields_sets.get(cls)
    if fields is None:
        fields = _fields_sets[cls] = set(cls.model_fields)
    _set_fields_set(obj, fields if len(values) == len(fields) else set(values))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


# --- shared fields-sets -----------------------------------------------------------------------------
class SharedFieldsSet(set[str]):
    """A model's `__pydantic_fields_set__` shared by every loaded model of its class that was given the
    same keys (`share_fields_sets`). Never changed in place: a model copies it before an assignment
    changes it (`assign_copying_shared_set`), and a copy of it is a plain set."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)


def assign_copying_shared_set(model: BaseModel, name: str, value: Any) -> None:
    """The `__setattr__` of models whose fields-sets may be shared: pydantic adds an assigned field's
    name to the fields-set, so a shared one is copied first."""
    if type(model.__pydantic_fields_set__) is SharedFieldsSet:
        _set_fields_set(model, set(model.__pydantic_fields_set__))
    BaseModel.__setattr__(model, name, value)


# (class, names) -> the shared set. Bounded: the combinations of given keys a file uses are few, and
# past the bound models simply keep their own sets.
_SHARED: dict[tuple[type, frozenset[str]], SharedFieldsSet] = {}
_SHARED_MAX = 4096


def share_fields_sets(models: list[BaseModel]) -> None:
    """Give each freshly loaded model the shared fields-set equal to its own (nothing when off).

    Written as C-level map()s over the whole list, not a Python loop: a large file has ~130,000 models,
    and a loop body per model cost a tenth of the file's parse. Most models of a class were given the
    same keys, so each is first compared with one candidate set per class (a set comparison), and only
    the others pay for a frozenset key of their own."""
    if not models or not _on:
        return
    types = list(map(type, models))
    sets = list(map(_fields_set_of, models))
    candidates: dict[type, SharedFieldsSet] = {}
    for cls, fields in dict(zip(types, sets)).items():  # one model's set per class
        shared = _shared_set(cls, frozenset(fields))
        if shared is not None:
            candidates[cls] = shared
    if len(candidates) == len(set(types)):
        shared_for = list(map(candidates.__getitem__, types))
        same = list(map(eq, sets, shared_for))
        deque(map(_set_fields_set, compress(models, same), compress(shared_for, same)), maxlen=0)
        models = list(compress(models, map(not_, same)))
        if not models:
            return
    keys = list(zip(map(type, models), map(frozenset, map(_fields_set_of, models))))
    new = set(keys).difference(_SHARED)
    if len(_SHARED) + len(new) > _SHARED_MAX:
        return  # a file with unusually many key combinations keeps its own sets
    for key in new:
        _SHARED[key] = SharedFieldsSet(key[1])
    deque(map(_set_fields_set, models, map(_SHARED.__getitem__, keys)), maxlen=0)


def _shared_set(cls: type, names: frozenset[str]) -> SharedFieldsSet | None:
    """The shared set of a class and key names, made on first use; None once the table is full."""
    shared = _SHARED.get((cls, names))
    if shared is None and len(_SHARED) < _SHARED_MAX:
        shared = _SHARED[(cls, names)] = SharedFieldsSet(names)
    return shared


def share_loaded_fields_sets(cases: Iterable[EvalCase]) -> None:
    """Let the models of just-loaded cases share their fields-sets: most of a turn's models were given
    the same keys as every other turn's (nothing when off)."""
    if not _on:
        return
    from .model import Content, IntermediateData, InvocationEvents

    models: list[BaseModel] = []
    add = models.append
    for case in cases:
        add(case)
        if case.session_input is not None:
            add(case.session_input)
        for turn in case.conversation or ():
            add(turn)
            contents = [turn.user_content, turn.final_response]
            data = turn.intermediate_data
            if type(data) is IntermediateData:  # (not isinstance: pydantic's __instancecheck__ is slow)
                add(data)
                models += data.tool_uses
                models += data.tool_responses
                for _author, parts in data.intermediate_responses:
                    contents.append(Content.model_construct(parts=parts))  # only its parts are shared
            elif type(data) is InvocationEvents:
                add(data)
                models += data.invocation_events
                contents += [event.content for event in data.invocation_events]
            for content in contents:
                if content is None:
                    continue
                add(content)
                for part in content.parts or ():
                    add(part)
                    if part.function_call is not None:
                        add(part.function_call)
                    if part.function_response is not None:
                        add(part.function_response)
    share_fields_sets(models)


# --- writing ADK files in one pass ------------------------------------------------------------------
# `to_dict()` builds a whole dict tree per turn through model_dump. The history writer instead hands the
# models to orjson with `adk_json_default`, which gives orjson each model's keys with plain reads of the
# model's own `__dict__` (nested models it does not flatten come back here): the same bytes as
# `orjson.dumps(x.to_dict())` at a fraction of the cost, as orjson's C code walks the tree. A turn is
# flattened in one call (its contents, parts, calls and responses), since a call from orjson into Python
# per part costs more than the part's dict. The model classes are bound on first use (`_bind`): the
# models import this module.
_SHALLOW: dict[type, Callable[[Any], Any]] = {}
# The class of a part, call or response -> which of the common shapes `_flat` checks it for.
_FLAT_PART, _FLAT_CALL, _FLAT_RESPONSE, _FLAT_OTHER = range(4)
_FLAT: dict[type, int] = {}
_content_class: type[Any] = type(None)
_intermediate_data_class: type[Any] = type(None)
_RARE_INVOCATION_KEYS = ("duration", "model_duration", "tool_duration", "rubrics", "app_details")


def adk_json_default(obj: object) -> Any:
    """orjson's `default=` for our ADK models: what `to_dict()` gives, one level deep (see above)."""
    if _on:
        shallow = _SHALLOW.get(type(obj))
        if shallow is not None:
            return shallow(obj)
        if not _SHALLOW:
            _bind()
            return adk_json_default(obj)
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None:  # rubrics, app details: rare, and their to_dict() is plain data
        return to_dict()
    if isinstance(obj, BaseModel):  # a model inside a field of any JSON type, as model_dump writes it
        return obj.model_dump(exclude_none=True)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _bind() -> None:
    global _content_class, _intermediate_data_class
    from . import model as m

    _content_class, _intermediate_data_class = m.Content, m.IntermediateData
    _FLAT.update({m.Part: _FLAT_PART, m.FunctionCall: _FLAT_CALL, m.FunctionResponse: _FLAT_RESPONSE,
                  m.GenaiFunctionCall: _FLAT_OTHER, m.GenaiFunctionResponse: _FLAT_OTHER, m.GenaiPart: _FLAT_OTHER})
    _SHALLOW.update({cls: _not_none for cls in _FLAT})
    _SHALLOW.update({m.Content: _content, m.IntermediateData: _intermediate_data, m.InvocationEvent: _event,
                     m.InvocationEvents: _events, m.Invocation: _invocation})


def _not_none(obj: BaseModel) -> dict[str, Any]:
    # A model whose to_dict() is `model_dump(exclude_none=True)`: no field is excluded, aliased or
    # custom-serialised, so its non-None attributes are its keys (values of Any fields are plain JSON).
    return {k: v for k, v in obj.__dict__.items() if v is not None}


def _flat(items: list[Any]) -> list[Any]:
    """Parts, calls or responses as `_not_none` gives them, the common shapes without a copy loop."""
    out: list[Any] = []
    flat = _FLAT
    for item in items:
        kind = flat.get(type(item))
        if kind is None:  # not one of ours: the hook's business
            out.append(item)
            continue
        values = item.__dict__
        if kind == _FLAT_PART:
            text = values["text"]
            if text is not None and values["function_call"] is None and values["function_response"] is None:
                out.append({"text": text})
                continue
        elif kind == _FLAT_CALL:
            if values["id"] is not None and values["name"] is not None and values["args"] is not None:
                out.append(values)  # the model's own dict: orjson only reads it
                continue
        elif kind == _FLAT_RESPONSE:
            if values["id"] is not None and values["name"] is not None and values["response"] is not None:
                out.append(values)
                continue
        out.append({k: v for k, v in values.items() if v is not None})
    return out


def _content(content: Any) -> Any:
    if type(content) is not _content_class:  # None, or a subclass: the hook's business
        return content
    d = content.__dict__
    parts, role = d["parts"], d["role"]
    if parts is None or role is None:
        return _not_none(content)
    return {"parts": _flat(parts), "role": role}


def _intermediate_data(obj: BaseModel) -> dict[str, Any]:
    d = obj.__dict__
    return {"tool_uses": _flat(d["tool_uses"]), "tool_responses": _flat(d["tool_responses"]),
            "intermediate_responses": d["intermediate_responses"]}


def _event(obj: BaseModel) -> dict[str, Any]:
    d = obj.__dict__
    out: dict[str, Any] = {"author": d["author"], "content": _content(d["content"])}
    out.update((k, v) for k, v in d.items() if k not in ("author", "content") and v is not None)
    return out


def _events(obj: BaseModel) -> dict[str, Any]:
    return {"invocation_events": obj.__dict__["invocation_events"]}


def _invocation(obj: BaseModel) -> dict[str, Any]:
    d = obj.__dict__
    data = d["intermediate_data"]
    out: dict[str, Any] = {
        "invocation_id": d["invocation_id"],
        "user_content": _content(d["user_content"]),
        "final_response": _content(d["final_response"]),
        "intermediate_data": _intermediate_data(data) if type(data) is _intermediate_data_class else data,
        "creation_timestamp": d["creation_timestamp"],
    }
    for key in _RARE_INVOCATION_KEYS:
        if d[key] is not None:
            out[key] = d[key]
    return out


# --- reading an eval set case by case --------------------------------------------------------------
def read_one_case_at_a_time(data: Any) -> EvalSet | None:
    """A plain, valid eval set (current schema, known top-level keys only, unique ids), read one case
    per `model_validate` with each parsed case dropped from `data` once read; None as soon as anything
    is off (and always when the fast paths are off), and then `data` may be spent: the caller parses
    the file again for the whole-file reader's report of every fault.

    Validating the whole parsed file at once kept all of its JSON objects alive until the last model
    was built, and the memory they freed afterwards was left scattered among the models (a higher
    peak RSS for the same CPU time). Between two cases the interpreter may also hand the GIL over (a
    100,000-case file in one call held it for seconds while the dashboard waited).
    """
    if not _on:
        return None
    from .model import EvalCase, EvalSet, LoadContext

    if not isinstance(data, dict) or not EvalSet.model_fields.keys() >= data.keys():
        return None
    raw_cases = data.get("eval_cases")
    if not isinstance(raw_cases, list):
        return None
    context = LoadContext()
    cases: list[EvalCase] = []
    ids: set[str] = set()
    try:
        # The top level without its cases: the same checks as the whole file's, at no cost.
        eval_set = EvalSet.model_validate({**data, "eval_cases": []}, context=context)
        for i, raw in enumerate(raw_cases):
            case = EvalCase.model_validate(raw, context=context)
            if case.eval_id in ids:
                return None
            ids.add(case.eval_id)
            cases.append(case)
            raw_cases[i] = None
    except ValidationError:
        return None
    eval_set.eval_cases = cases
    eval_set.load_warnings = context.warnings()
    return eval_set
