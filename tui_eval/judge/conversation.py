"""Conversation text shared by the user simulator (agents) and its quality judge (metrics): the persona,
the transcript and the stop signal, so neither side imports the other."""

from __future__ import annotations

import logging
from typing import Any

from ..schema.model import Invocation

logger = logging.getLogger(__name__)

DEFAULT_STOP_SIGNAL = "</finished>"


def resolve_persona(persona: Any) -> dict[str, Any] | None:
    """A user_persona as a dict (description, behaviors). A string names one of google-adk's pre-built
    personas; without google-adk it stays a bare description."""
    if persona is None:
        return None
    if isinstance(persona, dict):
        return persona
    if isinstance(persona, str):
        try:
            from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry
        except ImportError:  # google-adk is an optional extra: the id is all we know
            return {"id": persona, "description": persona, "behaviors": []}
        try:
            resolved: dict[str, Any] = get_default_persona_registry().get_persona(persona).model_dump(mode="json")
            return resolved
        except Exception as exc:  # google-adk's NotFoundError for an unknown id (not a public base class)
            logger.warning("user_persona %r is not one of google-adk's personas (%s); using it as a description",
                           persona, exc)
            return {"id": persona, "description": persona, "behaviors": []}
    return {"description": str(persona), "behaviors": []}


def persona_text(persona: Any, *, rubrics: bool = False) -> str:
    """The persona for a prompt: its description and each behaviour's instructions (or, for the
    quality judge, each behaviour's violation rubrics)."""
    p = resolve_persona(persona)
    if not p:
        return ""
    lines = [str(p.get("description") or p.get("id") or "").strip()]
    for b in p.get("behaviors") or []:
        if not isinstance(b, dict):
            continue
        lines.append(f"\n## {b.get('name', '')}\n{b.get('description', '')}".rstrip())
        key = "violation_rubrics" if rubrics else "behavior_instructions"
        items = b.get(key) or b.get("violationRubrics" if rubrics else "behaviorInstructions") or []
        if items:
            lines.append(("Violations:" if rubrics else "Instructions:") + "\n" + "\n".join(f"- {i}" for i in items))
    return "\n".join(x for x in lines if x).strip()


def invocation_author(inv: Invocation) -> str:
    """Who answered the turn (the first agent author seen), for transcripts."""
    for author, _text in inv.intermediate_texts:
        if author:
            return author
    data = inv.intermediate_data
    for event in getattr(data, "invocation_events", None) or []:
        if event.author and event.author != "user":
            return str(event.author)
    agents = list(inv.app_details.agent_details) if inv.app_details is not None else []
    return agents[0] if len(agents) == 1 else "agent"


def transcript(invocations: list[Invocation], *, intermediate: bool = True) -> str:
    """The conversation as `author: text` lines: user messages, agent texts, final responses."""
    lines: list[str] = []
    for inv in invocations:
        user = inv.user_content.text
        if user:
            lines.append(f"user: {user}")
        if intermediate:
            lines.extend(f"{author}: {text}" for author, text in inv.intermediate_texts)
        final = inv.final_response.text if inv.final_response is not None else ""
        if final:
            lines.append(f"{invocation_author(inv)}: {final}")
    return "\n\n".join(lines)
