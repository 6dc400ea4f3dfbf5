"""A local fake of the Vertex AI evaluation service (`:evaluateInstances`) and of Google's OAuth token endpoint.

Point tui-eval at it with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION, TUI_EVAL_VERTEX_EVAL_URL=server.base_url
and GOOGLE_APPLICATION_CREDENTIALS=server.credentials_file(tmp_path) (a service-account key whose token_uri
is this server, so google-auth's real refresh runs against it). Replies come, per request, from
`server.responder(request)` when it returns something, else from the queue (`reply`), else
`server.default`, else a 500 saying nothing was scripted. Standard library (plus cryptography, which
google-auth already needs, to make the key) only.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable

from tests.support.fake_server import LocalServer


@dataclass
class VertexRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class VertexReply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is (e.g. a NaN score, which strict JSON cannot write)


def score_reply(score: float | None, explanation: str | None = None,
                rubric_verdicts: list[dict[str, Any]] | None = None) -> VertexReply:
    """A metricResults answer, camelCase as the service writes it."""
    result: dict[str, Any] = {}
    if score is not None and math.isnan(score):
        text = '{"metricResults": [{"score": NaN' + (f', "explanation": {json.dumps(explanation)}' if explanation
                                                        else "") + "}]}"
        return VertexReply(raw=text.encode())
    if score is not None:
        result["score"] = score
    if explanation is not None:
        result["explanation"] = explanation
    if rubric_verdicts is not None:
        result["rubricVerdicts"] = rubric_verdicts
    return VertexReply(body={"metricResults": [result]})


def rubric_verdict(description: str, verdict: bool, reasoning: str, rubric_id: str = "r") -> dict[str, Any]:
    out: dict[str, Any] = {"evaluatedRubric": {"rubricId": rubric_id, "content": {"property": {"description": description}}},
                           "reasoning": reasoning}
    if verdict:
        out["verdict"] = True  # the service omits verdict when the rubric is not met
    return out


def metric_error_reply(code: int, message: str) -> VertexReply:
    return VertexReply(body={"metricResults": [{"error": {"code": code, "message": message}}]})


def coherence_reply(score: float, explanation: str = "coherent") -> VertexReply:
    return VertexReply(body={"coherenceResult": {"score": score, "explanation": explanation, "confidence": 1.0}})


def error_reply(status: int, retry_after: float | None = 0.0) -> VertexReply:
    names = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 400: "INVALID_ARGUMENT",
             403: "PERMISSION_DENIED"}
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return VertexReply(status=status, body={"error": {"code": status, "message": "injected",
                                                      "status": names.get(status, "UNKNOWN")}}, headers=headers)


@functools.lru_cache(maxsize=1)
def _private_key_pem() -> str:
    """One RSA key per test session (making one costs a tenth of a second)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


class FakeVertex(LocalServer):
    """The server; `requests` holds every evaluateInstances request, `token_requests` counts refreshes."""

    name = "fake_vertex"

    def __init__(self) -> None:
        self.requests: list[VertexRequest] = []
        self.token_requests = 0
        self.queue: deque[VertexReply] = deque()
        self.responder: Callable[[VertexRequest], VertexReply | None] | None = None
        self.default: VertexReply | None = None
        self._lock = threading.Lock()
        super().__init__()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: VertexReply) -> None:
        self.queue.extend(replies)

    def credentials_file(self, folder: Path) -> Path:
        """A service-account key file whose token_uri is this server (google-auth refreshes here)."""
        pem = _private_key_pem()
        path = folder / "adc.json"
        path.write_text(json.dumps({
            "type": "service_account", "project_id": "test-project", "private_key_id": "k1",
            "private_key": pem, "client_email": "evals@test-project.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": f"{self.base_url}/token",
        }))
        return path

    def _answer(self, request: VertexRequest) -> VertexReply:
        with self._lock:
            self.requests.append(request)
            if self.responder is not None:
                chosen = self.responder(request)
                if chosen is not None:
                    return chosen
            if self.queue:
                return self.queue.popleft()
            if self.default is not None:
                return self.default
        return VertexReply(status=500, body={"error": {"code": 500, "message": "no reply scripted",
                                                       "status": "INTERNAL"}})

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

            def _send(self, reply: VertexReply) -> None:
                data = reply.raw if reply.raw is not None else json.dumps(reply.body or {}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path == "/token":
                    with fake._lock:
                        fake.token_requests += 1
                        n = fake.token_requests
                    self._send(VertexReply(body={"access_token": f"token-{n}", "expires_in": 3600,
                                                 "token_type": "Bearer"}))
                    return
                if not self.path.endswith(":evaluateInstances"):
                    self._send(VertexReply(status=404, body={"error": {"code": 404, "message": self.path}}))
                    return
                body = json.loads(raw) if raw else None
                self._send(fake._answer(VertexRequest(path=self.path, headers=dict(self.headers), body=body)))

        return Handler
