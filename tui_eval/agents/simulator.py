"""The LLM-backed user simulator for conversation_scenario cases, asking through the judge service.

As google-adk's LlmBackedUserSimulator: the first user message is the scenario's starting_prompt; each
later one is written by an LLM that follows the conversation_plan (and user_persona, and the config's
custom_instructions) in reaction to the agent's last reply; the conversation ends when the LLM answers
with the stop signal or after `max_allowed_invocations` user messages (the starting prompt counts).

Without a judge (no credentials) only the starting prompt is sent: that turn needs no LLM, so the agent's
real first reply is kept and shown, and the conversation stops there instead of being invented. The
case's metrics then say why they could not run ("no judge credentials"), so it is NOT_EVALUATED, never
PASSED. A simulator call that fails (judge error after retries, empty reply) fails the case's inference
with the reason (SimulatorError): the case is NOT_EVALUATED, since the agent was never given the chance
to fail, and never PASSED.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Callable

from ..schema.config import EvalConfig
from ..schema.model import Content, EvalCase, Invocation
from ..judge.conversation import DEFAULT_STOP_SIGNAL, invocation_author, persona_text, resolve_persona, transcript
from .base import AgentError, AgentSession

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ..judge.client import JudgeClient
    from ..judge.service import JudgeReply

__all__ = ["DEFAULT_STOP_SIGNAL", "SimulatorError", "invocation_author", "persona_text", "resolve_persona", "transcript"]
SIMULATOR_METRIC = "per_turn_user_simulator_quality_v1"


class SimulatorError(AgentError):
    """The user simulator could not write the next user message (judge outage, empty reply): the case
    cannot be evaluated, and the agent is not to blame."""


SIMULATOR_PROMPT = """You play the user in a conversation with an AI agent, to test the agent.
React to what the agent just said, as a real person with the goals below would.

First work out what the agent's last message was: a question to you, a task done, a task it could not
do, or something wrong. Then do exactly one of these:
- ANSWER the agent's question, using only information from the conversation plan. Give nothing it did
  not ask for; if the plan does not have what it asks, say you don't know. Do not move on yet.
- ADVANCE to the next request of the conversation plan once the current one is done; skip requests the
  agent already fulfilled.
- CHANGE your current request when the conversation plan says to, in natural words.
- CORRECT the agent when it is wrong or failed; the first time it fails a request, ask it to try again.
- END the conversation when every request of the plan is done, when the agent failed the same request
  twice, when it did something wrong it says it cannot undo, or when it hands you over to a human. To end
  it, answer with only {stop_signal} and nothing else. Do not end it before then.

Write only the next user message: short, natural and conversational, one request at a time.
{persona}
# Conversation plan

{conversation_plan}

# Conversation so far

{conversation_history}
"""

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z_.]*)\s*\}\}")


def stop_signal_for(config: EvalConfig) -> str:
    """The stop signal: the user-simulator metric's, when configured, else ADK's default."""
    crit = config.criteria.get(SIMULATOR_METRIC)
    return crit.stop_signal if crit is not None else DEFAULT_STOP_SIGNAL


def _render_custom(template: str, values: dict[str, str]) -> str:
    """ADK's custom_instructions use Jinja placeholders ({{ conversation_plan }} ...); we fill the
    documented ones without depending on Jinja."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def simulator_prompt(case: EvalCase, config: EvalConfig, history: list[Invocation], stop_signal: str) -> str:
    scenario = case.conversation_scenario
    assert scenario is not None
    persona = persona_text(scenario.user_persona)
    values = {
        "stop_signal": stop_signal,
        "conversation_plan": scenario.conversation_plan,
        "conversation_history": transcript(history),
        "persona": persona,
        "persona.description": persona,
    }
    custom = config.user_simulator.custom_instructions
    if custom:
        return _render_custom(custom, values)
    block = f"\n# Your persona\n\n{persona}\n" if persona else ""
    return SIMULATOR_PROMPT.format(
        stop_signal=stop_signal,
        persona=block,
        conversation_plan=scenario.conversation_plan,
        conversation_history=values["conversation_history"],
    )


async def next_user_message(
    case: EvalCase, config: EvalConfig, judge: JudgeClient, history: list[Invocation], stop_signal: str
) -> str | None:
    """The simulated user's next message, or None when it sent the stop signal."""
    from ..judge import JudgeError

    prompt = simulator_prompt(case, config, history, stop_signal)
    try:
        reply: JudgeReply[BaseModel] = await judge.ask(  # free text: nothing to parse
            model=config.user_simulator.model,
            contents=prompt,
            config=config.user_simulator.model_configuration,
            sample=0,
        )
    except JudgeError as exc:
        raise SimulatorError(f"user simulator failed at turn {len(history) + 1}: {exc.reason}") from None
    text = (reply.text or "").strip()
    if stop_signal.lower() in text.lower():
        return None
    if not text:
        raise SimulatorError(f"user simulator returned an empty message at turn {len(history) + 1}")
    return text


async def simulate_conversation(
    case: EvalCase,
    session: AgentSession,
    config: EvalConfig,
    judge: JudgeClient | None,
    *,
    on_turn: Callable[[int, Invocation], None] | None = None,
    on_turn_start: Callable[[int], None] | None = None,
    turn_timeout: float = 120.0,
) -> list[Invocation]:
    """Play a scenario case against an agent session; report each finished turn to `on_turn`."""
    scenario = case.conversation_scenario
    if scenario is None:
        raise AgentError(f"case {case.eval_id!r} has no conversation_scenario")
    stop_signal = stop_signal_for(config)
    limit = config.user_simulator.max_allowed_invocations
    # Per model: the simulated user may be an `openai:` model, with its own credentials.
    simulator = judge if judge is not None and judge.unavailable_for(config.user_simulator.model) is None else None
    history: list[Invocation] = []
    while len(history) < limit:
        if not history:
            text: str | None = scenario.starting_prompt
        elif simulator is None:
            break  # offline: the starting prompt is all we can send without inventing the user
        else:
            text = await next_user_message(case, config, simulator, history, stop_signal)
            if text is None:
                break
        index = len(history)
        if on_turn_start is not None:
            on_turn_start(index)
        try:
            inv = await asyncio.wait_for(session.turn(Content.from_text(text or ""), index), turn_timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise AgentError(f"turn {index + 1} timed out after {turn_timeout:g} s") from None
        history.append(inv)
        if on_turn is not None:
            on_turn(index, inv)
    return history
