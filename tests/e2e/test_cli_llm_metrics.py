"""`tui-eval run` with all five LLM-judged metrics against the fake Gemini server; ADK-valid --json output."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.adk.evaluation.eval_metrics import EvalMetricResult
from google.adk.evaluation.eval_rubrics import RubricScore

from tests.support.fake_gemini import FakeGemini, judge_responder
from tui_eval.cli import main

APP = {"agent_details": {"weather_agent": {
    "name": "weather_agent",
    "instructions": "Answer weather questions using get_weather.",
    "tool_declarations": [{"name": "get_weather", "description": "Weather of a city",
                           "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}],
}}}

# Reported on every eval (status 4), never passed or failed.
INFORMATIONAL = {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"}


def rubric_scores(result: EvalMetricResult) -> list[RubricScore]:
    """The rubric scores ADK reads from one metric result."""
    assert result.details is not None and result.details.rubric_scores is not None, result
    return result.details.rubric_scores


def _turn(prompt: str, answer: str, city: str, rubrics: list | None = None) -> dict:
    inv = {
        "invocation_id": f"inv-{city}",
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"invocation_events": [
            {"author": "weather_agent", "content": {"role": "model", "parts": [
                {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": city}}}]}},
            {"author": "weather_agent", "content": {"role": "user", "parts": [
                {"function_response": {"id": "c1", "name": "get_weather", "response": {"sky": "sunny"}}}]}},
        ]},
        "creation_timestamp": 1700000000.0,
        "app_details": APP,
    }
    if rubrics is not None:
        inv["rubrics"] = rubrics
    return inv


CRITERIA = {
    "tool_trajectory_avg_score": 1.0,
    "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}},
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 3},
        "rubrics": [{"rubric_id": "answers", "rubric_content": {"text_property": "Answers the question."}}]},
    "rubric_based_tool_use_quality_v1": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 3},
        "rubrics": [{"rubric_id": "city_arg", "rubric_content": {"text_property": "Passes the city."}}]},
    "hallucinations_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 3},
                          "evaluate_intermediate_nl_responses": True},
    "safety_v1": {"threshold": 0.8, "judge_model_options": {"num_samples": 3}},
}


def _write(tmp_path: Path) -> tuple[Path, Path]:
    eval_set = {
        "eval_set_id": "weather_llm",
        "eval_cases": [
            {"eval_id": "paris",
             "conversation": [_turn("Weather in Paris?", "It is sunny in Paris. Enjoy!", "Paris",
                                    rubrics=[{"rubric_id": "sky", "type": "FINAL_RESPONSE_QUALITY",
                                              "rubric_content": {"text_property": "Names the sky."}}])],
             "rubrics": [{"rubric_id": "one_call", "type": "TOOL_USE_QUALITY",
                          "rubric_content": {"text_property": "Calls get_weather once."}}],
             "session_input": {"app_name": "weather", "user_id": "u1", "state": {}}},
            {"eval_id": "rome",
             "conversation": [_turn("Weather in Rome?", "Rome is sunny.", "Rome"),
                              _turn("And tomorrow?", "Tomorrow is sunny too.", "Rome")],
             "session_input": {"app_name": "weather", "user_id": "u2", "state": {}}},
        ],
    }
    eval_file = tmp_path / "weather.evalset.json"
    eval_file.write_text(json.dumps(eval_set))
    config = tmp_path / "llm_config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}))
    return eval_file, config


def _run(eval_file: Path, config: Path, out_json: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "--agent", f"replay:{eval_file}", str(eval_file), "--config", str(config),
                 "--json", str(out_json), "--no-save", *extra], out, err)
    return code, out.getvalue(), err.getvalue()


def test_all_llm_metrics_through_the_cli(gemini_env: FakeGemini, tmp_path: Path) -> None:
    from google.adk.evaluation.eval_result import EvalSetResult

    gemini_env.responder = judge_responder(rationale="[bold]literal[/] markup")
    eval_file, config = _write(tmp_path)
    out_json = tmp_path / "out.json"
    code, out, err = _run(eval_file, config, out_json)
    assert code == 0, out + err
    [raw] = json.loads(out_json.read_text())
    result = EvalSetResult.model_validate(raw)
    cases = {c.eval_id: c for c in result.eval_case_results}
    assert set(cases) == {"paris", "rome"}
    for c in cases.values():
        metrics = {m.metric_name: m for m in c.overall_eval_metric_results}
        assert set(metrics) == set(CRITERIA) | INFORMATIONAL
        for name in CRITERIA:
            assert metrics[name].eval_status.value == 1, (c.eval_id, name, metrics[name])
            assert metrics[name].score == 1.0
    paris = {m.metric_name: m for m in cases["paris"].overall_eval_metric_results}
    final_ids = [r.rubric_id for r in rubric_scores(paris["rubric_based_final_response_quality_v1"])]
    tool_ids = [r.rubric_id for r in rubric_scores(paris["rubric_based_tool_use_quality_v1"])]
    assert final_ids == ["answers", "sky"] and tool_ids == ["city_arg", "one_call"]
    per_inv = cases["paris"].eval_metric_result_per_invocation[0].eval_metric_results
    rubric_inv = next(m for m in per_inv if m.metric_name == "rubric_based_final_response_quality_v1")
    assert rubric_scores(rubric_inv)[0].rationale == "[bold]literal[/] markup"
    assert len(cases["rome"].eval_metric_result_per_invocation) == 2

    calls = gemini_env.calls
    assert calls > 0
    # The same run again: every judge answer comes from the cache.
    code, out, err = _run(eval_file, config, tmp_path / "again.json")
    assert code == 0 and gemini_env.calls == calls, out + err
    assert ", 0 call(s), " in out and " from cache, 0 retried, 0 failed" in out  # the summary says so
    # --no-judge-cache asks again; --judge-concurrency bounds what the server sees in flight.
    gemini_env.max_in_flight = 0
    code, out, err = _run(eval_file, config, tmp_path / "third.json", "--no-judge-cache", "--judge-concurrency", "2")
    assert code == 0 and gemini_env.calls == 2 * calls, out + err
    assert gemini_env.max_in_flight <= 2


def test_judge_failures_are_not_evaluated_with_reason(gemini_env: FakeGemini, tmp_path: Path) -> None:
    from tests.support.fake_gemini import error_reply

    gemini_env.default = error_reply(400, "API key not valid")
    eval_file, config = _write(tmp_path)
    code, out, err = _run(eval_file, config, tmp_path / "out.json", "--print-detailed-results")
    # NOT_EVALUATED never fails a case (the trajectory metric PASSED), but the run is incomplete: exit 3.
    assert code == 3, out + err
    reason = "judge failed: 400 INVALID_ARGUMENT: API key not valid"
    assert f"case final_response_match_v2: not evaluated ({reason})" in out
    assert "hallucinations_v1: NOT_EVALUATED - (judge failed: segmentation: 400" in out
    [raw] = json.loads((tmp_path / "out.json").read_text())
    for case in raw["eval_case_results"]:
        statuses = {m["metric_name"]: m["eval_status"] for m in case["overall_eval_metric_results"]}
        assert statuses.pop("tool_trajectory_avg_score") == 1
        assert {statuses.pop(name) for name in INFORMATIONAL} == {4}
        assert set(statuses.values()) == {3}


def test_no_credentials_llm_metrics_not_evaluated(tmp_path: Path) -> None:
    """The installed `tui-eval` command in a clean environment: deterministic metrics still run."""
    eval_file, config = _write(tmp_path)
    out_json = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL")}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from tui_eval.cli import main; sys.exit(main())", "run",
         "--agent", f"replay:{eval_file}", str(eval_file), "--config", str(config), "--json", str(out_json),
         "--no-save", "--print-detailed-results"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr  # trajectory PASSED, the rest NOT_EVALUATED
    assert "not evaluated (no judge credentials)" in proc.stdout
    [raw] = json.loads(out_json.read_text())
    for case in raw["eval_case_results"]:
        statuses = {m["metric_name"]: m["eval_status"] for m in case["overall_eval_metric_results"]}
        assert statuses.pop("tool_trajectory_avg_score") == 1
        assert {statuses.pop(name) for name in INFORMATIONAL} == {4}
        assert set(statuses.values()) == {3}


@pytest.mark.parametrize("flag", ["--judge-concurrency"])
def test_bad_judge_concurrency_is_usage_error(tmp_path: Path, flag: str) -> None:
    eval_file, config = _write(tmp_path)
    code, out, err = _run(eval_file, config, tmp_path / "o.json", flag, "0")
    assert code == 2
