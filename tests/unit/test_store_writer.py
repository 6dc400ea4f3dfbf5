"""The eval history writer's one-pass JSON (models handed to orjson) writes exactly what the dict
builders (`to_dict`, `to_adk`, `to_record`) give, for every shape of turn and every kind of details."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from tui_eval.engine.store import adk_result_chunks, record_chunks, record_json
from tui_eval.schema.load import load_eval_set, read_invocation
from tui_eval.schema.model import (
    AgentDetails,
    AppDetails,
    Content,
    FunctionCall,
    FunctionResponse,
    GenaiPart,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
    Rubric,
    RubricContent,
    ToolTiming,
)
from tui_eval.schema.details import TokenUsageDetails
from tui_eval.schema.fast import adk_json_default
from tui_eval.schema.results import (
    CaseResult,
    EvalSetResult,
    EvalStatus,
    InvocationMetricResult,
    MetricResult,
    SharedJson,
)

from tests.unit.test_details import every_kind

ROOT = Path(__file__).resolve().parents[2]
EVAL_FILES = sorted(p for p in [*ROOT.glob("demo_agents/**/*.evalset.json"),
                                *ROOT.glob("tests/app/fixtures/**/*.evalset.json")] if p.parent.name != "broken")


class MyPart(Part):
    """A subclass the writer has no fast path for: it must still write what to_dict writes."""


def _odd_turns() -> list[Invocation]:
    """Turns with every optional piece: None ids and args, genai's rarer part fields, events, rubrics..."""
    return [
        Invocation(user_content=Content(parts=None, role="user"), final_response=None, intermediate_data=None),
        Invocation(
            invocation_id="i2",
            user_content=Content(parts=[Part(text="hi"), GenaiPart(text=None, thought=True, inline_data={"a": None}),
                                        MyPart(text="mine")], role=None),
            final_response=Content(parts=[Part(function_call=FunctionCall(name="f", args={"x": None}))], role="model"),
            intermediate_data=IntermediateData(
                tool_uses=[FunctionCall(name="f"), FunctionCall(id="1", name="g", args={}),
                           FunctionCall(id=None, name=None, args={"q": [1, None]})],
                tool_responses=[FunctionResponse(id="1", name="g", response={"ok": None}), FunctionResponse(name="h")],
                intermediate_responses=[("sub", [Part(text="working"), Part(text=None)])],
            ),
            creation_timestamp=2.5, duration=1.0, tool_duration=0.25,
            rubrics=[Rubric(rubric_id="r", rubric_content=RubricContent(text_property=None), type="FINAL")],
            app_details=AppDetails(agent_details={"a": AgentDetails(name="a", tool_declarations=[{"n": None}])}),
            tool_timings=[ToolTiming(name="g", seconds=0.1, call_id="1")],
        ),
        Invocation(
            user_content=Content.from_text("q"),
            intermediate_data=InvocationEvents(invocation_events=[
                InvocationEvent(author="a", content=None),
                InvocationEvent(author="b", content=Content(parts=[Part(function_response=FunctionResponse(
                    name="h", response={"r": 1}))], role="model"), model_version="m", usage_metadata={"t": 1}),
            ]),
        ),
    ]


def _file_turns() -> list[Invocation]:
    turns: list[Invocation] = []
    for path in EVAL_FILES:
        for case in load_eval_set(path).eval_cases:
            turns.extend(case.conversation or [])
    return turns


def test_the_fixtures_have_turns_of_every_shape() -> None:
    turns = _file_turns()
    assert len(EVAL_FILES) >= 5 and len(turns) >= 10
    assert any(isinstance(t.intermediate_data, IntermediateData) and t.intermediate_data.tool_uses for t in turns)


@pytest.mark.parametrize("source", ["odd", "files"])
def test_a_turn_is_written_as_to_dict_writes_it(source: str) -> None:
    turns = _odd_turns() if source == "odd" else _file_turns()
    for turn in turns:
        assert orjson.dumps(turn, default=adk_json_default) == orjson.dumps(turn.to_dict())
        # and google-adk would read it back as the same turn
        assert read_invocation(orjson.loads(orjson.dumps(turn, default=adk_json_default))).to_dict() == turn.to_dict()


