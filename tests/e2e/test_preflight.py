"""Preflight (issue 33, item 4): before the first case, a judge model whose API rejects the credentials
or does not know the model is exit 2 with one clear line (probed with a metadata call, never a generation);
absent credentials stay NOT_EVALUATED with the reason (exit 3), as the offline demo needs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_run import run_cli
from tests.support.evalfiles import case, turn, write_set
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI


def _judged(folder: Path, judge_model: str) -> tuple[Path, Path]:
    golden = write_set(folder / "gate.evalset.json", "gate", case("c0", turn("ask 0", "the answer is 0")))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": judge_model, "num_samples": 1}}}}))
    return golden, golden


def test_a_gemini_judge_that_rejects_the_key_or_has_no_such_model_is_exit_2(tmp_path: Path,
                                                                           gemini_env: FakeGemini) -> None:
    from tests.support.fake_gemini import error_reply

    golden, recorded = _judged(tmp_path, "gemini-2.5-flash")
    gemini_env.model_probe = error_reply(400, "API key not valid. Please pass a valid API key.")
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 2 and out == "", out + err
    assert err.startswith("error: judge_model gemini-2.5-flash: the judge's API rejected the credentials (400")
    assert gemini_env.probes == ["gemini-2.5-flash"] and gemini_env.calls == 0  # no generation was asked
    gemini_env.model_probe = error_reply(404, "models/gemini-9 is not found")
    golden, recorded = _judged(tmp_path, "gemini-9")
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 2 and "error: judge_model gemini-9: the judge's API has no model 'gemini-9' (404" in err


def test_an_openai_judge_that_rejects_the_key_is_exit_2(tmp_path: Path, openai_env: FakeOpenAI) -> None:
    from tests.support.fake_openai import error_reply

    golden, recorded = _judged(tmp_path, "openai:gpt-4o-mini")
    openai_env.model_probe = error_reply(401, "Incorrect API key provided")
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 2 and "error: judge_model openai:gpt-4o-mini: the judge's API rejected the credentials (401" in err


def test_absent_credentials_stay_not_evaluated(tmp_path: Path) -> None:
    golden, recorded = _judged(tmp_path, "gemini-2.5-flash")
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert code == 3 and "no judge credentials" in out, out + err
