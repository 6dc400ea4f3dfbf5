"""The one pydantic base of our ADK models: camelCase aliases, snake_case names, unknown keys rejected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .fast import assign_copying_shared_set


class EvalBaseModel(BaseModel):
    """As google-adk's `evaluation.common.EvalBaseModel`: a key may be written snake_case or camelCase,
    and a key the model does not know is an error unless the model says otherwise (`extra=`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    # Loaded models may share their fields-sets (schema/fast.py): an assignment copies a shared one first.
    __setattr__ = assign_copying_shared_set


def either_spelling(data: Mapping[str, Any], snake: str) -> Any:
    """A key of ADK JSON below the top level, written snake_case or (as the models' aliases allow, and ADK's
    API server writes) camelCase; None when absent."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(w.title() for w in rest))
