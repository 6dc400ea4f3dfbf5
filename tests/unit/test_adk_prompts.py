"""Our judge prompts against google-adk's templates: every value ADK's template fills has a counterpart in
ours, and a google-adk upgrade that changes a template names the template to review."""

from __future__ import annotations

import hashlib
import importlib
import string

import pytest

from tests.support.evalfiles import turns_of
from tui_eval.metrics.base import MetricInput
from tui_eval.metrics.llm import hallucinations, rubrics
from tui_eval.metrics.llm.adk_templates import COUNTERPARTS, TemplateCounterpart
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.load import read_eval_case


def _fields(template: str) -> set[str]:
    return {name for _text, name, _spec, _conv in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("row", COUNTERPARTS, ids=lambda row: row.adk_name)
def test_every_adk_placeholder_has_a_counterpart(row: TemplateCounterpart) -> None:
    adk_template = getattr(importlib.import_module(row.adk_module), row.adk_name)
    digest = hashlib.sha256(adk_template.encode()).hexdigest()
    assert digest == row.sha256, (
        f"google-adk changed {row.adk_module}.{row.adk_name}: review our prompt that stands for it "
        f"(tui_eval/metrics/llm/adk_templates.py) and then pin its new sha256 {digest}")
    assert _fields(adk_template) == set(row.placeholders), f"{row.adk_name}: placeholders changed"
    ours = _fields(row.ours)
    missing = {adk: mine for adk, mine in row.placeholders.items() if mine not in ours}
    assert not missing, f"{row.adk_name}: our prompt lacks {missing}"


GROUNDING = {"groundingChunks": [{"web": {"uri": "https://example.org/louvre", "title": "Louvre"}}],
             "groundingSupports": [{"segment": {"text": "The Louvre opens at 9."}, "groundingChunkIndices": [0]}]}


def _input(metric: str, criterion: dict[str, object]) -> MetricInput:
    case = read_eval_case({
        "eval_id": "g", "session_input": {"app_name": "a", "user_id": "u", "state": {}},
        "conversation": [{
            "invocation_id": "i1",
            "user_content": {"role": "user", "parts": [{"text": "When does the Louvre open?"}]},
            "final_response": {"role": "model", "parts": [{"text": "The Louvre opens at 9."}]},
            "intermediate_data": {"invocation_events": [
                {"author": "guide", "content": {"role": "model", "parts": [{"text": "Searching."}]},
                 "grounding_metadata": GROUNDING},
                # A grounding-only event (no parts), as ADK keeps it.
                {"author": "guide", "content": None, "grounding_metadata": GROUNDING},
            ]},
        }],
    }, "$")
    config = read_eval_config({"criteria": {metric: criterion}})
    turns = turns_of(case)
    return MetricInput(config.criteria[metric], case, turns, turns, config)


def test_both_judges_are_shown_the_turns_grounding_metadata() -> None:
    inp = _input("hallucinations_v1", {"threshold": 0.5, "evaluate_intermediate_nl_responses": True})
    steps = hallucinations.check_steps(inp, 0)
    assert [s.source for s in steps] == ["intermediate", "final"]
    for step in steps:
        grounding = step.context.split("Grounding metadata:\n", 1)[1]
        assert '"uri": "https://example.org/louvre"' in grounding
        assert '"author": "guide"' in grounding
    # The final response's context has both grounded events; the intermediate one only its own.
    assert steps[1].context.count('"uri"') == 2 and steps[0].context.count('"uri"') == 1

    inp = _input("rubric_based_final_response_quality_v1", {
        "threshold": 0.5, "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Cites a source."}}]})
    prompt = rubrics._prompt(rubrics.FINAL_RESPONSE_METRIC, inp, 0, inp.criterion.rubrics)
    block = prompt.split("<grounding_metadata>", 1)[1].split("</grounding_metadata>", 1)[0]
    assert '"groundingSupports"' in block and "The Louvre opens at 9." in block


def test_a_turn_without_grounding_says_so() -> None:
    inp = _input("hallucinations_v1", {"threshold": 0.5})
    inp.actual[0].intermediate_data = None
    [step] = hallucinations.check_steps(inp, 0)
    assert "Grounding metadata:\nNo grounding metadata was provided." in step.context
