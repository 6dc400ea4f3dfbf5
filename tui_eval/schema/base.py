"""The one pydantic base of our ADK models: camelCase aliases, snake_case names, unknown keys rejected."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__


class SharedFieldsSet(set[str]):
    """A model's `__pydantic_fields_set__` shared by every loaded model of its class that was given the
    same keys (`share_fields_set`): a set per object was 216-728 bytes, ~80 MB over a 5,000-case run's
    two eval sets. Never changed in place: a model copies it before an assignment changes it (see
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
_FULL: dict[type, SharedFieldsSet] = {}


def share_fields_sets(models: list[BaseModel]) -> None:
    """Give each freshly loaded model the shared fields-set equal to its own (one loop: a turn has ~10)."""
    full_sets, shared_sets, set_fields_set = _FULL, _SHARED, _set_fields_set
    for model in models:
        fields = model.__pydantic_fields_set__
        cls = type(model)
        full = full_sets.get(cls)
        if full is None:
            full = full_sets[cls] = SharedFieldsSet(cls.__pydantic_fields__)
        if len(fields) == len(full) and fields == full:  # every field given: the common case, no hashing
            set_fields_set(model, full)
            continue
        if type(fields) is SharedFieldsSet:
            continue
        key = (cls, frozenset(fields))
        shared = shared_sets.get(key)
        if shared is None:
            if len(shared_sets) >= _SHARED_MAX:
                continue
            shared = shared_sets[key] = SharedFieldsSet(fields)
        set_fields_set(model, shared)


class EvalBaseModel(BaseModel):
    """As google-adk's `evaluation.common.EvalBaseModel`: a key may be written snake_case or camelCase,
    and a key the model does not know is an error unless the model says otherwise (`extra=`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    def __setattr__(self, name: str, value: Any) -> None:
        # Pydantic adds an assigned field's name to the fields-set: a shared one is copied first.
        if type(self.__pydantic_fields_set__) is SharedFieldsSet:
            _set_fields_set(self, set(self.__pydantic_fields_set__))
        super().__setattr__(name, value)
