"""What the rest of the package sees of a judge: the `JudgeClient` protocol and its counters.

Metrics, the user simulator, executors and the runner depend on this protocol, never on one service
class: `JudgeService` (Gemini, or any OpenAI-compatible server behind it) satisfies it, and so must
any other judge backend.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from .service import JudgeReply

    T = TypeVar("T", bound=BaseModel)


@dataclass(slots=True)
class JudgeStats:
    """A judge's counters: what was asked, answered, retried and spent. Worker processes report what
    they add as a `JudgeStats` too (`since`), and the run adds it up (`add`)."""

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    parse_failures: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    call_seconds: float = 0.0

    def add(self, other: JudgeStats) -> None:
        """Count `other`'s calls in these counters."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def since(self, earlier: JudgeStats) -> JudgeStats:
        """What was counted after `earlier` (a copy of these counters taken then)."""
        return JudgeStats(**{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)})

    def copy(self) -> JudgeStats:
        return JudgeStats(**{f.name: getattr(self, f.name) for f in fields(self)})


class JudgeClient(Protocol):
    """A judge: asks an LLM for one sample, says when it cannot, and counts what it did."""

    stats: JudgeStats

    @property
    def available(self) -> bool:
        """Whether the default (Gemini) judge has credentials."""
        ...

    @property
    def unavailable_reason(self) -> str | None:
        """Why the default judge cannot be called, or None."""
        ...

    def unavailable_for(self, model: str) -> str | None:
        """Why `model` (a judge_model value: Gemini, or `openai:...`) cannot judge here, or None."""
        ...

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
        """One sample; raises JudgeCallError / JudgeParseError (both JudgeError)."""
        ...

    async def aclose(self) -> None: ...
