"""The fast paths around pydantic (tui_eval/schema/fast.py) give exactly what plain pydantic gives, for
every model: built without validation (`trusted`), written by the second serializer (`adk_json_default`),
read by the second reader (one case at a time) and with shared fields-sets. Models and their JSON are
generated (hypothesis) from the models' own field types; each is built, written and read with the fast
paths on and off, and the two are compared, and read back across (written fast, read plain; written plain,
read fast). The pydantic the paths rely on is within the range they are tested for."""

from __future__ import annotations

import enum
import os
import re
import subprocess
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, ValidationError
from typing_extensions import get_args, get_origin, is_typeddict

from tui_eval.schema import details as details_module
from tui_eval.schema import fast
from tui_eval.schema import model as eval_models
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import load_eval_set, parse_eval_set
from tui_eval.schema.results import CaseResult, EvalSetResult, InvocationMetricResult, MetricResult, _Result

ROOT = Path(__file__).resolve().parents[2]
# (a failing example's repr may be long: that is what it takes to show it)
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
T = TypeVar("T")

# --- strategies from the models' own field types ----------------------------------------------------
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)  # (no lone surrogates: not JSON)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
_MODELS: dict[tuple[type, bool], st.SearchStrategy[Any]] = {}


def values_of(tp: Any, *, every_field: bool = True) -> st.SearchStrategy[Any]:
    """Values of a field type, of exactly that type (models as models): what our code would hold."""
    if tp is Any or tp is JsonValue or tp is object:
        return JSON
    if tp is type(None) or tp is None:
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is str:
        return TEXT
    origin, args = get_origin(tp), get_args(tp)
    if origin in (typing.Annotated, typing.NotRequired, typing.Required):
        return values_of(args[0], every_field=every_field)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([values_of(a, every_field=every_field) for a in args])
    if origin is list:
        return st.lists(values_of(args[0], every_field=every_field), max_size=2)
    if origin is dict:
        return st.dictionaries(TEXT, values_of(args[1], every_field=every_field), max_size=2)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
        return st.lists(values_of(args[0], every_field=every_field), max_size=2).map(tuple)
    if origin is tuple:
        return st.tuples(*(values_of(a, every_field=every_field) for a in args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = {k: values_of(hints[k]) for k in tp.__required_keys__}
        optional = {k: values_of(hints[k]) for k in tp.__optional_keys__}
        return st.fixed_dictionaries(required, optional=optional)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return instances_of(tp, every_field=every_field)
    raise TypeError(f"no strategy for {tp!r}")


def _field_type(info: Any) -> Any:
    return info.annotation


def instances_of(cls: type[BaseModel], *, every_field: bool = True) -> st.SearchStrategy[Any]:
    """Validated instances of `cls`: every field given, or (every_field=False) some optional ones left out
    (so loaded models differ in their fields-sets, as files do). The shapes files mostly hold (`_typical`)
    are drawn as often as any other."""
    key = (cls, every_field)
    if key not in _MODELS:
        typical = _typical(cls)
        _MODELS[key] = st.deferred(lambda: _instances(cls, every_field) if typical is None
                                   else st.one_of(typical, _instances(cls, every_field)))
    return _MODELS[key]


def _typical(cls: type[BaseModel]) -> st.SearchStrategy[Any] | None:
    """The shapes of a recorded turn: text parts, calls and responses with every key, a role."""
    m = eval_models
    ids, names = st.sampled_from(["c1", "c2"]), st.sampled_from(["lookup", "book"])
    if cls is m.FunctionCall:
        return _model(m.FunctionCall, id=ids, name=names, args=st.dictionaries(TEXT, JSON, max_size=3))
    if cls is m.FunctionResponse:
        return _model(m.FunctionResponse, id=ids, name=names, response=st.dictionaries(TEXT, JSON, max_size=3))
    if cls is m.Part:
        return st.one_of(_model(m.Part, text=TEXT), _model(m.Part, function_call=instances_of(m.FunctionCall)),
                         _model(m.Part, function_response=instances_of(m.FunctionResponse)))
    if cls is m.Content:
        return _model(m.Content, parts=st.lists(instances_of(m.Part), min_size=1, max_size=3),
                      role=st.sampled_from(["user", "model"]))
    if cls is m.IntermediateData:
        return _model(m.IntermediateData, tool_uses=st.lists(instances_of(m.FunctionCall), max_size=3),
                      tool_responses=st.lists(instances_of(m.FunctionResponse), max_size=3))
    if cls is m.EvalCase:
        return _model(m.EvalCase, eval_id=TEXT, conversation=st.lists(
            instances_of(m.Invocation, every_field=False), min_size=1, max_size=3))
    return None


def _model(cls: type[BaseModel], **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # (not st.builds: it would also fill in the aliases of the model's signature, as extra keys)
    return st.fixed_dictionaries(fields).map(cls.model_validate)


def _instances(cls: type[BaseModel], every_field: bool) -> st.SearchStrategy[Any]:
    fields = {name: values_of(_field_type(info), every_field=every_field) for name, info in cls.model_fields.items()}
    if every_field:
        required, optional = fields, {}
    else:
        required = {n: s for n, s in fields.items() if cls.model_fields[n].is_required()}
        optional = {n: s for n, s in fields.items() if n not in required}

    def build(values: dict[str, Any]) -> BaseModel | None:
        try:
            return cls.model_validate(values)
        except ValidationError:
            return None  # a combination the model refuses (a case with both a conversation and a scenario)

    return st.fixed_dictionaries(required, optional=optional).map(build).filter(lambda m: m is not None)


def _subclasses(base: type[T]) -> list[type[T]]:
    out: list[type[T]] = []
    for sub in base.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


DETAILS = sorted({c for c in _subclasses(details_module._Details) if c.__module__ == details_module.__name__},
                 key=lambda c: c.__name__)
RESULTS = [InvocationMetricResult, MetricResult, CaseResult, EvalSetResult]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.filter_too_much])


# --- the switch -----------------------------------------------------------------------------------
def both(make: Callable[[], T]) -> tuple[T, T]:
    """`make()` with the fast paths on, then off."""
    return _with(True, make), _with(False, make)


def _with(on: bool, make: Callable[[], T]) -> T:
    with fast.fast_paths(on):
        return make()


def _fields_sets(obj: Any) -> Iterator[tuple[str, frozenset[str]]]:
    """Every nested model's class and fields-set, in order (what `exclude_unset` dumps go by)."""
    if isinstance(obj, BaseModel):
        yield type(obj).__name__, frozenset(obj.model_fields_set)
        for name in type(obj).model_fields:
            yield from _fields_sets(getattr(obj, name))
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _fields_sets(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _fields_sets(item)


# --- trusted: built without validation ----------------------------------------------------------
@pytest.mark.parametrize("cls", [*DETAILS, *RESULTS], ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_a_model_built_without_validation_is_the_validated_model(cls: type[BaseModel], data: st.DataObject) -> None:
    given_model = data.draw(instances_of(cls))
    values = {name: getattr(given_model, name) for name in cls.model_fields}
    quick, plain = both(lambda: fast.trusted(cls, **values))
    assert type(quick) is type(plain) is cls
    assert quick == plain
    assert quick.model_fields_set == plain.model_fields_set == set(cls.model_fields)
    assert quick.model_dump() == plain.model_dump()
    assert quick.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
    quick_json, plain_json = quick.model_dump_json(), plain.model_dump_json()
    assert quick_json == plain_json
    # and read back, each the other's
    if cls not in (CaseResult, EvalSetResult):  # (their turns are never written: exclude=True)
        assert cls.model_validate_json(quick_json) == cls.model_validate_json(plain_json) == plain


# --- the second serializer and the second reader -----------------------------------------------
def _eval_set_bytes(eval_set: eval_models.EvalSet) -> bytes:
    return orjson.dumps(eval_set.to_dict())


def _read(raw: bytes) -> eval_models.EvalSet | str:
    """The file's eval set, or the error it is refused with (both readers must agree on either)."""
    try:
        return parse_eval_set(raw, "generated.evalset.json")[0]
    except LoadError as exc:
        return str(exc)


def _load_sharing(raw: bytes, tmp: Path) -> eval_models.EvalSet | str:
    path = tmp / "generated.evalset.json"
    path.write_bytes(raw)
    try:
        return load_eval_set(path)
    except LoadError as exc:
        return str(exc).replace(str(tmp), "")


EVAL_SETS = instances_of(eval_models.EvalSet, every_field=False).filter(
    lambda s: len({c.eval_id for c in s.eval_cases}) == len(s.eval_cases))


@SETTINGS
@given(eval_set=EVAL_SETS)
def test_an_eval_set_reads_the_same_with_and_without_the_fast_paths(eval_set: eval_models.EvalSet,
                                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    raw = _eval_set_bytes(eval_set)
    quick, plain = both(lambda: _read(raw))
    assert quick == plain
    if isinstance(quick, str) or isinstance(plain, str):
        return  # refused by both, with the same error
    assert quick.load_warnings == plain.load_warnings
    assert list(_fields_sets(quick)) == list(_fields_sets(plain))
    assert quick.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
    # load_eval_set lets the models share their fields-sets: nothing they say changes
    tmp = tmp_path_factory.mktemp("sets")
    shared, unshared = both(lambda: _load_sharing(raw, tmp))
    assert shared == unshared == plain
    assert list(_fields_sets(shared)) == list(_fields_sets(unshared)) == list(_fields_sets(plain))


@SETTINGS
@given(eval_set=EVAL_SETS)
def test_a_turn_is_written_the_same_with_and_without_the_fast_paths(eval_set: eval_models.EvalSet) -> None:
    turns = [turn for case in eval_set.eval_cases for turn in case.conversation or ()]
    for turn in turns:
        quick, plain = both(lambda: orjson.dumps(turn, default=fast.adk_json_default))
        assert quick == plain == orjson.dumps(turn.to_dict())
    # A whole file, written by each and read by the other.
    doc = {"eval_set_id": eval_set.eval_set_id, "eval_cases": [
        {"eval_id": c.eval_id, "conversation": c.conversation} for c in eval_set.eval_cases if c.conversation]}
    quick, plain = both(lambda: orjson.dumps(doc, default=fast.adk_json_default))
    assert quick == plain
    assert _with(False, lambda: _read(quick)) == _with(True, lambda: _read(plain))


@SETTINGS
@given(case=instances_of(CaseResult), turns=st.lists(instances_of(eval_models.Invocation, every_field=False),
                                                     max_size=3))
def test_a_case_result_is_written_the_same_with_and_without_the_fast_paths(case: CaseResult,
                                                                           turns: list[eval_models.Invocation]) -> None:
    case = case.model_copy(update={"actual": turns, "expected": turns[:1] or None})
    quick, plain = both(lambda: orjson.dumps(case.adk_shallow(), default=fast.adk_json_default,
                                             option=orjson.OPT_NON_STR_KEYS))
    assert quick == plain == orjson.dumps(case.to_adk(), option=orjson.OPT_NON_STR_KEYS)


# --- results are immutable -------------------------------------------------------------------------
@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_result_cannot_be_rewritten_in_place(cls: type[_Result], data: st.DataObject) -> None:
    result = data.draw(instances_of(cls))
    name = {CaseResult: "error", EvalSetResult: "eval_set_file"}.get(cls, "reason")
    for built in (result, fast.trusted(cls, **{n: getattr(result, n) for n in cls.model_fields})):
        before = built.model_dump()
        with pytest.raises(ValidationError, match="frozen"):
            setattr(built, name, "rewritten")
        changed = built.model_copy(update={name: "rewritten"})  # a changed result is a copy
        assert getattr(changed, name) == "rewritten" and built.model_dump() == before


# --- the switch and the pydantic range -----------------------------------------------------------
def test_the_environment_variable_turns_every_fast_path_off() -> None:
    code = "from tui_eval.schema import fast; print(fast.fast_paths_on())"
    env = {k: v for k, v in os.environ.items() if k != fast.PLAIN_ENV}
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    off = subprocess.run([sys.executable, "-c", code], env={**env, fast.PLAIN_ENV: "1"}, capture_output=True,
                         text=True, check=True)
    zero = subprocess.run([sys.executable, "-c", code], env={**env, fast.PLAIN_ENV: "0"}, capture_output=True,
                          text=True, check=True)
    assert (on.stdout.strip(), off.stdout.strip(), zero.stdout.strip()) == ("True", "False", "True")


def test_the_fast_paths_are_on_only_for_the_pydantic_versions_they_are_tested_with() -> None:
    low, high = fast.PYDANTIC_TESTED
    assert fast.pydantic_tested(low + ".0") and fast.pydantic_tested(low + ".9")
    assert not fast.pydantic_tested(high + ".0") and not fast.pydantic_tested(high + ".0b1")
    major, minor = (int(n) for n in low.split("."))
    assert not fast.pydantic_tested(f"{major}.{minor - 1}.9") and not fast.pydantic_tested(f"{major + 1}.0.0")


def test_the_installed_pydantic_is_in_the_range_the_fast_paths_are_tested_with() -> None:
    low, high = fast.PYDANTIC_TESTED
    assert fast.pydantic_tested(), (
        f"pydantic {pydantic.VERSION} is installed, but tui_eval/schema/fast.py's fast paths are tested with "
        f"pydantic>={low},<{high} only (they are off outside it): run this test file against the new version, "
        f"then widen PYDANTIC_TESTED and pyproject.toml's pin together")
    assert fast.fast_paths_on() or os.environ.get(fast.PLAIN_ENV, "").strip() not in ("", "0")


def test_pyproject_pins_the_tested_range() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    pins = re.findall(r'"pydantic([<>=!~][^"]*)"', text)
    low, high = fast.PYDANTIC_TESTED
    assert pins == [f">={low},<{high}"], pins
