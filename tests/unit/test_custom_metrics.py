"""custom_metrics: ADK-signature functions (called as google-adk 2.13 calls them) and native ones."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest
from google.adk.evaluation.custom_metric_evaluator import _CustomMetricEvaluator
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

from tests.support.evalfiles import dice_pair
from tui_eval.cli import main

# In the style of adk-python's custom-metric fixtures: a module-level function with ADK's signature that
# reads ADK's models and returns an EvaluationResult with one PerInvocationResult per invocation.
ADK_METRIC = '''
from typing import Optional

from google.adk.evaluation.eval_case import ConversationScenario
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult
from google.adk.evaluation.evaluator import PerInvocationResult

SEEN = []


def mentions_a_number(
    eval_metric: EvalMetric,
    actual_invocations: list[Invocation],
    expected_invocations: Optional[list[Invocation]],
    conversation_scenario: Optional[ConversationScenario] = None,
) -> EvaluationResult:
    """1.0 for each turn whose final response has a digit in it."""
    SEEN.append((eval_metric.threshold, eval_metric.criterion.threshold, len(expected_invocations or [])))
    threshold = eval_metric.criterion.threshold
    per_invocation = []
    for actual, expected in zip(actual_invocations, expected_invocations or actual_invocations):
        text = "".join(p.text or "" for p in (actual.final_response.parts or [])) if actual.final_response else ""
        score = 1.0 if any(c.isdigit() for c in text) else 0.0
        per_invocation.append(PerInvocationResult(
            actual_invocation=actual, expected_invocation=expected, score=score,
            eval_status=EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED))
    overall = sum(r.score for r in per_invocation) / len(per_invocation)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
        per_invocation_results=per_invocation)


async def async_tool_count(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    n = sum(len(inv.intermediate_data.tool_uses) for inv in actual_invocations)
    return EvaluationResult(overall_score=float(n), overall_eval_status=EvalStatus.PASSED,
                            per_invocation_results=[PerInvocationResult(actual_invocation=a, score=float(
                                len(a.intermediate_data.tool_uses)), eval_status=EvalStatus.PASSED)
                                for a in actual_invocations])
'''

NATIVE_METRIC = '''
from tui_eval.schema.model import Invocation


def short_answers(actual, expected, criterion):
    """Native signature: one score per turn, 1.0 when the answer has at most 5 words."""
    return [1.0 if len(inv.final_response.text.split()) <= 5 else 0.0 for inv in actual]


async def same_turn_count(actual: list[Invocation], expected: list[Invocation] | None, criterion) -> float:
    return 1.0 if expected is not None and len(expected) == len(actual) else 0.0


def broken(actual, expected, criterion):
    raise RuntimeError("metric bug")
'''


@pytest.fixture
def metrics_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "pkgs" / "my_eval_metrics"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "adk_style.py").write_text(textwrap.dedent(ADK_METRIC))
    (pkg / "native_style.py").write_text(textwrap.dedent(NATIVE_METRIC))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    return pkg


def _run(tmp_path: Path, config: dict) -> tuple[int, str, dict]:
    golden, recorded = dice_pair(tmp_path)
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / "out.json"
    code = main(["run", "--agent", f"replay:{recorded}", str(golden), "--config", str(config_file),
                 "--json", str(json_out), "--no-save"], out, err)
    [raw] = json.loads(json_out.read_text()) if json_out.exists() else [{}]
    return code, out.getvalue() + err.getvalue(), raw


def _overall(raw: dict) -> dict[str, dict[str, dict]]:
    return {c["eval_id"]: {m["metric_name"]: m for m in c["overall_eval_metric_results"]}
            for c in raw["eval_case_results"]}


def test_adk_custom_metric_runs_as_adk_runs_it(metrics_pkg: Path, tmp_path: Path) -> None:
    config = {"criteria": {"mentions_number": 0.5, "tools_used": {"threshold": 0.0}},
              "custom_metrics": {
                  "mentions_number": {"code_config": {"name": "my_eval_metrics.adk_style.mentions_a_number"}},
                  "tools_used": {"code_config": {"name": "my_eval_metrics.adk_style.async_tool_count"}}}}
    code, out, raw = _run(tmp_path, config)
    assert code == 1, out  # c_words: "Seven: prime indeed, no doubt." has no digit
    AdkEvalSetResult.model_validate(raw)
    overall = _overall(raw)
    assert {k: v["mentions_number"]["eval_status"] for k, v in overall.items()} == {
        "c_pass": 1, "c_args": 1, "c_words": 2, "c_two": 1}
    # "Hello! I can roll dice." has no digit, "Rolled 2 and 5." has: 0.5 >= 0.5 passes
    assert overall["c_two"]["mentions_number"]["score"] == 0.5
    assert overall["c_two"]["tools_used"]["score"] == 1.0

    # ADK's own config reading and evaluator on the same invocations give the same values.
    import my_eval_metrics.adk_style as module  # type: ignore[import-not-found]

    [adk_metric, *_] = get_eval_metrics_from_config(AdkEvalConfig.model_validate(config))
    evaluator = _CustomMetricEvaluator(adk_metric, "my_eval_metrics.adk_style.mentions_a_number")
    for case in raw["eval_case_results"]:
        actual = [AdkInvocation.model_validate(p["actual_invocation"]) for p in case["eval_metric_result_per_invocation"]]
        expected = [AdkInvocation.model_validate(p["expected_invocation"])
                    for p in case["eval_metric_result_per_invocation"]]
        import asyncio

        theirs = asyncio.run(evaluator.evaluate_invocations(actual, expected, None))
        ours = {m["metric_name"]: m for m in case["overall_eval_metric_results"]}["mentions_number"]
        assert ours["score"] == theirs.overall_score and ours["eval_status"] == theirs.overall_eval_status.value
        per_inv = [next(m for m in p["eval_metric_results"] if m["metric_name"] == "mentions_number")["score"]
                   for p in case["eval_metric_result_per_invocation"]]
        assert per_inv == [r.score for r in theirs.per_invocation_results]
    # As ADK: the function sees threshold None and the criterion's threshold.
    assert module.SEEN and all(t is None and ct == 0.5 for t, ct, _ in module.SEEN)


def test_native_custom_metrics(metrics_pkg: Path, tmp_path: Path) -> None:
    config = {"criteria": {"short": 1.0, "turns": 1.0},
              "custom_metrics": {"short": {"code_config": {"name": "my_eval_metrics.native_style.short_answers"}},
                                 "turns": {"code_config": {"name": "my_eval_metrics.native_style.same_turn_count"}}}}
    code, out, raw = _run(tmp_path, config)
    overall = _overall(raw)
    # "You rolled a 4." is 4 words; "Seven: prime indeed, no doubt." is 5; "Rolled 2 and 5." 4; "Hello! I can roll dice." 5
    assert {k: (v["short"]["score"], v["short"]["eval_status"]) for k, v in overall.items()} == {
        "c_pass": (1.0, 1), "c_args": (1.0, 1), "c_words": (1.0, 1), "c_two": (1.0, 1)}
    assert {k: v["turns"]["score"] for k, v in overall.items()} == {"c_pass": 1.0, "c_args": 1.0, "c_words": 1.0,
                                                                    "c_two": 1.0}
    assert code == 0, out


def test_unimportable_or_raising_custom_metric_is_not_evaluated_with_the_error(metrics_pkg: Path,
                                                                                 tmp_path: Path) -> None:
    config = {"criteria": {"tool_trajectory_avg_score": 0.0, "gone": 0.5, "bug": 0.5},
              "custom_metrics": {"gone": {"code_config": {"name": "no_such_module.metric"}},
                                 "bug": {"code_config": {"name": "my_eval_metrics.native_style.broken"}}}}
    code, out, raw = _run(tmp_path, config)
    # Not exit 2: the trajectory metric passed every case; the custom metrics that could not run make the
    # run incomplete (exit 3), not failed.
    assert code == 3, out
    for metrics in _overall(raw).values():
        assert metrics["gone"]["eval_status"] == 3 and metrics["bug"]["eval_status"] == 3
    # alone, they leave every case not evaluated, and the summary says why
    code, out, _raw = _run(tmp_path, {**config, "criteria": {"gone": 0.5, "bug": 0.5}})
    assert code == 3 and "0 passed, 0 failed, 4 not evaluated" in out  # no verdict: incomplete, not failed
    assert "gone: not evaluated (cannot import custom metric 'no_such_module.metric': " \
           "ModuleNotFoundError: No module named 'no_such_module')" in out
    assert "bug: not evaluated (metric error: RuntimeError: metric bug)" in out


def test_undeclared_criterion_is_an_error_with_a_did_you_mean(metrics_pkg: Path, tmp_path: Path) -> None:
    config = {"criteria": {"mentions_numbr": 0.5},
              "custom_metrics": {"mentions_number": {"code_config": {"name": "my_eval_metrics.adk_style.x"}}}}
    code, out, _raw = _run(tmp_path, config)
    assert code == 2
    assert "unknown metric(s) mentions_numbr (did you mean 'mentions_number'?)" in out
