"""CES Evaluation <-> ADK eval set: what the case carries, and an exact round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
import pytest

from tests.support.fake_ces import APP, golden_evaluation, scenario_evaluation
from tui_eval.schema.ces.files import evaluations_from_json, read_evaluations
from tui_eval.schema.ces.mapping import (
    CES_KEY,
    eval_set_to_evaluations,
    evaluations_to_eval_set,
    parse_plan,
    render_plan,
)
from tui_eval.schema.ces.model import Evaluation
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import parse_eval_set


def _import(*evaluations: dict) -> dict:
    parsed = evaluations_from_json(list(evaluations), "in.json")
    eval_set = evaluations_to_eval_set(parsed, "ces_set")
    # Through the file format and our loader, as a user's run would read it.
    return orjson.loads(orjson.dumps(eval_set))


def _export(eval_set: dict) -> list[dict]:
    return [e.to_json_dict() for e in eval_set_to_evaluations(eval_set)]


def test_golden_case_carries_user_text_tool_calls_and_responses() -> None:
    eval_set = _import(golden_evaluation())
    loaded, legacy = parse_eval_set(orjson.dumps(eval_set), "ces.evalset.json")
    assert not legacy
    case = loaded.eval_cases[0]
    assert case.eval_id == "weather-golden"
    turn1, turn2 = case.conversation or []
    assert [p.text for p in turn1.user_content.parts or []] == ["What's the weather in Paris?"]
    raw1 = eval_set["eval_cases"][0]["conversation"][0]
    assert raw1["intermediate_data"]["tool_uses"] == [{"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}]
    # The golden's mockToolResponse is a recorded tool response too (what --mock-tools answers with).
    assert raw1["intermediate_data"]["tool_responses"] == [
        {"id": "c1", "name": "get_weather", "response": {"output": {"temp_c": 21}}},
        {"name": "get_weather", "response": {"output": "sunny"}},
    ]
    assert raw1["final_response"] == {"role": "model", "parts": [{"text": "It is 21 degrees"}, {"text": " and sunny."}]}
    raw2 = eval_set["eval_cases"][0]["conversation"][1]
    # A toolset tool is named by its tool id; two agent responses: the last is final, the first intermediate.
    assert raw2["intermediate_data"]["tool_uses"] == [{"name": "book_table", "args": {}}]
    assert raw2["final_response"]["parts"] == [{"text": "Anything else?"}]
    assert raw2["intermediate_data"]["intermediate_responses"] == [["agent", [{"text": "Booked."}, {"text": "Enjoy!"}]]]
    assert [p.text for p in turn2.user_content.parts or []] == ["Book me a table"]


def test_what_the_case_carries_is_not_said_twice() -> None:
    case = _import(golden_evaluation())["eval_cases"][0]
    rest = json.dumps(case[CES_KEY])
    assert "What's the weather in Paris?" not in rest
    assert '"city"' not in rest and "It is 21 degrees" not in rest
    # ... while what ADK has no field for stays: etag, tags, notes, mocks, variables, thresholds, spans.
    for kept in ("etag-1", "smoke", "Check_Weather_Tool_Called", "mockToolResponse", "customer_tier",
                 "semanticSimilaritySuccessThreshold", "rootSpan", "futureTopLevelField", "lastCompletedResult"):
        assert kept in rest


def test_scenario_becomes_conversation_scenario_with_rubrics() -> None:
    eval_set = _import(scenario_evaluation())
    loaded, _ = parse_eval_set(orjson.dumps(eval_set), "s.evalset.json")
    case = loaded.eval_cases[0]
    assert case.conversation_scenario is not None
    assert case.conversation_scenario.starting_prompt == "You want a refund for order 123, which arrived late."
    assert case.conversation_scenario.conversation_plan == (
        "You want a refund for order 123, which arrived late.\n\nUser facts:\n- Order number: 123\n- Email: a@b.c"
    )
    raw = eval_set["eval_cases"][0]
    assert [r["rubric_content"]["text_property"] for r in raw["rubrics"]] == [
        "The agent confirms the order number.", "The agent is polite."
    ]
    assert raw[CES_KEY]["evaluation"]["scenario"]["maxTurns"] == 8


@pytest.mark.parametrize("make", [golden_evaluation, scenario_evaluation])
def test_round_trip_is_exact(make) -> None:
    original = make()
    assert _export(_import(original)) == [original]


def test_round_trip_of_a_page_of_several() -> None:
    page = {"evaluations": [golden_evaluation(), scenario_evaluation(), golden_evaluation(eval_id="g2")],
            "nextPageToken": ""}
    parsed = evaluations_from_json(page, "page.json")
    eval_set = orjson.loads(orjson.dumps(evaluations_to_eval_set(parsed, "x")))
    assert [c["eval_id"] for c in eval_set["eval_cases"]] == ["weather-golden", "refund-scenario", "g2"]
    assert _export(eval_set) == page["evaluations"]


def test_edits_in_the_case_are_what_gets_exported() -> None:
    eval_set = _import(golden_evaluation())
    turn = eval_set["eval_cases"][0]["conversation"][0]
    turn["user_content"]["parts"][0]["text"] = "Weather in Lyon?"
    turn["intermediate_data"]["tool_uses"][0]["args"] = {"city": "Lyon"}
    turn["intermediate_data"]["tool_uses"].append({"name": "get_forecast", "args": {"days": 3}})
    turn["final_response"]["parts"] = [{"text": "It is 18 degrees."}]
    # Second turn: the intermediate response is deleted, the toolset tool renamed.
    turn2 = eval_set["eval_cases"][0]["conversation"][1]
    turn2["intermediate_data"]["intermediate_responses"] = []
    turn2["intermediate_data"]["tool_uses"][0]["name"] = "cancel_table"
    (exported,) = _export(eval_set)
    steps = exported["golden"]["turns"][0]["steps"]
    assert steps[1]["userInput"] == {"text": "Weather in Lyon?", "willContinue": False}
    assert steps[2]["expectation"]["toolCall"]["args"] == {"city": "Lyon"}
    assert steps[2]["expectation"]["note"] == "Check_Weather_Tool_Called"
    assert steps[5]["expectation"]["agentResponse"]["chunks"] == [{"text": "It is 18 degrees."}]
    assert steps[-1] == {"expectation": {"toolCall": {"tool": f"{APP}/tools/get_forecast", "args": {"days": 3}}}}
    steps2 = exported["golden"]["turns"][1]["steps"]
    assert steps2[2]["expectation"]["toolCall"]["toolsetTool"] == {
        "toolset": f"{APP}/toolsets/restaurants", "toolId": "cancel_table"
    }
    responses = [s["expectation"]["agentResponse"] for s in steps2 if "agentResponse" in s.get("expectation", {})]
    # The final response keeps its own slot (and its unknown field); the deleted intermediate one is gone.
    assert responses == [{"role": "agent", "chunks": [{"text": "Anything else?"}], "futureMessageField": 1}]


def test_a_plain_adk_case_exports_as_a_new_golden() -> None:
    eval_set = {
        "eval_set_id": "s",
        "eval_cases": [{
            "eval_id": "hello",
            "conversation": [{
                "invocation_id": "i1",
                "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                "final_response": {"role": "model", "parts": [{"text": "hello"}]},
                "intermediate_data": {"tool_uses": [{"name": "greet", "args": {"x": 1}}]},
            }],
        }, {
            "eval_id": "sim",
            "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "Ask for help."},
        }],
    }
    golden, scenario = _export(eval_set)
    assert golden == {"displayName": "hello", "golden": {"turns": [{"steps": [
        {"userInput": {"text": "hi"}},
        {"expectation": {"toolCall": {"tool": "greet", "args": {"x": 1}}}},
        {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "hello"}]}}},
    ]}]}}
    assert scenario == {"displayName": "sim", "scenario": {"task": "Ask for help."}}


def test_plan_rendering_inverts() -> None:
    facts = [{"name": "Order", "value": "1: two"}]
    assert parse_plan(render_plan("Do it.", facts)) == ("Do it.", facts)
    assert parse_plan("no facts here") == ("no facts here", None)


def test_a_task_that_would_not_parse_back_stays_in_the_remainder() -> None:
    tricky = scenario_evaluation()
    tricky["scenario"]["task"] = "Say:\n\nUser facts:\n- weird"
    assert _export(_import(tricky)) == [tricky]
    tricky["scenario"]["userFacts"] = []
    assert _export(_import(tricky)) == [tricky]


def test_unknown_fields_survive_model_validation() -> None:
    raw = golden_evaluation()
    evaluation = Evaluation.model_validate(copy.deepcopy(raw))
    assert evaluation.to_json_dict() == raw
    assert evaluation.golden is not None
    assert evaluation.golden.turns[0].steps[2].expectation is not None


def test_malformed_file_is_one_error_with_the_json_path(tmp_path: Path) -> None:
    bad = golden_evaluation()
    bad["golden"]["turns"][1]["steps"][2]["expectation"]["toolCall"]["args"] = "not an object"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"evaluations": [scenario_evaluation(), bad]}))
    with pytest.raises(LoadError) as info:
        read_evaluations(path)
    assert info.value.json_path == "$.evaluations[1].golden.turns[1].steps[2].expectation.toolCall.args"
    assert str(info.value).startswith(f"{path} at $.evaluations[1].golden.turns[1]")
    assert "\n" not in str(info.value)


def test_not_json_and_not_an_evaluation(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"displayName": "x",')
    with pytest.raises(LoadError) as info:
        read_evaluations(path)
    assert info.value.line == 1
    path.write_text('[{"displayName": "no inputs"}]')
    with pytest.raises(LoadError, match="needs 'golden' or 'scenario'") as info2:
        read_evaluations(path)
    assert info2.value.json_path == "$[0]"


def test_a_broken_remainder_is_named_by_its_json_path() -> None:
    from tui_eval.schema.ces.mapping import MappingError

    eval_set = _import(scenario_evaluation(), golden_evaluation())
    eval_set["eval_cases"][1][CES_KEY]["evaluation"]["golden"]["turns"][0]["steps"] = {"not": "a list"}
    with pytest.raises(MappingError) as info:
        eval_set_to_evaluations(eval_set)
    assert info.value.json_path == "$.eval_cases[1].ces.evaluation.golden.turns[0].steps"


def test_adk_reads_the_eval_set_and_saves_it_without_losing_the_ces_remainder() -> None:
    """google-adk 2.13 validates the imported set, and what it writes back still exports exactly."""
    from google.adk.evaluation.eval_set import EvalSet

    originals = [golden_evaluation(), scenario_evaluation()]
    eval_set = _import(*originals)
    adk = EvalSet.model_validate(eval_set)
    assert adk.eval_cases[1].conversation_scenario is not None
    assert adk.eval_cases[1].conversation_scenario.starting_prompt.startswith("You want a refund")
    saved = orjson.loads(adk.model_dump_json(exclude_none=True))
    assert _export(saved) == originals
