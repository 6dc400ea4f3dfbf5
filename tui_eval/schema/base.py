"""The one pydantic base of our ADK models: camelCase aliases, snake_case names, unknown keys rejected."""

from __future__ import annotations

from collections import deque
from itertools import compress
from operator import attrgetter, eq, not_
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__


class SharedFieldsSet(set[str]):
    """A model's `__pydantic_fields_set__` shared by every loaded model of its class that was given the
    same keys (`share_fields_set`): a set per object added up to tens of MB over a big run's two eval
    sets (bench/README.md). Never changed in place: a model copies it before an assignment changes it (see
    `EvalBaseModel.__setattr__`), and a copy of it is a plain set."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)


# (class, names) -> the shared set. Bounded: the combinations of given keys a file uses are few, and
# past the bound models simply keep their own sets.
_SHARED: dict[tuple[type, frozenset[str]], SharedFieldsSet] = {}
_SHARED_MAX = 4096


def share_fields_sets(models: list[BaseModel]) -> None:
    """Give each freshly loaded model the shared fields-set equal to its own.

    Written as C-level map()s over the whole list, not a Python loop: a big file has hundreds of
    thousands of models, and a loop body per model was a noticeable part of the file's parse. Most models of a class were
    given the same keys, so each is first compared with one candidate set per class (a set comparison),
    and only the others pay for a frozenset key of their own (cheaper than a frozenset per model on
    bench/headless_run.py's eval set; bench/README.md)."""
    if not models:
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


_fields_set_of = attrgetter("__pydantic_fields_set__")


class EvalBaseModel(BaseModel):
    """As google-adk's `evaluation.common.EvalBaseModel`: a key may be written snake_case or camelCase,
    and a key the model does not know is an error unless the model says otherwise (`extra=`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    def __setattr__(self, name: str, value: Any) -> None:
        # Pydantic adds an assigned field's name to the fields-set: a shared one is copied first.
        if type(self.__pydantic_fields_set__) is SharedFieldsSet:
            _set_fields_set(self, set(self.__pydantic_fields_set__))
        super().__setattr__(name, value)
