"""rubric_based_multi_turn_trajectory_quality_v1: an LLM judge checks each rubric against the whole conversation.

As google-adk 2.13's RubricBasedMultiTurnTrajectoryEvaluator: the dialogue (user turns, the agent's texts,
tool calls and tool outputs, final responses) is assembled the way ADK assembles it and judged once, on
the last turn, against the criterion's rubrics plus the case's and the last turn's rubrics of type
TRAJECTORY_QUALITY. The earlier turns are NOT_EVALUATED; the case score is the last turn's: the mean of
its rubric verdicts (num_samples samples per rubric, majority vote, a tie is "no"), as the other rubric
metrics vote.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...schema.model import Invocation, InvocationEvents
from ...schema.results import InvocationMetricResult, MetricResult
from ..base import MetricInput, builtin
from .rubrics import RubricMetric, evaluate_rubrics

NAME = "rubric_based_multi_turn_trajectory_quality_v1"
TRAJECTORY_QUALITY = "TRAJECTORY_QUALITY"
EARLIER_TURN = "multi-turn metric: the whole conversation is judged on the last turn"


class TrajectoryRubricVerdict(BaseModel):
    rubric_id: str = Field(description="The id of the property, copied exactly from its [id: ...] tag.")
    rationale: str = Field(description="Reasoning over the assistant's turns; name the turn numbers that "
                                       "violate the property.")
    verdict: Literal["yes", "no"]


class TrajectoryRubricVerdicts(BaseModel):
    verdicts: list[TrajectoryRubricVerdict]


PROMPT = """\
You evaluate the quality of an AI agent's behaviour over a whole multi-turn conversation: its replies,
its tool calls and the tool outputs it used. One turn is a user message and the agent's answer to it.

For EVERY property listed give a verdict:
- "yes": across all its turns the agent fulfilled the property, or the property does not apply.
- "no": the agent did not fulfil the property; say in which agent turn(s) it failed.

Judge the agent's performance cumulatively: a mistake in turn 2 corrected in turn 4 counts as corrected,
with the nuance that deserves. Take the tool use into account (the right tools, sensible arguments,
using what they returned). For each property: restate it, decide what fulfilling its intent requires,
check the conversation turn by turn, then decide. Only use the properties given; do not invent new
ones; keep each rationale to its own property. Copy each property's id exactly.

<agent_system_instructions>
{agent_instructions}
</agent_system_instructions>

<agent_tool_definitions>
{agent_tool_definitions}
</agent_tool_definitions>

<conversation_history>
{dialogue}
</conversation_history>

<properties>
{{rubrics}}
</properties>

Answer in JSON: {{{{"verdicts": [{{{{"rubric_id", "rationale", "verdict"}}}}, ...]}}}} with one entry per property.
"""


def _dumps(value: Any) -> str:
    return json.dumps(value)


def dialogue(actual: list[Invocation]) -> str:
    """The conversation as ADK's `_assemble_dialogue_history` writes it, line for line."""
    lines: list[str] = []
    for index, inv in enumerate(actual):
        n = index + 1
        if inv.user_content.parts:
            texts = [p.text for p in inv.user_content.parts if p.text]
            if texts:
                lines.append(f"USER TURN {n}: {' '.join(texts)}")
        data = inv.intermediate_data
        if isinstance(data, InvocationEvents):
            for event in data.invocation_events:
                role = "USER" if event.author and event.author.lower() == "user" else f"AGENT ({event.author})"
                if event.content is None or not event.content.parts:
                    continue
                texts = [p.text for p in event.content.parts if p.text]
                if texts:
                    lines.append(f"{role} TURN {n}: {' '.join(texts)}")
                for p in event.content.parts:
                    if p.function_call:
                        args = _dumps(dict(p.function_call.args)) if p.function_call.args else "{}"
                        lines.append(f"{role} TURN {n} (tool call): {p.function_call.name}({args})")
                    if p.function_response:
                        resp = _dumps(dict(p.function_response.response)) if p.function_response.response else "{}"
                        lines.append(f"{role} TURN {n} (tool output): {p.function_response.name} -> {resp}")
        if inv.final_response is not None and inv.final_response.parts:
            agent = "agent"
            if isinstance(data, InvocationEvents) and data.invocation_events:
                agent = data.invocation_events[0].author
            texts = [p.text for p in inv.final_response.parts if p.text]
            if texts:
                lines.append(f"AGENT ({agent}) TURN {n}: {' '.join(texts)}")
    return "\n".join(lines)


def _declarations(tool: Any) -> list[dict[str, Any]]:
    """A genai Tool's function declarations; a bare declaration (as hand-written files hold) is itself."""
    if not isinstance(tool, dict):
        return []
    decls = tool.get("function_declarations", tool.get("functionDeclarations"))
    if isinstance(decls, list):
        return [d for d in decls if isinstance(d, dict)]
    return [tool] if "name" in tool else []


def instructions_and_tools(actual: list[Invocation]) -> tuple[str, str]:
    """Every agent's instructions and tool list over all turns, first occurrence kept (as ADK)."""
    instructions: list[str] = []
    tools: list[str] = []
    for inv in actual:
        if inv.app_details is None or not inv.app_details.agent_details:
            continue
        for agent_id, details in inv.app_details.agent_details.items():
            instructions.append(f"Agent {agent_id} Instructions:\n{details.instructions}")
            tools.append(f"Agent: {agent_id}")
            for tool in details.tool_declarations:
                for decl in _declarations(tool):
                    tools.append(f"- {decl.get('name')}: {decl.get('description')}")
    return "\n\n".join(dict.fromkeys(instructions)), "\n".join(dict.fromkeys(tools))


def _escape(text: str) -> str:
    # The assembled text becomes part of a str.format template (the rubric metric fills {rubrics}).
    return text.replace("{", "{{").replace("}", "}}")


async def evaluate(inp: MetricInput) -> MetricResult:
    crit = inp.criterion
    actual = inp.actual
    last = len(actual) - 1
    agent_instructions, agent_tools = instructions_and_tools(actual)
    template = PROMPT.format(agent_instructions=_escape(agent_instructions),
                             agent_tool_definitions=_escape(agent_tools), dialogue=_escape(dialogue(actual)))
    metric = RubricMetric(NAME, TRAJECTORY_QUALITY, template, TrajectoryRubricVerdicts)
    expected = inp.expected[last] if inp.expected is not None and last < len(inp.expected) else None
    sub = MetricInput(criterion=crit, case=inp.case, actual=[actual[last]],
                      expected=[expected] if expected is not None else None, config=inp.config, judge=inp.judge,
                      progress=lambda _i: inp.progress(last))
    for i in range(last):
        inp.progress(i)
    judged = await evaluate_rubrics(metric, sub)
    earlier = [InvocationMetricResult.not_evaluated(EARLIER_TURN) for _ in range(last)]
    return judged.model_copy(update={"per_invocation": [*earlier, *judged.per_invocation]})


SPEC = builtin(NAME, evaluate,
               "An LLM judge checks each rubric (yes/no) against the whole conversation, once, on the last turn")
