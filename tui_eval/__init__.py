"""tui-eval: evaluate LLM agents the way Google's ADK defines it, from a terminal dashboard or CI."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["__version__", "aevaluate", "evaluate"]

if TYPE_CHECKING:  # pragma: no cover
    from .api import aevaluate, evaluate


def __getattr__(name: str) -> object:
    # Lazily, so `import tui_eval` (the pytest plugin's entry point, the dashboard) stays light.
    if name in ("evaluate", "aevaluate"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
