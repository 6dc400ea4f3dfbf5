"""JudgeOptions: how the judge service calls LLMs (concurrency, timeout, retries, base URL, cache).

Immutable: a run's judge settings are made once (`make_judge`, or a worker from what the engine sends it)
and never changed afterwards; `dataclasses.replace` makes a changed copy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..userpaths import user_path
from .pacing import RetryPolicy


#: Judge calls in flight at the start of a run: wide, since the service halves it as soon as an endpoint
#: pushes back (429 / RESOURCE_EXHAUSTED / Retry-After) and widens again as calls are answered.
DEFAULT_CONCURRENCY = 64


def default_cache_dir() -> Path:
    """$TUI_EVAL_CACHE_DIR, else $XDG_CACHE_HOME/tui-eval/judge, else ~/.cache/tui-eval/judge."""
    return user_path("cache", "judge", env="TUI_EVAL_CACHE_DIR")


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """Settings of one judge service (one per run)."""

    # The most judge calls in flight at once, across every metric and case of the run: where the service
    # starts, halving when an endpoint pushes back (429 / RESOURCE_EXHAUSTED / Retry-After) and growing back.
    concurrency: int = DEFAULT_CONCURRENCY
    # Seconds one call may take before it is abandoned (and retried).
    timeout: float = 60.0
    # Retries after the first attempt, on 408/429/5xx, timeouts and transport errors.
    max_retries: int = 4
    # A Gemini-compatible endpoint; else $GOOGLE_GEMINI_BASE_URL (or $GOOGLE_VERTEX_BASE_URL on Vertex).
    base_url: str | None = None
    cache_dir: Path | None = field(default_factory=default_cache_dir)
    use_cache: bool = True
    # Overrides $GOOGLE_API_KEY / $GEMINI_API_KEY.
    api_key: str | None = None
    # Backoff before retry n (0-based) is backoff_base * 2**n, capped at backoff_max, with jitter.
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    # A server's Retry-After is honoured up to this many seconds.
    retry_after_max: float = 60.0

    def retry_policy(self) -> RetryPolicy:
        """The retry policy these settings say (the one every LLM client of tui-eval follows)."""
        return RetryPolicy(max_retries=self.max_retries, backoff_base=self.backoff_base,
                           backoff_max=self.backoff_max, retry_after_max=self.retry_after_max)
