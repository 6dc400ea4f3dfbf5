"""`tui-eval run` as CI uses it: summary, --json in ADK's shape, --junit, exit codes, bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.evalfiles import case, dice_pair, turn, write_set
from tui_eval.cli import main


def run_cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def dice(tmp_path: Path) -> tuple[Path, Path]:
    return dice_pair(tmp_path)


def test_run_replay_summary_json_junit_and_exit_code(dice, tmp_path: Path):
    golden, recorded = dice
    out_json, out_xml = tmp_path / "out.json", tmp_path / "out.xml"
    code, out, err = run_cli("run", "--agent", f"replay:{recorded}", str(golden),
                             "--json", str(out_json), "--junit", str(out_xml))
    assert code == 1, err
    assert "golden (" in out and "1 passed, 3 failed, 0 not evaluated" in out
    assert "FAIL c_args" in out and "tool_trajectory_avg_score: 0.000 < 1 FAILED" in out
    assert "Total: 1 passed, 3 failed, 0 not evaluated" in out

    from google.adk.evaluation.eval_result import EvalSetResult

    results = [EvalSetResult.model_validate(r) for r in json.loads(out_json.read_text())]
    assert len(results) == 1
    by_id = {c.eval_id: c for c in results[0].eval_case_results}
    assert by_id["c_pass"].final_eval_status.value == 1
    assert by_id["c_args"].final_eval_status.value == 2
    traj = {m.metric_name: m for m in by_id["c_two"].overall_eval_metric_results}["tool_trajectory_avg_score"]
    assert traj.score == 0.5 and traj.eval_status.value == 2
    assert len(by_id["c_two"].eval_metric_result_per_invocation) == 2

    suite = ET.parse(out_xml).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("name") == "golden" and suite.get("tests") == "4" and suite.get("failures") == "3"
    failures = {tc.get("name"): tc.find("failure") for tc in suite.iter("testcase")}
    assert failures["c_pass"] is None
    args_failure, words_failure = failures["c_args"], failures["c_words"]
    assert args_failure is not None and "tool_trajectory_avg_score" in (args_failure.get("message") or "")
    assert words_failure is not None and "response_match_score" in (words_failure.text or "")


def test_scores_equal_google_adk_evaluators(dice, tmp_path: Path):
    """The whole CLI path gives ADK's own numbers for the deterministic criteria."""
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    golden, recorded = dice
    out_json = tmp_path / "out.json"
    run_cli("run", "--agent", f"replay:{recorded}", str(golden), "--json", str(out_json), "--no-save")
    ours = {c["eval_id"]: {m["metric_name"]: m["score"] for m in c["overall_eval_metric_results"]}
            for c in json.loads(out_json.read_text())[0]["eval_case_results"]}
    exp = EvalSet.model_validate_json(golden.read_text())
    act = {c.eval_id: c for c in EvalSet.model_validate_json(recorded.read_text()).eval_cases}
    traj = TrajectoryEvaluator(threshold=1.0)
    rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
    for c in exp.eval_cases:
        a, e = act[c.eval_id].conversation, c.conversation
        assert a is not None and e is not None
        assert ours[c.eval_id]["tool_trajectory_avg_score"] == traj.evaluate_invocations(a, e).overall_score
        assert ours[c.eval_id]["response_match_score"] == pytest.approx(
            rouge.evaluate_invocations(a, e).overall_score, abs=1e-9)


def test_id_filter_runs_only_named_cases(dice):
    golden, recorded = dice
    code, out, _ = run_cli("run", f"replay:{recorded}", f"{golden}:c_pass", "--no-save")
    assert code == 0
    assert "1 passed, 0 failed, 0 not evaluated" in out
    code, out, _ = run_cli("run", f"replay:{recorded}", f"{golden}:c_pass,c_args", "--no-save")
    assert code == 1 and "1 passed, 1 failed" in out


def test_detailed_results_print_every_turn(dice):
    golden, recorded = dice
    _, out, _ = run_cli("run", f"replay:{recorded}", f"{golden}:c_two", "--print-detailed-results", "--no-save")
    assert out.count("--- turn") == 2
    assert 'expected tools:    roll_die({"sides": 6}); roll_die({"sides": 6})' in out
    assert 'actual tools:      roll_die({"sides": 6})' in out
    assert "tool_trajectory_avg_score: FAILED 0.000" in out


def test_history_is_saved_beside_the_eval_file_for_replay_and_is_adk_readable(dice, tmp_path: Path):
    from google.adk.evaluation.eval_result import EvalSetResult

    golden, recorded = dice
    code, out, _ = run_cli("run", f"replay:{recorded}", str(golden))
    history = tmp_path / ".adk" / "eval_history"
    adk_files = list(history.glob("*.evalset_result.json"))
    assert len(adk_files) == 1 and adk_files[0].name.startswith(f"{tmp_path.name}_golden_")
    parsed = EvalSetResult.model_validate_json(adk_files[0].read_text())
    assert parsed.eval_set_id == "golden" and len(parsed.eval_case_results) == 4
    assert list(history.glob("*.tui-eval.json"))
    assert "Saved eval history" in out


