"""Talk to an agent, keep it as a case (Pilot): the chat runs the agent in the engine's worker processes,
shows its tool calls, responses and answer, edits and retries the last message, saves the conversation as a
case that then runs like any other; against the offline demo agent and a real google-adk agent on the local
fake Gemini server."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from tests.app.conftest import settle, wait_until
from tests.support.fake_gemini import FakeGemini, RecordedRequest, function_call_reply, text_reply

DEMO = Path(__file__).resolve().parents[2] / "demo_agents" / "hello_world"


async def _type(pilot, text: str) -> None:
    await pilot.press(*text, "enter")


async def _answered(pilot, turns: int) -> None:
    chat = pilot.app.screen.chat
    await wait_until(pilot, lambda: chat.complete and len(chat.turns) == turns, timeout=60)
    await pilot.pause()


def _body(app) -> str:
    return str(app.screen.query_one("#chat-body").render())


async def test_chat_with_the_demo_agent_edit_retry_and_save_as_a_case(tmp_path: Path, make_app) -> None:
    root = tmp_path / "ws"
    shutil.copytree(DEMO, root / "hello_world")
    eval_file = root / "hello_world" / "hello_world.evalset.json"
    before = json.loads(eval_file.read_text())
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(110, 34)) as pilot:
        await settle(pilot)
        await pilot.press("T")
        assert app.screen.id == "chat"
        await _type(pilot, "Roll a 6-sided die.")
        await _answered(pilot, 1)
        body = _body(app)
        assert body.startswith("you    Roll a 6-sided die.\n  tool call     roll_die({\"sides\": 6})\n"
                               "  tool response roll_die → "), body
        assert "\nagent  " in body
        assert "tools with side effects run again" in str(app.screen.query_one("#chat-status").render())

        await _type(pilot, "Is 9 prime?")
        await _answered(pilot, 2)
        # Edit the last message: it comes back into the input, its answer goes.
        await pilot.press("ctrl+t")
        assert app.screen.query_one("#chat-input").value == "Is 9 prime?"
        assert app.screen.chat.messages == ["Roll a 6-sided die."]
        await pilot.press(*["backspace"] * len("9 prime?"), *"7 prime?", "enter")
        await _answered(pilot, 2)
        assert 'check_prime({"nums": [7]})' in _body(app)
        await pilot.press("ctrl+r")  # ask again: the same conversation, played again
        await _answered(pilot, 2)

        await pilot.press("ctrl+s")
        assert app.screen.__class__.__name__ == "SaveChatScreen"
        await _type(pilot, "greeting")  # taken: the set has a case "greeting"
        await settle(pilot)
        [failure] = [n for n in app._notifications if n.severity == "error"]
        assert "case id 'greeting' is taken" in failure.message
        assert json.loads(eval_file.read_text()) == before  # nothing written, the chat kept
        assert app.screen.id == "chat" and len(app.screen.chat.turns) == 2

        await pilot.press("ctrl+s")
        await _type(pilot, "chat_rolls")
        await settle(pilot)
        data = json.loads(eval_file.read_text())
        assert data["eval_cases"][:-1] == before["eval_cases"]
        new = data["eval_cases"][-1]
        assert new["eval_id"] == "chat_rolls"
        assert [t["user_content"]["parts"][0]["text"] for t in new["conversation"]] == [
            "Roll a 6-sided die.", "Is 7 prime?"]
        assert new["session_input"]["app_name"] == "hello_world"
        from tui_eval.schema.load import read_eval_case

        calls = [[c.name for c in inv.tool_calls] for inv in read_eval_case(new).conversation or []]
        assert calls == [["roll_die"], ["check_prime"]]

        # The new case is in the tree and runs like any other (the seeded dice roll the same again).
        await pilot.press("escape")
        assert app.main.selected.key.eval_id == "chat_rolls"
        await pilot.press("r")
        await settle(pilot, timeout=60)
        key = app.listing.key(eval_file, "chat_rolls")
        await wait_until(pilot, lambda: app.listing.result(key) is not None)  # (fetched from the engine)
        result = app.listing.result(key)
        trajectory = next(m for m in result.metrics if m.metric_name == "tool_trajectory_avg_score")
        assert trajectory.score == 1.0


AGENT_PY = '''
from google.adk.agents import LlmAgent


def get_weather(city: str) -> dict:
    """Current weather of a city."""
    return {"city": city, "forecast": "sunny"}


root_agent = LlmAgent(name="weather_agent", model="gemini-2.5-flash",
                      instruction="Answer weather questions with your tool.", tools=[get_weather])
'''


def _script(fake: FakeGemini) -> None:
    def respond(request: RecordedRequest):
        last = request.contents[-1] if request.contents else {}
        answered = any("functionResponse" in p for p in last.get("parts") or [])
        return text_reply("Sunny in Rome.") if answered else function_call_reply("get_weather", {"city": "Rome"})

    fake.responder = respond


async def test_chat_with_an_adk_agent_on_the_fake_gemini_server(tmp_path: Path, make_app, gemini_env: FakeGemini) -> None:
    _script(gemini_env)
    root = tmp_path / "ws"
    folder = root / "weather_agent"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    eval_file = folder / "weather.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": "weather", "eval_cases": []}, indent=2) + "\n")
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0,
                                                                      "response_match_score": 0.8}}))
    app = make_app(root, recording=None, run_options=None)
    async with app.run_test(size=(110, 34)) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await _type(pilot, "Weather in Rome?")
        await _answered(pilot, 1)
        body = _body(app)
        assert 'tool call     get_weather({"city": "Rome"})' in body
        assert 'tool response get_weather → {"city": "Rome", "forecast": "sunny"}' in body
        assert body.rstrip().endswith("agent  Sunny in Rome.")
        await pilot.press("ctrl+s")
        await _type(pilot, "rome")
        await settle(pilot)
        [new] = json.loads(eval_file.read_text())["eval_cases"]
        events = new["conversation"][0]["intermediate_data"]["invocation_events"]
        assert [p["function_call"]["name"] for e in events for p in (e["content"] or {}).get("parts", [])
                if "function_call" in p] == ["get_weather"]
        from google.adk.evaluation.eval_set import EvalSet

        EvalSet.model_validate(json.loads(eval_file.read_text()))  # ADK reads it back
        await pilot.press("escape", "r")
        await settle(pilot, timeout=60)
        key = app.listing.key(eval_file, "rome")
        await wait_until(pilot, lambda: app.listing.result(key) is not None)  # (fetched from the engine)
        result = app.listing.result(key)
        assert result.status == 1, [(m.metric_name, m.status, m.reason) for m in result.metrics]
