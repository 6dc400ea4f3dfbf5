"""Issue 10 item 3, bullet by bullet: files read as google-adk 2.13 reads them, results written as it
writes them, and an eval_set_id no file name can hold runs and fails only when history is saved."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.evalfiles import case, dice_pair, turn, write_set
from tui_eval.cli import main
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.errors import LoadError
from tui_eval.schema.load import load_eval_set, parse_eval_set


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _set(**top: Any) -> dict[str, Any]:
    return {"eval_set_id": "s", "eval_cases": [case("c", turn("hi", "hello"))], **top}


def test_unknown_top_level_keys_load_with_a_warning(tmp_path: Path) -> None:
    eval_set, legacy = parse_eval_set(json.dumps(_set(owner="qa-team")).encode(), tmp_path / "s.evalset.json")
    assert not legacy and [c.eval_id for c in eval_set.eval_cases] == ["c"]
    assert any("owner" in w and "ignored" in w for w in eval_set.load_warnings)


def test_adk_coercions_hold() -> None:
    config = read_eval_config({"criteria": {
        "response_match_score": "1.0",
        "tool_trajectory_avg_score": {"threshold": "0.5", "ignore_args": "true"},
    }})
    assert config.criteria["response_match_score"].threshold == 1.0
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert trajectory.threshold == 0.5 and trajectory.ignore_args is True
    eval_set, _ = parse_eval_set(json.dumps(_set(creation_timestamp="1700000000.5")).encode(), "s.evalset.json")
    assert eval_set.creation_timestamp == 1700000000.5
    legacy = [{"query": "what time is it", "reference": "noon",
               "expected_tool_use": [{"tool_name": "clock", "tool_input": None}]}]
    old, is_legacy = parse_eval_set(json.dumps(legacy).encode(), "old.test.json")
    assert is_legacy
    [call] = old.eval_cases[0].conversation[0].intermediate_data.tool_uses  # type: ignore[union-attr, index]
    assert call.name == "clock" and not call.args


def test_a_part_with_a_misspelt_key_is_rejected(tmp_path: Path) -> None:
    data = _set()
    data["eval_cases"][0]["conversation"][0]["final_response"]["parts"] = [{"txt": "hello"}]
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps(data))
    with pytest.raises(LoadError, match="txt"):
        load_eval_set(path)


def _adk_cases(folder: Path) -> list[dict[str, Any]]:
    [history] = sorted((folder / ".adk" / "eval_history").glob("*.evalset_result.json"))
    data = json.loads(history.read_text())
    return list(data["eval_case_results"])


def test_results_carry_eval_set_file_and_user_id_as_adk_writes_them(tmp_path: Path) -> None:
    # google-adk 2.13, LocalEvalService._evaluate_single_inference_result: eval_set_file=eval_set_id,
    # user_id = session_input.user_id if set, else "test_user_id".
    golden, recorded = dice_pair(tmp_path)
    data = json.loads(golden.read_text())
    data["eval_cases"][1]["session_input"] = None  # c_args: no session, so ADK's default user
    golden.write_text(json.dumps(data))
    out_json = tmp_path / "out.json"
    code, _, err = run_cli("run", f"replay:{recorded}", str(golden), "--json", str(out_json))
    assert code == 1, err
    saved = _adk_cases(tmp_path)
    [printed] = json.loads(out_json.read_text())
    for cases in (saved, printed["eval_case_results"]):
        assert {c["eval_id"]: (c["eval_set_file"], c["user_id"]) for c in cases} == {
            "c_pass": ("golden", "user"),
            "c_args": ("golden", "test_user_id"),
            "c_words": ("golden", "user"),
            "c_two": ("golden", "user"),
        }
    from google.adk.evaluation.eval_result import EvalCaseResult  # ADK reads what we wrote

    assert [EvalCaseResult.model_validate(c).user_id for c in saved] == ["user", "test_user_id", "user", "user"]


def test_an_eval_set_id_with_a_slash_runs_and_fails_only_when_saving(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    data = json.loads(golden.read_text())
    data["eval_set_id"] = "team/golden"
    golden.write_text(json.dumps(data))

    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 1, err  # ran and scored: some cases fail, nothing is wrong with the input
    assert "1 passed, 3 failed, 0 not evaluated" in out and not err.strip()

    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--json", str(out_json))
    assert code == 2, (out, err)
    assert "1 passed, 3 failed, 0 not evaluated" in out  # the run happened
    assert "could not save eval history" in err and "'team/golden'" in err and str(golden) in err
    [printed] = json.loads(out_json.read_text())  # and its results are not lost
    assert printed["eval_set_id"] == "team/golden" and len(printed["eval_case_results"]) == 4
    assert not list(tmp_path.rglob("*.evalset_result.json"))  # nothing written anywhere


def test_a_traversing_eval_set_id_never_writes_history(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    write_set(golden, "../escape", case("c", turn("q", "a")))
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden))
    assert code == 2, (out, err)
    assert "eval_set_id '../escape' cannot be used in a file name" in err and str(golden) in err
    assert not (tmp_path / ".adk").exists() and not (tmp_path.parent / ".adk").exists()
