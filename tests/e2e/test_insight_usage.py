"""Judge tokens and their estimated cost, asserted against the usage metadata the local Gemini-compatible
server returns; a `prices` section in test_config.json overrides the built-in table without a warning."""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson

from tests.support.fake_gemini import FakeGemini, RecordedRequest, Reply, json_reply
from tui_eval.cli import main

# What the fake server reports for every judge call (thoughts are billed as output).
USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 40, "thoughtsTokenCount": 10, "totalTokenCount": 1050}


def _respond(request: RecordedRequest) -> Reply | None:
    return json_reply({"reasoning": "same meaning", "verdict": "valid"}, usage=USAGE)


def _write(tmp_path: Path, prices: dict | None) -> Path:
    eval_file = tmp_path / "judged.evalset.json"
    turn = {"invocation_id": "t", "user_content": {"role": "user", "parts": [{"text": "hello"}]},
            "final_response": {"role": "model", "parts": [{"text": "Hi there."}]}}
    eval_file.write_text(json.dumps({"eval_set_id": "judged", "eval_cases": [
        {"eval_id": "a", "conversation": [turn], "session_input": {"app_name": "x", "user_id": "u", "state": {}}},
        {"eval_id": "b", "conversation": [turn, turn],
         "session_input": {"app_name": "x", "user_id": "u", "state": {}}}]}))
    config: dict = {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 2}}}}
    if prices is not None:
        config["prices"] = prices
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    return eval_file


def _run(eval_file: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", "--agent", f"replay:{eval_file}", str(eval_file), "--no-judge-cache"], out, err)
    return code, out.getvalue(), err.getvalue()


def test_judge_tokens_and_cost_from_the_servers_usage_metadata(gemini_env: FakeGemini, tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.delenv("TUI_EVAL_PRICES", raising=False)
    gemini_env.responder = _respond
    eval_file = _write(tmp_path, None)
    code, out, err = _run(eval_file)
    assert code == 0, out + err
    calls = gemini_env.calls
    assert calls == 6  # three turns, two samples each
    assert f"Tokens judge gemini-2.5-flash: {1000 * calls:,} prompt, {50 * calls:,} output" in out
    # gemini-2.5-flash list price: $0.30 / M prompt tokens, $2.50 / M output tokens.
    cost = calls * (1000 * 0.30 + 50 * 2.50) / 1e6
    assert f"Est. cost ${cost:.4f} (estimate)" in out
    [record] = (tmp_path / ".adk" / "eval_history").glob("*.tui-eval.json")
    [line] = orjson.loads(record.read_bytes())["insight"]["cost"]["lines"]
    assert line["who"] == "judge" and line["model"] == "gemini-2.5-flash"
    assert line["usage"] == {"prompt": 6000, "output": 300, "cached": 0, "total": 6300}
    assert abs(line["cost_usd"] - cost) < 1e-12


def test_prices_in_the_config_override_without_a_warning(gemini_env: FakeGemini, tmp_path: Path,
                                                         monkeypatch) -> None:
    monkeypatch.delenv("TUI_EVAL_PRICES", raising=False)
    gemini_env.responder = _respond
    eval_file = _write(tmp_path, {"gemini-2.5-flash": {"prompt": 1.0, "output": 10.0}})
    code, out, err = _run(eval_file)
    assert code == 0, out + err
    assert "warning" not in err and "prices" not in err
    cost = 6 * (1000 * 1.0 + 50 * 10.0) / 1e6
    assert f"Est. cost ${cost:.4f} (estimate)" in out
    assert str(tmp_path / "test_config.json") in out  # where the prices came from
