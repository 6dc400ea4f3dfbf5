"""Endpoints that answer a gzip bomb (issue 23): the decoded size of every answer (judge, Vertex AI, CES)
is bounded, and an oversize answer is that call's error. Each client runs in a child with a memory limit
(a 1 GiB answer inflated whole fails it) against a local server; nothing leaves 127.0.0.1. The bound holds
with aiohttp installed (the dev extra brings it), where google-genai would send async calls through aiohttp
(issue 29). Judge endpoints that redirect to another origin get a clear error and never the prompt."""

from __future__ import annotations

import struct
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.bounded import python
from tests.support.fake_gemini import FakeGemini, Reply
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import HandlerServer
from tests.support.fake_vertex import FakeVertex, VertexReply

CHILD_MEMORY = 1536 * 1024**2


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """~1 MB of gzip that inflates to 1 GiB of zeros: one full-flush block repeated, then a valid trailer."""
    mib = 1024
    zeros = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    data = first + block * (mib - 1) + b"\x03\x00" + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)
    assert len(data) < 2 * 1024**2
    return data


def peak_mb(out: str) -> float:
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("PEAK_MB")))


JUDGE = """
import asyncio, resource
import aiohttp  # importable: google-genai, left to itself, would send the call through it
from tui_eval.judge.options import JudgeOptions
from tui_eval.judge.service import JudgeError, JudgeService

async def main():
    service = JudgeService(JudgeOptions(use_cache=False, max_retries=2, backoff_base=0.01))
    try:
        reply = await service.ask(model="gemini-2.5-flash", contents="is this fine?")
        print("REPLY", reply.text[:40])
    except JudgeError as exc:
        print("ERROR", exc.reason)
    await service.aclose()
    print("CALLS", service.stats.calls)

asyncio.run(main())
print("PEAK_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def test_a_judge_answering_a_gzip_bomb_fails_that_call_within_bounded_memory(bomb: bytes) -> None:
    with FakeGemini() as server:
        server.default = Reply(body=bomb, headers={"Content-Encoding": "gzip"})
        done = python(JUDGE, memory=CHILD_MEMORY, timeout=120,
                      env={"GOOGLE_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": server.base_url,
                           "GOOGLE_GENAI_USE_VERTEXAI": ""})
    assert not done.timed_out
    assert done.code == 0, done.err[-2000:]
    assert "ERROR" in done.out and "larger than 64 MB once decoded" in done.out, done.out
    assert "CALLS 1" in done.out  # not retried: the same answer would come again
    assert peak_mb(done.out) < 500, done.out


def test_a_judge_answer_within_the_bound_still_reads_gzip() -> None:
    answer = b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "fine"}]}}]}'
    gz = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with FakeGemini() as server:
        server.default = Reply(body=gz.compress(answer) + gz.flush(), headers={"Content-Encoding": "gzip"})
        done = python(JUDGE, memory=CHILD_MEMORY, timeout=60,
                      env={"GOOGLE_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": server.base_url,
                           "GOOGLE_GENAI_USE_VERTEXAI": ""})
    assert done.code == 0, done.err[-2000:]
    assert "REPLY fine" in done.out


OPENAI_JUDGE = JUDGE.replace('model="gemini-2.5-flash"', 'model="openai:gpt-4.1-mini"')


def test_an_openai_compatible_judge_answering_a_gzip_bomb_fails_that_call(bomb: bytes) -> None:
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.fake_openai import Reply as OpenAIReply

    with FakeOpenAI() as server:
        server.default = OpenAIReply(body=bomb, headers={"Content-Encoding": "gzip"})
        done = python(OPENAI_JUDGE, memory=CHILD_MEMORY, timeout=120,
                      env={"OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": server.base_url})
    assert not done.timed_out
    assert done.code == 0, done.err[-2000:]
    assert "ERROR" in done.out and "larger than 64 MB once decoded" in done.out, done.out
    assert "CALLS 1" in done.out
    assert peak_mb(done.out) < 500, done.out


VERTEX = """
import asyncio, resource
from tui_eval.judge.vertex import VertexError, vertex_client

