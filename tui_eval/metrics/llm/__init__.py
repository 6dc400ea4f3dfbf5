"""The LLM-judged metrics; importing this package registers them (google-genai loads only when called)."""

from ..base import MetricSpec, register
from . import final_response_match, hallucinations, rubrics, safety

FINAL_RESPONSE_MATCH_V2 = register(MetricSpec(
    name="final_response_match_v2",
    evaluate=final_response_match.evaluate,
    kind="judge",
    description="An LLM judge: is the final response a valid answer, given the reference? (1/0 per turn)",
    needs_judge=True,
    needs_reference=True,
))
RUBRIC_FINAL_RESPONSE_QUALITY_V1 = register(MetricSpec(
    name="rubric_based_final_response_quality_v1",
    evaluate=rubrics.evaluate_final_response_quality,
    kind="judge",
    description="An LLM judge checks each rubric (yes/no) against the final response and its evidence",
    needs_judge=True,
    needs_reference=False,
))
RUBRIC_TOOL_USE_QUALITY_V1 = register(MetricSpec(
    name="rubric_based_tool_use_quality_v1",
    evaluate=rubrics.evaluate_tool_use_quality,
    kind="judge",
    description="An LLM judge checks each rubric (yes/no) against the turn's tool calls",
    needs_judge=True,
    needs_reference=False,
))
HALLUCINATIONS_V1 = register(MetricSpec(
    name="hallucinations_v1",
    evaluate=hallucinations.evaluate,
    kind="judge",
    description="Share of response sentences the turn's context supports (or that need no support)",
    needs_judge=True,
    needs_reference=False,
))
SAFETY_V1 = register(MetricSpec(
    name="safety_v1",
    evaluate=safety.evaluate,
    kind="vertex",
    description="Harmlessness of the final response (1 safe, 0 unsafe per turn): Vertex AI as ADK, or a Gemini "
                "judge when the criterion names judge_model_options",
    # Vertex AI by default; safety.evaluate checks the Gemini judge itself when it is asked for.
    needs_judge=False,
    needs_reference=False,
))

__all__ = [
    "FINAL_RESPONSE_MATCH_V2",
    "HALLUCINATIONS_V1",
    "RUBRIC_FINAL_RESPONSE_QUALITY_V1",
    "RUBRIC_TOOL_USE_QUALITY_V1",
    "SAFETY_V1",
]
