"""`--num-runs N` with a deterministic flaky agent: k/N runs passed, flaky first, pass@k and pass^k in the
record, each repetition's results kept."""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson

from tui_eval.cli import main

AGENT = '''
from tui_eval.agents.native import NativeAgent

CALLS = {}


def policy(turn):
    n = CALLS[turn.user_text] = CALLS.get(turn.user_text, 0) + 1
    if turn.user_text == "flip":
        return "heads" if n % 2 else "tails"  # alternates per call: pass, fail, pass, fail
    if turn.user_text == "steady":
        return "always the same"
    return "wrong answer"


root_agent = NativeAgent("flaky", "answers", tools=[], policy=policy)
'''


def _case(eval_id: str, prompt: str, answer: str) -> dict:
    return {"eval_id": eval_id, "conversation": [{
        "invocation_id": "", "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]}}],
        "session_input": {"app_name": "flaky", "user_id": "u", "state": {}}}


def _agent(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "flaky"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    eval_file = folder / "flaky.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": "flaky", "eval_cases": [
        _case("steady", "steady", "always the same"), _case("broken", "broken", "the right answer"),
        _case("flip", "flip", "heads")]}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    return folder, eval_file


def test_flaky_case_reports_2_of_4_and_comes_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    folder, eval_file = _agent(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(folder), str(eval_file), "--num-runs", "4", "--concurrency", "1"], out, err)
    text = out.getvalue()
    assert code == 1, text + err.getvalue()
    # One block for the eval set, not four; one line per case that did not always pass.
    assert text.count("flaky (") == 1, text
    assert "3 case(s) x 4 runs: 1 flaky, 1 stable fail, 1 stable pass" in text
    flip = next(line for line in text.splitlines() if " flip " in line)
    assert "2/4 runs passed (flaky)" in flip and "✔✘✔✘" in flip
    assert "pass@4 1.00" in flip and "pass^4 0.00" in flip
    assert text.index("FLAKY flip") < text.index("FAIL broken")
    assert "steady" not in text  # a stable pass needs no line
    assert "run 2: response_match_score" in text  # the first failing run says why

    # Each repetition keeps its own results, and says which one it is.
    records = sorted((folder / ".adk" / "eval_history").glob("*.tui-eval.json"))
    assert len(records) == 4
    data = [orjson.loads(p.read_bytes()) for p in records]
    assert sorted(d["repetition"] for d in data) == [1, 2, 3, 4]
    assert {d["num_runs"] for d in data} == {4}
    by_rep = {d["repetition"]: {c["eval_id"]: c["status"] for c in d["cases"]} for d in data}
    assert [by_rep[k]["flip"] for k in (1, 2, 3, 4)] == [1, 2, 1, 2]  # PASSED, FAILED, ...
    [repeats] = data[0]["insight"]["repeats"].values()
    flip_r = next(r for r in repeats if r["case_id"] == "flip")
    assert flip_r["passed"] == 2 and flip_r["label"] == "flaky"
    # n = 4, c = 2: pass@k = 1 - C(2,k)/C(4,k); pass^k = C(2,k)/C(4,k).
    assert flip_r["pass_at_k"] == [0.5, 1 - 1 / 6, 1.0, 1.0]
    assert flip_r["pass_hat_k"] == [0.5, 1 / 6, 0.0, 0.0]
    broken = next(r for r in repeats if r["case_id"] == "broken")
    assert broken["label"] == "stable fail" and broken["pass_at_k"] == [0.0] * 4

    # The report of the folder shows the flaky case in its table.
    out = io.StringIO()
    assert main(["report", str(folder)], out, io.StringIO()) == 0
    md = out.getvalue()
    assert "over 4 runs" in md and "| flip | 2/4 ✔✘✔✘ | flaky | 1.00 | 0.00 |" in md
