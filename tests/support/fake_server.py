"""What the fake model servers (fake_gemini, fake_openai) share: a threaded HTTP server on 127.0.0.1,
recorded requests, scripted replies, in-flight counters, injected latency, and the `/__fake__/stats` and
`/__fake__/reset` paths that report on a server running in another process.

Replies are taken, per request, from `server.responder(request)` when it returns something (a string is a
text reply), else from the queue filled by `reply_*` / `fail`, else from `server.default` (when set), else a
500 that says no reply was scripted. Each API's fake says how a request is recorded, which paths it serves,
what its replies look like and how a reply goes on the wire. Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Generic, Self, TypeVar
from urllib.parse import SplitResult, urlsplit

Req = TypeVar("Req")
Rep = TypeVar("Rep")


def encode_body(body: Any) -> bytes:
    """A reply body on the wire: JSON for a dict or list, nothing for None, else the bytes or text as they are
    (to inject invalid JSON)."""
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode()
    if body is None:
        return b""
    return body if isinstance(body, bytes) else str(body).encode()


@dataclass(frozen=True)
class ReplyMakers(Generic[Rep]):
    """An API's reply makers: `text(text, **kw)`, `json(obj, **kw)`, `raw(body, status, **kw)`,
    `error(status, message, *, retry_after)`."""

    text: Callable[..., Rep]
    json: Callable[..., Rep]
    raw: Callable[..., Rep]
    error: Callable[..., Rep]


class LocalServer:
    """A threaded HTTP server on 127.0.0.1. Use as a context manager or call start()/stop(); the pytest
    fixtures do both."""

    #: The thread's name and the word that starts the server's own error messages.
    name = "fake"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server."""
        raise NotImplementedError

    def start(self, port: int = 0) -> Self:
        """Listen on 127.0.0.1 (a free port unless `port` is given) in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self.handler())
        self._server.daemon_threads = True
        # A slow reply that the client gave up on must not hold up shutdown.
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=self.name.replace("_", "-"),
            daemon=True,
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])


class HandlerServer(LocalServer):
    """A LocalServer answering with a given request handler class."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__()
        self._handler = handler

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return self._handler


