"""Reading CES evaluation files: one Evaluation, a list of them, or a `{"evaluations": [...]}` page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import LoadError, render_path
from ..load import read_json_file
from .model import Evaluation


def evaluations_from_json(data: Any, path: str | Path) -> list[Evaluation]:
    """Validate parsed JSON as CES evaluations. Raises LoadError with the JSON path of the first fault."""
    if isinstance(data, dict) and "evaluations" in data and not ("golden" in data or "scenario" in data):
        items, prefix = data["evaluations"], "$.evaluations"
        if not isinstance(items, list):
            raise LoadError(str(path), "'evaluations' must be a list", prefix)
    elif isinstance(data, list):
        items, prefix = data, "$"
    elif isinstance(data, dict):
        items, prefix = [data], ""
    else:
        raise LoadError(str(path), f"expected a CES Evaluation object, a list or a page, got {type(data).__name__}")
    out: list[Evaluation] = []
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]" if prefix else "$"
        if not isinstance(item, dict):
            raise LoadError(str(path), f"expected a CES Evaluation object, got {type(item).__name__}", where)
        try:
            evaluation = Evaluation.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LoadError(str(path), first["msg"], render_path(where, first["loc"])) from None
        if evaluation.golden is None and evaluation.scenario is None:
            raise LoadError(str(path), "a CES Evaluation needs 'golden' or 'scenario'", where)
        if evaluation.golden is not None and evaluation.scenario is not None:
            raise LoadError(str(path), "a CES Evaluation has one of 'golden' and 'scenario', not both", where)
        out.append(evaluation)
    return out


def read_evaluations(path: str | Path) -> list[Evaluation]:
    """Read a CES file. Raises LoadError naming the file and the place of the fault."""
    path = Path(path)
    return evaluations_from_json(read_json_file(path), path)
