"""Source of an agent folder that answers every turn with the expected reply after a fixed delay.

Used by the dashboard tests (a run that takes a while) and the key-latency benchmark (a paced stream
of engine events). It is the real Agent interface, loaded from a real agent folder.
"""

PACED_AGENT = '''
"""A paced agent: answers each turn with the expected reply after a fixed delay."""
import asyncio

from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Invocation

DELAY = {delay}


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        await asyncio.sleep(DELAY)
        expected = self.case.conversation[index]
        return Invocation(user_content=user_content, invocation_id=expected.invocation_id,
                          final_response=expected.final_response, intermediate_data=expected.intermediate_data)


class Paced(Agent):
    name = "{name}"

    async def new_session(self, case, ctx):
        return Session(case)


root_agent = Paced()
'''


def paced_agent_source(delay: float, name: str = "paced") -> str:
    return PACED_AGENT.format(delay=delay, name=name)
