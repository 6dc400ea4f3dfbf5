"""hello_world: rolls dice and checks primes (like google-adk's own sample)."""

from . import agent  # noqa: F401 - ADK's convention: the package exposes agent.root_agent