class FakeServer(LocalServer, Generic[Req, Rep]):
    """A fake model API: what it records and answers (see the module docstring)."""

    def __init__(self, *, latency: float = 0.0) -> None:
        super().__init__()
        self.requests: list[Req] = []
        self.replies: deque[Rep] = deque()
        self.responder: Callable[[Req], Rep | str | None] | None = None
        # Answer when nothing else did; None means a 500 naming the unscripted request.
        self.default: Rep | None = None
        # Added to every reply: simulates a real model's latency.
        self.latency = latency
        self.in_flight = 0
        self.max_in_flight = 0
        # When (time.monotonic, the same clock in every process of the machine) the first request since
        # the last reset arrived and the last answer left: a benchmark's judge phase, seen from the model.
        self.first_received: float | None = None
        self.last_answered: float | None = None
        # A model metadata lookup (`models.get`, a pre-flight probe): answered here, never recorded nor
        # counted as a call. None: the model exists; a reply (an error) is sent instead.
        self.model_probe: Rep | None = None
        self.probes: list[str] = []
        self._lock = threading.Lock()

    # -- what each API's fake says ---------------------------------------------------------------
    def record(self, handler: BaseHTTPRequestHandler, url: SplitResult, body: Any, raw: bytes) -> Req:
        """The request as the tests read it."""
        raise NotImplementedError

    def refuse(self, request: Req, handler: BaseHTTPRequestHandler, url: SplitResult) -> str | None:
        """Why this server does not serve the request (a 404 says so), or None when it does."""
        raise NotImplementedError

    def model_lookup(self, handler: BaseHTTPRequestHandler, url: SplitResult) -> Any:
        """The model a metadata lookup (GET of one model) names, or None when the request is not one."""
        return None

    def model_info(self, model: str) -> Any:
        """This API's answer to a metadata lookup of `model`."""
        raise NotImplementedError

    def wire(self, request: Req, reply: Rep) -> tuple[bytes, str]:
        """A reply's body and content type on the wire."""
        raise NotImplementedError

    #: How this API's replies are made.
    makers: ReplyMakers[Rep]

    @property
    def calls(self) -> int:
        """Number of model requests received."""
        raise NotImplementedError

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # -- scripting -----------------------------------------------------------------------------
    def enqueue(self, reply: Rep, times: int = 1) -> Self:
        with self._lock:
            for _ in range(times):
                self.replies.append(reply)
        return self

    def reply_text(self, text: str, *, times: int = 1, **kw: Any) -> Self:
        return self.enqueue(self.makers.text(text, **kw), times)

    def reply_json(self, obj: Any, *, times: int = 1, **kw: Any) -> Self:
        return self.enqueue(self.makers.json(obj, **kw), times)

    def reply_raw(self, body: str | bytes, status: int = 200, *, times: int = 1, **kw: Any) -> Self:
        return self.enqueue(self.makers.raw(body, status, **kw), times)

    def fail(self, status: int, *, retry_after: float | None = None, message: str | None = None,
             times: int = 1) -> Self:
        return self.enqueue(self.makers.error(status, message, retry_after=retry_after), times)

    def slow(self, delay: float, reply: Rep | None = None, *, times: int = 1) -> Self:
        """A reply that arrives after `delay` seconds (past the client's timeout, typically)."""
        r = reply if reply is not None else self.makers.text("too late")
        return self.enqueue(dataclasses.replace(r, delay=delay), times)  # type: ignore[type-var]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.replies.clear()
            self.max_in_flight = 0
            self.first_received = self.last_answered = None
        self.responder = None
        self.default = None

    # -- internals -----------------------------------------------------------------------------
    def _next_reply(self, request: Req) -> Rep:
        if self.responder is not None:
            answer = self.responder(request)
            if isinstance(answer, str):
                return self.makers.text(answer)
            if answer is not None:
                return answer
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        if self.default is not None:
            return self.default
        return self.makers.error(500, f"{self.name}: no reply scripted for {getattr(request, 'path', request)}")

    def _stats(self, path: str) -> dict[str, float | None]:
        if path == "/__fake__/reset":
            with self._lock:
                self.requests.clear()
                self.max_in_flight = 0
                self.first_received = self.last_answered = None
        return {"calls": self.calls, "requests": len(self.requests),
                "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
                "first_received": self.first_received, "last_answered": self.last_answered}


def _make_handler(server: FakeServer[Any, Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes; without this, Nagle plus delayed ACK adds
            # ~40 ms to every keep-alive request.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # keep test output clean

        def do_GET(self) -> None:  # noqa: N802
            self._handle()

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def _handle(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if url.path.startswith("/__fake__/"):
                self._send(200, json.dumps(server._stats(url.path)).encode(), "application/json", {})
                return
            model = server.model_lookup(self, url) if self.command == "GET" else None
            if model is not None:
                server.probes.append(model)
                probe = server.model_probe
                if probe is None:
                    self._send(200, json.dumps(server.model_info(model)).encode(), "application/json", {})
                else:
                    reply: Any = probe
                    self._send(reply.status, encode_body(reply.body), "application/json", dict(reply.headers))
                return
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = server.record(self, url, body, raw)
            with server._lock:
                server.requests.append(request)
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
                if server.first_received is None:
                    server.first_received = time.monotonic()
            answered = False
            try:
                refused = server.refuse(request, self, url)
                reply = server.makers.error(404, refused) if refused else server._next_reply(request)
                delay = reply.delay + server.latency
                if delay > 0:
                    time.sleep(delay)
                payload, content_type = server.wire(request, reply)
                # Out of flight before the answer leaves: a client that sends its next call the moment it
                # reads this answer never finds this one still counted.
                with server._lock:
                    server.in_flight -= 1
                    server.last_answered = time.monotonic()
                answered = True
                self._send(reply.status, payload, content_type, reply.headers)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to answer
            finally:
                if not answered:
                    with server._lock:
                        server.in_flight -= 1

        def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in ({"Content-Type": content_type} | headers).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

    return Handler


def serve_until_interrupted(server: FakeServer[Any, Any], port: int) -> None:
    """`python -m tests.support.fake_*`: print the base URL on the first line, serve until Ctrl-C."""
    server.start(port=port)
    print(getattr(server, "base_url"), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
