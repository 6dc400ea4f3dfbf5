"""support: answers customer questions from a small knowledge base, checks orders, opens tickets."""

from . import agent  # noqa: F401 - ADK's convention: the package exposes agent.root_agent