async def main():
    client = vertex_client()
    try:
        await client.evaluate_instances({"instances": []})
        print("REPLY")
    except VertexError as exc:
        print("ERROR", exc.reason)
    await client.aclose()

asyncio.run(main())
print("PEAK_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def test_vertex_answering_a_gzip_bomb_fails_that_call_within_bounded_memory(bomb: bytes, tmp_path: Path) -> None:
    server = FakeVertex().start()
    try:
        server.default = VertexReply(raw=bomb, headers={"Content-Encoding": "gzip"})
        done = python(VERTEX, memory=CHILD_MEMORY, timeout=120,
                      env={"GOOGLE_CLOUD_PROJECT": "test-project", "GOOGLE_CLOUD_LOCATION": "us-central1",
                           "TUI_EVAL_VERTEX_EVAL_URL": server.base_url,
                           "GOOGLE_APPLICATION_CREDENTIALS": str(server.credentials_file(tmp_path))})
    finally:
        server.stop()
    assert not done.timed_out
    assert done.code == 0, done.err[-2000:]
    assert "ERROR Vertex AI: the answer from" in done.out and "larger than 64 MB" in done.out, done.out
    assert peak_mb(done.out) < 500, done.out


@pytest.fixture
def bomb_server(bomb: bytes) -> Iterator[str]:
    """Answers every request with the bomb as JSON: what a hostile or broken CES endpoint could do."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

        def _bomb(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(bomb)))
            self.end_headers()
            self.wfile.write(bomb)

        do_POST = do_GET = _bomb  # noqa: N815

    with HandlerServer(Handler) as server:
        yield f"http://127.0.0.1:{server.port}/mcp"


CES = """
import asyncio, resource, sys
from tui_eval.ces.client import CesError, with_client

async def main():
    async def work(client):
        return await client.list_evaluations("projects/p/locations/l/apps/a")
    try:
        await with_client(sys.argv[1], work, token="dummy", timeout=20)
        print("REPLY")
    except CesError as exc:
        print("ERROR", exc)

asyncio.run(main())
print("PEAK_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def test_a_ces_endpoint_answering_a_gzip_bomb_is_that_calls_error(bomb_server: str) -> None:
    done = python(CES, bomb_server, memory=CHILD_MEMORY, timeout=120)
    assert not done.timed_out
    assert done.code == 0, done.err[-2000:]
    assert "ERROR" in done.out and "larger than 64 MB once decoded" in done.out, done.out
    assert peak_mb(done.out) < 500, done.out


def _encode(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        c = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS)
    elif encoding == "raw-deflate":
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    else:
        return data
    return c.compress(data) + c.flush()


@pytest.mark.parametrize("encoding", ["identity", "gzip", "deflate", "raw-deflate", "br"])
@pytest.mark.parametrize("size", [1000, 5000])
async def test_every_encoding_is_read_within_the_bound(encoding: str, size: int) -> None:
    """httpx with the bound (limit 4,000 bytes here) against a local server: each encoding the bound
    inflates itself is read when small and refused when large; one it cannot bound is refused."""
    import httpx

    from tui_eval.judge.answer_size import AnswerTooLarge, with_answer_bound

    text = (b"0123456789" * size)[:size]
    body = _encode(encoding, text)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Encoding", "deflate" if encoding == "raw-deflate" else encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with HandlerServer(Handler) as server:
        async with httpx.AsyncClient(event_hooks=with_answer_bound(limit=4000), timeout=10) as client:
            url = f"http://127.0.0.1:{server.port}/"
            if encoding == "br" or size > 4000:
                with pytest.raises(AnswerTooLarge, match="larger than|content encoding 'br'"):
                    await client.get(url)
            else:
                assert (await client.get(url)).content == text


# -- redirects (issue 29) ---------------------------------------------------------------------------------


async def test_a_gemini_judge_redirected_to_another_origin_sends_it_nothing(fake_gemini: FakeGemini) -> None:
    from tests.support.fake_gemini import json_reply
    from tui_eval.judge import JudgeCallError, JudgeOptions, create_judge_service

    with FakeGemini() as elsewhere:
        elsewhere.default = json_reply({"reasoning": "r", "verdict": "valid"})
        fake_gemini.default = Reply(status=307, headers={
            "Location": f"{elsewhere.base_url}/v1beta/models/gemini-2.5-flash:generateContent"})
        judge = create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url, use_cache=False,
                                                  backoff_base=0.001))
        with pytest.raises(JudgeCallError) as exc:
            await judge.ask(model="gemini-2.5-flash", contents="the whole judge prompt")
        await judge.aclose()
        assert elsewhere.calls == 0
        other = elsewhere.port
    assert exc.value.reason == (f"the endpoint http://127.0.0.1:{fake_gemini.port} answered 307 redirecting to "
                                f"http://127.0.0.1:{other}: LLM calls follow no redirect to another "
                                "origin (fix the endpoint URL)")
    assert fake_gemini.calls == 1 and judge.stats.retries == 0 and judge.stats.failures == 1


