"""The one door to LLMs: JudgeOptions, create_judge_service and the JudgeClient protocol every judge
backend satisfies (google-genai is imported lazily)."""

from .cache import JudgeCache, cache_key
from .client import JudgeClient, JudgeStats
from .options import JudgeOptions, default_cache_dir
from .service import (
    NO_CREDENTIALS,
    JudgeCallError,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeService,
    create_judge_service,
    parse_reply,
)

__all__ = [
    "NO_CREDENTIALS",
    "JudgeCache",
    "JudgeCallError",
    "JudgeClient",
    "JudgeError",
    "JudgeOptions",
    "JudgeParseError",
    "JudgeReply",
    "JudgeService",
    "JudgeStats",
    "cache_key",
    "create_judge_service",
    "default_cache_dir",
    "parse_reply",
]
