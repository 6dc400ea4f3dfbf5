"""Builders for small eval sets on disk (expected + recorded), shared by core and CLI tests."""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from tui_eval.schema.model import EvalCase, Invocation


def turn(prompt: str, response: str, calls: Sequence[tuple[str, dict[str, Any]]] = (), inv_id: str = "t") -> dict:
    return {
        "invocation_id": inv_id,
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {
            "tool_uses": [{"id": f"{inv_id}-{i}", "name": n, "args": a} for i, (n, a) in enumerate(calls)],
            "tool_responses": [],
            "intermediate_responses": [],
        },
    }


def case(eval_id: str, *turns: dict) -> dict:
    return {"eval_id": eval_id, "conversation": list(turns),
            "session_input": {"app_name": "dice", "user_id": "user", "state": {}}}


def write_set(path: Path, eval_set_id: str, *cases: dict) -> Path:
    path.write_text(json.dumps({"eval_set_id": eval_set_id, "eval_cases": list(cases)}, indent=1))
    return path


def dice_pair(folder: Path) -> tuple[Path, Path]:
    """golden.evalset.json and recorded.evalset.json: c_pass passes, c_args fails on args,
    c_words fails on wording only, c_two has two turns with one failing trajectory."""
    golden = write_set(
        folder / "golden.evalset.json",
        "golden",
        case("c_pass", turn("roll a 6 sided die", "You rolled a 4.", [("roll_die", {"sides": 6})])),
        case("c_args", turn("roll a 20 sided die", "You rolled a 17.", [("roll_die", {"sides": 20})])),
        case("c_words", turn("is 7 prime", "Yes, 7 is a prime number.", [("check_prime", {"nums": [7]})])),
        case(
            "c_two",
            turn("hi", "Hello! I can roll dice.", [], "a"),
            turn("roll twice", "Rolled 2 and 5.", [("roll_die", {"sides": 6}), ("roll_die", {"sides": 6})], "b"),
        ),
    )
    recorded = write_set(
        folder / "recorded.evalset.json",
        "recorded",
        case("c_pass", turn("roll a 6 sided die", "You rolled a 4.", [("roll_die", {"sides": 6.0})])),
        case("c_args", turn("roll a 20 sided die", "You rolled a 17.", [("roll_die", {"sides": 12})])),
        case("c_words", turn("is 7 prime", "Seven: prime indeed, no doubt.", [("check_prime", {"nums": [7]})])),
        case(
            "c_two",
            turn("hi", "Hello! I can roll dice.", [], "a"),
            turn("roll twice", "Rolled 2 and 5.", [("roll_die", {"sides": 6})], "b"),
        ),
    )
    return golden, recorded


def turns_of(case: EvalCase) -> list[Invocation]:
    """A conversation case's reference turns (a scenario case has none: the test is wrong to ask)."""
    assert case.conversation is not None, f"{case.eval_id} is a scenario case"
    return case.conversation


async def first_turn(folder: Path, eval_file: Path, case_index: int = 0) -> Invocation:
    """The agent of `folder`, loaded in this process, answering the first turn of a case of `eval_file`
    (its session and the agent closed after)."""
    from tui_eval.agents import load_agent
    from tui_eval.agents.base import CaseContext
    from tui_eval.schema.load import load_eval_set

    agent = load_agent(str(folder))
    eval_set = load_eval_set(eval_file)
    case = eval_set.eval_cases[case_index]
    try:
        session = await agent.new_session(case, CaseContext(eval_set, eval_file))
        inv = await session.turn(turns_of(case)[0].user_content, 0)
        await session.close()
    finally:
        await agent.aclose()
    return inv
