"""The judge on OpenAI-compatible servers (OpenAI, Azure OpenAI, Ollama, vLLM, a LiteLLM proxy) through the
official `openai` SDK, an optional extra: nothing of it is imported until an `openai:` judge is called."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
from typing import Any

from pydantic import BaseModel

from ..schema.judge_model import JudgeProviderName
from ..schema.usage import TokenUsage
from .options import JudgeOptions
from .service import (
    _RETRYABLE_CODES,
    NO_CREDENTIALS,
    JudgeCallError,
    JudgeParseError,
    LazyClient,
    ProviderAnswer,
    _classify,
    _Failure,
    _jsonable,
    _retry_after,
    _throttled,
)

logger = logging.getLogger(__name__)

API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
INSTALL_HINT = 'the openai judge needs the openai package: pip install "tui-eval[openai]"'

# judge_model_config is written for Gemini (GenerateContentConfig): the keys with an OpenAI twin are
# renamed; any other key goes to the server as it is (`reasoning_effort`, vLLM's `top_k`, ...).
_RENAMED = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}
# Gemini-only keys that mean nothing to an OpenAI-compatible server (the service sets its own schema).
_DROPPED = frozenset({"response_mime_type", "response_schema", "response_json_schema", "system_instruction",
                      "automatic_function_calling", "candidate_count", "thinking_config", "safety_settings"})
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def request_settings(schema: type[BaseModel] | None, config: dict[str, Any] | None) -> dict[str, Any]:
    """The chat.completions arguments besides model and messages: the JSON schema to answer with (strict,
    as the SDK's own structured-output helper builds it) and the generation config."""
    settings: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for raw_key, value in (config or {}).items():
        key = _snake(str(raw_key))
        if key in _DROPPED:
            continue
        key = _RENAMED.get(key, key)
        if key in ("temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty",
                   "frequency_penalty"):
            settings[key] = value
        else:
            extra[key] = value
    if extra:
        settings["extra_body"] = extra
    if schema is not None:
        settings["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": _strict_schema(schema), "strict": True},
        }
    return settings


