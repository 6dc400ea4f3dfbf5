"""A dice-and-primes agent: two tools, and an offline policy with a few realistic bugs to catch.

Offline (no GOOGLE_API_KEY / GEMINI_API_KEY, or TUI_EVAL_AGENT_MODE=offline) a deterministic policy
stands in for the model; with credentials Gemini drives the same tools. The dice are seeded per session,
so every offline run rolls the same numbers.
"""

from __future__ import annotations

import re

from tui_eval.agents.native import NativeAgent, PolicyTurn, Step, ToolContext


def roll_die(sides: int, tool_context: ToolContext) -> int:
    """Roll a die and return the rolled result.

    Args:
        sides: The number of sides of the die.
    """
    result = tool_context.rng.randint(1, int(sides))
    tool_context.state.setdefault("rolls", []).append(result)
    tool_context.state["last_sides"] = int(sides)
    return result


def check_prime(nums: list[int]) -> str:
    """Check which of the given numbers are prime.

    Args:
        nums: The numbers to check.
    """
    primes = [n for n in nums if n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))]
    if not primes:
        return "No prime numbers found."
    return ", ".join(str(p) for p in primes) + (" is a prime number." if len(primes) == 1 else " are prime numbers.")


INSTRUCTION = """You roll dice and answer questions about the outcome of the dice rolls.
You can roll dice of different sizes. When asked to roll a die, call roll_die with the number of sides.
When checking prime numbers, call check_prime with a list of integers. Never decide primality yourself.
When asked to roll a die and check primes, first call roll_die, then call check_prime with the result."""


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\b\d+\b", text)]


def _sides(text: str) -> int:
    # Bug on purpose: only digits are understood ("twelve-sided" falls back to the default of 6).
    match = re.search(r"(\d+)[- ]sided", text)
    return int(match.group(1)) if match else 6


def policy(turn: PolicyTurn) -> Step | str:
    """The offline stand-in for the model: rolls first, checks second, answers from the tool results."""
    text = turn.user_text.lower()
    rolled = turn.last("roll_die")
    checked = turn.last("check_prime")
    wants_roll = "roll" in text  # bug on purpose: "I rolled a 5" triggers a new roll too
    wants_check = "prime" in text
    if wants_roll and rolled is None:
        sides = turn.state.get("last_sides", 6) if "again" in text else _sides(text)
        return Step(calls=[("roll_die", {"sides": sides})])
    if wants_check and checked is None:
        if rolled is not None and "tell me" in text:
            # Bug on purpose: decides primality itself instead of calling check_prime.
            n = rolled.response["result"]
            verdict = "a prime number" if n > 1 and all(n % d for d in range(2, n)) else "not a prime number"
            return f"I rolled a {rolled.args['sides']}-sided die and got {n}. {n} is {verdict}."
        if "both" in text or "all" in text:
            nums = list(turn.state.get("rolls", []))
        else:
            nums = _numbers(re.sub(r"\d+[- ]sided", "", text))
            if not nums and rolled is not None:
                nums = [rolled.response["result"]]
        return Step(calls=[("check_prime", {"nums": nums})])
    parts = []
    if rolled is not None:
        parts.append(f"I rolled a {rolled.args['sides']}-sided die and got {rolled.response['result']}.")
    if checked is not None:
        parts.append(checked.response["result"])
    if parts:
        return " ".join(parts)
    return "Hi! I can roll dice of any size and check whether numbers are prime."


root_agent = NativeAgent(
    name="hello_world_agent",
    instruction=INSTRUCTION,
    tools=[roll_die, check_prime],
    policy=policy,
    description="Rolls dice and checks prime numbers.",
)
