"""tui-eval from pytest, on the demo agents.

Needs: `pip install -e ".[dev]"` (pytest and pytest-asyncio), run from the repository folder:

    pytest docs/examples/test_demo_agents.py

No API key: the demo agents run offline and the judged metrics are not evaluated.
"""

import pytest

import tui_eval

PASSING = "greeting,roll_six_sided,check_two_numbers,roll_twice_then_check"


def test_passing_cases():
    # Raises AssertionError naming each case and metric that did not pass, like ADK's AgentEvaluator.
    record = tui_eval.evaluate("demo_agents/hello_world",
                               f"demo_agents/hello_world/hello_world.evalset.json:{PASSING}")
    assert [case.status.name for result in record.results for case in result.case_results] == ["PASSED"] * 4


def test_a_failing_case_names_its_metric():
    with pytest.raises(AssertionError, match="tool_trajectory_avg_score"):
        tui_eval.evaluate("demo_agents/hello_world", "demo_agents/hello_world/hello_world.evalset.json:check_then_roll")


async def test_inside_an_event_loop():  # or: await tui_eval.aevaluate(...)
    record = await tui_eval.aevaluate("demo_agents/hello_world/__init__.py", "demo_agents/hello_world/hello_world.evalset.json:greeting")
    assert len(record.results) == 1
