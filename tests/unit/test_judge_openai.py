"""An OpenAI-compatible judge (`judge_model: "openai:MODEL[@URL]"`) through the real `openai` SDK against the
local fake server: structured output, retries on 408/429/5xx, timeouts, malformed JSON, the cache, the
concurrency bound, credentials, and the record of who judged."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.support.evalfiles import turns_of
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_gemini import json_reply as gemini_json
from tests.support.fake_openai import FakeOpenAI, json_reply
from tests.unit.test_llm_metrics import case, rubric, turn
from tui_eval.engine.runner import judge_notice, score_case
from tui_eval.judge import JudgeCallError, JudgeOptions, JudgeParseError, JudgeService, create_judge_service
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.details import JudgeCaseDetails
from tui_eval.schema.errors import SchemaError
from tui_eval.schema.results import EvalStatus

MODEL = "openai:gpt-4.1-mini"


class Verdict(BaseModel):
    reasoning: str
    verdict: str


def make_service(tmp_path: Path, **kw: object) -> JudgeService:
    opts: dict[str, object] = dict(cache_dir=tmp_path / "cache", backoff_base=0.001, backoff_max=0.01, timeout=5.0)
    opts.update(kw)
    return create_judge_service(JudgeOptions(**opts))  # type: ignore[arg-type]


async def test_structured_reply_through_the_sdk(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    openai_env.reply_json({"reasoning": "same city", "verdict": "valid"},
                          usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    judge = make_service(tmp_path)
    assert judge.unavailable_for(MODEL) is None
    reply = await judge.ask(model=MODEL, contents="Is it valid?", schema=Verdict,
                            config={"temperature": 0.5, "maxOutputTokens": 64, "reasoning_effort": "low"})
    assert reply.parsed == Verdict(reasoning="same city", verdict="valid")
    assert reply.attempts == 1 and not reply.cached
    assert (reply.usage.prompt_tokens, reply.usage.output_tokens, reply.usage.total_tokens) == (12, 5, 17)
    [req] = openai_env.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer dummy"
    # The provider's own model name, the prompt as a user message, the schema as a strict JSON schema.
    assert req.model == "gpt-4.1-mini"
    assert req.messages == [{"role": "user", "content": "Is it valid?"}]
    assert req.response_format["type"] == "json_schema"
    spec = req.response_format["json_schema"]
    assert spec["strict"] is True and spec["name"] == "Verdict"
    assert spec["schema"]["required"] == ["reasoning", "verdict"]
    assert spec["schema"]["additionalProperties"] is False
    # Gemini-style config keys are renamed; an OpenAI-only key goes through as it is.
    assert req.body["temperature"] == 0.5 and req.body["max_tokens"] == 64
    assert req.body["reasoning_effort"] == "low"
    await judge.aclose()


async def test_the_model_value_names_its_endpoint(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-local")
    fake_openai.reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(tmp_path)
    model = f"openai:llama3.1:8b@{fake_openai.base_url}"
    reply = await judge.ask(model=model, contents="q", schema=Verdict)
    assert reply.parsed is not None and fake_openai.calls == 1
    assert fake_openai.requests[0].model == "llama3.1:8b"  # an Ollama tag keeps its colon
    assert judge.describe(model) == ("openai", "llama3.1:8b", fake_openai.base_url)
    await judge.aclose()


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_retries_then_success(openai_env: FakeOpenAI, tmp_path: Path, status: int) -> None:
    openai_env.fail(status, times=2).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(tmp_path)
    reply = await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert reply.parsed is not None and reply.attempts == 3
    assert openai_env.calls == 3 and judge.stats.retries == 2 and judge.stats.failures == 0
    await judge.aclose()


async def test_429_retry_after_is_honoured(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    openai_env.fail(429, retry_after=0.4).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(tmp_path)
    started = time.monotonic()
    reply = await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert reply.parsed is not None
    gap = openai_env.requests[1].received_at - openai_env.requests[0].received_at
    assert gap >= 0.35, gap  # the backoff alone would be milliseconds
    assert time.monotonic() - started >= 0.35
    await judge.aclose()


async def test_gives_up_after_max_retries_and_does_not_retry_a_client_error(openai_env: FakeOpenAI,
                                                                           tmp_path: Path) -> None:
    openai_env.fail(500, times=3)
    judge = make_service(tmp_path, max_retries=2)
    with pytest.raises(JudgeCallError, match=r"^500 after 2 retries$"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert openai_env.calls == 3
    openai_env.fail(400, message="model 'gpt-4.1-mini' does not exist")
    with pytest.raises(JudgeCallError, match=r"^400: model 'gpt-4.1-mini' does not exist$"):
        await judge.ask(model=MODEL, contents="q2", schema=Verdict)
    assert openai_env.calls == 4 and judge.stats.failures == 2
    await judge.aclose()


async def test_timeouts_are_retried_then_reported(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    openai_env.slow(2.0).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(tmp_path, timeout=0.4, max_retries=1)
    reply = await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert reply.parsed is not None and reply.attempts == 2
    openai_env.slow(2.0, times=2)
    with pytest.raises(JudgeCallError, match=r"^timeout after 0.4s after 1 retry$"):
        await judge.ask(model=MODEL, contents="q2", schema=Verdict)
    await judge.aclose()


async def test_malformed_json(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    judge = make_service(tmp_path)
    # The message is not JSON; then JSON of the wrong shape; then a body that is not JSON at all.
    openai_env.reply_text("The answer is valid.")
    with pytest.raises(JudgeParseError, match="^invalid JSON from judge"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    openai_env.reply_json({"reasoning": "r"})
    with pytest.raises(JudgeParseError, match="does not match the schema at verdict"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    openai_env.reply_raw("{not json")
    with pytest.raises(JudgeParseError, match="^invalid JSON from judge"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    openai_env.reply_raw("<html>proxy error</html>", content_type="text/html")
    with pytest.raises(JudgeParseError, match="^invalid JSON from judge: the endpoint answered"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert judge.stats.parse_failures == 4 and openai_env.calls == 4  # a parse failure is not retried
    # Nothing unusable was cached: the same request is asked again.
    openai_env.reply_json({"reasoning": "r", "verdict": "valid"})
    reply = await judge.ask(model=MODEL, contents="q", schema=Verdict)
    assert reply.parsed is not None and not reply.cached and openai_env.calls == 5
    await judge.aclose()


async def test_concurrency_bound(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    openai_env.latency = 0.05
    openai_env.responder = lambda _req: json_reply({"reasoning": "r", "verdict": "valid"})
    judge = make_service(tmp_path, concurrency=3, use_cache=False)
    await asyncio.gather(*(judge.ask(model=MODEL, contents=f"q{i}", schema=Verdict) for i in range(12)))
    assert openai_env.calls == 12 and openai_env.max_in_flight == 3
    await judge.aclose()


async def test_cache_key_has_provider_model_and_endpoint(openai_env: FakeOpenAI, fake_gemini: FakeGemini,
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    openai_env.responder = lambda _req: json_reply({"reasoning": "openai", "verdict": "valid"})
    fake_gemini.responder = lambda _req: gemini_json({"reasoning": "gemini", "verdict": "valid"})
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    first = make_service(tmp_path)
    await first.ask(model=MODEL, contents="q", schema=Verdict)
    # A re-run over the same cache: no call.
    again = make_service(tmp_path)
    reply = await again.ask(model=MODEL, contents="q", schema=Verdict)
    assert reply.cached and openai_env.calls == 1
    # The same model name on Gemini is another judge: asked there, not answered from OpenAI's entry.
    gemini = await again.ask(model="gpt-4.1-mini", contents="q", schema=Verdict)
    assert not gemini.cached and gemini.parsed is not None and gemini.parsed.reasoning == "gemini"
    # Another model, or another endpoint for the same model, is a miss too.
    await again.ask(model="openai:gpt-4.1", contents="q", schema=Verdict)
    with FakeOpenAI() as other:
        other.responder = lambda _req: json_reply({"reasoning": "other", "verdict": "valid"})
        elsewhere = await again.ask(model=f"{MODEL}@{other.base_url}", contents="q", schema=Verdict)
        assert not elsewhere.cached and elsewhere.parsed is not None and elsewhere.parsed.reasoning == "other"
    assert openai_env.calls == 2 and fake_gemini.calls == 1
    for s in (first, again):
        await s.aclose()


async def test_without_a_key_not_evaluated_with_the_reason(fake_openai: FakeOpenAI, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Gemini credentials are there; they do not make an OpenAI judge available.
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    judge = make_service(tmp_path)
    assert judge.available
    reason = judge.unavailable_for(MODEL)
    assert reason == "no judge credentials (OPENAI_API_KEY is not set)"
    with pytest.raises(JudgeCallError, match=r"OPENAI_API_KEY is not set"):
        await judge.ask(model=MODEL, contents="q", schema=Verdict)
    config = read_eval_config({"criteria": {
        "tool_trajectory_avg_score": 1.0,
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": MODEL}},
    }})
    ev = case([turn("q", "a")])
    results = {r.metric_name: r for r in await score_case(config, ev, turns_of(ev), judge=judge)}
    assert results["tool_trajectory_avg_score"].status == EvalStatus.PASSED
    fr = results["final_response_match_v2"]
    assert fr.status == EvalStatus.NOT_EVALUATED and fr.reason == reason
    assert fake_openai.calls == 0


async def test_run_notice_names_the_missing_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.evalfiles import dice_pair
    from tui_eval.engine.plan import plan_run

    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    golden, _recorded = dice_pair(tmp_path)
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"judge_model": MODEL}},
        "hallucinations_v1": 0.5,
    }}))
    notice = judge_notice(plan_run([str(golden)]), make_service(tmp_path))
    assert notice is not None
    # Only the OpenAI-judged metric: the Gemini one has its credentials.
    assert notice.message == "1 metric will not be evaluated: no judge credentials (OPENAI_API_KEY is not set)"
    assert notice.metrics == ("final_response_match_v2",)


def test_judge_model_syntax_is_checked_when_the_config_loads() -> None:
    ok = read_eval_config({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": "openai:qwen2.5@http://127.0.0.1:8000/v1"}}}})
    assert ok.criteria["final_response_match_v2"].judge.judge_model == "openai:qwen2.5@http://127.0.0.1:8000/v1"
    for bad, words in (("openai:", "names no model"), ("openai:gpt 4", "has no spaces"),
                       ("openai:m@ftp://host/v1", "http:// or https://")):
        with pytest.raises(SchemaError) as exc:
            read_eval_config({"criteria": {"final_response_match_v2": {
                "threshold": 0.5, "judge_model_options": {"judge_model": bad}}}})
        assert words in str(exc.value) and "openai:MODEL@http(s)://" in str(exc.value)


def test_openai_is_not_imported_unless_an_openai_judge_is_called(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from tui_eval.judge import JudgeOptions, create_judge_service\n"
        "from tui_eval.schema.config import read_eval_config\n"
        "import tui_eval.metrics.llm\n"
        "read_eval_config({'criteria': {'final_response_match_v2': {'threshold': 0.5,"
        " 'judge_model_options': {'judge_model': 'openai:gpt-4.1-mini'}}}})\n"
        "judge = create_judge_service(JudgeOptions(cache_dir=None, use_cache=False))\n"
        "print(judge.unavailable_for('openai:gpt-4.1-mini'))\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2], env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["no judge credentials (OPENAI_API_KEY is not set)", "False"]


async def test_the_record_keeps_who_judged(openai_env: FakeOpenAI, tmp_path: Path) -> None:
    from tests.support.fake_openai import judge_responder

    openai_env.responder = judge_responder()
    config = read_eval_config({"criteria": {
        "rubric_based_final_response_quality_v1": {
            "threshold": 0.5, "judge_model_options": {"judge_model": MODEL, "num_samples": 1},
            "rubrics": [rubric("r1", "Answers the question")]},
    }})
    ev = case([turn("q", "a")])
    judge = make_service(tmp_path)
    [result] = [r for r in await score_case(config, ev, turns_of(ev), judge=judge)
                if r.metric_name == "rubric_based_final_response_quality_v1"]
    assert result.status == EvalStatus.PASSED
    details = result.details
    assert isinstance(details, JudgeCaseDetails)
    assert (details.judge_provider, details.judge_model) == ("openai", "gpt-4.1-mini")
    record = json.loads(json.dumps(result.to_record()))
    assert record["details"]["judge_provider"] == "openai" and record["details"]["judge_model"] == "gpt-4.1-mini"
    await judge.aclose()


async def test_the_simulated_user_may_be_an_openai_model(openai_env: FakeOpenAI,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """No Gemini credentials at all: the scenario's user is played by the OpenAI-compatible model."""
    from tests.e2e.test_simulator import SIM_MARK, START, _run, _user_texts

    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    script = iter(["How long do refunds take?", "Thanks! </finished>"])
    openai_env.responder = lambda req: next(script) if SIM_MARK in req.prompt_text else None
    record = await _run({"criteria": {"tool_trajectory_avg_score": 1.0},
                         "user_simulator_config": {"model": MODEL, "max_allowed_invocations": 5}}).execute()
    [case] = record.results[0].case_results
    assert case.error is None
    assert _user_texts(case) == [START, "How long do refunds take?"]
    assert {r.model for r in openai_env.requests} == {"gpt-4.1-mini"} and openai_env.calls == 2


def test_without_the_openai_package_the_reason_says_how_to_install_it(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['openai'] = None  # as if the extra were not installed\n"
        "from tui_eval.judge import JudgeOptions, create_judge_service\n"
        "judge = create_judge_service(JudgeOptions(cache_dir=None, use_cache=False))\n"
        "print(judge.unavailable_for('openai:gpt-4.1-mini'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2],
                         env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "k"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'the openai judge needs the openai package: pip install "tui-eval[openai]"'
