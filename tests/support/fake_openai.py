"""A local OpenAI-compatible HTTP server for tests: scripted replies, injected faults, recorded requests.

It serves `POST {prefix}/chat/completions` as OpenAI, Ollama, vLLM or a LiteLLM proxy do. Point the real
`openai` client at it with `openai.AsyncOpenAI(api_key="dummy", base_url=server.base_url)` (base_url ends
in /v1), or set `OPENAI_BASE_URL=server.base_url` plus `OPENAI_API_KEY=dummy`.

Replies are scripted as `tests/support/fake_server.py` says (a responder, a queue, a default); this module
says what OpenAI's requests and replies look like.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import SplitResult

from tests.support.fake_gemini import judge_answer
from tests.support.fake_server import FakeServer, ReplyMakers, encode_body, serve_until_interrupted

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


class FakeOpenAI(FakeServer[RecordedRequest, Reply]):
    """The server. Use as a context manager or call start()/stop(); the pytest fixture does both."""

    name = "fake_openai"
    makers = ReplyMakers(text_reply, json_reply, raw_reply, error_reply)

    def __init__(self, *, latency: float = 0.0, prefix: str = "/v1") -> None:
        super().__init__(latency=latency)
        self.prefix = prefix.rstrip("/")

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as its base URL (with the /v1 prefix)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    # -- the OpenAI API --------------------------------------------------------------------------
    def record(self, handler: BaseHTTPRequestHandler, url: SplitResult, body: Any, raw: bytes) -> RecordedRequest:
        return RecordedRequest(handler.command, url.path, {k.lower(): v for k, v in handler.headers.items()},
                               body, raw, time.monotonic())

    def model_lookup(self, handler: BaseHTTPRequestHandler, url: SplitResult) -> Any:
        head = f"{self.prefix}/models/"
        return url.path[len(head):] if url.path.startswith(head) and len(url.path) > len(head) else None

    def model_info(self, model: str) -> Any:
        return {"id": model, "object": "model", "created": 1700000000, "owned_by": "fake"}

    def refuse(self, request: RecordedRequest, handler: BaseHTTPRequestHandler, url: SplitResult) -> str | None:
        if url.path != f"{self.prefix}/chat/completions" or handler.command != "POST":
            return f"fake_openai does not serve {handler.command} {url.path}"
        return None

    def wire(self, request: RecordedRequest, reply: Reply) -> tuple[bytes, str]:
        return encode_body(reply.body), "application/json"


    @property
    def calls(self) -> int:
        """Number of chat completion requests received."""
        return sum(1 for r in self.requests if r.path.endswith("/chat/completions"))


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
    serve_until_interrupted(server, args.port)


if __name__ == "__main__":
    main()
