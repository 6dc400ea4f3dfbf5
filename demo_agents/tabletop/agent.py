"""A google-adk game master: it asks `dice_agent` (wrapped in an AgentTool) for a roll, then keeps the
score in the session state. The dice agent's calls happen inside the AgentTool call, where ADK's own
trajectory never looks; tui-eval captures them (deep_tool_trajectory_v1) and checks the state the case
leaves (final_session_state_v1).

Offline (no GOOGLE_API_KEY / GEMINI_API_KEY, or TUI_EVAL_AGENT_MODE=offline) a scripted model stands in
for Gemini inside ADK's own Runner, with two bugs on purpose: the dice agent understands only digits
("twenty-sided" rolls a six-sided die), and the game master forgets the bonus a player asks for.
"""

from __future__ import annotations

import random
import re
from typing import Any, AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from tui_eval.agents.native import agent_mode


def roll_die(sides: int, tool_context: ToolContext) -> int:
    """Roll a die and return the result.

    Args:
        sides: The number of sides of the die.
    """
    rolled = random.Random(int(sides)).randint(1, int(sides))  # the same roll for the same die, every run
    tool_context.state["last_roll"] = rolled
    return rolled


def keep_score(player: str, tool_context: ToolContext) -> int:
    """Add the last roll to a player's score and return the new score.

    Args:
        player: The player's name.
    """
    scores = dict(tool_context.state.get("scores") or {})
    scores[player] = scores.get(player, 0) + int(tool_context.state.get("last_roll") or 0)
    tool_context.state["scores"] = scores
    return scores[player]


def _turn(request: LlmRequest) -> tuple[str, dict[str, Any]]:
    """The last user message of the request and the tool results the model got since it (name -> result)."""
    user, results = "", {}
    for content in request.contents:
        for part in content.parts or []:
            if part.function_response is not None:
                results[part.function_response.name or ""] = (part.function_response.response or {}).get("result")
            elif content.role == "user" and part.text:
                user, results = part.text, {}
    return user, results


def _reply(*parts: types.Part) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=list(parts)))


def _call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


class OfflineDice(BaseLlm):
    """The dice agent's model offline. Bug on purpose: only digits are understood (a die named in words
    is a six-sided one)."""

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        user, results = _turn(llm_request)
        if "roll_die" not in results:
            match = re.search(r"(\d+)-sided", user)
            yield _reply(_call("roll_die", sides=int(match.group(1)) if match else 6))
        else:
            yield _reply(types.Part(text=f"Rolled {results['roll_die']}."))


class OfflineGameMaster(BaseLlm):
    """The game master's model offline: ask dice_agent for the die the user names, keep the score, answer.
    Bug on purpose: a bonus the user asks for is never added."""

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        user, results = _turn(llm_request)
        die = re.search(r"(\w+)-sided", user)
        player = re.search(r"\bfor ([A-Z]\w*)", user) or re.search(r"\bGive ([A-Z]\w*)", user)
        name = player.group(1) if player else "Player"
        if "dice_agent" not in results:
            yield _reply(_call("dice_agent", request=f"roll a {die.group(1) if die else 'six'}-sided die"))
        elif "keep_score" not in results:
            yield _reply(_call("keep_score", player=name))
        else:
            yield _reply(types.Part(text=f"{results['dice_agent']} {name} now has {results['keep_score']} points."))


def _model(offline: BaseLlm) -> Any:
    return offline if agent_mode() == "offline" else "gemini-2.5-flash"


dice_agent = LlmAgent(
    name="dice_agent",
    model=_model(OfflineDice(model="offline-dice")),
    description="Rolls a die of the size asked for.",
    instruction="You roll dice. Call roll_die with the number of sides asked for, then say what was rolled.",
    tools=[roll_die],
)

root_agent = LlmAgent(
    name="game_master",
    model=_model(OfflineGameMaster(model="offline-game-master")),
    instruction=("You run a dice game. For every roll, ask dice_agent (say which die), then call keep_score "
                 "with the player's name, then tell the player the roll and their score. A bonus adds 2."),
    tools=[AgentTool(dice_agent), keep_score],
)