def _case(actual: list[Invocation], expected: list[Invocation] | None) -> CaseResult:
    kinds = every_kind()
    per_turn = [InvocationMetricResult(score=0.5, status=EvalStatus.FAILED, reason="why", details=kinds[i % len(kinds)])
                for i in range(len(actual))]
    informational = [InvocationMetricResult(score=None, status=EvalStatus.INFORMATIONAL, details=None)
                     for _ in actual]
    return CaseResult(eval_set_id="set", eval_id="c1", status=EvalStatus.FAILED, metrics=[
        MetricResult(metric_name="m", threshold=1.0, score=0.5, status=EvalStatus.FAILED,
                     criterion={"threshold": 1.0, "match_type": "IN_ORDER"}, per_invocation=per_turn,
                     details=kinds[-1]),
        MetricResult(metric_name="count", threshold=0.0, score=None, status=EvalStatus.INFORMATIONAL,
                     per_invocation=informational),
        MetricResult(metric_name="short", threshold=0.5, score=0.5, status=EvalStatus.PASSED,
                     criterion={}, per_invocation=per_turn[:1]),
        MetricResult.not_evaluated("n", 0.5, "no judge credentials"),
    ], actual=actual, expected=expected, eval_set_file="set.evalset.json", session_id="s", wall_seconds=0.5)


def _cases() -> list[CaseResult]:
    odd = _odd_turns()
    kinds = every_kind()
    many = [_case(odd, odd[:2]), _case(odd[:1], None), _case([], None)]
    # one turn per details kind, so every kind is written at the case and the turn level
    many.append(_case(odd[:1] * len(kinds), odd[:1] * len(kinds)))
    return many


def test_a_case_is_written_as_to_adk_and_to_record_write_it() -> None:
    for case in _cases():
        assert orjson.dumps(case.adk_shallow(), default=adk_json_default) == orjson.dumps(case.to_adk())
        assert json.loads(record_json({"case": case}))["case"] == case.to_record()
        assert json.loads(record_json({"case": case.as_record()}))["case"] == case.to_record()


def test_the_history_file_is_the_adk_eval_set_result() -> None:
    result = EvalSetResult(eval_set_result_id="set_1", eval_set_id="set", creation_timestamp=1.0,
                           case_results=_cases())
    written: dict[str, Any] = json.loads(b"".join(adk_result_chunks(result, "app_set_1")))
    expected = result.to_adk()
    expected["eval_set_result_id"] = expected["eval_set_result_name"] = "app_set_1"
    assert written == expected


def test_google_adk_reads_the_history_file() -> None:
    from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

    turns = _file_turns()
    result = EvalSetResult(eval_set_result_id="set_1", eval_set_id="set", creation_timestamp=1.0,
                           case_results=[_case(turns, turns[:-1])])
    parsed = AdkEvalSetResult.model_validate_json(b"".join(adk_result_chunks(result, "app_set_1")))
    [case] = parsed.eval_case_results
    assert len(case.eval_metric_result_per_invocation) == len(turns)
    assert case.eval_metric_result_per_invocation[-1].expected_invocation is None


def test_the_record_is_streamed_case_by_case_as_record_json_writes_it_whole() -> None:
    cases = _cases()
    meta = {"format": "tui-eval.run/2", "run_id": "r", "counts": {"PASSED": 1}}
    streamed = b"".join(record_chunks(meta, cases))
    assert json.loads(streamed) == json.loads(record_json({**meta, "cases": cases}))
    assert list(json.loads(streamed)) == [*meta, "cases"]  # the cases come last, as before
    assert json.loads(b"".join(record_chunks({}, []))) == {"cases": []}


class CountingTokens(TokenUsageDetails):
    """Token details that count how often the ADK writer asks for their JSON shape."""

    calls: ClassVar[list[int]] = []

    def to_adk(self) -> dict[str, float | None]:
        CountingTokens.calls.append(1)
        return super().to_adk()


