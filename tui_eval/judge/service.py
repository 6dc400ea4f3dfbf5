"""The judge service: every LLM call of a run goes through here (bounded, retried, timed out, cached)."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from ..schema.judge_model import JudgeProviderName, parse_judge_model
from ..schema.usage import TokenUsage
from .cache import JudgeCache, cache_key
from .client import JudgeStats
from .options import JudgeOptions
from .pacing import AdaptiveLimit

T = TypeVar("T", bound=BaseModel)
logger = logging.getLogger(__name__)

NO_CREDENTIALS = "no judge credentials"
# Status codes worth another try: the request was fine, the server was not (or asked us to wait).
_RETRYABLE_CODES = frozenset({408, 429})
# Exceptions from these packages are network trouble (connect, read, protocol), worth another try.
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "aiohttp", "h11", "h2", "anyio", "ssl"})


class JudgeError(Exception):
    """A judge sample that produced no usable answer. `reason` is what the user sees."""

    def __init__(self, reason: str, *, text: str | None = None, usage: TokenUsage | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.text = text
        self.usage = usage or TokenUsage()


class JudgeCallError(JudgeError):
    """The call itself failed (after retries, or permanently)."""


class JudgeParseError(JudgeError):
    """The judge answered, but not with JSON matching the schema."""


@dataclass(slots=True)
class JudgeReply(Generic[T]):
    """One judge sample: the parsed object (None for free text), the raw text and what it cost."""

    parsed: T | None
    text: str
    usage: TokenUsage
    latency: float
    cached: bool
    model: str
    sample: int
    # HTTP attempts this answer took (0 when it came from the cache).
    attempts: int = 0


@dataclass(slots=True)
class _Failure:
    description: str
    retryable: bool
    retry_after: float | None = None
    # The endpoint pushed back (429 / RESOURCE_EXHAUSTED, or a Retry-After): fewer calls in flight.
    throttled: bool = False


def _throttled(code: int | None, status: str, retry_after: float | None) -> bool:
    return code == 429 or status == "RESOURCE_EXHAUSTED" or retry_after is not None


@dataclass(slots=True)
class _Credentials:
    vertex: bool = False
    api_key: str | None = None
    project: str | None = None
    location: str | None = None
    base_url: str | None = None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _find_credentials(options: JudgeOptions) -> tuple[_Credentials | None, str | None]:
    """What the client will authenticate with, or why there is nothing (read from the environment now)."""
    env = os.environ
    if _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI")):
        project = env.get("GOOGLE_CLOUD_PROJECT")
        key = options.api_key or env.get("GOOGLE_API_KEY")
        if not project and not key:
            return None, f"{NO_CREDENTIALS} (GOOGLE_GENAI_USE_VERTEXAI is set but GOOGLE_CLOUD_PROJECT is not)"
        return _Credentials(
            vertex=True,
            api_key=None if project else key,
            project=project,
            location=env.get("GOOGLE_CLOUD_LOCATION") or ("global" if project else None),
            base_url=options.base_url or env.get("GOOGLE_VERTEX_BASE_URL") or None,
        ), None
    key = options.api_key or env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    if not key:
        return None, NO_CREDENTIALS
    return _Credentials(api_key=key, base_url=options.base_url or env.get("GOOGLE_GEMINI_BASE_URL") or None), None


def _jsonable(value: Any) -> Any:
    """Contents / configs as plain JSON for the cache key (genai objects are pydantic models)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


