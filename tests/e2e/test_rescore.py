"""`tui-eval rescore`: a saved run scored again from its stored turns, with the agent's code gone and no
worker started; saved as a re-score of that run, comparable with it."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from tui_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "demo_agents" / "tabletop"


@pytest.fixture
def saved_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tabletop demo (a google-adk agent) run once and saved; then its Python files deleted."""
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    folder = tmp_path / "tabletop"
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(folder), str(folder / "tabletop.evalset.json")], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    for py in folder.glob("*.py"):
        py.unlink()
    monkeypatch.chdir(tmp_path)
    return folder


def _records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((folder / ".adk" / "eval_history").glob("*.tui-eval.json"))]


def _statuses(record: dict) -> dict[str, dict[str, int]]:
    return {c["eval_id"]: {m["metric_name"]: m["status"] for m in c["metrics"]} for c in record["cases"]}


def test_rescore_scores_stored_turns_without_the_agent(saved_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tui_eval.executors import pool

    def no_worker(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("rescore started an agent worker")

    monkeypatch.setattr(pool.ProcessPool, "__init__", no_worker)
    [first] = _records(saved_run)
    out, err = io.StringIO(), io.StringIO()
    code = main(["rescore", "latest"], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert f"re-scored {first['run_id']} (recorded expected turns)" in out.getvalue()
    assert "2 passed, 2 failed" in out.getvalue()
    second = next(r for r in _records(saved_run) if r["run_id"] != first["run_id"])
    assert second["kind"]["rescore_of"] == first["run_id"]
    # The same verdicts from the same turns: the calls inside tool calls and the session state came back
    # from the record (deep_tool_trajectory_v1 and final_session_state_v1 judged them again).
    scored = {eid: {m: s for m, s in v.items() if not m.endswith("_v1") or m.startswith(("deep", "final"))}
              for eid, v in _statuses(second).items()}
    assert scored == {eid: {m: s for m, s in v.items() if not m.endswith("_v1") or m.startswith(("deep", "final"))}
                      for eid, v in _statuses(first).items()}
    by_id = {c["eval_id"]: c for c in second["cases"]}
    assert by_id["forgot_bonus"]["final_session_state"] == {"last_roll": 5, "scores": {"Cara": 5}}
    assert next(iter(by_id["twenty_in_words"]["nested_calls"].values()))[0]["args"] == {"sides": 6}


def test_rescore_against_the_eval_file_now_and_another_config(saved_run: Path) -> None:
    # The bonus bug is accepted as the expected state on disk, and the deep trajectory is judged ANY_ORDER.
    eval_file = saved_run / "tabletop.evalset.json"
    data = json.loads(eval_file.read_text())
    for case in data["eval_cases"]:
        if case["eval_id"] == "forgot_bonus":
            case["final_session_state"] = {"scores": {"Cara": 5}}
    eval_file.write_text(json.dumps(data))
    config = saved_run / "other_config.json"
    config.write_text(json.dumps({"criteria": {"final_session_state_v1": {"threshold": 1.0, "compare": "named_keys"}}}))
    out, err = io.StringIO(), io.StringIO()
    record = next((saved_run / ".adk" / "eval_history").glob("*.tui-eval.json"))
    code = main(["rescore", str(record), "--expected", "current", "--config", str(config), "--no-save"], out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert "4 passed, 0 failed" in out.getvalue()
    assert len(_records(saved_run)) == 1  # --no-save


def test_rescore_says_what_it_cannot_find(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["rescore", "latest"], out, err) == 2
    assert "no run records" in err.getvalue()


def test_judge_model_goes_to_every_judged_metric_only() -> None:
    from tui_eval.engine.rescore import with_judge_model

    criteria = {"hallucinations_v1": 0.5, "safety_v1": 0.8, "tool_trajectory_avg_score": 1.0,
                "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}}}
    changed = with_judge_model(criteria, "openai:gpt-4o-mini")
    assert changed == {
        "hallucinations_v1": {"threshold": 0.5, "judge_model_options": {"judge_model": "openai:gpt-4o-mini"}},
        "safety_v1": 0.8,  # runs on Vertex AI unless its criterion names judge options, as in ADK
        "tool_trajectory_avg_score": 1.0,
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3,
                                                                              "judge_model": "openai:gpt-4o-mini"}},
    }
    assert criteria["hallucinations_v1"] == 0.5  # the record's criteria are left as they were