def test_num_runs_repeats(dice, tmp_path: Path):
    golden, recorded = dice
    out_json = tmp_path / "o.json"
    run_cli("run", f"replay:{recorded}", f"{golden}:c_pass", "--num-runs", "2", "--json", str(out_json), "--no-save")
    assert len(json.loads(out_json.read_text())) == 2


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda d: (d / "golden.evalset.json").write_text('{"eval_set_id": "golden", "eval_cases": ['),
         "golden.evalset.json:1:"),
        (lambda d: (d / "golden.evalset.json").write_text('{"evalSetId": "golden", "eval_cases": []}'),
         "at $.evalSetId: unknown top-level key"),
        (lambda d: (d / "test_config.json").write_text('{"criteria": {"tool_trajectory_avg_scor": 1}}'),
         "unknown metric(s) tool_trajectory_avg_scor (did you mean 'tool_trajectory_avg_score'?)"),
        (lambda d: (d / "test_config.json").write_text('{"criteria": {"response_match_score": 2}}'),
         "outside [0, 1]"),
        (lambda d: (d / "test_config.json").write_text('[1, 2]'), "must be a JSON object"),
        # An eval_set_id no file name can hold is no longer bad input: it runs and fails when saving
        # (tests/e2e/test_adk_files.py).
    ],
)
def test_bad_input_exits_2_with_one_line_and_loses_nothing(dice, tmp_path: Path, setup, words):
    golden, recorded = dice
    out_json = tmp_path / "out.json"
    out_json.write_text("previous results")
    setup(tmp_path)
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--json", str(out_json))
    assert code == 2, (out, err)
    assert words in err
    assert out_json.read_text() == "previous results"
    assert not (tmp_path / ".adk").exists()


def test_missing_eval_id_and_missing_files_exit_2(dice, tmp_path: Path):
    golden, recorded = dice
    code, _, err = run_cli("run", f"replay:{recorded}", f"{golden}:nope")
    assert code == 2 and "no eval case with id 'nope'" in err
    code, _, err = run_cli("run", f"replay:{tmp_path / 'missing.json'}", str(golden))
    assert code == 2 and "replay file not found" in err
    code, _, err = run_cli("run", f"replay:{recorded}", str(tmp_path / "nope.evalset.json"))
    assert code == 2 and "no such eval file" in err
    code, _, err = run_cli("run", str(golden))
    assert code == 2 and "no agent" in err
    code, _, err = run_cli("run", f"replay:{recorded}", str(golden), "--concurrency", "0")
    assert code == 2


def test_one_bad_file_is_reported_with_the_good_ones_named(dice, tmp_path: Path):
    golden, recorded = dice
    bad = tmp_path / "bad.evalset.json"
    bad.write_text("{")
    worse = tmp_path / "worse.evalset.json"
    worse.write_text('{"eval_set_id": 3, "eval_cases": []}')
    code, _, err = run_cli("run", f"replay:{recorded}", str(golden), str(bad), str(worse))
    assert code == 2
    assert "bad.evalset.json:1:2: invalid JSON" in err and "worse.evalset.json at $.eval_set_id" in err


def test_replay_with_fewer_recorded_turns_fails_the_case_with_the_reason(tmp_path: Path):
    golden = write_set(tmp_path / "g.evalset.json", "g", case("c", turn("a", "b"), turn("c", "d")))
    recorded = write_set(tmp_path / "r.evalset.json", "r", case("c", turn("a", "b")))
    code, out, _ = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 1
    assert "agent error:" in out and "no turn 2" in out


def test_migrate_writes_the_new_schema(tmp_path: Path):
    legacy = tmp_path / "dice.test.json"
    legacy.write_text(json.dumps([{"query": "roll", "expected_tool_use": [
        {"tool_name": "roll_die", "tool_input": {"sides": 6}}], "reference": "4"}]))
    code, out, _ = run_cli("migrate", str(legacy))
    assert code == 0 and "1 case(s), 1 turn(s)" in out
    new = tmp_path / "dice.evalset.json"
    from google.adk.evaluation.eval_case import IntermediateData
    from google.adk.evaluation.eval_set import EvalSet

    adk = EvalSet.model_validate_json(new.read_text())
    adk_turns = adk.eval_cases[0].conversation
    assert adk_turns is not None and isinstance(adk_turns[0].intermediate_data, IntermediateData)
    assert adk_turns[0].intermediate_data.tool_uses[0].args == {"sides": 6}
    code, _, err = run_cli("migrate", str(legacy))
    assert code == 2 and "--force" in err
    code, out, _ = run_cli("migrate", str(new))
    assert code == 0 and "already in the EvalSet schema" in out


def test_console_script_runs_as_a_process(dice):
    golden, recorded = dice
    proc = subprocess.run([sys.executable, "-m", "tui_eval.cli", "run", f"replay:{recorded}", f"{golden}:c_pass",
                           "--no-save"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Total: 1 passed" in proc.stdout
