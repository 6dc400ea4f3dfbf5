"""tui-eval: evaluate LLM agents the way Google's ADK defines it, from a terminal dashboard or CI."""

__version__ = "0.1.0"