@functools.lru_cache(maxsize=64)
def _schema_json(schema: type[BaseModel]) -> str:
    """The schema as it goes into the cache key (pydantic's JSON schema generation is slow: memoised)."""
    return json.dumps(schema.model_json_schema(), sort_keys=True)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait: the Retry-After header, else a google.rpc.RetryInfo detail."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    raw = None
    if headers is not None:
        try:
            raw = headers.get("retry-after") or headers.get("Retry-After")
        except (AttributeError, TypeError) as err:  # a transport whose headers are not a mapping
            logger.debug("could not read Retry-After from %r: %s", type(headers).__name__, err)
            raw = None
    if raw:
        try:
            return max(0.0, float(raw))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(raw)
                return max(0.0, when.timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    details = getattr(exc, "details", None)
    if isinstance(details, dict):
        error = details.get("error", details)
        for item in (error.get("details") or []) if isinstance(error, dict) else []:
            delay = item.get("retryDelay") if isinstance(item, dict) else None
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    pass
    return None


def _classify(exc: BaseException) -> _Failure:
    from google.genai import errors

    from .transport import refused_or_too_large

    final = refused_or_too_large(exc)
    if final is not None:  # asking again would bring the same answer (or the same redirect)
        return _Failure(str(final), False)
    if isinstance(exc, errors.APIError):
        code = getattr(exc, "code", None)
        status = getattr(exc, "status", None) or ""
        message = (getattr(exc, "message", None) or "").strip()
        retryable = isinstance(code, int) and (code in _RETRYABLE_CODES or 500 <= code <= 599)
        text = f"{code} {status}".strip()
        if not retryable and message:
            text += f": {message[:300]}"
        wait = _retry_after(exc) if retryable else None
        return _Failure(text, retryable, wait, retryable and _throttled(code, status, wait))
    if isinstance(exc, (TimeoutError, ConnectionError, OSError)):
        return _Failure(f"{type(exc).__name__}: {exc}".rstrip(": "), True)
    if any(c.__module__.split(".")[0] in _TRANSPORT_MODULES for c in type(exc).__mro__):
        return _Failure(f"{type(exc).__name__}: {exc}".rstrip(": "), True)
    return _Failure(f"{type(exc).__name__}: {exc}".rstrip(": "), False)


def _usage_of(response: Any) -> TokenUsage:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return TokenUsage()
    prompt = getattr(meta, "prompt_token_count", None) or 0
    output = (getattr(meta, "candidates_token_count", None) or 0) + (getattr(meta, "thoughts_token_count", None) or 0)
    total = getattr(meta, "total_token_count", None) or (prompt + output)
    return TokenUsage(prompt_tokens=int(prompt), output_tokens=int(output), total_tokens=int(total))


def _text_of(response: Any) -> str | None:
    """The reply's text parts (thoughts excluded), read from the public fields only."""
    texts: list[str] = []
    for cand in (getattr(response, "candidates", None) or [])[:1]:
        content = getattr(cand, "content", None)
        for part in getattr(content, "parts", None) or []:
            if getattr(part, "text", None) and not getattr(part, "thought", None):
                texts.append(part.text)
    return "".join(texts) if texts else None


def _empty_reason(response: Any) -> str:
    feedback = getattr(response, "prompt_feedback", None)
    block = getattr(feedback, "block_reason", None)
    if block:
        return f"judge returned no text (prompt blocked: {getattr(block, 'value', block)})"
    cands = getattr(response, "candidates", None) or []
    finish = getattr(cands[0], "finish_reason", None) if cands else None
    if finish:
        return f"judge returned no text (finish reason {getattr(finish, 'value', finish)})"
    return "judge returned no text"


def parse_reply(text: str, schema: type[T]) -> T:
    """Validate a JSON reply against the schema; JudgeParseError names what was wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise JudgeParseError(f"invalid JSON from judge: {exc}", text=text) from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        message = errors[0]["msg"] if errors else str(exc)
        raise JudgeParseError(
            f"judge reply does not match the schema at {where or '$'}: {message}", text=text
        ) from None


@dataclass(slots=True)
class ProviderAnswer:
    """What one successful call gave: the reply's text (None when there was none, with the reason)."""

    text: str | None
    usage: TokenUsage
    empty_reason: str = "judge returned no text"


class JudgeProvider(Protocol):
    """One LLM API behind the judge service. The service owns concurrency, retries, timeouts and the
    cache; a provider only builds requests, sends one, and says what an exception means."""

    name: JudgeProviderName

    @property
    def unavailable_reason(self) -> str | None:
        """Why calls cannot be made (no credentials, SDK missing), or None."""
        ...

    def endpoint(self) -> dict[str, str | None]:
        """Where calls go, for the cache key: two endpoints may answer the same request differently."""
        ...

    def prepare(self, schema: type[BaseModel] | None, config: dict[str, Any] | None,
                system_instruction: str | None) -> Any:
        """The request settings for these arguments; raises on a bad judge_model_config."""
        ...

    async def generate(self, model: str, contents: Any, prepared: Any) -> ProviderAnswer: ...

    def failure(self, exc: BaseException) -> _Failure | JudgeParseError:
        """A failed call: retryable or not, or a parse error (a 200 whose body is not JSON)."""
        ...

    def reset(self) -> None:
        """Forget the client (its connections belong to an event loop that is gone)."""
        ...

    async def aclose(self) -> None: ...


class LazyClient:
    """A provider's SDK client, made on its first call: `reset` forgets it, `aclose` closes it."""

    _client: Any = None

    def reset(self) -> None:
        self._client = None

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            await self._close(client)
        except Exception as exc:  # closing is best effort: the run's results are already in
            logger.debug("closing the %s judge client failed: %s: %s", type(self).__name__, type(exc).__name__, exc)

    async def _close(self, client: Any) -> None:
        raise NotImplementedError


class GeminiProvider(LazyClient):
    """google-genai: the Gemini API or Vertex AI, as ADK's judges."""

    name: JudgeProviderName = "gemini"

    def __init__(self, options: JudgeOptions) -> None:
        self._credentials, self._reason = _find_credentials(options)
        self._width = options.concurrency
        self._making = threading.Lock()  # the client is made once, here or in the warm-up thread
        self._client: Any = None
        self._http: Any = None  # the httpx client handed to google-genai (which never closes it)
        self._configs: dict[tuple[Any, str, str | None], Any] = {}

    @property
    def unavailable_reason(self) -> str | None:
        return None if self._credentials is not None else (self._reason or NO_CREDENTIALS)

    def endpoint(self) -> dict[str, str | None]:
        """Where calls go: the base URL, and on Vertex the project and location."""
        creds = self._credentials
        if creds is None:
            return {}
        if creds.vertex:
            return {"vertex": "1", "base_url": creds.base_url, "project": creds.project, "location": creds.location}
        return {"base_url": creds.base_url}

    def warm(self) -> None:
        """Import google-genai and make the client in a background thread (with credentials only): the
        first judge call then finds them made, instead of spending its first second on them."""
        if self._credentials is None or self._client is not None:
            return

        def make() -> None:
            try:
                self._get_client()
            except Exception as exc:  # the first call makes it again and reports the error as its own
                logger.debug("warming the judge client failed: %s: %s", type(exc).__name__, exc)

        threading.Thread(target=make, name="tui-eval-judge-warm", daemon=True).start()

    def _get_client(self) -> Any:
        if self._client is None:
            with self._making:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        from google import genai
        from google.genai import types

        creds = self._credentials
        if creds is None:
            raise JudgeCallError(self._reason or NO_CREDENTIALS)
        from .transport import llm_http_client

        # Our own httpx client, whatever transport google-genai would pick (aiohttp when importable):
        # every answer bounded in decoded size, no redirect to another origin. No SDK retries (the
        # service retries); no SDK timeout (the service times each attempt out).
        self._http = llm_http_client(timeout=None, width=self._width)
        http = types.HttpOptions(base_url=creds.base_url, httpx_async_client=self._http)
        if creds.vertex:
            return genai.Client(vertexai=True, project=creds.project, location=creds.location,
                                api_key=creds.api_key, http_options=http)
        return genai.Client(api_key=creds.api_key, http_options=http)

    def prepare(self, schema: type[BaseModel] | None, config: dict[str, Any] | None,
                system_instruction: str | None) -> Any:
        self._get_client()  # no credentials: the reason, before any config work
        # Every sample of every invocation shares a handful of configs; validating one is not free.
        memo_key = (schema, json.dumps(_jsonable(config or {}), sort_keys=True, default=str), system_instruction)
        built = self._configs.get(memo_key)
        if built is None:
            built = self._configs[memo_key] = self._new_config(schema, config, system_instruction)
        return built

    def _new_config(self, schema: type[BaseModel] | None, config: dict[str, Any] | None,
                    system_instruction: str | None) -> Any:
        from google.genai import types

        merged: dict[str, Any] = dict(config or {})
        if schema is not None:
            merged["response_mime_type"] = "application/json"
            merged["response_schema"] = self._wire_schema(schema)
        if system_instruction:
            merged["system_instruction"] = system_instruction
        # Judges send no tools; automatic function calling only adds a warning per request.
        merged["automatic_function_calling"] = {"disable": True}
        return types.GenerateContentConfig.model_validate(merged)

    def _wire_schema(self, schema: type[BaseModel]) -> Any:
        """The response schema as google-genai sends it, converted once: given the pydantic class, it
        generates the class's JSON schema again for every call (a third of a call's CPU)."""
        from google.genai import _transformers

        return _transformers.t_schema(self._get_client()._api_client, schema)

    async def generate(self, model: str, contents: Any, prepared: Any) -> ProviderAnswer:
        response = await self._get_client().aio.models.generate_content(model=model, contents=contents,
                                                                         config=prepared)
        text = _text_of(response)
        return ProviderAnswer(text, _usage_of(response), _empty_reason(response) if text is None else "")

    def failure(self, exc: BaseException) -> _Failure | JudgeParseError:
        invalid = _invalid_body_error(exc)
        if invalid is not None:
            return JudgeParseError(invalid)
        return _classify(exc)

    def reset(self) -> None:
        super().reset()
        self._http = None

    async def _close(self, client: Any) -> None:
        http, self._http = self._http, None
        await client.aio.aclose()
        if http is not None:
            await http.aclose()


class JudgeService:
    """One per run. `await ask(...)` for a sample; `available` is False without Gemini credentials,
    `unavailable_for(model)` says the same for any judge_model (an `openai:` one included)."""

    def __init__(self, options: JudgeOptions | None = None) -> None:
        self.options = options or JudgeOptions()
        self._gemini = GeminiProvider(self.options)
        # Other providers, one per (provider, endpoint), made when a judge_model first names them.
        self._providers: dict[tuple[str, str | None], JudgeProvider] = {}
        self.stats = JudgeStats()
        self._retry = self.options.retry_policy()
        self._limit = AdaptiveLimit(self.options.concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cache = (
            JudgeCache(self.options.cache_dir)
            if self.options.use_cache and self.options.cache_dir is not None
            else None
        )

    @property
    def available(self) -> bool:
        return self._gemini.unavailable_reason is None

    def warm(self) -> None:
        """Make the Gemini client (importing google-genai) in a background thread now, while the run
        loads its files and starts its agents: off the judge's critical path. Nothing without credentials."""
        self._gemini.warm()

    @property
    def unavailable_reason(self) -> str | None:
        return self._gemini.unavailable_reason

    def unavailable_for(self, model: str) -> str | None:
        """Why `model` (a judge_model value) cannot judge in this environment, or None when it can."""
        try:
            provider, _name = self._route(model)
        except ValueError as exc:
            return str(exc)
        return provider.unavailable_reason

    async def probe(self, model: str) -> str | None:
        """Before a run: whether `model`'s API accepts these credentials and knows the model, asked with a
        metadata call (`models.get`, never a generation). The reason when it rejects the credentials or has
        no such model; None when it answers, when there are no credentials (the run says so per metric), and
        when the call cannot tell (a network error, a 5xx: the run meets it, and its calls say why)."""
        try:
            provider, name = self._route(model)
        except ValueError as exc:
            return str(exc)
        if provider.unavailable_reason is not None:
            return None
        try:
            client = provider._get_client()  # type: ignore[attr-defined]
            if provider.name == "gemini":
                await client.aio.models.get(model=name)
            else:
                await client.models.retrieve(name)
        except Exception as exc:  # classified below: only a definite refusal stops the run
            status = getattr(exc, "code", None) or getattr(exc, "status_code", None)
            text = (getattr(exc, "message", None) or str(exc)).split("\n", 1)[0][:200]
            if status in (401, 403) or (status == 400 and "api key" in text.lower()):
                return f"the judge's API rejected the credentials ({status}: {text})"
            if status == 404:
                return f"the judge's API has no model {name!r} ({status}: {text})"
            logger.debug("probing judge model %s: %s: %s", model, type(exc).__name__, exc)
        return None

    def describe(self, model: str) -> tuple[str, str, str | None]:
        """(provider, model, endpoint) a judge_model value names, as the record keeps them."""
        try:
            ref = parse_judge_model(model)
        except ValueError:
            return "gemini", model, None
        return ref.provider, ref.model, ref.base_url

    @property
    def cache(self) -> JudgeCache | None:
        return self._cache

    def _endpoint(self) -> dict[str, str | None]:
        return self._gemini.endpoint()

    def _route(self, model: str) -> tuple[JudgeProvider, str]:
        """The provider that serves a judge_model value and the model name it knows."""
        ref = parse_judge_model(model)
        if ref.provider == "gemini":
            return self._gemini, model
        key = (ref.provider, ref.base_url)
        provider = self._providers.get(key)
        if provider is None:
            from .openai_compat import OpenAIProvider

            provider = self._providers[key] = OpenAIProvider(self.options, ref.base_url)
        return provider, ref.model

    async def ask(
        self,
        *,
        model: str,
        contents: Any,
        schema: type[T] | None = None,
        config: dict[str, Any] | None = None,
        sample: int = 0,
        system_instruction: str | None = None,
    ) -> JudgeReply[T]:
        """One sample. With `schema` the judge must answer JSON matching it (parsed with pydantic);
        without, the reply is free text. Raises JudgeCallError / JudgeParseError (both JudgeError)."""
        self.stats.requests += 1
        try:
            provider, name = self._route(model)
        except ValueError as exc:
            self.stats.failures += 1
            raise JudgeCallError(str(exc)) from None
        key = None
        if self._cache is not None:
            key = cache_key(
                {
                    "provider": provider.name,
                    "model": name,
                    "contents": _jsonable(contents),
                    "system_instruction": system_instruction,
                    "config": _jsonable(config or {}),
                    "schema": _schema_json(schema) if schema is not None else None,
                    "sample": sample,
                    # Two endpoints (a proxy, a tuned deployment, another Vertex project) may answer
                    # differently: an answer is only reused from the same one.
                    "endpoint": provider.endpoint(),
                }
            )
            started = time.perf_counter()
            entry = self._cache.get(key)
            if entry is not None:
                try:
                    parsed = parse_reply(entry["text"], schema) if schema is not None else None
                except JudgeParseError:
                    parsed, entry = None, None  # an entry the schema no longer accepts is a miss
                if entry is not None:
                    self.stats.cache_hits += 1
                    return JudgeReply(parsed, entry["text"], _cached_usage(entry.get("usage")),
                                      time.perf_counter() - started, True, model, sample, 0)

        answer, latency, attempts = await self._call(provider, name, contents, schema, config, system_instruction)
        usage = answer.usage
        self.stats.prompt_tokens += usage.prompt_tokens
        self.stats.output_tokens += usage.output_tokens
        self.stats.total_tokens += usage.total_tokens
        text = answer.text
        if text is None:
            self.stats.parse_failures += 1
            raise JudgeParseError(answer.empty_reason, usage=usage)
        parsed = None
        if schema is not None:
            try:
                parsed = parse_reply(text, schema)
            except JudgeParseError as exc:
                self.stats.parse_failures += 1
                exc.usage = usage
                raise
        if self._cache is not None and key is not None:
            # Only answers we could use are kept: a re-run re-asks a sample that failed to parse.
            self._cache.put(key, {"provider": provider.name, "model": name, "sample": sample, "text": text,
                                  "usage": usage.model_dump(), "latency": latency, "created": time.time()})
        return JudgeReply(parsed, text, usage, latency, False, model, sample, attempts)

    async def _call(self, provider: JudgeProvider, model: str, contents: Any, schema: type[BaseModel] | None,
                    config: dict[str, Any] | None, system_instruction: str | None
                    ) -> tuple[ProviderAnswer, float, int]:
        """The request with retries. Returns (answer, seconds of the successful attempt, attempts)."""
        opts = self.options
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A service reused from another event loop (a second run in a worker thread): the limit's
            # waiters and the clients' connection pools belong to the old loop, so start them afresh.
            if self._loop is not None:
                self._limit = AdaptiveLimit(opts.concurrency)
                for each in self._all_providers():
                    each.reset()
            self._loop = loop
        try:
            prepared = provider.prepare(schema, config, system_instruction)
        except JudgeError:
            raise
        except Exception as exc:  # a bad judge_model_config: the user's to fix, shown as the reason
            self.stats.failures += 1
            raise JudgeCallError(f"bad judge request: {type(exc).__name__}: {exc}") from None
        retries = 0
        while True:
            limit = self._limit
            epoch = await limit.acquire()
            self.stats.calls += 1
            started = time.perf_counter()
            try:
                answer = await asyncio.wait_for(provider.generate(model, contents, prepared), timeout=opts.timeout)
            except asyncio.TimeoutError:
                failure = _Failure(f"timeout after {opts.timeout:g}s", True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                found = provider.failure(exc)
                if isinstance(found, JudgeParseError):
                    self.stats.parse_failures += 1
                    raise found from None
                failure = found
            else:
                elapsed = time.perf_counter() - started
                self.stats.call_seconds += elapsed
                limit.succeeded()
                return answer, elapsed, retries + 1
            finally:
                # The slot is released before any wait, so other samples keep the pipe full.
                limit.release()
            self.stats.call_seconds += time.perf_counter() - started
            delay = self._retry.delay(retries, failure.retry_after)
            if failure.throttled:  # every new call waits out the (capped) Retry-After, not just this one
                limit.throttled(epoch, delay if failure.retry_after is not None else None)
            if not failure.retryable or retries >= self._retry.max_retries:
                self.stats.failures += 1
                if failure.retryable and retries:
                    plural = "retry" if retries == 1 else "retries"
                    raise JudgeCallError(f"{failure.description} after {retries} {plural}")
                raise JudgeCallError(failure.description)
            retries += 1
            self.stats.retries += 1
            await asyncio.sleep(delay)

    @property
    def concurrency_limit(self) -> int:
        """Judge calls this service lets in flight now: `options.concurrency` until an endpoint pushes
        back (429 / RESOURCE_EXHAUSTED / Retry-After), then fewer, growing back as calls are answered."""
        return self._limit.limit

    def _all_providers(self) -> list[JudgeProvider]:
        return [self._gemini, *self._providers.values()]

    async def aclose(self) -> None:
        for provider in self._all_providers():
            await provider.aclose()


def _invalid_body_error(exc: BaseException) -> str | None:
    """A 200 whose body is not JSON at all (google-genai raises while reading it)."""
    from google.genai import errors

    unknown = getattr(errors, "UnknownApiResponseError", None)
    if isinstance(exc, json.JSONDecodeError) or (unknown is not None and isinstance(exc, unknown)):
        return f"invalid JSON from judge: {str(exc)[:300]}"
    return None


def _cached_usage(saved: Any) -> TokenUsage:
    """The usage a cache entry kept (none for an entry without it)."""
    return TokenUsage.model_validate(saved) if isinstance(saved, dict) else TokenUsage()


def create_judge_service(options: JudgeOptions | None = None) -> JudgeService:
    """The service a run uses; cheap to create (no client until the first call)."""
    return JudgeService(options)