def _sharing_cases(n: int, turns: list[Invocation] | None = None) -> list[CaseResult]:
    """`n` cases holding the same informational results (as metrics/efficiency.py shares them), with
    turn counts that differ from the shared result's, plus every shape of _cases()."""
    odd = _odd_turns() if turns is None else turns
    tokens = CountingTokens(kind="token_usage", total_tokens=None)
    turn = InvocationMetricResult(score=None, status=EvalStatus.INFORMATIONAL, details=tokens)
    shared = MetricResult(metric_name="token_usage_v1", threshold=0.0, score=None, status=EvalStatus.INFORMATIONAL,
                          per_invocation=[turn] * 3, reason="n/a", details=tokens)
    not_run = MetricResult.not_evaluated("judge", 0.5, "no judge credentials")
    cases = []
    for i in range(n):
        case = _cases()[i % 4]
        cases.append(case.model_copy(update={"metrics": [*case.metrics, shared, not_run], "actual": odd[: i % 4],
                                             "expected": odd[: i % 3] if i % 2 else None}))
    return cases


def test_results_shared_by_many_cases_are_written_once_and_byte_for_byte_as_unshared() -> None:
    cases = _sharing_cases(10)
    result = EvalSetResult(eval_set_result_id="set_1", eval_set_id="set", creation_timestamp=1.0, case_results=cases)
    CountingTokens.calls.clear()
    written = b"".join(adk_result_chunks(result, "app_set_1"))
    # 1 case + 3 turn details, made as dicts the first time and as JSON the second; then never again.
    assert len(CountingTokens.calls) == 8
    head = b'{"eval_set_result_id":"app_set_1","eval_set_result_name":"app_set_1","eval_set_id":"set",' \
           b'"creation_timestamp":1.0,"eval_case_results":['
    assert written == head + b",".join(orjson.dumps(c.to_adk()) for c in cases) + b"]}"
    meta = {"format": "tui-eval.run/2", "run_id": "r"}
    streamed = b"".join(record_chunks(meta, cases))
    assert streamed == b'{"format":"tui-eval.run/2","run_id":"r","cases":[' + b",".join(
        record_json(c) for c in cases) + b"]}"
    assert json.loads(streamed)["cases"] == [c.to_record() for c in cases]
    from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

    readable = EvalSetResult(eval_set_result_id="set_1", eval_set_id="set", creation_timestamp=1.0,
                             case_results=_sharing_cases(10, _file_turns()))
    parsed = AdkEvalSetResult.model_validate_json(b"".join(adk_result_chunks(readable, "app_set_1")))
    assert [len(c.overall_eval_metric_results) for c in parsed.eval_case_results] == [
        len(c.metrics) for c in readable.case_results]


def test_a_shared_json_memo_gives_what_each_case_gives_alone() -> None:
    cases = _sharing_cases(6)
    shared = SharedJson()
    for case in cases:
        assert orjson.dumps(case.adk_shallow(shared), default=adk_json_default) == orjson.dumps(case.to_adk())
        assert record_json(case.record_fields(shared)) == record_json(case)


def test_a_records_head_is_read_without_its_cases(tmp_path: Path) -> None:
    from tui_eval.engine.store import read_record_head
    from tui_eval.schema.results import CaseResult, EvalStatus

    cases = [CaseResult(eval_set_id="s", eval_id=f"c{i}", status=EvalStatus.PASSED, metrics=[], actual=[])
             for i in range(3)]
    # A header value may hold the very bytes (escaped inside a string) and a nested "cases" key.
    meta = {"format": "tui-eval.run/2", "run_id": "r1", "eval_set_id": "s", "name": 'x,"cases":[y',
            "insight": {"n": 1, "cases": [1, 2]}, "counts": {"PASSED": 3}}
    record = tmp_path / "r.tui-eval.json"
    record.write_bytes(b"".join(record_chunks(meta, cases)))
    whole = orjson.loads(record.read_bytes())
    assert len(whole["cases"]) == 3
    del whole["cases"]
    assert read_record_head(record) == whole == meta
    # Without a nested key first, only the head is parsed: a broken case list does not matter to it.
    meta.pop("insight")
    record.write_bytes(b"".join(record_chunks(meta, cases))[:-40])
    assert read_record_head(record) == meta
    with pytest.raises(ValueError):
        orjson.loads(record.read_bytes())
