"""The fake Gemini server speaks enough of the API for the real google-genai client."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

from tests.support.fake_gemini import FakeGemini, RecordedRequest, json_reply


def _client(server: FakeGemini, timeout_ms: int | None = None) -> genai.Client:
    """A client to keep while its calls run: with aiohttp installed, google-genai closes its aiohttp
    session when the `genai.Client` is collected, even with a call in flight."""
    return genai.Client(api_key="dummy", http_options=types.HttpOptions(base_url=server.base_url, timeout=timeout_ms))


async def test_text_reply_and_request_recorded(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_text("hello there")
    client = _client(fake_gemini)
    resp = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert resp.text == "hello there"
    assert resp.usage_metadata is not None and resp.usage_metadata.total_token_count
    [req] = fake_gemini.requests
    assert req.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert req.model == "gemini-2.5-flash" and req.rpc == "generateContent"
    assert req.headers["x-goog-api-key"] == "dummy"
    assert req.prompt_text == "hi"


async def test_json_reply_with_schema(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_json({"verdict": "yes"})
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_schema={"type": "OBJECT", "properties": {"verdict": {"type": "STRING"}}},
    )
    client = _client(fake_gemini)
    resp = await client.aio.models.generate_content(model="m", contents="q", config=config)
    assert resp.text == '{"verdict": "yes"}'
    req = fake_gemini.requests[0]
    assert req.generation_config["responseMimeType"] == "application/json"
    assert req.response_schema is not None


async def test_function_call_reply(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_function_call("get_weather", {"city": "Paris"}, id="c1")
    client = _client(fake_gemini)
    resp = await client.aio.models.generate_content(model="m", contents="weather?")
    [call] = resp.function_calls or []
    assert call.name == "get_weather" and call.args == {"city": "Paris"} and call.id == "c1"


async def test_errors_carry_code_and_retry_after(fake_gemini: FakeGemini) -> None:
    fake_gemini.fail(429, retry_after=0.25).fail(503).fail(400, message="bad")
    client = _client(fake_gemini)
    with pytest.raises(errors.ClientError) as e429:
        await client.aio.models.generate_content(model="m", contents="x")
    assert e429.value.code == 429
    assert e429.value.response.headers.get("retry-after") == "0.25"
    with pytest.raises(errors.ServerError) as e503:
        await client.aio.models.generate_content(model="m", contents="x")
    assert e503.value.code == 503
    with pytest.raises(errors.ClientError) as e400:
        await client.aio.models.generate_content(model="m", contents="x")
    assert e400.value.code == 400 and "bad" in str(e400.value)


async def test_stream_and_midstream_error(fake_gemini: FakeGemini) -> None:
    client = _client(fake_gemini)
    fake_gemini.reply_stream(["Hel", "lo"])
    texts = [c.text async for c in await client.aio.models.generate_content_stream(model="m", contents="x")]
    assert "".join(t or "" for t in texts) == "Hello"
    assert fake_gemini.requests[-1].stream
    fake_gemini.reply_stream(["partial"], error=(500, "boom"))
    got = []
    with pytest.raises(errors.APIError) as exc:
        async for c in await client.aio.models.generate_content_stream(model="m", contents="x"):
            got.append(c.text)
    assert got == ["partial"] and exc.value.code == 500


async def test_plain_reply_streams_as_one_event(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_function_call("f", {"a": 1})
    client = _client(fake_gemini)
    chunks = [c async for c in await client.aio.models.generate_content_stream(model="m", contents="x")]
    calls = chunks[0].function_calls
    assert calls is not None and calls[0].name == "f"


async def test_responder_and_invalid_json(fake_gemini: FakeGemini) -> None:
    def responder(req: RecordedRequest):
        return json_reply({"echo": req.prompt_text}) if "echo" in req.prompt_text else None

    fake_gemini.responder = responder
    fake_gemini.reply_raw("{not json")
    client = _client(fake_gemini)
    resp = await client.aio.models.generate_content(model="m", contents="echo me")
    assert resp.text == '{"echo": "echo me"}'
    with pytest.raises(Exception):
        await client.aio.models.generate_content(model="m", contents="other")


async def test_slow_reply_times_out(fake_gemini: FakeGemini) -> None:
    fake_gemini.slow(1.0)
    with pytest.raises(Exception):
        client = _client(fake_gemini, timeout_ms=100)
        await client.aio.models.generate_content(model="m", contents="x")


async def test_env_base_url_reaches_server(gemini_env: FakeGemini) -> None:
    gemini_env.reply_text("via env")
    client = genai.Client()
    resp = await client.aio.models.generate_content(model="m", contents="x")
    assert resp.text == "via env"


async def test_unscripted_request_is_500(fake_gemini: FakeGemini) -> None:
    with pytest.raises(errors.ServerError, match="no reply scripted"):
        client = _client(fake_gemini)
        await client.aio.models.generate_content(model="m", contents="x")
