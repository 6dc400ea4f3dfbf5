"""Schema faults: all of a file's errors at once, did-you-mean, ADK's coercions and what loads with a warning."""

from __future__ import annotations

import json
import logging

import pytest

from tests.support.evalfiles import turns_of
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.errors import LoadError, SchemaError
from tui_eval.schema.load import parse_eval_set


def _turn(**over):
    turn = {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": "hi"}]},
        "final_response": {"role": "model", "parts": [{"text": "hello"}]},
    }
    turn.update(over)
    return turn


def _doc(*turns, **top):
    return {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": list(turns)}], **top}


def _parse(doc):
    return parse_eval_set(json.dumps(doc).encode(), "x.evalset.json")[0]


def _error(doc) -> LoadError:
    with pytest.raises(LoadError) as info:
        parse_eval_set(json.dumps(doc).encode(), "bad.evalset.json")
    return info.value


def test_every_fault_of_a_file_is_reported_at_once():
    doc = _doc(_turn(user_content={"parts": [{"text": 1}]}), _turn(bogus=True), _turn(final_response=[]))
    err = _error(doc)
    assert [i.json_path for i in err.issues] == [
        "$.eval_cases[0].conversation[0].user_content.parts[0].text",
        "$.eval_cases[0].conversation[1].bogus",
        "$.eval_cases[0].conversation[2].final_response",
    ]
    lines = str(err).splitlines()
    assert len(lines) == 3 and all(line.startswith("bad.evalset.json at $.eval_cases[0].conversation[") for line in lines)
    assert lines[2].endswith("expected an object, got array")


def test_at_most_twenty_faults_then_a_count():
    doc = _doc(*[_turn(user_content={"parts": [{"text": n}]}) for n in range(25)])
    err = _error(doc)
    assert len(err.issues) == 20 and err.more == 5
    lines = str(err).splitlines()
    assert len(lines) == 21 and lines[-1] == "bad.evalset.json: ... and 5 more error(s)"


def test_misspelt_keys_get_a_did_you_mean():
    err = _error(_doc(_turn(user_content={"parts": [{"txt": "hi"}]}, finalResponce={"parts": []})))
    messages = {i.json_path: i.message for i in err.issues}
    assert messages["$.eval_cases[0].conversation[0].user_content.parts[0].txt"] == (
        "unknown key 'txt' (did you mean 'text'?)")
    assert "did you mean 'final_response'?" in messages["$.eval_cases[0].conversation[0].finalResponce"]
    deep = _error(_doc(_turn(intermediate_data={"tool_uses": [{"name": "f", "argz": {}}]})))
    assert deep.json_path == "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].argz"
    assert deep.message == "unknown key 'argz' (did you mean 'args'?)"


def test_misspelt_metric_name_gets_a_did_you_mean():
    cfg = read_eval_config({"criteria": {"response_match_scor": 0.5}})
    assert cfg.unknown_metrics == ["response_match_scor"]
    assert "did you mean 'response_match_score'?" in "\n".join(cfg.warnings)


def test_adk_lax_coercions_load():
    turn = _turn(creation_timestamp="1700000000.5")
    es = _parse({"eval_set_id": "s", "creation_timestamp": "12",
                 "eval_cases": [{"eval_id": "a", "conversation": [turn], "creation_timestamp": "3"}]})
    assert es.creation_timestamp == 12.0 and es.eval_cases[0].creation_timestamp == 3.0
    assert es.eval_cases[0].conversation[0].creation_timestamp == 1700000000.5
    cfg = read_eval_config({"criteria": {"tool_trajectory_avg_score": {"threshold": "1.0", "ignore_args": "true"},
                                         "response_match_score": "0.5"}})
    traj = cfg.criteria["tool_trajectory_avg_score"]
    assert (traj.threshold, traj.ignore_args) == (1.0, True)
    assert cfg.criteria["response_match_score"].threshold == 0.5


def test_legacy_row_with_null_tool_input_is_a_call_without_args():
    rows = [{"query": "q", "expected_tool_use": [{"tool_name": "now", "tool_input": None}], "reference": "r"}]
    es, legacy = parse_eval_set(json.dumps(rows).encode(), "old.test.json")
    call = turns_of(es.eval_cases[0])[0].tool_calls[0]
    assert legacy and (call.name, call.args) == ("now", None)


def test_other_genai_part_fields_are_kept_through_a_round_trip():
    part = {"inline_data": {"mime_type": "image/png", "data": "AAAA"}, "thought": True, "thoughtSignature": "c2ln"}
    es = _parse(_doc(_turn(final_response={"role": "model", "parts": [part, {"text": "ok"}]})))
    written = es.to_dict()["eval_cases"][0]["conversation"][0]["final_response"]
    assert written == {"parts": [{"inline_data": {"mime_type": "image/png", "data": "AAAA"}, "thought": True,
                                  "thought_signature": "c2ln"}, {"text": "ok"}], "role": "model"}


def test_unknown_top_level_key_loads_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="tui_eval.schema.load"):
        es = _parse(_doc(_turn(), comment="made by hand", evalCases=[]))
    assert len(es.eval_cases) == 1
    assert es.load_warnings == [
        "$.comment: unknown top-level key 'comment' ignored",
        "$.evalCases: unknown top-level key 'evalCases' ignored (top-level keys are snake_case: use 'eval_cases')",
    ]
    assert "x.evalset.json: $.comment: unknown top-level key 'comment' ignored" in caplog.text


