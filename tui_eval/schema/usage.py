"""TokenUsage: the token counts of model calls, an agent's or a judge's, as every layer keeps them.

Counts follow Gemini's usage metadata: `prompt_tokens` includes the `cached_tokens` part
(prompt_token_count includes cached_content_token_count), `output_tokens` is candidates plus thoughts
(both billed as output), `total_tokens` as reported.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

#: A run record's cost lines spell usage with these keys: short key -> field name.
SHORT_KEYS = {"prompt": "prompt_tokens", "output": "output_tokens", "cached": "cached_tokens",
              "total": "total_tokens"}


class TokenUsage(BaseModel):
    """Token counts of one or more model calls; `+` adds them.

    Its field names are its JSON keys (judge details in run records, judge cache entries; one written
    before `cached_tokens` existed reads as 0 cached), except in a run record's cost lines, which keep
    the short keys they have always had (`SHORT_KEYS`, read and written by `engine.pricing.CostLine`).
    No serialiser or alias: the record writer (`engine.store.record_json`) writes details models field
    by field."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                          output_tokens=self.output_tokens + other.output_tokens,
                          cached_tokens=self.cached_tokens + other.cached_tokens,
                          total_tokens=self.total_tokens + other.total_tokens)

    def short_keys(self) -> dict[str, int]:
        """`{"prompt", "output", "cached", "total"}`: how run records' cost lines write usage."""
        return {short: getattr(self, name) for short, name in SHORT_KEYS.items()}

    @classmethod
    def total(cls, usages: Iterable[TokenUsage]) -> TokenUsage:
        """The sum of `usages` (zero for none)."""
        out = cls()
        for u in usages:
            out = out + u
        return out

    @classmethod
    def from_gemini(cls, prompt_token_count: int | None, candidates_token_count: int | None,
                    cached_content_token_count: int | None = None, thoughts_token_count: int | None = None,
                    total_token_count: int | None = None) -> TokenUsage:
        """From the fields of google-genai's GenerateContentResponseUsageMetadata (None counts as 0)."""
        prompt = prompt_token_count or 0
        output = (candidates_token_count or 0) + (thoughts_token_count or 0)
        total = total_token_count if total_token_count is not None else prompt + output
        return cls(prompt_tokens=prompt, output_tokens=output, cached_tokens=cached_content_token_count or 0,
                   total_tokens=total)
