"""Judge calls adapt their concurrency (issue 33): a run starts as wide as `--judge-concurrency`, sends
fewer calls at once when the endpoint pushes back (429 / RESOURCE_EXHAUSTED, Retry-After), holds every new
call until a Retry-After has passed, and widens again as calls are answered. Real google-genai and openai
clients against the local fake servers; the server says how many calls it had in flight."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable

import pytest
from pydantic import BaseModel

from tests.support.fake_gemini import FakeGemini, error_reply, json_reply
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai import error_reply as openai_error
from tests.support.fake_openai import json_reply as openai_json
from tui_eval.judge import JudgeOptions, JudgeReply, JudgeService, create_judge_service

WIDE = 4
VERDICT = {"reasoning": "r", "verdict": "valid"}


def service(base_url: str | None, **kw: Any) -> JudgeService:
    options: dict[str, Any] = dict(api_key="dummy", base_url=base_url, use_cache=False, concurrency=WIDE,
                                   backoff_base=0.001, backoff_max=0.01, timeout=20.0)
    options.update(kw)
    return create_judge_service(JudgeOptions(**options))


def all_at_once(n: int, answer: Callable[[], Any]) -> Callable[[Any], Any]:
    """A responder whose first `n` calls are answered only once all `n` are in flight together (a barrier;
    a 400 that says so when the client never sends that many at once); later calls are answered at once."""
    barrier = threading.Barrier(n, timeout=15)
    count = 0
    lock = threading.Lock()

    def respond(request: Any) -> Any:
        nonlocal count
        with lock:
            count += 1
            gated = count <= n
        if gated:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return error_reply(400, f"fewer than {n} calls were in flight together")
        return answer()

    return respond


async def ask_many(judge: JudgeService, model: str, n: int, tag: str) -> None:
    await asyncio.gather(*(judge.ask(model=model, contents=f"{tag} {i}") for i in range(n)))


async def test_a_judge_starts_with_every_slot_in_flight(fake_gemini: FakeGemini) -> None:
    fake_gemini.responder = all_at_once(WIDE, lambda: json_reply(VERDICT))
    judge = service(fake_gemini.base_url)
    await ask_many(judge, "gemini-2.5-flash", WIDE, "q")
    await judge.aclose()
    assert fake_gemini.max_in_flight == WIDE and judge.stats.failures == 0


async def test_resource_exhausted_halves_the_calls_in_flight_and_they_widen_again(fake_gemini: FakeGemini) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def first_is_throttled(request: Any) -> Any:
        with lock:
            seen.append(1)
            if len(seen) == 1:
                return error_reply(429)  # RESOURCE_EXHAUSTED, no Retry-After
        return json_reply(VERDICT)

    fake_gemini.responder = first_is_throttled
    judge = service(fake_gemini.base_url)
    await judge.ask(model="gemini-2.5-flash", contents="throttled once")
    assert judge.stats.retries == 1 and judge.concurrency_limit == WIDE // 2

    # Fewer calls at once now: of three calls sent together, two are in flight at a time.
    fake_gemini.reset()
    fake_gemini.responder = all_at_once(WIDE // 2, lambda: json_reply(VERDICT))
    await ask_many(judge, "gemini-2.5-flash", 3, "after")
    assert fake_gemini.max_in_flight == WIDE // 2 and judge.stats.failures == 0

    # Answered calls widen it again, up to where it started (and no further).
    fake_gemini.responder = lambda request: json_reply(VERDICT)
    for i in range(20):
        await judge.ask(model="gemini-2.5-flash", contents=f"recover {i}")
    assert judge.concurrency_limit == WIDE
    fake_gemini.reset()
    fake_gemini.responder = all_at_once(WIDE, lambda: json_reply(VERDICT))
    await ask_many(judge, "gemini-2.5-flash", WIDE, "wide again")
    await judge.aclose()
    assert fake_gemini.max_in_flight == WIDE and judge.stats.failures == 0


async def test_a_retry_after_holds_every_new_call_not_only_the_throttled_one(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(error_reply(429, retry_after=0.6))
    fake_gemini.default = json_reply(VERDICT)
    judge = service(fake_gemini.base_url)
    first: asyncio.Task[JudgeReply[BaseModel]] = asyncio.create_task(
        judge.ask(model="gemini-2.5-flash", contents="throttled"))
    while judge.concurrency_limit == WIDE:  # until the 429 has been read
        await asyncio.sleep(0.005)
    await judge.ask(model="gemini-2.5-flash", contents="a new call")
    await first
    await judge.aclose()
    throttled, *later = fake_gemini.requests
    assert len(later) == 2
    assert all(r.received_at - throttled.received_at >= 0.59 for r in later)


async def test_an_openai_compatible_judge_backs_off_the_same_way(fake_openai: FakeOpenAI,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    fake_openai.enqueue(openai_error(429, retry_after=0.3))
    fake_openai.default = openai_json(VERDICT)
    judge = service(None)
    model = f"openai:gpt-4.1-mini@{fake_openai.base_url}"
    reply: JudgeReply[BaseModel] = await judge.ask(model=model, contents="throttled once")
    assert reply.attempts == 2 and judge.concurrency_limit == WIDE // 2
    first, second = fake_openai.requests
    assert second.received_at - first.received_at >= 0.29
    await judge.aclose()


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_a_narrow_judge_is_never_wider_than_asked(fake_gemini: FakeGemini, concurrency: int) -> None:
    fake_gemini.responder = all_at_once(concurrency, lambda: json_reply(VERDICT))
    judge = service(fake_gemini.base_url, concurrency=concurrency)
    await ask_many(judge, "gemini-2.5-flash", 6, "narrow")
    await judge.aclose()
    assert fake_gemini.max_in_flight == concurrency and judge.stats.failures == 0


def test_the_cli_says_where_the_judge_starts() -> None:
    import argparse

    from tui_eval.cli import _add_run_args

    parser = argparse.ArgumentParser()
    _add_run_args(parser)
    text = " ".join(parser.format_help().split())
    assert f"the most judge calls in flight (default {JudgeOptions().concurrency})" in text