def test_unknown_event_keys_are_ignored_as_adk_does_with_a_warning():
    events = {"invocation_events": [{"author": "a", "content": {"parts": [{"text": "x"}]}, "invocationIndex": 0}]}
    es = _parse(_doc(_turn(intermediate_data=events)))
    assert es.eval_cases[0].conversation[0].intermediate_texts == [("a", "x")]
    assert es.load_warnings == ["invocation_events: unknown event key(s) invocationIndex ignored (as ADK does)"]


def test_tool_timings_are_ours_never_read_from_or_written_to_adk_files():
    err = _error(_doc(_turn(tool_timings=[{"name": "f", "seconds": 1.0}])))
    assert err.json_path == "$.eval_cases[0].conversation[0].tool_timings" and "unknown key" in err.message
    from tui_eval.schema.model import Content, Invocation, ToolTiming

    inv = Invocation(user_content=Content.from_text("q"), tool_timings=[ToolTiming(name="f", seconds=0.5)])
    assert "tool_timings" not in inv.to_dict() and inv.tool_timings[0].seconds == 0.5


def test_custom_metrics_declare_a_criterion_name():
    cfg = read_eval_config({"criteria": {"my_metric": 0.5},
                            "custom_metrics": {"my_metric": {"code_config": {"name": "pkg.mod.fn"}}}})
    assert cfg.unknown_metrics == [] and cfg.criteria["my_metric"].threshold == 0.5
    assert cfg.custom_metrics["my_metric"].code_config.name == "pkg.mod.fn"
    with pytest.raises(SchemaError) as info:
        read_eval_config({"criteria": {}, "custom_metrics": {"m": {"code_config": {}}}})
    assert info.value.json_path == "$.custom_metrics.m.code_config" and "'name'" in info.value.message


def test_every_adk_builtin_is_a_known_metric_and_informational_ones_take_no_threshold():
    names = ["response_evaluation_score", "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
             "multi_turn_tool_use_quality_v1", "rubric_based_multi_turn_trajectory_quality_v1"]
    cfg = read_eval_config({"criteria": dict.fromkeys(names, 0.5)})
    assert list(cfg.criteria) == names and not cfg.unknown_metrics
    with pytest.raises(SchemaError) as info:
        read_eval_config({"criteria": {"token_usage_v1": 0.5}})
    assert info.value.json_path == "$.criteria.token_usage_v1" and "informational" in info.value.message


def test_config_reports_every_bad_criterion_at_once():
    with pytest.raises(SchemaError) as info:
        read_eval_config({"criteria": {"response_match_score": 2, "safety_v1": "x",
                                       "tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}})
    assert [i.json_path for i in info.value.issues] == [
        "$.criteria.response_match_score", "$.criteria.safety_v1", "$.criteria.tool_trajectory_avg_score.match_type"]


def test_misspelt_genai_part_key_is_one_error_with_the_genai_hint():
    err = _error(_doc(_turn(final_response={"parts": [{"inlin_data": {}}]})))
    assert [(i.json_path, i.message) for i in err.issues] == [
        ("$.eval_cases[0].conversation[0].final_response.parts[0].inlin_data",
         "unknown key 'inlin_data' (did you mean 'inline_data'?)")]


def test_a_byte_that_is_not_utf8_is_named_with_its_line_and_column(tmp_path) -> None:
    from tui_eval.schema.errors import LoadError as _LoadError
    from tui_eval.schema.load import loads_json

    raw = b'{"eval_set_id": "x",\n "eval_cases": [{"eval_id": "caf\xe9"}]}\n'
    try:
        loads_json(raw, "bad.evalset.json")
    except _LoadError as exc:
        # orjson said `str is not valid UTF-8: surrogates not allowed` at 1:1.
        assert str(exc) == "bad.evalset.json:2:33: invalid JSON: byte 0xE9 is not UTF-8: save the file as UTF-8"
    else:
        raise AssertionError("no error")


def test_a_config_path_that_is_not_a_file_says_what_it_is(tmp_path) -> None:
    import os

    from tui_eval.schema.load import file_problem

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert file_problem(tmp_path, "config file") == f"{tmp_path}: not a config file: it is a folder, not a regular file"
    assert file_problem(fifo, "config file") == f"{fifo}: not a config file: it is a FIFO, not a regular file"
    assert file_problem("/dev/null", "config file") == "/dev/null: not a config file: it is a device, not a regular file"
    assert file_problem(tmp_path / "nope.json", "config file") == f"{tmp_path / 'nope.json'}: no such config file"
    (tmp_path / "ok.json").write_text("{}")
    assert file_problem(tmp_path / "ok.json", "config file") is None
