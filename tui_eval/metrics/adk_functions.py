"""Stand-ins with ADK's custom-metric signature for tui-eval's own metrics, so a config that names them
still loads and runs under `adk eval`: there they are NOT_EVALUATED, saying why (ADK never hands a custom
metric the calls made inside tool calls, nor the session state); tui-eval runs the real metric
(`schema.criteria.NATIVE_BY_ADK_FUNCTION`).

    "custom_metrics": {"final_session_state_v1": {"code_config": {
        "name": "tui_eval.metrics.adk_functions.final_session_state_v1"}}}
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def _not_evaluated(metric: str, needs: str) -> Any:
    from google.adk.evaluation.eval_rubrics import RubricScore
    from google.adk.evaluation.evaluator import EvaluationResult

    reason = f"{metric} needs {needs}, which ADK never hands a custom metric: run it with tui-eval"
    logger.warning("%s", reason)
    # ADK's EvaluationResult has no reason field: the reason travels as an unscored rubric's rationale.
    return EvaluationResult(overall_rubric_scores=[RubricScore(rubric_id="not_evaluated", rationale=reason)])


def deep_tool_trajectory_v1(eval_metric: Any, actual_invocations: list[Any],
                            expected_invocations: list[Any] | None, conversation_scenario: Any = None) -> Any:
    return _not_evaluated(eval_metric.metric_name, "the calls made inside tool calls (an AgentTool's agent)")


def final_session_state_v1(eval_metric: Any, actual_invocations: list[Any],
                           expected_invocations: list[Any] | None, conversation_scenario: Any = None) -> Any:
    return _not_evaluated(eval_metric.metric_name, "the agent's final session state")
