"""A small client of the Vertex AI Gen AI evaluation service (`:evaluateInstances`), over its REST API.

google-adk 2.13 scores its Vertex-backed metrics through `vertexai.Client().evals.evaluate`, which ends in
one `POST .../v1beta1/projects/{p}/locations/{l}:evaluateInstances` per metric per instance. The SDK
(google-cloud-aiplatform, a 9.4 MB wheel that unpacks to 93 MB and pulls pandas, google-cloud-storage,
bigquery...) is not a dependency: this module sends the same request with httpx (installed with
google-genai) and Application Default Credentials (`google.auth.default`). It retries what the SDK
retries (408/409/429/499/5xx), as every LLM client of tui-eval does (`pacing.RetryPolicy`: five attempts,
exponential backoff with jitter, or the server's Retry-After), with at most as many requests in flight as
the SDK's default QPS, fewer while the service pushes back (`pacing.AdaptiveLimit`).

Settings, all from the environment: GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (both required, as
ADK requires them), credentials from `gcloud auth application-default login` or
GOOGLE_APPLICATION_CREDENTIALS, and an endpoint override in TUI_EVAL_VERTEX_EVAL_URL or
GOOGLE_VERTEX_BASE_URL (as google-genai reads it) for proxies and tests.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from .pacing import AdaptiveLimit, RetryPolicy

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

NO_SETTINGS = ("no Vertex AI settings: set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION and run "
               "`gcloud auth application-default login`")
API_VERSION = "v1beta1"  # what the SDK's evals module calls
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
RETRYABLE_STATUS_CODES = frozenset({408, 409, 429, 499, 500, 502, 503, 504})
MAX_IN_FLIGHT = 10  # the SDK's default evaluation-service QPS


class VertexError(Exception):
    """The service could not score an instance: the HTTP status (0 for a transport error) and why."""

    def __init__(self, reason: str, status: int = 0, attempts: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True, slots=True)
class VertexSettings:
    """Where the evaluation service is: project, location and the endpoint's base URL."""

    project: str
    location: str
    base_url: str

    @property
    def url(self) -> str:
        return f"{self.base_url}/{API_VERSION}/projects/{self.project}/locations/{self.location}:evaluateInstances"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> VertexSettings | None:
        """The settings, or None when project or location is missing."""
        env = os.environ if env is None else env
        project = (env.get("GOOGLE_CLOUD_PROJECT") or "").strip()
        location = (env.get("GOOGLE_CLOUD_LOCATION") or "").strip()
        if not project or not location:
            return None
        override = env.get("TUI_EVAL_VERTEX_EVAL_URL") or env.get("GOOGLE_VERTEX_BASE_URL")
        if override:
            base = override.rstrip("/")
        elif location == "global":
            base = "https://aiplatform.googleapis.com"
        else:
            base = f"https://{location}-aiplatform.googleapis.com"
        return cls(project=project, location=location, base_url=base)


@dataclass(slots=True)
class Reply:
    """One `evaluateInstances` answer (parsed JSON), with how many attempts and seconds it took."""

    body: dict[str, Any]
    attempts: int = 1
    latency: float = 0.0


@dataclass
class VertexEvalClient:
    """Sends `evaluateInstances` requests; one per process per settings (see `vertex_client`)."""

    settings: VertexSettings
    timeout: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    _credentials: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # httpx.AsyncClient and the in-flight limit are tied to an event loop: one pair per live loop.
    _per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AdaptiveLimit]] = (
        field(default_factory=weakref.WeakKeyDictionary))

    def _access_token(self) -> str:
        """A valid ADC access token (blocking: run in a thread). Raises VertexError without credentials."""
        with self._lock:
            import google.auth
            import google.auth.exceptions
            import google.auth.transport.requests

            try:
                if self._credentials is None:
                    self._credentials, _project = google.auth.default(scopes=list(SCOPES))
                if not self._credentials.valid:  # refreshes ahead of expiry, as google-auth decides
                    self._credentials.refresh(google.auth.transport.requests.Request())
            except google.auth.exceptions.DefaultCredentialsError as exc:
                raise VertexError(f"no Vertex AI credentials: run `gcloud auth application-default login` "
                                  f"({exc})") from None
            except google.auth.exceptions.RefreshError as exc:
                raise VertexError(f"Vertex AI credentials could not be refreshed: {exc}") from None
            return str(self._credentials.token)

    def _loop_state(self) -> tuple[httpx.AsyncClient, AdaptiveLimit]:
        key = asyncio.get_running_loop()
        state = self._per_loop.get(key)
        if state is None or state[0].is_closed:
            from .transport import llm_http_client

            state = (llm_http_client(timeout=self.timeout, width=MAX_IN_FLIGHT), AdaptiveLimit(MAX_IN_FLIGHT))
            self._per_loop[key] = state
        return state

    async def evaluate_instances(self, request: dict[str, Any]) -> Reply:
        """POST one request; retry what the SDK retries. Raises VertexError when it cannot be scored."""
        import httpx

        from .transport import refused_or_too_large

        client, limit = self._loop_state()
        t0 = time.perf_counter()
        attempts = self.retry.max_retries + 1
        for attempt in range(1, attempts + 1):
            token = await asyncio.to_thread(self._access_token)
            epoch = await limit.acquire()
            try:
                resp = await client.post(self.settings.url, json=request,
                                         headers={"Authorization": f"Bearer {token}"})
            except httpx.HTTPError as exc:
                raise VertexError(f"Vertex AI evaluation service unreachable: {exc!r}", attempts=attempt) from None
            except Exception as exc:
                final = refused_or_too_large(exc)
                if final is None:
                    raise
                raise VertexError(f"Vertex AI: {final}", attempts=attempt) from None
            finally:
                limit.release()
            if resp.status_code == 200:
                limit.succeeded()
                try:
                    body = resp.json()
                except ValueError:
                    raise VertexError("Vertex AI returned a body that is not JSON", 200, attempt) from None
                return Reply(body=body if isinstance(body, dict) else {}, attempts=attempt,
                             latency=time.perf_counter() - t0)
            reason = _error_text(resp)
            if resp.status_code not in RETRYABLE_STATUS_CODES or attempt == attempts:
                retries = f" after {attempt - 1} retr{'y' if attempt == 2 else 'ies'}" if attempt > 1 else ""
                raise VertexError(f"Vertex AI: {resp.status_code} {reason}{retries}", resp.status_code, attempt)
            retry_after = _retry_after(resp)
            delay = self.retry.delay(attempt - 1, retry_after)
            if resp.status_code == 429 or retry_after is not None:
                limit.throttled(epoch, delay if retry_after is not None else None)
            logger.warning("Vertex AI %s (%s); retry %d/%d in %.1fs", resp.status_code, reason, attempt,
                           attempts - 1, delay)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Close this loop's connections."""
        state = self._per_loop.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state[0].aclose()


def _error_text(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.reason_phrase or "error"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("status") or "") + (f": {error['message']}" if error.get("message") else "")
    return resp.reason_phrase or "error"


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


_clients: dict[VertexSettings, VertexEvalClient] = {}


def vertex_client(env: Mapping[str, str] | None = None) -> VertexEvalClient | None:
    """The process's client for the current settings, or None without Vertex settings."""
    settings = VertexSettings.from_env(env)
    if settings is None:
        return None
    client = _clients.get(settings)
    if client is None:
        client = _clients[settings] = VertexEvalClient(settings)
    return client
