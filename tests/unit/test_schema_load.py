"""Loading eval files: both intermediate shapes, camelCase, legacy forms, precise errors, ADK round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.evalfiles import turns_of
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import load_eval_set, parse_eval_set
from tui_eval.schema.model import EvalSet, IntermediateData, InvocationEvents


def _turn(**over):
    turn = {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": "roll a die"}]},
        "final_response": {"role": "model", "parts": [{"text": "You rolled "}, {"text": "a 4."}]},
        "intermediate_data": {"tool_uses": [{"id": "c1", "name": "roll_die", "args": {"sides": 6}}]},
    }
    turn.update(over)
    return turn


def _set(*cases, **top):
    return {"eval_set_id": "s", "eval_cases": list(cases), **top}


def _parse(obj) -> EvalSet:
    return parse_eval_set(json.dumps(obj).encode(), "x.evalset.json")[0]


def _error(obj_or_bytes) -> LoadError:
    raw = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    with pytest.raises(LoadError) as info:
        parse_eval_set(raw, "bad.evalset.json")
    return info.value


def test_first_shape_tool_calls_and_text():
    es = _parse(_set({"eval_id": "a", "conversation": [_turn()]}))
    inv = turns_of(es.eval_cases[0])[0]
    assert isinstance(inv.intermediate_data, IntermediateData)
    assert [(c.name, c.args, c.id) for c in inv.tool_calls] == [("roll_die", {"sides": 6}, "c1")]
    assert inv.final_response is not None and inv.final_response.text == "You rolled \na 4."


def test_second_shape_collects_every_function_call_part_in_order():
    events = {
        "invocation_events": [
            {"author": "root", "content": {"parts": [{"function_call": {"name": "transfer_to_agent",
                                                                          "args": {"agent_name": "b"}}}]}},
            {"author": "b", "content": {"parts": [{"text": "working"},
                                                   {"functionCall": {"name": "f", "args": {}}},
                                                   {"function_call": {"name": "g"}}]}},
            {"author": "b", "content": {"parts": [{"function_response": {"name": "f", "response": {"ok": 1}}}]}},
        ]
    }
    es = _parse(_set({"eval_id": "a", "conversation": [_turn(intermediate_data=events)]}))
    inv = turns_of(es.eval_cases[0])[0]
    assert isinstance(inv.intermediate_data, InvocationEvents)
    assert [c.name for c in inv.tool_calls] == ["transfer_to_agent", "f", "g"]
    assert inv.tool_calls[2].args is None  # absent args stay None, as genai does: None != {}
    assert [r.response for r in inv.tool_responses] == [{"ok": 1}]
    assert inv.intermediate_texts == [("b", "working")]


def test_empty_dict_is_the_first_shape_and_empty():
    es = _parse(_set({"eval_id": "a", "conversation": [_turn(intermediate_data={})]}))
    inv = turns_of(es.eval_cases[0])[0]
    assert isinstance(inv.intermediate_data, IntermediateData)
    assert inv.tool_calls == []


def test_camel_case_below_top_level():
    turn = {
        "invocationId": "t",
        "userContent": {"parts": [{"text": "hi"}]},
        "finalResponse": {"parts": [{"text": "yo"}]},
        "intermediateData": {"toolUses": [{"name": "f", "args": {"a": 1}}], "toolResponses": []},
        "creationTimestamp": 3,
    }
    case = {"evalId": "a", "conversation": [turn], "sessionInput": {"appName": "app", "userId": "u"}}
    es = _parse(_set(case))
    c = es.eval_cases[0]
    assert c.eval_id == "a" and c.session_input is not None and c.session_input.app_name == "app"
    assert turns_of(c)[0].creation_timestamp == 3.0
    assert turns_of(c)[0].tool_calls[0].args == {"a": 1}


@pytest.mark.parametrize(
    ("doc", "where", "words"),
    [
        (_set({"eval_id": "a", "conversation": [_turn(intermediate_data={"tool_uses": [], "invocation_events": []})]}),
         "$.eval_cases[0].conversation[0].intermediate_data", "both intermediate_data shapes"),
        ({"evalSetId": "s", "eval_cases": []}, "$.evalSetId", "use 'eval_set_id'"),
        ({"eval_set_id": "s", "evalCases": []}, "$.evalCases", "snake_case"),
        (_set({"eval_id": "a", "conversation": [_turn(user_content={"parts": [{"text": 5}]})]}),
         "$.eval_cases[0].conversation[0].user_content.parts[0].text", "expected a string, got number"),
        (_set({"eval_id": "a", "conversation": [_turn(bogus=1)]}), "$.eval_cases[0].conversation[0].bogus",
         "unknown key"),
        (_set({"eval_id": "a"}), "$.eval_cases[0]", "exactly one of"),
        (_set({"eval_id": "a", "conversation": [], "conversation_scenario": {"starting_prompt": "x",
                                                                             "conversation_plan": "y"}}),
         "$.eval_cases[0]", "exactly one of"),
        (_set({"eval_id": "a", "conversation": []}, {"eval_id": "a", "conversation": []}),
         "$.eval_cases[1].eval_id", "duplicate eval_id"),
        ({"eval_cases": []}, "$", "missing required key 'eval_set_id'"),
        (_set({"eval_id": "a", "conversation": [_turn(intermediate_data={"tool_uses": [{"name": "f", "args": [1]}]})]}),
         "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].args", "expected an object"),
        ("[]", "$", "empty list"),
    ],
)
def test_schema_errors_name_the_json_path(doc, where, words):
    err = _error(doc.encode() if isinstance(doc, str) else doc)
    assert err.path == "bad.evalset.json"
    assert err.json_path == where
    assert words in err.message
    assert str(err).startswith("bad.evalset.json")


def test_syntax_error_has_line_and_column_and_says_half_saved():
    err = _error(b'{"eval_set_id": "s",\n  "eval_cases": [')
    assert (err.line, err.column) == (2, 18)
    assert "half-saved" in err.message
    assert str(err).startswith("bad.evalset.json:2:18")


def test_legacy_rows_are_one_case_with_one_turn_per_row(tmp_path: Path):
    rows = [
        {"query": "hi", "expected_tool_use": [], "reference": "hello"},
        {"query": "roll", "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 6}}],
         "expected_intermediate_agent_responses": [{"author": "sub", "text": "rolling"}], "reference": "4"},
    ]
    path = tmp_path / "dice.test.json"
    path.write_text(json.dumps(rows))
    es, legacy = parse_eval_set(path.read_bytes(), path)
    assert legacy and es.eval_set_id == "dice" and len(es.eval_cases) == 1
    turns = turns_of(es.eval_cases[0])
    assert [t.user_content.text for t in turns] == ["hi", "roll"]
    assert turns[1].tool_calls[0].name == "roll_die" and turns[1].tool_calls[0].args == {"sides": 6}
    assert turns[1].final_response is not None and turns[1].final_response.text == "4"
    assert turns[1].intermediate_texts == [("sub", "rolling")]


def test_older_legacy_named_cases_with_initial_session():
    data = [{"name": "c1", "data": [{"query": "q", "reference": "r"}],
             "initial_session": {"app_name": "app", "user_id": "u", "state": {"k": 1}}}]
    es, legacy = parse_eval_set(json.dumps(data).encode(), "old.test.json")
    assert legacy and [c.eval_id for c in es.eval_cases] == ["c1"]
    session = es.eval_cases[0].session_input
    assert session is not None and session.state == {"k": 1}


def test_written_eval_set_is_read_by_google_adk_unchanged():
    from google.adk.evaluation.eval_case import IntermediateData as AdkIntermediateData
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    doc = _set(
        {"eval_id": "a", "conversation": [_turn()], "session_input": {"app_name": "x", "user_id": "u", "state": {}},
         "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "polite"}, "type": "FINAL_RESPONSE_QUALITY"}]},
        {"eval_id": "b", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}},
        name="n",
    )
    ours = _parse(doc)
    adk = AdkEvalSet.model_validate(ours.to_dict())
    adk_turns, adk_scenario = adk.eval_cases[0].conversation, adk.eval_cases[1].conversation_scenario
    assert adk_turns is not None and isinstance(adk_turns[0].intermediate_data, AdkIntermediateData)
    assert adk_turns[0].intermediate_data.tool_uses[0].args == {"sides": 6}
    assert adk_scenario is not None and adk_scenario.starting_prompt == "hi"
    # and back again: our reader accepts what ADK writes
    again = parse_eval_set(adk.model_dump_json().encode(), "y.evalset.json")[0]
    assert again.to_dict()["eval_cases"][0]["conversation"][0]["final_response"] == ours.to_dict()["eval_cases"][0][
        "conversation"][0]["final_response"]


def test_load_eval_set_unreadable_file(tmp_path: Path):
    with pytest.raises(LoadError, match="cannot read file"):
        load_eval_set(tmp_path / "missing.evalset.json")


def test_nameless_call_keeps_none_as_genai_does():
    es = _parse(_set({"eval_id": "a", "conversation": [_turn(intermediate_data={"tool_uses": [{"args": {}}]})]}))
    call = turns_of(es.eval_cases[0])[0].tool_calls[0]
    assert call.name is None  # never equal to a call named ""
    assert call.to_dict() == {"args": {}}


def test_legacy_files_load_identically_every_time():
    """Random ids per load would make every reload look like an edit to the live loop."""
    from tui_eval.engine.workspace import case_digest

    rows = json.dumps([{"query": "q", "reference": "r"}, {"query": "q2", "reference": "r2"}]).encode()
    first = parse_eval_set(rows, "a.test.json")[0].eval_cases[0]
    again = parse_eval_set(rows, "a.test.json")[0].eval_cases[0]
    assert case_digest(first) == case_digest(again)
    assert turns_of(first)[0].invocation_id != turns_of(first)[1].invocation_id


def test_load_error_survives_contextlib_and_keeps_its_fields():
    import contextlib

    @contextlib.contextmanager
    def scope():
        yield

    with pytest.raises(LoadError) as info:
        with scope():
            parse_eval_set(b"{", "x.evalset.json")
    assert info.value.__traceback__ is not None
    assert (info.value.path, info.value.line) == ("x.evalset.json", 1)
