"""tabletop: a game master that asks a dice agent (an AgentTool) for rolls and keeps scores in session state."""

from . import agent  # noqa: F401 - ADK's convention: the package exposes agent.root_agent
