"""How an agent answers: the agent interface, replay, native demo agents and ADK agents."""

from __future__ import annotations

from pathlib import Path

from .base import Agent, AgentCrash, AgentError, AgentSession, CaseContext

__all__ = ["Agent", "AgentCrash", "AgentError", "AgentSession", "CaseContext", "load_agent", "is_agent_ref"]


def is_agent_ref(ref: str) -> bool:
    """Whether a CLI argument names an agent (a `replay:` file or an agent folder), not an eval file."""
    if ref.startswith("replay:"):
        return True
    path = Path(ref)
    return path.is_dir() and ((path / "agent.py").is_file() or (path / "__init__.py").is_file())


def load_agent(ref: str) -> Agent:
    """Load `replay:PATH` or an agent folder. Raises AgentError (or LoadError) with a clear message."""
    if ref.startswith("replay:"):
        from .replay import ReplayAgent

        recording = ref.removeprefix("replay:")
        if not Path(recording).is_file():
            raise AgentError(f"replay file not found: {recording}")
        return ReplayAgent(recording)
    path = Path(ref)
    if not path.is_dir():
        raise AgentError(f"agent folder not found: {ref}")
    from .folder import load_agent_folder

    return load_agent_folder(path)
