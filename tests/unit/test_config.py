"""EvalConfig: thresholds, per-metric options, match-type spellings, warnings and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui_eval.schema.config import (
    MatchType,
    config_for,
    default_config,
    load_eval_config,
    read_eval_config,
)
from tui_eval.schema.errors import LoadError, SchemaError


def test_defaults_match_adk():
    cfg = default_config()
    assert {k: c.threshold for k, c in cfg.criteria.items()} == {
        "tool_trajectory_avg_score": 1.0,
        "response_match_score": 0.8,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [("EXACT", MatchType.EXACT), ("in_order", MatchType.IN_ORDER), ("in-order", MatchType.IN_ORDER),
     ("any order", MatchType.ANY_ORDER), (2, MatchType.ANY_ORDER), (0, MatchType.EXACT), ("1", MatchType.IN_ORDER)],
)
def test_match_type_spellings(value, expected):
    cfg = read_eval_config({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": value}}})
    assert cfg.criteria["tool_trajectory_avg_score"].match_type is expected


def test_object_criteria_and_judge_options_in_camel_case():
    cfg = read_eval_config(
        {
            "criteria": {
                "final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"judgeModel": "m", "numSamples": 3}},
                "hallucinations_v1": {"threshold": 0.8, "evaluate_intermediate_nl_responses": True},
                "rubric_based_final_response_quality_v1": {
                    "threshold": 0.7,
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "polite"}}],
                },
            },
            "user_simulator_config": {"model": "sim", "max_allowed_invocations": 4},
        }
    )
    frm = cfg.criteria["final_response_match_v2"]
    assert (frm.judge.judge_model, frm.judge.num_samples) == ("m", 3)
    assert cfg.criteria["hallucinations_v1"].evaluate_intermediate_nl_responses is True
    assert cfg.criteria["rubric_based_final_response_quality_v1"].rubrics[0].rubric_id == "r1"
    assert (cfg.user_simulator.model, cfg.user_simulator.max_allowed_invocations) == ("sim", 4)
    assert cfg.warnings == []


def test_unknown_metric_and_keys_are_reported_not_dropped_silently():
    cfg = read_eval_config(
        {"criteria": {"tool_trajectory_avg_scor": 1.0, "response_match_score": {"threshold": 0.5, "bogus": 1}},
         "extra_top": 1}
    )
    assert cfg.unknown_metrics == ["tool_trajectory_avg_scor"]
    text = "\n".join(cfg.warnings)
    assert "unknown metric 'tool_trajectory_avg_scor'" in text
    assert "$.criteria.response_match_score.bogus" in text
    assert "$.extra_top" in text


@pytest.mark.parametrize(
    ("doc", "where", "words"),
    [
        ([], "$", "must be a JSON object"),
        ({"criteria": []}, "$.criteria", "must be an object"),
        ({"criteria": {"response_match_score": 1.5}}, "$.criteria.response_match_score", "outside [0, 1]"),
        ({"criteria": {"response_match_score": -0.1}}, "$.criteria.response_match_score", "outside [0, 1]"),
        ({"criteria": {"response_match_score": "high"}}, "$.criteria.response_match_score", "must be a number"),
        ({"criteria": {"response_match_score": True}}, "$.criteria.response_match_score", "must be a number"),
        ({"criteria": {"response_match_score": {}}}, "$.criteria.response_match_score", "missing required"),
        ({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}},
         "$.criteria.tool_trajectory_avg_score.match_type", "unknown match_type"),
        ({"criteria": {"final_response_match_v2": {"threshold": 1, "judge_model_options": {"num_samples": 0}}}},
         "$.criteria.final_response_match_v2.judge_model_options.num_samples", ">= 1"),
    ],
)
def test_config_errors(doc, where, words):
    with pytest.raises(SchemaError) as info:
        read_eval_config(doc)
    assert info.value.json_path == where
    assert words in info.value.message


def test_config_discovery_and_override(tmp_path: Path):
    eval_file = tmp_path / "a.evalset.json"
    eval_file.write_text("{}")
    assert config_for(eval_file).source is None  # defaults
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.3}}))
    assert config_for(eval_file).criteria["response_match_score"].threshold == 0.3
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    assert list(config_for(eval_file, other).criteria) == ["tool_trajectory_avg_score"]


def test_bad_config_file_names_file_and_line(tmp_path: Path):
    path = tmp_path / "test_config.json"
    path.write_text('{"criteria": {"response_match_score": 0.8,}}')
    with pytest.raises(LoadError) as info:
        load_eval_config(path)
    assert info.value.path == str(path) and info.value.line == 1


def test_a_config_that_is_a_fifo_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """`--config` naming a FIFO is reported at once (a plain read would block for ever)."""
    import os

    from tui_eval.schema.config import load_eval_config
    from tui_eval.schema.errors import LoadError

    fifo = tmp_path / "test_config.json"
    os.mkfifo(fifo)
    with pytest.raises(LoadError, match="FIFO"):
        load_eval_config(fifo)
