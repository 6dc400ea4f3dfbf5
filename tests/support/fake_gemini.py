"""A local Gemini-compatible HTTP server for tests: scripted replies, injected faults, recorded requests.

Point the real google-genai client at it with
`genai.Client(api_key="dummy", http_options=types.HttpOptions(base_url=server.base_url))`, or set
`GOOGLE_GEMINI_BASE_URL=server.base_url` (plus `GOOGLE_API_KEY=dummy`) so ADK agents reach it too.

Replies are scripted as `tests/support/fake_server.py` says (a responder, a queue, a default); this module
says what Gemini's requests and replies look like.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterable
from urllib.parse import SplitResult, parse_qs

from tests.support.fake_server import FakeServer, ReplyMakers, encode_body, serve_until_interrupted

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

# .../models/{model}:{method}; Vertex paths (projects/.../publishers/google/models/...) match too.
_PATH = re.compile(r"^/(?P<prefix>.*?)models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
_MODEL_PATH = re.compile(r"^/(?P<prefix>.*?)models/(?P<model>[^/:]+)$")


@dataclass
class RecordedRequest:
    """One request the server received, parsed for assertions."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    model: str | None = None
    # generateContent / streamGenerateContent / countTokens ...
    rpc: str | None = None
    received_at: float = 0.0

    @property
    def stream(self) -> bool:
        return self.rpc == "streamGenerateContent"

    @property
    def contents(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("contents") or [] if isinstance(self.body, dict) else []

    @property
    def prompt_text(self) -> str:
        """Every text part of every content (and the system instruction), joined with newlines."""
        texts: list[str] = []
        body = self.body if isinstance(self.body, dict) else {}
        system = body.get("systemInstruction") or body.get("system_instruction")
        for content in ([system] if isinstance(system, dict) else []) + self.contents:
            for part in content.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
        return "\n".join(texts)

    @property
    def generation_config(self) -> dict[str, Any]:
        body = self.body if isinstance(self.body, dict) else {}
        return body.get("generationConfig") or body.get("generation_config") or {}

    @property
    def response_schema(self) -> Any:
        cfg = self.generation_config
        return cfg.get("responseSchema") or cfg.get("responseJsonSchema") or cfg.get("response_schema")

    @property
    def tools(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("tools") or [] if isinstance(self.body, dict) else []

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        """Every functionResponse part sent back to the model, in order."""
        out = []
        for content in self.contents:
            for part in content.get("parts") or []:
                fr = part.get("functionResponse") or part.get("function_response")
                if fr:
                    out.append(fr)
        return out


@dataclass
class Reply:
    """What the server answers to one request.

    `body` is sent as JSON when it is a dict/list and as raw text otherwise (to inject invalid JSON).
    For streaming requests, `chunks` (JSON objects) are sent as SSE events; a chunk of the form
    {"error": {...}} after good chunks is a mid-stream error. Without `chunks` a 200 JSON body is sent
    as one SSE event.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: list[Any] | None = None


def _usage(prompt_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens,
    }


def _candidate_body(parts: list[dict[str, Any]], finish_reason: str, usage: dict[str, int] | None,
                    model: str = "fake-gemini") -> dict[str, Any]:
    out_tokens = sum(len(str(p.get("text", p)).split()) for p in parts)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": usage or _usage(10, max(out_tokens, 1)),
        "modelVersion": model,
    }


def parts_reply(parts: list[dict[str, Any]], *, finish_reason: str = "STOP", usage: dict[str, int] | None = None,
                delay: float = 0.0) -> Reply:
    """A 200 reply whose candidate has these (camelCase) parts."""
    return Reply(body=_candidate_body(parts, finish_reason, usage), delay=delay)


def text_reply(text: str, **kw: Any) -> Reply:
    return parts_reply([{"text": text}], **kw)


def json_reply(obj: Any, **kw: Any) -> Reply:
    """A 200 reply whose text is `obj` as JSON (what a structured-output request gets)."""
    return text_reply(json.dumps(obj), **kw)


def function_call_reply(name: str, args: dict[str, Any] | None = None, *, id: str | None = None,
                        text: str | None = None, **kw: Any) -> Reply:
    call: dict[str, Any] = {"name": name, "args": args or {}}
    if id is not None:
        call["id"] = id
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts.append({"functionCall": call})
    return parts_reply(parts, **kw)


def error_reply(status: int, message: str | None = None, *, retry_after: float | None = None,
                delay: float = 0.0) -> Reply:
    """A Google-style error body; `retry_after` sets the Retry-After header and a RetryInfo detail."""
    error: dict[str, Any] = {
        "code": status,
        "message": message or f"fake_gemini injected {status}",
        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}
        ]
    return Reply(status=status, body={"error": error}, headers=headers, delay=delay)


def raw_reply(body: str | bytes, status: int = 200, *, content_type: str = "application/json",
              delay: float = 0.0) -> Reply:
    """Bytes sent as they are (e.g. invalid JSON in a 200)."""
    return Reply(status=status, body=body, headers={"Content-Type": content_type}, delay=delay)


def stream_reply(texts: Iterable[str], *, error: tuple[int, str] | None = None, delay: float = 0.0) -> Reply:
    """A streaming reply: one SSE event per text, then optionally an error event mid-stream."""
    chunks: list[Any] = [_candidate_body([{"text": t}], "STOP", None) for t in texts]
    for c in chunks[:-1]:
        c["candidates"][0].pop("finishReason")
    if error is not None:
        code, message = error
        chunks.append({"error": {"code": code, "message": message, "status": _STATUS_NAMES.get(code, "UNKNOWN")}})
    return Reply(chunks=chunks, delay=delay)


Responder = Callable[[RecordedRequest], "Reply | str | None"]


class FakeGemini(FakeServer[RecordedRequest, Reply]):
    """The server. Use as a context manager or call start()/stop(); the pytest fixture does both."""

    name = "fake_gemini"
    makers = ReplyMakers(text_reply, json_reply, raw_reply, error_reply)

    def __init__(self, *, latency: float = 0.0, api_version: str = "v1beta") -> None:
        super().__init__(latency=latency)
        self.api_version = api_version

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the Gemini API --------------------------------------------------------------------------
    def record(self, handler: BaseHTTPRequestHandler, url: SplitResult, body: Any, raw: bytes) -> RecordedRequest:
        match = _PATH.match(url.path)
        return RecordedRequest(
            method=handler.command,
            path=url.path,
            query=parse_qs(url.query),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            raw_body=raw,
            model=match["model"] if match else None,
            rpc=match["method"] if match else None,
            received_at=time.monotonic(),
        )

    def model_lookup(self, handler: BaseHTTPRequestHandler, url: SplitResult) -> Any:
        match = _MODEL_PATH.match(url.path)
        return match["model"] if match else None

    def model_info(self, model: str) -> Any:
        return {"name": f"models/{model}", "displayName": model, "supportedGenerationMethods": ["generateContent"]}

    def refuse(self, request: RecordedRequest, handler: BaseHTTPRequestHandler, url: SplitResult) -> str | None:
        if request.rpc not in ("generateContent", "streamGenerateContent"):
            return f"fake_gemini does not serve {url.path}"
        return None

    def wire(self, request: RecordedRequest, reply: Reply) -> tuple[bytes, str]:
        if request.stream and "sse" in request.query.get("alt", []) and reply.status == 200:
            chunks = reply.chunks if reply.chunks is not None else [reply.body]
            return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks), "text/event-stream"
        return encode_body(reply.body), "application/json; charset=UTF-8"


    @property
    def calls(self) -> int:
        """Number of generate requests received."""
        return sum(1 for r in self.requests if r.rpc in ("generateContent", "streamGenerateContent"))

    # -- scripting what only Gemini has ---------------------------------------------------------
    def reply_function_call(self, name: str, args: dict[str, Any] | None = None, *, times: int = 1,
                            **kw: Any) -> FakeGemini:
        return self.enqueue(function_call_reply(name, args, **kw), times)

    def reply_stream(self, texts: Iterable[str], *, error: tuple[int, str] | None = None,
                     times: int = 1) -> FakeGemini:
        return self.enqueue(stream_reply(list(texts), error=error), times)


def _pick(choice: Any, about: str) -> Any:
    """A scripted answer: a fixed string, or a function of what is judged (a rubric id, a sentence, the prompt)."""
    return choice(about) if callable(choice) else choice


def judge_answer(
    schema: Any,
    text: str,
    *,
    verdict: Any = "valid",
    rubric_verdict: Any = "yes",
    sentence_label: Any = "supported",
    safety_verdict: str = "safe",
    similarity: Any = 4,
    user_turn_valid: Any = True,
    rationale: str = "fake judge rationale",
) -> dict[str, Any] | None:
    """What tui-eval's LLM judge answers to a prompt `text` asked with a response `schema` (Gemini's or
    a JSON schema: only property names and item types are read), or None when the schema is not one of
    the judge's. Rubric ids and sentences are taken from the prompt. Each verdict may be a function of
    the rubric id / sentence / prompt, so that scripted answers can differ per item."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties") or {}
    id_pattern = re.compile(r"\[id: ([^\]]+)\]")
    if "verdicts" in props:
        ids = id_pattern.findall(text.rsplit("<properties>", 1)[-1])
        return {"verdicts": [
            {"rubric_id": rid, "evidence": "fake evidence", "rationale": rationale,
             "verdict": _pick(rubric_verdict, rid)}
            for rid in ids]}
    if "sentences" in props:
        item = (props["sentences"].get("items") or {})
        if str(item.get("type", "")).upper() == "STRING":
            response = text.split("<response>", 1)[-1].rsplit("</response>", 1)[0].strip()
            parts = [s for s in re.split(r"(?<=[.!?])\s+", response) if s.strip()]
            return {"sentences": parts}
        block = text.rsplit("<sentences>", 1)[-1].split("</sentences>", 1)[0].strip()
        labelled = []
        for line in block.splitlines():
            num, _, sentence = line.partition(". ")
            if num.isdigit():
                labelled.append({"index": int(num), "sentence": sentence, "rationale": rationale,
                                 "label": _pick(sentence_label, sentence), "supporting_excerpt": "fake excerpt",
                                 "contradicting_excerpt": None})
        return {"sentences": labelled}
    if "violated_policies" in props:
        return {"rationale": rationale, "violated_policies": [], "verdict": safety_verdict}
    if "score" in props and "reasoning" in props:  # CES semantic similarity, 0..4
        return {"reasoning": rationale, "score": _pick(similarity, text)}
    if "is_valid" in props:  # the user simulator's quality, one criterion named
        valid = _pick(user_turn_valid, text.rsplit("# Generated User Response", 1)[-1])
        return {"criteria": [{"name": "CONVERSATION_PLAN_FOLLOWED", "reasoning": rationale, "passes": valid}],
                "is_valid": valid}
    if "reasoning" in props:
        return {"reasoning": rationale, "verdict": _pick(verdict, text)}
    return None


def judge_responder(**answers: Any) -> Responder:
    """A responder that plays tui-eval's LLM judge (see `judge_answer` for the keyword arguments): it
    reads the request's response schema and answers with a matching JSON object. Returns None for
    requests without a schema, so queued replies still serve agent traffic on the same server."""

    def respond(request: RecordedRequest) -> Reply | None:
        answer = judge_answer(request.response_schema, request.prompt_text, **answers)
        return None if answer is None else json_reply(answer)

    return respond


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted: `python -m tests.support.fake_gemini [--port N] [--latency S] [--judge]`.
    Prints the base URL on the first line; GET /__fake__/stats gives counters, /__fake__/reset clears."""
    import argparse

    parser = argparse.ArgumentParser(description="A local Gemini-compatible server for tests and benchmarks.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    parser.add_argument("--judge", action="store_true", help="answer tui-eval's judge schemas (all positive)")
    parser.add_argument("--text", default="OK", help="reply to any other request with this text")
    args = parser.parse_args(argv)
    server = FakeGemini(latency=args.latency)
    if args.judge:
        server.responder = judge_responder()
    server.default = text_reply(args.text)
    serve_until_interrupted(server, args.port)


if __name__ == "__main__":
    main()
