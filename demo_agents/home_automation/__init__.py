"""home_automation: reads and sets devices and temperatures room by room."""

from . import agent  # noqa: F401 - ADK's convention: the package exposes agent.root_agent
