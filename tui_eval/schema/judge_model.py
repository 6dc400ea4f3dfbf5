"""What a `judge_model` value names: a provider, a model and (optionally) the endpoint that serves it.

    gemini-2.5-flash                              Gemini (google-genai), as ADK
    openai:gpt-4.1-mini                           OpenAI, or $OPENAI_BASE_URL when it is set
    openai:llama3.1:8b@http://localhost:11434/v1  any OpenAI-compatible server (Ollama, vLLM, LiteLLM,
                                                  Azure OpenAI's /openai/v1 endpoint)

Only the `openai:` prefix is ours; any other value is a Gemini model name, exactly as ADK reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

JudgeProviderName = Literal["gemini", "openai"]

OPENAI_PREFIX = "openai:"
# MODEL@URL: the URL is the tail after the last "@" that starts a http(s) URL (Ollama tags hold ":").
_WITH_URL = re.compile(r"^(?P<model>.+?)@(?P<url>https?://[^\s@]+)$")
SYNTAX_HINT = "write openai:MODEL or openai:MODEL@http(s)://HOST[:PORT]/v1"


@dataclass(frozen=True, slots=True)
class JudgeModelRef:
    """A parsed `judge_model`: who serves it, the model name the server knows, and where it lives."""

    provider: JudgeProviderName
    model: str
    # None: the provider's default (for OpenAI, $OPENAI_BASE_URL, else api.openai.com).
    base_url: str | None = None


def parse_judge_model(value: str) -> JudgeModelRef:
    """Read a `judge_model` value; ValueError (one line, with the syntax) when it cannot name a model."""
    text = value.strip()
    if not text.lower().startswith(OPENAI_PREFIX):
        return JudgeModelRef("gemini", text)
    rest = text[len(OPENAI_PREFIX):].strip()
    base_url: str | None = None
    match = _WITH_URL.match(rest)
    if match is not None:
        rest, base_url = match["model"].strip(), match["url"].rstrip("/")
    elif "@" in rest and "://" in rest:
        raise ValueError(f"judge_model {value!r}: the endpoint must be a http:// or https:// URL ({SYNTAX_HINT})")
    if not rest:
        raise ValueError(f"judge_model {value!r} names no model ({SYNTAX_HINT})")
    if any(c.isspace() for c in rest):
        raise ValueError(f"judge_model {value!r}: a model name has no spaces ({SYNTAX_HINT})")
    return JudgeModelRef("openai", rest, base_url)
