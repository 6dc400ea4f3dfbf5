"""The judge service against the fake Gemini server through the real google-genai client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.fake_gemini import FakeGemini, json_reply
from tui_eval.judge import (
    JudgeReply,
    JudgeCallError,
    JudgeOptions,
    JudgeParseError,
    JudgeService,
    create_judge_service,
)


class Verdict(BaseModel):
    reasoning: str
    verdict: str


def make_service(server: FakeGemini, tmp_path: Path, **kw) -> JudgeService:
    opts: dict[str, Any] = dict(api_key="dummy", base_url=server.base_url, cache_dir=tmp_path / "cache",
                                backoff_base=0.001, backoff_max=0.01, timeout=5.0)
    opts.update(kw)
    return create_judge_service(JudgeOptions(**opts))


async def test_structured_reply_parsed_with_usage(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.reply_json({"reasoning": "same city", "verdict": "valid"},
                           usage={"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17})
    judge = make_service(fake_gemini, tmp_path)
    reply = await judge.ask(model="gemini-2.5-flash", contents="Is it valid?", schema=Verdict,
                            config={"temperature": 0.5})
    assert reply.parsed == Verdict(reasoning="same city", verdict="valid")
    assert not reply.cached and reply.attempts == 1 and reply.latency > 0
    assert reply.usage.prompt_tokens == 12 and reply.usage.total_tokens == 17
    req = fake_gemini.requests[0]
    assert req.model == "gemini-2.5-flash"
    assert req.generation_config["responseMimeType"] == "application/json"
    assert req.generation_config["temperature"] == 0.5
    assert set(req.response_schema["properties"]) == {"reasoning", "verdict"}
    assert judge.stats.calls == 1 and judge.stats.total_tokens == 17
    await judge.aclose()


async def test_cache_hit_makes_zero_calls(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.responder = lambda req: json_reply({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    first = [await judge.ask(model="m", contents="q", schema=Verdict, sample=i) for i in range(3)]
    assert fake_gemini.calls == 3 and not any(r.cached for r in first)
    # A new service (a re-run) over the same cache folder: no call at all.
    again = make_service(fake_gemini, tmp_path)
    second = [await again.ask(model="m", contents="q", schema=Verdict, sample=i) for i in range(3)]
    assert fake_gemini.calls == 3
    assert all(r.cached for r in second) and [r.parsed for r in second] == [r.parsed for r in first]
    assert again.stats.cache_hits == 3 and again.stats.calls == 0
    # Anything in the request that changes the answer is a miss: model, prompt, config, sample.
    await again.ask(model="m2", contents="q", schema=Verdict)
    await again.ask(model="m", contents="q2", schema=Verdict)
    await again.ask(model="m", contents="q", schema=Verdict, config={"temperature": 0})
    await again.ask(model="m", contents="q", schema=Verdict, sample=7)
    assert fake_gemini.calls == 7


async def test_cache_disabled_and_corrupt_entry_is_a_miss(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.responder = lambda req: json_reply({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    await judge.ask(model="m", contents="q", schema=Verdict)
    entries = list((tmp_path / "cache").glob("*/*.json"))
    assert len(entries) == 1
    assert not list((tmp_path / "cache").glob("*/.tmp-*")), "no temp files left behind"
    entries[0].write_text('{"text": "tor')  # a torn write from some other tool
    reply = await make_service(fake_gemini, tmp_path).ask(model="m", contents="q", schema=Verdict)
    assert not reply.cached and fake_gemini.calls == 2
    nocache = make_service(fake_gemini, tmp_path, use_cache=False)
    await nocache.ask(model="m", contents="q", schema=Verdict)
    assert fake_gemini.calls == 3


async def test_unparseable_reply_not_cached(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.reply_text("not json").reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    with pytest.raises(JudgeParseError, match="invalid JSON"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    reply = await judge.ask(model="m", contents="q", schema=Verdict)
    assert reply.parsed is not None and not reply.cached
    assert judge.stats.parse_failures == 1


async def test_concurrency_bound_respected(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.latency = 0.05
    fake_gemini.responder = lambda req: json_reply({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path, concurrency=3, use_cache=False)
    await asyncio.gather(*(judge.ask(model="m", contents=f"q{i}", schema=Verdict) for i in range(12)))
    assert fake_gemini.calls == 12
    assert fake_gemini.max_in_flight == 3


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_retries_then_success(fake_gemini: FakeGemini, tmp_path: Path, status: int) -> None:
    fake_gemini.fail(status, times=2).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    reply = await judge.ask(model="m", contents="q", schema=Verdict)
    assert reply.parsed is not None and reply.attempts == 3
    assert fake_gemini.calls == 3 and judge.stats.retries == 2 and judge.stats.failures == 0


async def test_gives_up_after_max_retries(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.fail(503, times=10)
    judge = make_service(fake_gemini, tmp_path, max_retries=4)
    with pytest.raises(JudgeCallError) as exc:
        await judge.ask(model="m", contents="q", schema=Verdict)
    assert exc.value.reason == "503 UNAVAILABLE after 4 retries"
    assert fake_gemini.calls == 5 and judge.stats.failures == 1


async def test_retry_after_honoured(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.fail(429, retry_after=0.3).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    await judge.ask(model="m", contents="q", schema=Verdict)
    first, second = fake_gemini.requests
    assert second.received_at - first.received_at >= 0.29


async def test_retry_after_capped(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.fail(429, retry_after=30).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path, retry_after_max=0.05)
    started = time.monotonic()
    await judge.ask(model="m", contents="q", schema=Verdict)
    assert time.monotonic() - started < 2


async def test_429_without_retry_after_uses_backoff(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.fail(429).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path, backoff_base=0.2, backoff_max=0.2)
    await judge.ask(model="m", contents="q", schema=Verdict)
    first, second = fake_gemini.requests
    # Equal jitter: between half and all of the backoff.
    assert second.received_at - first.received_at >= 0.09


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_permanent_error_not_retried(fake_gemini: FakeGemini, tmp_path: Path, status: int) -> None:
    fake_gemini.fail(status, message="request is wrong").reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    with pytest.raises(JudgeCallError, match=f"^{status} .*request is wrong"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    assert fake_gemini.calls == 1 and judge.stats.retries == 0


async def test_timeout_retried_then_fails(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.slow(1.0, times=3)
    judge = make_service(fake_gemini, tmp_path, timeout=0.1, max_retries=2)
    with pytest.raises(JudgeCallError) as exc:
        await judge.ask(model="m", contents="q", schema=Verdict)
    assert exc.value.reason == "timeout after 0.1s after 2 retries"
    # Three attempts left the client. (The server may never see the last one: on a loaded machine the
    # client can give up on it at 0.1 s before the request is even sent.)
    assert (judge.stats.calls, judge.stats.retries, judge.stats.failures) == (3, 2, 1)
    assert fake_gemini.calls >= 2


async def test_timeout_then_success(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.slow(1.0).reply_json({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path, timeout=0.1)
    reply = await judge.ask(model="m", contents="q", schema=Verdict)
    assert reply.attempts == 2


async def test_connection_refused_is_retried(tmp_path: Path) -> None:
    server = FakeGemini().start()
    url = server.base_url
    server.stop()  # nothing listens there any more
    judge = create_judge_service(JudgeOptions(api_key="dummy", base_url=url, cache_dir=tmp_path,
                                              backoff_base=0.001, max_retries=2))
    with pytest.raises(JudgeCallError, match="after 2 retries"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    assert judge.stats.retries == 2


async def test_invalid_json_body_and_schema_mismatch(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.reply_raw("{this is not json")
    fake_gemini.reply_json({"reasoning": "r"})
    fake_gemini.reply_json({"reasoning": "r", "verdict": ["x"]})
    judge = make_service(fake_gemini, tmp_path)
    with pytest.raises(JudgeParseError, match="invalid JSON"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    with pytest.raises(JudgeParseError, match="does not match the schema at verdict"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    with pytest.raises(JudgeParseError, match="schema"):
        await judge.ask(model="m", contents="q", schema=Verdict)
    assert fake_gemini.calls == 3, "parse failures are not retried"


async def test_empty_candidate_is_a_parse_failure(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    from tests.support.fake_gemini import Reply

    fake_gemini.enqueue(Reply(body={"candidates": [{"content": {"role": "model", "parts": []},
                                                    "finishReason": "SAFETY"}]}))
    judge = make_service(fake_gemini, tmp_path)
    with pytest.raises(JudgeParseError, match="SAFETY"):
        await judge.ask(model="m", contents="q", schema=Verdict)


async def test_free_text_and_system_instruction(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.reply_text("I want to book a flight.")
    judge = make_service(fake_gemini, tmp_path)
    contents = [{"role": "user", "parts": [{"text": "go"}]}]
    reply: JudgeReply[BaseModel] = await judge.ask(model="m", contents=contents, system_instruction="You are a user.")
    assert reply.parsed is None and reply.text == "I want to book a flight."
    body = fake_gemini.requests[0].body
    assert body["systemInstruction"]["parts"][0]["text"] == "You are a user."


async def test_markup_in_judge_text_kept_literally(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    nasty = "[bold red]boom[/] [/oops] \x1b[31mred\x1b[0m [link=x]y[/link]"
    fake_gemini.reply_json({"reasoning": nasty, "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path)
    reply = await judge.ask(model="m", contents="q", schema=Verdict)
    assert reply.parsed is not None and reply.parsed.reasoning == nasty
    cached = await make_service(fake_gemini, tmp_path).ask(model="m", contents="q", schema=Verdict)
    assert cached.cached and cached.parsed is not None and cached.parsed.reasoning == nasty


async def test_bad_judge_config_is_reported(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    judge = make_service(fake_gemini, tmp_path)
    with pytest.raises(JudgeCallError, match="bad judge request"):
        await judge.ask(model="m", contents="q", schema=Verdict, config={"temperature": "hot"})
    assert fake_gemini.calls == 0


def test_credentials_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not JudgeService(JudgeOptions()).available
    assert JudgeService(JudgeOptions()).unavailable_reason == "no judge credentials"
    assert JudgeService(JudgeOptions(api_key="k")).available
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert JudgeService(JudgeOptions()).available
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    vertex = JudgeService(JudgeOptions())
    assert not vertex.available and "GOOGLE_CLOUD_PROJECT" in (vertex.unavailable_reason or "")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    assert JudgeService(JudgeOptions()).available


async def test_base_url_from_environment(gemini_env: FakeGemini, tmp_path: Path) -> None:
    gemini_env.reply_json({"reasoning": "r", "verdict": "valid"})
    judge = create_judge_service(JudgeOptions(cache_dir=tmp_path))
    assert judge.available
    reply = await judge.ask(model="m", contents="q", schema=Verdict)
    assert reply.parsed is not None
    assert gemini_env.requests[0].headers["x-goog-api-key"] == "dummy"


async def test_no_credentials_ask_fails_cleanly(tmp_path: Path) -> None:
    judge = create_judge_service(JudgeOptions(cache_dir=tmp_path))
    with pytest.raises(JudgeCallError, match="no judge credentials"):
        await judge.ask(model="m", contents="q", schema=Verdict)


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TUI_EVAL_CACHE_DIR", str(tmp_path / "x"))
    assert JudgeOptions().cache_dir == tmp_path / "x"
    monkeypatch.delenv("TUI_EVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert JudgeOptions().cache_dir == tmp_path / "xdg" / "tui-eval" / "judge"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert JudgeOptions().cache_dir == Path.home() / ".cache" / "tui-eval" / "judge"


def test_judge_import_is_light() -> None:
    code = (
        "import sys, tui_eval.judge, tui_eval.metrics.llm\n"
        "bad = [m for m in ('google.genai', 'textual', 'rich') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_service_survives_a_new_event_loop(fake_gemini: FakeGemini, tmp_path: Path) -> None:
    fake_gemini.default = json_reply({"reasoning": "r", "verdict": "valid"})
    judge = make_service(fake_gemini, tmp_path, use_cache=False, concurrency=2)

    async def burst() -> None:
        await asyncio.gather(*(judge.ask(model="m", contents=f"q{i}", schema=Verdict) for i in range(4)))

    asyncio.run(burst())
    asyncio.run(burst())  # a second run on a fresh loop (the dashboard's worker threads do this)
    assert fake_gemini.calls == 8 and fake_gemini.max_in_flight <= 2
