"""Loaded models share their fields-sets (memory) without changing what `model_fields_set` says of any
model, before or after an assignment or a copy."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from tui_eval.schema.fast import SharedFieldsSet, fast_paths
from tui_eval.schema.load import load_eval_set
from tui_eval.schema.model import IntermediateData, Invocation


@pytest.fixture(autouse=True)
def _fast_paths_on() -> Iterator[None]:
    with fast_paths(True):  # the subject here, whatever $TUI_EVAL_PLAIN_PYDANTIC says
        yield


def _turn(i: int, **extra: object) -> dict[str, object]:
    return {"invocation_id": f"t{i}", "user_content": {"role": "user", "parts": [{"text": f"q{i}"}]},
            "final_response": {"role": "model", "parts": [{"text": f"a{i}"}]},
            "intermediate_data": {"tool_uses": [{"id": f"c{i}", "name": "f", "args": {"n": i}}],
                                  "tool_responses": [], "intermediate_responses": []}, **extra}


def _load(tmp_path: Path) -> list[Invocation]:
    path = tmp_path / "s.evalset.json"
    cases = [{"eval_id": f"c{i}", "conversation": [_turn(i)] if i else [_turn(i, creation_timestamp=5.0)]}
             for i in range(3)]
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": cases}))
    return [case.conversation[0] for case in load_eval_set(path).eval_cases]  # type: ignore[index]


def test_models_given_the_same_keys_share_one_set_and_still_say_which_keys_were_given(tmp_path: Path) -> None:
    first, second, third = _load(tmp_path)
    assert second.__pydantic_fields_set__ is third.__pydantic_fields_set__
    assert type(second.__pydantic_fields_set__) is SharedFieldsSet
    assert second.model_fields_set == {"invocation_id", "user_content", "final_response", "intermediate_data"}
    assert first.model_fields_set == second.model_fields_set | {"creation_timestamp"}  # its own keys, not shared
    parts = [t.user_content.parts[0] for t in (first, second)]  # type: ignore[index]
    assert parts[0].__pydantic_fields_set__ is parts[1].__pydantic_fields_set__ and parts[0].model_fields_set == {"text"}
    calls = [t.intermediate_data.tool_uses[0] for t in (first, second)]  # type: ignore[union-attr]
    assert calls[0].__pydantic_fields_set__ is calls[1].__pydantic_fields_set__
    assert second.model_dump(exclude_unset=True).keys() == second.model_fields_set


def test_an_assignment_changes_only_its_own_model(tmp_path: Path) -> None:
    _first, second, third = _load(tmp_path)
    second.duration = 2.0
    assert "duration" in second.model_fields_set and second.duration == 2.0
    assert "duration" not in third.model_fields_set  # the shared set was copied, never changed
    part = second.user_content.parts[0]  # type: ignore[index]
    part.text = "changed"
    assert third.user_content.parts[0].model_fields_set == {"text"}  # type: ignore[index]
    assert third.user_content.parts[0].text == "q2"  # type: ignore[index]


def test_copies_get_their_own_sets(tmp_path: Path) -> None:
    _first, second, third = _load(tmp_path)
    changed = second.model_copy(update={"duration": 1.0})
    assert "duration" in changed.model_fields_set and "duration" not in third.model_fields_set
    for other in (copy.copy(second), copy.deepcopy(second), pickle.loads(pickle.dumps(second))):
        assert other == second and other.model_fields_set == second.model_fields_set
        other.tool_duration = 1.0
        assert "tool_duration" not in third.model_fields_set
    data = third.intermediate_data
    assert isinstance(data, IntermediateData)
    data.tool_responses = []
    assert second.intermediate_data.model_fields_set == {"tool_uses", "tool_responses", "intermediate_responses"}  # type: ignore[union-attr]


def test_every_model_gets_the_shared_set_of_exactly_its_own_keys_whatever_the_order() -> None:
    from pydantic import BaseModel

    from tui_eval.schema.fast import share_fields_sets
    from tui_eval.schema.model import FunctionCall, Part

    # Per class, the usual keys and a few odd ones, the odd ones first, last and in between.
    models: list[BaseModel] = [FunctionCall.model_validate({"name": "f", "id": "odd"})]
    models += [FunctionCall.model_validate({"name": "f", "args": {"n": i}}) for i in range(5)]
    models += [Part.model_validate({"text": "t"}), FunctionCall.model_validate({"name": "g", "id": "x", "args": {}})]
    models += [Part.model_validate({"text": f"t{i}", "function_call": None}) for i in range(4)]
    models += [Part.model_validate({"text": "last"})]
    own = [set(m.__pydantic_fields_set__) for m in models]
    share_fields_sets(models)
    assert [m.model_fields_set for m in models] == own
    assert all(type(m.__pydantic_fields_set__) is SharedFieldsSet for m in models)
    by_keys: dict[tuple[type, frozenset[str]], set[int]] = {}
    for m in models:
        by_keys.setdefault((type(m), frozenset(m.model_fields_set)), set()).add(id(m.__pydantic_fields_set__))
    assert len(by_keys) == 5 and all(len(ids) == 1 for ids in by_keys.values())  # one set per class and keys
