"""A local OpenAI-compatible HTTP server for tests: scripted replies, injected faults, recorded requests.

It serves `POST {prefix}/chat/completions` as OpenAI, Ollama, vLLM or a LiteLLM proxy do. Point the real
`openai` client at it with `openai.AsyncOpenAI(api_key="dummy", base_url=server.base_url)` (base_url ends
in /v1), or set `OPENAI_BASE_URL=server.base_url` plus `OPENAI_API_KEY=dummy`.

Replies are taken, per request, from `server.responder(request)` when it returns something, else from
the queue filled by `reply_*` / `fail`, else from `server.default` (when set), else a 500 that says no
reply was scripted. Standard library only, so it adds no dependency.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

from tests.support.fake_gemini import judge_answer

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    408: "timeout",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}


@dataclass
class RecordedRequest:
    """One request the server received, parsed for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    received_at: float = 0.0

    @property
    def _body(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def model(self) -> str | None:
        model = self._body.get("model")
        return model if isinstance(model, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self._body.get("messages") or [])

    @property
    def prompt_text(self) -> str:
        """Every message's text (system first, as sent), joined with newlines."""
        texts: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        return "\n".join(texts)

    @property
    def response_format(self) -> dict[str, Any]:
        fmt = self._body.get("response_format")
        return fmt if isinstance(fmt, dict) else {}

    @property
    def response_schema(self) -> Any:
        """The JSON schema of a `json_schema` response format, or None."""
        spec = self.response_format.get("json_schema")
        return spec.get("schema") if isinstance(spec, dict) else None


@dataclass
class Reply:
    """What the server answers to one request. `body` is sent as JSON when it is a dict/list and as raw
    bytes otherwise (to inject invalid JSON)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion_body(content: str | None, *, model: str = "fake-openai", finish_reason: str = "stop",
                    usage: dict[str, int] | None = None, refusal: str | None = None) -> dict[str, Any]:
    """An OpenAI chat.completion whose one choice says `content`."""
    out_tokens = max(len((content or "").split()), 1)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "finish_reason": finish_reason,
        }],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": out_tokens, "total_tokens": 10 + out_tokens},
    }


def text_reply(text: str, *, delay: float = 0.0, **kw: Any) -> Reply:
    return Reply(body=completion_body(text, **kw), delay=delay)


def json_reply(obj: Any, **kw: Any) -> Reply:
    """A 200 whose message content is `obj` as JSON (what a structured-output request gets)."""
    return text_reply(json.dumps(obj), **kw)


def error_reply(status: int, message: str | None = None, *, retry_after: float | None = None,
                delay: float = 0.0) -> Reply:
    """An OpenAI-style error body; `retry_after` sets the Retry-After header."""
    error = {"message": message or f"fake_openai injected {status}", "type": _ERROR_TYPES.get(status, "error"),
             "param": None, "code": None}
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(status=status, body={"error": error}, headers=headers, delay=delay)


def raw_reply(body: str | bytes, status: int = 200, *, content_type: str = "application/json",
              delay: float = 0.0) -> Reply:
    """Bytes sent as they are (e.g. a 200 whose body is not JSON)."""
    return Reply(status=status, body=body if isinstance(body, bytes) else body.encode(),
                 headers={"Content-Type": content_type}, delay=delay)


Responder = Callable[[RecordedRequest], "Reply | str | None"]


class FakeOpenAI:
    """The server. Use as a context manager or call start()/stop(); the pytest fixture does both."""

    def __init__(self, *, latency: float = 0.0, prefix: str = "/v1") -> None:
        self.requests: list[RecordedRequest] = []
        self.replies: deque[Reply] = deque()
        self.responder: Responder | None = None
        # Answer when nothing else did; None means a 500 naming the unscripted request.
        self.default: Reply | None = None
        self.latency = latency
        self.prefix = prefix.rstrip("/")
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, port: int = 0) -> FakeOpenAI:
        """Listen on 127.0.0.1 (a free port unless `port` is given) in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as its base URL (with the /v1 prefix)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    # -- scripting -----------------------------------------------------------------------------
    def enqueue(self, reply: Reply, times: int = 1) -> FakeOpenAI:
        with self._lock:
            for _ in range(times):
                self.replies.append(reply)
        return self

    def reply_text(self, text: str, *, times: int = 1, **kw: Any) -> FakeOpenAI:
        return self.enqueue(text_reply(text, **kw), times)

    def reply_json(self, obj: Any, *, times: int = 1, **kw: Any) -> FakeOpenAI:
        return self.enqueue(json_reply(obj, **kw), times)

    def reply_raw(self, body: str | bytes, status: int = 200, *, times: int = 1, **kw: Any) -> FakeOpenAI:
        return self.enqueue(raw_reply(body, status, **kw), times)

    def fail(self, status: int, *, retry_after: float | None = None, message: str | None = None,
             times: int = 1) -> FakeOpenAI:
        return self.enqueue(error_reply(status, message, retry_after=retry_after), times)

    def slow(self, delay: float, reply: Reply | None = None, *, times: int = 1) -> FakeOpenAI:
        """A reply that arrives after `delay` seconds (past the client's timeout, typically)."""
        r = reply or text_reply("too late")
        return self.enqueue(Reply(r.status, r.body, dict(r.headers), delay), times)

    # -- inspection ----------------------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Number of chat completion requests received."""
        return sum(1 for r in self.requests if r.path.endswith("/chat/completions"))

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if self.responder is not None:
            answer = self.responder(request)
            if isinstance(answer, str):
                return text_reply(answer)
            if answer is not None:
                return answer
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.default is not None:
            return self.default
        return error_reply(500, f"fake_openai: no reply scripted for {request.path}")


def _make_handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            self._handle()

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def _handle(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            if url.path.startswith("/__fake__/"):
                self._control(url.path)
                return
            request = RecordedRequest(self.command, url.path, {k.lower(): v for k, v in self.headers.items()},
                                      body, raw, time.monotonic())
            with server._lock:
                server.requests.append(request)
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                if url.path != f"{server.prefix}/chat/completions" or self.command != "POST":
                    reply = error_reply(404, f"fake_openai does not serve {self.command} {url.path}")
                else:
                    reply = server._next_reply(request)
                delay = reply.delay + server.latency
                if delay > 0:
                    time.sleep(delay)
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _control(self, path: str) -> None:
            """Counters for a server running in another process (`python -m tests.support.fake_openai`)."""
            if path == "/__fake__/reset":
                with server._lock:
                    server.requests.clear()
                    server.max_in_flight = 0
            stats = {"calls": server.calls, "requests": len(server.requests),
                     "in_flight": server.in_flight, "max_in_flight": server.max_in_flight}
            self._send(Reply(body=stats))

        def _send(self, reply: Reply) -> None:
            if isinstance(reply.body, (dict, list)):
                payload = json.dumps(reply.body).encode()
            elif reply.body is None:
                payload = b""
            else:
                payload = reply.body if isinstance(reply.body, bytes) else str(reply.body).encode()
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json"} | reply.headers
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

    return Handler


def judge_responder(**answers: Any) -> Responder:
    """tui-eval's LLM judge on this server: the same answers as fake_gemini's `judge_responder` for the
    same prompt (see fake_gemini.judge_answer), read from the request's JSON schema."""

    def respond(request: RecordedRequest) -> Reply | None:
        answer = judge_answer(request.response_schema, request.prompt_text, **answers)
        return None if answer is None else json_reply(answer)

    return respond


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted: `python -m tests.support.fake_openai [--port N] [--latency S] [--judge]`.
    Prints the base URL (with /v1) on the first line; GET /__fake__/stats gives counters, /__fake__/reset
    clears them."""
    import argparse

    parser = argparse.ArgumentParser(description="A local OpenAI-compatible server for tests and benchmarks.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    parser.add_argument("--judge", action="store_true", help="answer tui-eval's judge schemas (all positive)")
    parser.add_argument("--text", default="OK", help="reply to any other request with this text")
    args = parser.parse_args(argv)
    server = FakeOpenAI(latency=args.latency)
    if args.judge:
        server.responder = judge_responder()
    server.default = text_reply(args.text)
    server.start(port=args.port)
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
