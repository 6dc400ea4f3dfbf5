"""The one-case-at-a-time reader (`fast.read_one_case_at_a_time`) reads exactly what the whole-file reader reads,
gives way to it for every file it does not take, and frees each parsed case as it goes."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.evalfiles import case, turn
from tests.unit.test_schema_vs_adk import DOCS
from tui_eval.schema.errors import LoadError
from tui_eval.schema.fast import read_one_case_at_a_time, fast_paths
from tui_eval.schema.load import is_legacy, parse_eval_set, read_eval_set

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    p for folder in ("tests", "demo_agents", "bench") for p in (ROOT / folder).rglob("*.json")
    if p.name.endswith(".evalset.json") and ".data" not in p.parts
)
#: The eval files of the repository, and the documents ADK's EvalSet is compared with (accepted or not).
CORPUS = {str(p.relative_to(ROOT)): p.read_bytes() for p in FILES} | {
    f"adk differential: {name}": json.dumps(doc).encode() for name, doc in DOCS.items()}


@pytest.fixture(autouse=True)
def _fast_paths_on() -> Iterator[None]:
    with fast_paths(True):  # the subject here, whatever $TUI_EVAL_PLAIN_PYDANTIC says
        yield


def _generated(cases: int) -> bytes:
    return json.dumps({"eval_set_id": "big", "eval_cases": [
        case(f"c{i}", turn(f"question {i} " * 8, f"answer {i} " * 20,
                           [("lookup", {"q": f"q{i}", "n": i, "tags": ["a", "b"]})], f"t{i}"))
        for i in range(cases)]}).encode()


def _whole(raw: bytes):
    return read_eval_set(orjson.loads(raw))


def test_the_corpus_is_not_empty() -> None:
    assert len(FILES) >= 8 and len(CORPUS) >= 30


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_it_reads_what_the_whole_file_reader_reads(name: str) -> None:
    raw = CORPUS[name]
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return  # a syntax error never reaches either reader
    if is_legacy(data):
        assert read_one_case_at_a_time(data) is None
        return
    try:
        whole = _whole(raw)
    except Exception:  # noqa: BLE001 - an invalid file: the plain reader must decline it
        assert read_one_case_at_a_time(orjson.loads(raw)) is None
        return
    plain = read_one_case_at_a_time(orjson.loads(raw))
    if plain is None:  # declined (an unknown top-level key...): parse_eval_set falls back to the whole reader
        assert whole.load_warnings
        return
    assert plain.model_dump() == whole.model_dump()
    assert plain.model_fields_set == whole.model_fields_set
    assert plain.load_warnings == whole.load_warnings


def test_ignored_event_keys_are_warned_about_in_both_readers() -> None:
    events = {"invocation_events": [{"author": "a", "content": {"parts": [{"text": "x"}]}, "mood": "ok"}]}
    doc = {"eval_set_id": "s", "eval_cases": [case("a", {**turn("hi", "yo"), "intermediate_data": events})]}
    plain = read_one_case_at_a_time(json.loads(json.dumps(doc)))
    assert plain is not None
    assert plain.load_warnings == read_eval_set(json.loads(json.dumps(doc))).load_warnings
    assert "mood" in plain.load_warnings[0]


@pytest.mark.parametrize("doc, reported", [
    ({"eval_set_id": "s", "eval_cases": [case("a", turn("hi", "yo")), case("a", turn("hi", "yo"))]},
     "duplicate eval_id 'a'"),
    ({"eval_set_id": "s", "eval_cases": [case("a", turn("hi", "yo")), {"eval_id": "b", "conversation": 3}]},
     "$.eval_cases[1].conversation"),
    ({"eval_set_id": "s", "eval_cases": [case(f"c{i}", turn("hi", "yo")) for i in range(30)] + [{"evalid": "x"}]},
     "$.eval_cases[30]"),
])
def test_a_late_fault_is_reported_by_the_whole_file_reader(tmp_path: Path, doc: dict, reported: str) -> None:
    """The plain reader has freed the cases before the one that fails: the report still has them all."""
    with pytest.raises(LoadError) as info:
        parse_eval_set(json.dumps(doc).encode(), tmp_path / "bad.evalset.json")
    assert reported in str(info.value)
    assert "bad.evalset.json" in str(info.value)


def test_unknown_top_level_keys_still_load_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    doc = {"eval_set_id": "s", "eval_cases": [case("a", turn("hi", "yo"))], "evalSetName": "x"}
    eval_set, legacy = parse_eval_set(json.dumps(doc).encode(), tmp_path / "w.evalset.json")
    assert not legacy and eval_set.eval_cases[0].eval_id == "a"
    assert any("unknown top-level key 'evalSetName'" in w for w in eval_set.load_warnings)


def _reading(reader, raw: bytes) -> tuple[int, int, int]:
    """(parsed JSON, peak while reading it, models kept) in bytes of Python memory, for one reader of
    a parsed file (orjson's own transient buffers, before reading starts, are not counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        data = orjson.loads(raw)
        tree = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        eval_set = reader(data)
        del data
        models, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert eval_set is not None
    return tree, peak, models


def test_parsed_cases_are_freed_while_the_models_are_built() -> None:
    """Reading a file never holds its whole parsed JSON and all of its models at once: the peak is
    hardly more than the models kept, where the whole-file reader holds the JSON's objects too."""
    raw = _generated(400)
    for reader in (read_eval_set, read_one_case_at_a_time):  # builds the validators first
        reader(orjson.loads(_generated(2)))
    tree, whole_peak, whole_models = _reading(read_eval_set, raw)
    _tree, plain_peak, plain_models = _reading(read_one_case_at_a_time, raw)
    assert plain_models == pytest.approx(whole_models, rel=0.05)
    assert whole_peak > whole_models + 0.5 * tree
    assert plain_peak < plain_models + 0.1 * tree
