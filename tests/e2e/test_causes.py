"""Failures grouped by cause (issue 21, part 4), from the typed verdict details, no LLM: a run of the demo
agents with every failure kind they carry (a scripted judge on 127.0.0.1 sees the judged faults), in
`--print-detailed-results`, `--md` and `tui-eval report`; agent errors grouped by their exception."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tests.support.demo_judge import demo_judge
from tests.support.evalfiles import case, turn, write_set
from tests.support.fake_gemini import FakeGemini
from tui_eval.cli import main
from tui_eval.engine.causes import agent_error_label

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"

# Every cause of the three demo agents' eval sets, with the cases under it (demo_agents/README.md).
EXPECTED = {
    "hello_world": [
        "4  response below 0.8: roll_and_check_prime, roll_twelve_in_words, prime_of_my_own_roll, ten_sided_wording",
        "1  arg sides differs in roll_die: roll_twelve_in_words",
        "1  calls out of order: check_then_roll",
        "1  extra call roll_die: prime_of_my_own_roll",
        "1  missing call check_prime: roll_and_check_prime",
    ],
    "home_automation": [
        "2  extra call get_devices: bedroom_temperature_then_lamp, all_office_lights_off",
        "1  arg celsius differs in set_temperature: half_degree",
        "1  calls out of order: bedroom_temperature_then_lamp",
        "1  judge: response does not match the reference: half_degree",
        "1  missing call set_device_info: all_office_lights_off",
        "1  response below 0.7: all_office_lights_off",
        "7  not evaluated: no Vertex AI settings: kitchen_light_on, living_room_temperature, "
        "bedroom_temperature_then_lamp, all_office_lights_off, half_degree, … 2 more",
    ],
    "support": [
        "1  arg order_id differs in get_order_status: lowercase_order_id",
        "1  extra call create_ticket: password_reset",
        "1  judge: unsupported sentences: return_used_item",
        "1  missing call search_knowledge_base: password_reset",
        "1  rubric 'grounded' failed: return_used_item",
    ],
}


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "demo"
    shutil.copytree(DEMO, dest, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return dest


def _causes_block(out: str) -> list[str]:
    lines = out.splitlines()
    at = lines.index("Failures by cause:")
    block = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        block.append(line.strip())
    return block


@pytest.mark.parametrize("agent", list(EXPECTED))
def test_a_demo_run_groups_every_failure_kind(agent: str, demo_copy: Path, gemini_env: FakeGemini,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")  # the demo's own policy; the judge is the fake
    gemini_env.responder = demo_judge()
    md = demo_copy / "report.md"
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(demo_copy / agent), str(demo_copy / agent / f"{agent}.evalset.json"),
                 "--print-detailed-results", "--md", str(md)], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert _causes_block(out.getvalue()) == EXPECTED[agent]
    # Per case too, under its detailed results.
    if agent == "support":
        assert "  causes: judge: unsupported sentences; rubric 'grounded' failed" in out.getvalue()
    # The Markdown report has the same groups as a table, and `tui-eval report` rebuilds it from history.
    report = md.read_text()
    section = report[report.index("### Failures by cause"):].split("\n\n")[1]
    rows = [line for line in section.splitlines()[2:]]
    assert len(rows) == len(EXPECTED[agent])
    first_count, first_label = EXPECTED[agent][0].split(": ")[0].split("  ", 1)
    assert rows[0].startswith(f"| {first_count.strip()} | {first_label.replace('_', chr(92) + '_')} |")
    again = io.StringIO()
    assert main(["report", str(demo_copy / agent)], again, io.StringIO()) == 0
    assert "### Failures by cause" in again.getvalue()
    assert again.getvalue().split("### Failures by cause")[1].split("###")[0] == \
        report.split("### Failures by cause")[1].split("###")[0]


AGENT = '''
import asyncio
from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Content, Invocation, Part


class Session(AgentSession):
    async def turn(self, user_content, index):
        text = user_content.parts[0].text
        if text.startswith("crash"):
            raise ValueError(f"cannot parse {text!r}")
        if text.startswith("hang"):
            await asyncio.sleep(30)
        return Invocation(user_content=user_content, final_response=Content(role="model", parts=[Part(text="ok")]))


class Bad(Agent):
    async def new_session(self, case, ctx):
        return Session()


root_agent = Bad()
'''


def test_agent_errors_group_by_their_exception(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "__init__.py").write_text("from . import agent\n")
    evalset = write_set(folder / "bad.evalset.json", "bad", case("crash1", turn("crash 1", "ok")),
                        case("crash2", turn("crash 22", "ok")), case("hang", turn("hang on", "ok")),
                        case("fine", turn("hello", "ok")))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(folder), str(evalset), "--no-save", "--turn-timeout", "1", "--print-detailed-results"],
                out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert _causes_block(out.getvalue()) == ["2  agent error: ValueError: crash1, crash2",
                                             "1  agent error: timed out: hang"]


@pytest.mark.parametrize(("error", "label"), [
    ("ValueError: cannot parse 'x'", "agent error: ValueError"),
    ("the agent crashed: RuntimeError in tool lookup\nTraceback ...", "agent error: RuntimeError"),
    ("model call failed: TimeoutError: read timed out", "agent error: TimeoutError"),
    ("turn 3 timed out after 120 s", "agent error: timed out"),
    ("the agent's worker exited with code 7", "agent error: the agent's worker exited with code N"),
])
def test_agent_error_labels(error: str, label: str) -> None:
    assert agent_error_label(error) == label
