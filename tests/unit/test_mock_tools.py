"""--mock-tools with the native agent: tool calls answered from the case's recorded tool_responses (the real
tool never runs), matched by the trajectory metric's rules, strict and fallback, the mocked mark in the
record, and a CES golden's mockToolResponse answering on import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_ces_metrics import call, eval_set, golden, say, user
from tui_eval.agents.base import CaseContext
from tui_eval.agents.mocks import ToolMocks, UnexpectedToolCall, parse_mock_mode
from tui_eval.agents.native import NativeAgent, PolicyTurn, Step
from tui_eval.api import SetupError, evaluate
from tui_eval.engine.plan import EvalTarget, RunPlan
from tui_eval.engine.runner import Run, RunOptions
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.load import read_eval_case
from tui_eval.schema.model import EvalCase, EvalSet
from tui_eval.schema.results import CaseResult, EvalStatus

CALLS: list[tuple[str, dict[str, Any]]] = []


def get_stock(sku: str, qty: int = 1) -> dict:
    """The real backend: down."""
    CALLS.append(("get_stock", {"sku": sku, "qty": qty}))
    raise ConnectionError("inventory backend is down")


def get_price(sku: str) -> dict:
    """Works."""
    CALLS.append(("get_price", {"sku": sku}))
    return {"sku": sku, "price": 9.5}


def policy(turn: PolicyTurn) -> Any:
    """Asks the tools the user message names, then answers with what they said."""
    if not turn.results:
        calls: list[tuple[str, dict[str, Any]]] = []
        for word in turn.user_text.split():
            if word.startswith("stock:"):
                calls.append(("get_stock", {"sku": word[6:], "qty": 2.0}))
            if word.startswith("price:"):
                calls.append(("get_price", {"sku": word[6:]}))
        if calls:
            return Step(calls=calls)
    return " ".join(json.dumps(r.response, sort_keys=True) for r in turn.results) or "nothing to do"


def _turn(text: str, calls: list[tuple[str, dict, dict]], final: str = "") -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": final}]},
        "intermediate_data": {
            # Recorded ids that the run will not reproduce: ids are ignored when matching.
            "tool_uses": [{"id": f"rec-{i}", "name": n, "args": a} for i, (n, a, _r) in enumerate(calls)],
            "tool_responses": [{"id": f"rec-{i}", "name": n, "response": r} for i, (n, a, r) in enumerate(calls)],
            "intermediate_responses": [],
        },
    }


def _case(*turns: dict[str, Any]) -> EvalCase:
    return read_eval_case({"eval_id": "shop", "conversation": list(turns),
                           "session_input": {"app_name": "shop", "user_id": "u", "state": {}}}, "$")


def _run(case: EvalCase, mock_tools: str | None) -> CaseResult:
    import asyncio

    target = EvalTarget(Path("shop.evalset.json"), EvalSet(eval_set_id="shop", eval_cases=[case]),
                        read_eval_config({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    agent = NativeAgent("shop", "Sell things.", tools=[get_stock, get_price], policy=policy)
    run = Run(RunPlan([target]), agent, options=RunOptions(save=False, mock_tools=mock_tools))
    record = asyncio.run(run.execute())
    [result] = record.results
    [case_result] = result.case_results
    return case_result


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    CALLS.clear()


def test_recorded_responses_answer_and_the_tool_never_runs() -> None:
    case = _case(_turn("stock:A1", [("get_stock", {"sku": "A1", "qty": 2}, {"in_stock": 7})]))
    live = _run(case, None)
    # Live: the real tool ran (and failed); its error went back to the model as a real agent's would.
    assert CALLS == [("get_stock", {"sku": "A1", "qty": 2.0})]
    answer = live.actual[0].final_response
    assert answer is not None and "inventory backend is down" in answer.text
    CALLS.clear()
    mocked = _run(case, "strict")
    assert CALLS == []
    assert mocked.status == EvalStatus.PASSED and mocked.error is None
    [inv] = mocked.actual
    # qty 2.0 matched the recorded 2 (args equal as Python values); the run's own call id is kept.
    assert inv.final_response is not None and inv.final_response.text == '{"in_stock": 7}'
    assert [r.response for r in inv.tool_responses] == [{"in_stock": 7}]
    assert [r.id for r in inv.tool_responses] == ["call-1-1-1"]
    assert [(t.name, t.mocked) for t in inv.tool_timings] == [("get_stock", True)]


def test_strict_fails_the_turn_on_an_unrecorded_call() -> None:
    case = _case(_turn("stock:A1 price:A1", [("get_stock", {"sku": "A1", "qty": 2}, {"in_stock": 7})]))
    result = _run(case, "strict")
    assert result.status == EvalStatus.FAILED
    assert result.error == 'unexpected call get_price(sku="A1"): no recorded response'
    assert CALLS == []


def test_other_args_are_an_unrecorded_call() -> None:
    case = _case(_turn("stock:B2", [("get_stock", {"sku": "A1", "qty": 2}, {"in_stock": 7})]))
    result = _run(case, "strict")
    assert result.error == 'unexpected call get_stock(sku="B2", qty=2.0): no recorded response'


def test_fallback_runs_the_real_tool_for_an_unrecorded_call() -> None:
    case = _case(_turn("stock:A1 price:A1", [("get_stock", {"sku": "A1", "qty": 2}, {"in_stock": 7})]))
    result = _run(case, "fallback")
    assert result.error is None
    assert CALLS == [("get_price", {"sku": "A1"})]  # only the unrecorded one ran
    [inv] = result.actual
    assert [r.response for r in inv.tool_responses] == [{"in_stock": 7}, {"sku": "A1", "price": 9.5}]
    assert [(t.name, t.mocked) for t in inv.tool_timings] == [("get_stock", True), ("get_price", False)]


def test_the_mocked_mark_survives_the_run_record() -> None:
    case = _case(_turn("stock:A1", [("get_stock", {"sku": "A1", "qty": 2}, {"in_stock": 7})]))
    result = _run(case, "strict")
    again = CaseResult.from_record(json.loads(json.dumps(result.to_record())), actual=result.actual)
    assert [t.mocked for t in again.actual[0].tool_timings] == [True]
    assert json.loads(json.dumps(result.to_record()))["tool_timings"][0][0]["mocked"] is True


def test_matching_order_repeats_and_other_turns() -> None:
    case = _case(
        _turn("t1", [("poll", {"job": 1}, {"state": "running"}), ("poll", {"job": 1}, {"state": "done"})]),
        _turn("t2", [("fetch", {"job": 1}, {"rows": 3})]),
    )
    mocks = ToolMocks.for_case(case, "strict")
    assert mocks is not None
    mocks.turn_index = 0
    # The same call recorded twice answers in order, then repeats the last answer.
    assert [mocks.answer("poll", {"job": 1}) for _ in range(3)] == [
        {"state": "running"}, {"state": "done"}, {"state": "done"}]
    # A call recorded in another turn of the case is answered too (the turn's own calls come first).
    assert mocks.answer("fetch", {"job": 1.0}) == {"rows": 3}
    # The answer is a copy: the agent changing it does not change the case.
    answer = mocks.answer("fetch", {"job": 1})
    assert answer is not None
    answer["rows"] = 99
    assert mocks.answer("fetch", {"job": 1}) == {"rows": 3}
    with pytest.raises(UnexpectedToolCall, match=r'^unexpected call poll\(job=2\): no recorded response$'):
        mocks.answer("poll", {"job": 2})
    # ADK's transfer_to_agent is control flow: never answered from the records, even in strict mode.
    assert mocks.answer("transfer_to_agent", {"agent_name": "x"}) is None


def test_modes() -> None:
    assert parse_mock_mode(None) is None
    assert parse_mock_mode("") == "strict" and parse_mock_mode("Fallback") == "fallback"
    with pytest.raises(ValueError, match="strict or fallback"):
        parse_mock_mode("sometimes")
    assert CaseContext(EvalSet(eval_set_id="s", eval_cases=[]), Path("x")).mock_tools is None


def test_python_api_takes_mock_tools(tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "agent.py").write_text(
        "from tui_eval.agents.native import NativeAgent\n"
        "from tests.unit.test_mock_tools import get_stock, policy\n"
        "root_agent = NativeAgent('shop', 'Sell.', tools=[get_stock], policy=policy)\n")
    (folder / "shop.evalset.json").write_text(json.dumps({"eval_set_id": "shop", "eval_cases": [
        {"eval_id": "a1", "conversation": [_turn("stock:A1", [("get_stock", {"sku": "A1", "qty": 2},
                                                                {"in_stock": 7})], '{"in_stock": 7}')]}]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0,
                                                                      "response_match_score": 1.0}}))
    record = evaluate(folder, folder / "shop.evalset.json", mock_tools="strict")
    assert record.results[0].case_results[0].status == EvalStatus.PASSED and CALLS == []
    with pytest.raises(SetupError, match="strict or fallback"):
        evaluate(folder, folder / "shop.evalset.json", mock_tools="always")


def test_a_ces_golden_mock_tool_response_answers_on_import() -> None:
    mock = {"expectation": {"mockToolResponse": {"tool": "projects/p/locations/l/apps/a/tools/get_weather",
                                                 "response": {"output": "sunny"}}}}
    evals = eval_set(golden([user("Weather in Paris?"), call("get_weather", city="Paris"), mock,
                             say("Sunny.")]))
    mocks = ToolMocks.for_case(evals.eval_cases[0], "strict")
    assert mocks is not None
    assert mocks.answer("get_weather", {"city": "Paris"}) == {"output": "sunny"}
