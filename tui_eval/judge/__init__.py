"""The one door to LLMs: JudgeOptions and create_judge_service (google-genai is imported lazily)."""

from .cache import JudgeCache, cache_key
from .options import JudgeOptions, default_cache_dir
from .service import (
    NO_CREDENTIALS,
    JudgeCallError,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeService,
    JudgeStats,
    TokenUsage,
    create_judge_service,
    parse_reply,
)

__all__ = [
    "NO_CREDENTIALS",
    "JudgeCache",
    "JudgeCallError",
    "JudgeError",
    "JudgeOptions",
    "JudgeParseError",
    "JudgeReply",
    "JudgeService",
    "JudgeStats",
    "TokenUsage",
    "cache_key",
    "create_judge_service",
    "default_cache_dir",
    "parse_reply",
]
