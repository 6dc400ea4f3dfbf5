"""Which of our judge prompts stands for which of google-adk 2.13's templates, placeholder by placeholder.

Our prompts are our own words, but what a judge is shown must not fall behind ADK's: every value ADK's
template fills has a counterpart in ours, and the hash of the ADK template we last reviewed is pinned so
that a google-adk upgrade that changes one names the template to review (tests/unit/test_adk_prompts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import final_response_match, hallucinations, rubrics


@dataclass(frozen=True, slots=True)
class TemplateCounterpart:
    """One ADK template, the prompt of ours that stands for it, and which of our placeholders carries each
    of its placeholders."""

    adk_module: str
    adk_name: str
    ours: str
    #: ADK placeholder -> our placeholder that is filled with the same information.
    placeholders: dict[str, str]
    #: sha256 of the ADK template as last reviewed (google-adk 2.13.0).
    sha256: str


_ADK = "google.adk.evaluation."

COUNTERPARTS: tuple[TemplateCounterpart, ...] = (
    TemplateCounterpart(
        _ADK + "hallucinations_v1", "_HALLUCINATIONS_V1_SEGMENTER_PROMPT", hallucinations.SEGMENT_PROMPT,
        {"response": "response"},
        "b57f6539758f22823156023e60e58f0f7c06e79a02988ccccc926fcb062f6eae"),
    TemplateCounterpart(
        # ADK's context holds developer instructions, user prompt, tool definitions, grounding metadata,
        # tool calls and outputs: hallucinations._context builds the same sections.
        _ADK + "hallucinations_v1", "_HALLUCINATIONS_V1_VALIDATOR_PROMPT", hallucinations.LABEL_PROMPT,
        {"context": "context", "sentences": "sentences"},
        "a9943a8f9148e65b2d52020a74da876d22baab80171023d3db732dfd9cc35cc8"),
    TemplateCounterpart(
        _ADK + "rubric_based_final_response_quality_v1", "_RUBRIC_BASED_FINAL_RESPONSE_QUALITY_V1_PROMPT",
        rubrics.FINAL_RESPONSE_PROMPT,
        {"developer_instructions": "instructions", "tool_declarations": "tools", "user_input": "user_prompt",
         "response_steps": "steps", "grounding_metadata": "grounding", "final_response": "final_answer",
         "rubrics": "rubrics"},
        "026695e7f2d7fbc3e8de788b928e6eba64e982635a13bfbdea8889e6b1bd71c8"),
    TemplateCounterpart(
        _ADK + "rubric_based_tool_use_quality_v1", "_RUBRIC_BASED_TOOL_USE_QUALITY_V1_PROMPT",
        rubrics.TOOL_USE_PROMPT,
        {"tool_declarations": "tools", "user_input": "user_prompt", "tool_usage": "steps", "rubrics": "rubrics"},
        "c71d27e3d9d42dfb6708f6c16414c339830f5fa8ddb27ff635a1557332ec726b"),
    TemplateCounterpart(
        _ADK + "final_response_match_v2", "_FINAL_RESPONSE_MATCH_V2_PROMPT", final_response_match.PROMPT,
        {"prompt": "prompt", "response": "response", "golden_response": "reference"},
        "ac16489f0f552f4885c4e2eb2f00c370a96f42af4b84edc05eb5995214bc9598"),
)
