"""The demo agents, run offline through the CLI exactly as the README says: real verdicts, every metric."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tui_eval.cli import main
from tui_eval.metrics.base import registered_metrics
from tui_eval.schema.config import load_eval_config
from tui_eval.schema.criteria import CATALOG, MetricKind
from tui_eval.schema.load import load_eval_set

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"

EXPECTED = {
    "hello_world": {
        "passed": {"greeting", "roll_six_sided", "check_two_numbers", "roll_twice_then_check"},
        "failed": {"roll_and_check_prime", "roll_twelve_in_words", "check_then_roll", "prime_of_my_own_roll",
                   "ten_sided_wording"},
    },
    "home_automation": {
        "passed": {"kitchen_light_on", "living_room_temperature", "porch_light_follow_up", "garage_door_status"},
        "failed": {"bedroom_temperature_then_lamp", "all_office_lights_off", "half_degree"},
    },
    "support": {
        "passed": {"refund_time", "order_status", "return_used_item", "damaged_order", "shipping_then_thanks"},
        "failed": {"password_reset", "lowercase_order_id"},
    },
    "tabletop": {
        "passed": {"score_a_roll", "two_rounds"},
        "failed": {"twenty_in_words", "forgot_bonus"},
    },
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the offline policy


def _run(agent: str, eval_files: list[Path], tmp_path: Path, name: str) -> tuple[int, str, list[dict]]:
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / f"{name}.json"
    code = main(["run", str(DEMO / agent), *map(str, eval_files), "--json", str(json_out), "--no-save"], out, err)
    # Nothing on stderr but the one notice of judge metrics that cannot run offline.
    assert [line for line in err.getvalue().splitlines() if not line.startswith("note: ")] == []
    assert len(err.getvalue().splitlines()) <= 1
    return code, out.getvalue(), json.loads(json_out.read_text())


def _statuses(results: list[dict]) -> dict[str, int]:
    return {c["eval_id"]: c["final_eval_status"] for r in results for c in r["eval_case_results"]}


def test_readme_headless_command_gives_a_deterministic_mix(tmp_path: Path) -> None:
    files = sorted((DEMO / "hello_world").glob("*.evalset.json"))
    code, out, first = _run("hello_world", files, tmp_path, "first")
    assert code == 1
    assert "hello_world" in out and "4 passed, 5 failed, 0 not evaluated" in out
    statuses = _statuses(first)
    assert {k for k, v in statuses.items() if v == 1} == EXPECTED["hello_world"]["passed"]
    assert {k for k, v in statuses.items() if v == 2} == EXPECTED["hello_world"]["failed"]
    # no judge metric in hello_world's config: every verdict is a real, deterministic one
    metrics = {m["metric_name"] for r in first for c in r["eval_case_results"] for m in c["overall_eval_metric_results"]}
    assert metrics == {"tool_trajectory_avg_score", "response_match_score", "tool_call_count_v1",
                       "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}  # + informational

    _code, _out, second = _run("hello_world", files, tmp_path, "second")

    def scores(results: list[dict]) -> dict:
        # wall-clock seconds differ from run to run; every other value must not
        return {(c["eval_id"], m["metric_name"]): m["score"]
                for r in results for c in r["eval_case_results"] for m in c["overall_eval_metric_results"]
                if m["metric_name"] != "invocation_duration_v1"}

    def calls(results: list[dict]) -> dict:
        return {c["eval_id"]: [[(u["name"], u["args"]) for u in p["actual_invocation"]["intermediate_data"]["tool_uses"]]
                               for p in c["eval_metric_result_per_invocation"]]
                for r in results for c in r["eval_case_results"]}

    assert scores(first) == scores(second)
    assert calls(first) == calls(second)  # the dice are seeded per session


@pytest.mark.parametrize("agent", ["home_automation", "support"])
def test_judge_metrics_are_not_evaluated_offline_beside_real_verdicts(agent: str, tmp_path: Path) -> None:
    code, out, results = _run(agent, [DEMO / agent / f"{agent}.evalset.json"], tmp_path, agent)
    assert code == 1
    statuses = _statuses(results)
    assert {k for k, v in statuses.items() if v == 1} == EXPECTED[agent]["passed"]
    assert {k for k, v in statuses.items() if v == 2} == EXPECTED[agent]["failed"]
    judged = {n for n, info in CATALOG.items() if info.kind in (MetricKind.JUDGE, MetricKind.VERTEX)}
    for r in results:
        for c in r["eval_case_results"]:
            for m in c["overall_eval_metric_results"]:
                if m["metric_name"] in judged:
                    assert m["eval_status"] == 3 and m["score"] is None
    assert "not evaluated (no judge credentials)" in out


def test_scenario_cases_offline_run_the_starting_prompt_only(tmp_path: Path) -> None:
    eval_file = DEMO / "support" / "scenarios" / "support_scenarios.evalset.json"
    code, out, results = _run("support", [eval_file], tmp_path, "scenarios")
    assert code == 3  # nothing failed, nothing was evaluated: incomplete, not failed
    for case in results[0]["eval_case_results"]:
        assert case["final_eval_status"] == 3
        [turn] = case["eval_metric_result_per_invocation"]
        assert turn["actual_invocation"]["final_response"]["parts"][0]["text"]
    assert "per_turn_user_simulator_quality_v1: not evaluated (no judge credentials)" in out


def test_demo_covers_every_metric_match_type_and_a_scenario() -> None:
    configs = [load_eval_config(p) for p in DEMO.rglob("test_config.json")]
    metrics = {name for c in configs for name in c.criteria}
    # CES's metrics are added to eval sets imported from CES (tests/unit/test_ces_metrics.py), not named here;
    # informational metrics take no criterion: every eval reports them
    informational = {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}
    assert metrics == {name for name in registered_metrics() if not name.startswith("ces_")} - informational
    match_types = {c.criteria["tool_trajectory_avg_score"].match_type.name
                   for c in configs if "tool_trajectory_avg_score" in c.criteria}
    assert match_types == {"EXACT", "IN_ORDER", "ANY_ORDER"}
    assert not any(c.warnings for c in configs)
    hello = load_eval_config(DEMO / "hello_world" / "test_config.json")
    assert set(hello.criteria) == {"tool_trajectory_avg_score", "response_match_score"}
    sets = [load_eval_set(p) for p in DEMO.rglob("*.evalset.json")]
    assert any(case.is_scenario for s in sets for case in s.eval_cases)
    assert len([p for p in DEMO.iterdir() if (p / "agent.py").is_file()]) >= 3


def test_tabletop_fails_where_adk_cannot_see(tmp_path: Path) -> None:
    """A sub-agent's wrong call and a forgotten bonus in the session state: ADK's own metrics pass both."""
    code, out, results = _run("tabletop", [DEMO / "tabletop" / "tabletop.evalset.json"], tmp_path, "tabletop")
    assert code == 1
    statuses = _statuses(results)
    assert {k for k, v in statuses.items() if v == 1} == EXPECTED["tabletop"]["passed"]
    assert {k for k, v in statuses.items() if v == 2} == EXPECTED["tabletop"]["failed"]
    failed = {c["eval_id"]: {m["metric_name"] for m in c["overall_eval_metric_results"] if m["eval_status"] == 2}
              for r in results for c in r["eval_case_results"]}
    assert failed["twenty_in_words"] == {"deep_tool_trajectory_v1"}
    assert failed["forgot_bonus"] == {"final_session_state_v1"}
    assert "dice_agent › roll_die(...) args: sides 20 → 6" in out
    assert 'scores: expected {"Cara": 7}, got {"Cara": 5}' in out
