"""The LLM-judged metrics; importing this package registers them (google-genai loads only when called)."""

from ..base import builtin
from . import final_response_match, hallucinations, rubrics, safety

FINAL_RESPONSE_MATCH_V2 = builtin(
    final_response_match.NAME, final_response_match.evaluate,
    "An LLM judge: is the final response a valid answer, given the reference? (1/0 per turn)")
RUBRIC_FINAL_RESPONSE_QUALITY_V1 = builtin(
    "rubric_based_final_response_quality_v1", rubrics.evaluate_final_response_quality,
    "An LLM judge checks each rubric (yes/no) against the final response and its evidence")
RUBRIC_TOOL_USE_QUALITY_V1 = builtin(
    "rubric_based_tool_use_quality_v1", rubrics.evaluate_tool_use_quality,
    "An LLM judge checks each rubric (yes/no) against the turn's tool calls")
HALLUCINATIONS_V1 = builtin(
    hallucinations.NAME, hallucinations.evaluate,
    "Share of response sentences the turn's context supports (or that need no support)")
# Vertex AI by default (its catalog kind); safety.evaluate asks the judge itself when the criterion
# requests it (`Criterion.judge_requested`).
SAFETY_V1 = builtin(
    safety.NAME, safety.evaluate,
    "Harmlessness of the final response (1 safe, 0 unsafe per turn): Vertex AI as ADK, or a Gemini "
    "judge when the criterion names judge_model_options")

__all__ = [
    "FINAL_RESPONSE_MATCH_V2",
    "HALLUCINATIONS_V1",
    "RUBRIC_FINAL_RESPONSE_QUALITY_V1",
    "RUBRIC_TOOL_USE_QUALITY_V1",
    "SAFETY_V1",
]