async def test_a_gemini_judge_follows_a_redirect_within_its_endpoint(fake_gemini: FakeGemini) -> None:
    from pydantic import BaseModel

    from tests.support.fake_gemini import text_reply
    from tui_eval.judge import JudgeOptions, JudgeReply, create_judge_service

    def respond(request: object) -> Reply:
        if getattr(request, "model") == "gemini-2.5-flash":
            return Reply(status=307, headers={"Location": "/v1beta/models/gemini-2.5-pro:generateContent"})
        return text_reply("answered after the redirect")

    fake_gemini.responder = respond
    judge = create_judge_service(JudgeOptions(api_key="dummy", base_url=fake_gemini.base_url, use_cache=False))
    reply: JudgeReply[BaseModel] = await judge.ask(model="gemini-2.5-flash", contents="q")
    await judge.aclose()
    assert reply.text == "answered after the redirect"
    assert [r.model for r in fake_gemini.requests] == ["gemini-2.5-flash", "gemini-2.5-pro"]


@pytest.mark.parametrize("status", [302, 307, 308])
async def test_an_openai_compatible_judge_redirected_to_another_origin_sends_it_nothing(
        fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    from tests.support.fake_openai import Reply as OpenAIReply
    from tests.support.fake_openai import json_reply
    from tui_eval.judge import JudgeCallError, JudgeOptions, create_judge_service

    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    with FakeOpenAI() as elsewhere:
        elsewhere.default = json_reply({"reasoning": "r", "verdict": "valid"})
        fake_openai.default = OpenAIReply(status=status,
                                          headers={"Location": f"{elsewhere.base_url}/chat/completions"})
        judge = create_judge_service(JudgeOptions(use_cache=False, backoff_base=0.001))
        with pytest.raises(JudgeCallError) as exc:
            await judge.ask(model=f"openai:gpt-4.1-mini@{fake_openai.base_url}", contents="the whole judge prompt")
        await judge.aclose()
        assert elsewhere.calls == 0
        other = elsewhere.port
    assert exc.value.reason == (f"the endpoint http://127.0.0.1:{fake_openai.port} answered {status} redirecting "
                                f"to http://127.0.0.1:{other}: LLM calls follow no redirect to another "
                                "origin (fix the endpoint URL)")
    assert fake_openai.calls == 1 and judge.stats.retries == 0


async def test_vertex_redirected_to_another_origin_sends_it_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tui_eval.judge.vertex import VertexError, VertexEvalClient, VertexSettings

    server = FakeVertex().start()
    elsewhere = FakeVertex().start()
    try:
        server.default = VertexReply(status=307, headers={"Location": f"{elsewhere.base_url}/v1beta1/x"})
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(server.credentials_file(tmp_path)))
        client = VertexEvalClient(VertexSettings("p", "us-central1", server.base_url))
        with pytest.raises(VertexError) as exc:
            await client.evaluate_instances({"instances": []})
        await client.aclose()
        assert len(elsewhere.requests) == 0
    finally:
        server.stop()
        elsewhere.stop()
    assert "LLM calls follow no redirect to another origin" in exc.value.reason
    assert len(server.requests) == 1