def _strict_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema in OpenAI's strict form (every property required, no extra keys), built by the SDK's
    own structured-output helper (what `chat.completions.parse` sends)."""
    try:
        from openai.lib._pydantic import to_strict_json_schema
    except ImportError:  # an SDK that moved its helper: pydantic's schema, which strict servers may refuse
        logger.warning("openai.lib._pydantic.to_strict_json_schema is gone; sending pydantic's JSON schema")
        return schema.model_json_schema()
    return to_strict_json_schema(schema)


def _messages(contents: Any, system_instruction: str | None) -> list[dict[str, str]]:
    """A prompt (str) or genai-style contents (role + text parts) as chat messages."""
    messages: list[dict[str, str]] = []
    if system_instruction:
        messages.append({"role": "system", "content": system_instruction})
    items = contents if isinstance(contents, list) else [contents]
    for item in items:
        if isinstance(item, str):
            messages.append({"role": "user", "content": item})
            continue
        data = _jsonable(item)
        if not isinstance(data, dict):
            messages.append({"role": "user", "content": str(data)})
            continue
        role = "assistant" if data.get("role") == "model" else "user"
        texts = [p["text"] for p in data.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
        messages.append({"role": role, "content": "\n".join(texts)})
    return messages


class OpenAIProvider(LazyClient):
    """Chat completions on one endpoint. $OPENAI_API_KEY authenticates; the endpoint is the one the
    judge_model names, else $OPENAI_BASE_URL, else OpenAI's."""

    name: JudgeProviderName = "openai"

    def __init__(self, options: JudgeOptions, base_url: str | None) -> None:
        self._options = options
        self._base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        self._api_key = os.environ.get(API_KEY_ENV) or None
        self._client: Any = None
        self._installed: bool | None = None  # looked up once, without importing the SDK

    @property
    def unavailable_reason(self) -> str | None:
        if self._installed is None:
            self._installed = importlib.util.find_spec("openai") is not None
        if not self._installed:
            return INSTALL_HINT
        if not self._api_key:
            return f"{NO_CREDENTIALS} ({API_KEY_ENV} is not set)"
        return None

    def endpoint(self) -> dict[str, str | None]:
        return {"base_url": (self._base_url or DEFAULT_BASE_URL).rstrip("/")}

    def _get_client(self) -> Any:
        if self._client is None:
            reason = self.unavailable_reason
            if reason is not None:
                raise JudgeCallError(reason)
            import openai

            from .transport import llm_hooks

            # The service retries and times out; the SDK's own retries would multiply both. Every answer is
            # bounded in decoded size (a gzip bomb is this call's error, not the run's memory), and no
            # redirect to another origin is followed (the prompt goes to the configured endpoint only).
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self._base_url, max_retries=0, timeout=self._options.timeout,
                http_client=openai.DefaultAsyncHttpxClient(event_hooks=llm_hooks()))
        return self._client

    def prepare(self, schema: type[BaseModel] | None, config: dict[str, Any] | None,
                system_instruction: str | None) -> Any:
        self._get_client()
        return request_settings(schema, config), system_instruction

    async def generate(self, model: str, contents: Any, prepared: Any) -> ProviderAnswer:
        settings, system_instruction = prepared
        completion = await self._get_client().chat.completions.create(
            model=model, messages=_messages(contents, system_instruction), **settings)
        if isinstance(completion, str):  # a 200 that is not JSON: the SDK hands back the text
            raise JudgeParseError(f"invalid JSON from judge: the endpoint answered {completion[:200]!r}")
        usage = getattr(completion, "usage", None)
        tokens = TokenUsage()
        if usage is not None:
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            output = int(getattr(usage, "completion_tokens", 0) or 0)
            tokens = TokenUsage(prompt_tokens=prompt, output_tokens=output,
                                total_tokens=int(getattr(usage, "total_tokens", 0) or (prompt + output)))
        choices = getattr(completion, "choices", None) or []
        if not choices:
            return ProviderAnswer(None, tokens, "judge returned no choices")
        message = choices[0].message
        text = getattr(message, "content", None)
        if text:
            return ProviderAnswer(text, tokens)
        refusal = getattr(message, "refusal", None)
        if refusal:
            return ProviderAnswer(None, tokens, f"judge refused: {str(refusal)[:300]}")
        finish = getattr(choices[0], "finish_reason", None)
        reason = f"judge returned no text (finish reason {finish})" if finish else "judge returned no text"
        return ProviderAnswer(None, tokens, reason)

    def failure(self, exc: BaseException) -> _Failure | JudgeParseError:
        import openai

        if isinstance(exc, JudgeParseError):
            return exc
        from .transport import refused_or_too_large

        final = refused_or_too_large(exc)
        if final is not None:  # asking again would bring the same answer (or the same redirect)
            return _Failure(str(final), False)
        if isinstance(exc, json.JSONDecodeError):
            return JudgeParseError(f"invalid JSON from judge: {str(exc)[:300]}")
        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            retryable = code in _RETRYABLE_CODES or 500 <= code <= 599
            text = str(code)
            message = _error_message(exc)
            if not retryable and message:
                text += f": {message[:300]}"
            wait = _retry_after(exc) if retryable else None
            return _Failure(text, retryable, wait, retryable and _throttled(code, "", wait))
        if isinstance(exc, openai.APITimeoutError):
            return _Failure(f"timeout after {self._options.timeout:g}s", True)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return _Failure(f"connection error: {type(cause).__name__}: {cause}".rstrip(": "), True)
        return _classify(exc)

    async def _close(self, client: Any) -> None:
        await client.close()


def _error_message(exc: Any) -> str:
    """The server's own words: OpenAI's {"error": {"message"}} body, else the SDK's message."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"]).strip()
    return str(getattr(exc, "message", "") or "").strip()
