"""`tui_eval.evaluate`: typed results, ADK-style AssertionErrors, from sync code and inside a running loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tui_eval
from tui_eval.api import SetupError, aevaluate
from tui_eval.schema.results import EvalStatus

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
HELLO = DEMO / "hello_world"
HELLO_FILE = HELLO / "hello_world.evalset.json"
HELLO_PASSED = {"greeting", "roll_six_sided", "check_two_numbers", "roll_twice_then_check"}
HELLO_FAILED = {"roll_and_check_prime", "roll_twelve_in_words", "check_then_roll", "prime_of_my_own_roll",
                "ten_sided_wording"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the demo's offline policy


def statuses(record) -> dict[str, EvalStatus]:
    return {c.eval_id: c.status for r in record.results for c in r.case_results}


def test_returns_typed_results_without_raising_when_asked() -> None:
    record = tui_eval.evaluate(str(HELLO), HELLO_FILE, raise_on_failure=False)
    found = statuses(record)
    assert {k for k, v in found.items() if v == EvalStatus.PASSED} == HELLO_PASSED
    assert {k for k, v in found.items() if v == EvalStatus.FAILED} == HELLO_FAILED
    assert [r.eval_set_id for r in record.results] == ["hello_world"]
    assert not (HELLO / ".adk" / "eval_history").exists() or not any(
        p.stat().st_mtime > record.started for p in (HELLO / ".adk" / "eval_history").iterdir()
    )  # nothing saved unless save=True


def test_failures_raise_an_assertion_error_naming_cases_and_metrics() -> None:
    with pytest.raises(AssertionError) as info:
        tui_eval.evaluate(HELLO / "__init__.py", HELLO)  # the agent as its __init__.py, a folder target
    text = str(info.value)
    assert text.startswith("Following are all the test failures.")
    for eval_id in HELLO_FAILED:
        assert f"hello_world / {eval_id} (" in text
    for eval_id in HELLO_PASSED:
        assert f"/ {eval_id} (" not in text
    assert "tool_trajectory_avg_score: 0.000 < 1 FAILED" in text


def test_passing_selection_returns_and_does_not_raise() -> None:
    record = tui_eval.evaluate(HELLO, f"{HELLO_FILE}:greeting,roll_six_sided")
    assert statuses(record) == {"greeting": EvalStatus.PASSED, "roll_six_sided": EvalStatus.PASSED}


def test_strict_fails_a_case_that_passed_with_metrics_not_evaluated() -> None:
    target = f"{DEMO / 'support' / 'support.evalset.json'}:return_used_item"
    record = tui_eval.evaluate(DEMO / "support", target)  # passes: ADK's status rule
    assert statuses(record) == {"return_used_item": EvalStatus.PASSED}
    with pytest.raises(AssertionError) as info:
        tui_eval.evaluate(DEMO / "support", target, strict=True)
    assert "return_used_item" in str(info.value)
    assert "not evaluated (no judge credentials)" in str(info.value)


def test_config_path_overrides_test_config(tmp_path: Path) -> None:
    config = tmp_path / "lenient.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.0}}))
    record = tui_eval.evaluate(HELLO, HELLO_FILE, config=config)
    assert set(statuses(record).values()) == {EvalStatus.PASSED}
    # the informational efficiency metrics are reported on every eval, as ADK does
    assert {m.metric_name for r in record.results for c in r.case_results for m in c.metrics} == {
        "response_match_score", "tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
        "invocation_duration_v1"}


def test_dotted_module_name_as_adk_agent_evaluator_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(DEMO.parent))
    record = tui_eval.evaluate("demo_agents.hello_world", f"{HELLO_FILE}:greeting")
    assert statuses(record) == {"greeting": EvalStatus.PASSED}


def test_eval_set_id_of_the_agent() -> None:
    record = tui_eval.evaluate(HELLO, "hello_world:check_then_roll", raise_on_failure=False)
    assert statuses(record) == {"check_then_roll": EvalStatus.FAILED}


async def test_works_inside_a_running_event_loop() -> None:
    record = tui_eval.evaluate(HELLO, f"{HELLO_FILE}:greeting")
    assert statuses(record) == {"greeting": EvalStatus.PASSED}
    with pytest.raises(AssertionError, match="check_then_roll"):
        tui_eval.evaluate(HELLO, f"{HELLO_FILE}:check_then_roll")
    awaited = await aevaluate(HELLO, f"{HELLO_FILE}:greeting,check_then_roll", raise_on_failure=False)
    assert statuses(awaited) == {"greeting": EvalStatus.PASSED, "check_then_roll": EvalStatus.FAILED}


def test_bad_input_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="no such eval file"):
        tui_eval.evaluate(HELLO, tmp_path / "missing.evalset.json")
    with pytest.raises(ValueError, match="agent folder not found"):
        tui_eval.evaluate(tmp_path / "nowhere", HELLO_FILE)


def test_import_tui_eval_stays_light() -> None:
    code = "import sys, tui_eval; print(sorted(m for m in sys.modules if m.startswith(('tui_eval', 'pydantic'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(DEMO.parent)).stdout
    assert out.strip() == "['tui_eval']"
