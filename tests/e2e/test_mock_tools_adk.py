"""`tui-eval run --mock-tools` with a real google-adk agent (ADK's Runner against the fake Gemini server):
a tool whose backend is down passes on the recorded responses, an unrecorded call fails with
`unexpected call`, fallback runs the real tool, and a live run accepted with `a` makes the suite hermetic."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from tests.support.fake_gemini import FakeGemini, RecordedRequest, function_call_reply, text_reply
from tui_eval.cli import main

AGENT_PY = '''
import json
import os
from pathlib import Path

from google.adk.agents import LlmAgent

LOG = Path(__file__).with_name("tool_calls.log")


def get_weather(city: str) -> dict:
    """Current weather of a city (a backend that is down unless WEATHER_BACKEND=up)."""
    with LOG.open("a") as f:
        f.write(json.dumps({"tool": "get_weather", "city": city}) + "\\n")
    if os.environ.get("WEATHER_BACKEND") != "up":
        raise ConnectionError("weather backend unreachable")
    return {"city": city, "forecast": "sunny", "celsius": 21}


def get_time(city: str) -> dict:
    """Current local time of a city."""
    with LOG.open("a") as f:
        f.write(json.dumps({"tool": "get_time", "city": city}) + "\\n")
    return {"city": city, "time": "10:30"}


root_agent = LlmAgent(
    name="weather_agent",
    model="gemini-2.5-flash",
    instruction="You answer weather and time questions with your tools.",
    tools=[get_weather, get_time],
)
'''

RECORDED = {"city": "Paris", "forecast": "sunny", "celsius": 21}


def _turn(text: str, calls: list[tuple[str, dict, dict | None]], final: str) -> dict:
    return {
        "invocation_id": "",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": final}]},
        "intermediate_data": {
            "tool_uses": [{"name": n, "args": a} for n, a, _r in calls],
            "tool_responses": [{"name": n, "response": r} for n, _a, r in calls if r is not None],
            "intermediate_responses": [],
        },
    }


def _write_agent(tmp_path: Path, *, recorded: bool = True) -> tuple[Path, Path]:
    folder = tmp_path / "weather_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    eval_set = {
        "eval_set_id": "weather",
        "eval_cases": [
            {
                "eval_id": "paris",
                "conversation": [_turn("Weather in Paris?", [("get_weather", {"city": "Paris"},
                                                              RECORDED if recorded else None)],
                                       "It is sunny and 21 C in Paris.")],
                "session_input": {"app_name": "weather_agent", "user_id": "u1", "state": {}},
            },
        ],
    }
    eval_file = folder / "weather.evalset.json"
    eval_file.write_text(json.dumps(eval_set))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0,
                                                                      "response_match_score": 0.8}}))
    return folder, eval_file


def _script(fake: FakeGemini, *, also_time: bool = False) -> None:
    """The model asks get_weather (then get_time when `also_time`), then says what the tools answered."""

    def respond(request: RecordedRequest):
        answered = {fr["name"]: fr.get("response") for fr in request.function_responses}
        if "get_weather" not in answered:
            return function_call_reply("get_weather", {"city": "Paris"}, id="call-w")
        if also_time and "get_time" not in answered:
            return function_call_reply("get_time", {"city": "Paris"}, id="call-t")
        weather = answered["get_weather"] or {}
        if weather.get("forecast") == "sunny":
            return text_reply(f"It is sunny and {weather.get('celsius')} C in Paris.")
        return text_reply("Sorry, I could not get the weather.")

    fake.responder = respond


def _tool_log(folder: Path) -> list[dict]:
    log = folder / "tool_calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def env(gemini_env: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> FakeGemini:
    monkeypatch.delenv("WEATHER_BACKEND", raising=False)
    return gemini_env


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", *args, "--no-save"], out, err)
    return code, out.getvalue() + err.getvalue()


def test_a_down_backend_passes_on_the_recorded_responses(env: FakeGemini, tmp_path: Path) -> None:
    _script(env)
    folder, eval_file = _write_agent(tmp_path)
    # Live, the real tool fails and so does the case.
    code, text = _run(str(folder), str(eval_file))
    assert code == 1 and "0 passed, 1 failed" in text, text
    assert _tool_log(folder) == [{"tool": "get_weather", "city": "Paris"}]
    (folder / "tool_calls.log").unlink()
    # Mocked: the model still runs (the fake Gemini sees the recorded response), the tool never does.
    env.requests.clear()
    json_out = tmp_path / "mocked.json"
    code, text = _run("--mock-tools", str(folder), str(eval_file), "--json", str(json_out))
    assert code == 0 and "1 passed, 0 failed" in text, text
    assert _tool_log(folder) == []
    sent = [fr for req in env.requests for fr in req.function_responses]
    assert [fr["response"] for fr in sent] == [RECORDED]
    [result] = json.loads(json_out.read_text())
    [case] = result["eval_case_results"]
    assert case["final_eval_status"] == 1


def test_an_unrecorded_call_fails_with_unexpected_call(env: FakeGemini, tmp_path: Path) -> None:
    _script(env, also_time=True)
    folder, eval_file = _write_agent(tmp_path)
    code, text = _run(str(folder), str(eval_file), "--mock-tools=strict", "--print-detailed-results")
    assert code == 1, text
    assert 'unexpected call get_time(city="Paris"): no recorded response' in text
    assert _tool_log(folder) == []  # neither the recorded nor the unrecorded tool ran
    # fallback: the unrecorded call runs the real tool, the recorded one still does not.
    code, text = _run(str(folder), str(eval_file), "--mock-tools=fallback")
    assert "unexpected call" not in text
    assert _tool_log(folder) == [{"tool": "get_time", "city": "Paris"}]


def test_a_live_run_accepted_makes_the_suite_hermetic(env: FakeGemini, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Run once against the real backend, accept the turn (the dashboard's `a`), then run mocked with the
    backend down: the accepted file carries the tool's real response, and the mocked run passes on it."""
    from tui_eval.api import evaluate
    from tui_eval.schema.edits import accept_case
    from tui_eval.schema.load import load_eval_set

    _script(env)
    folder, eval_file = _write_agent(tmp_path, recorded=False)
    monkeypatch.setenv("WEATHER_BACKEND", "up")
    record = evaluate(folder, eval_file, raise_on_failure=False)
    [case] = record.results[0].case_results
    # The live run kept the tool's real response in the actual invocation.
    assert [r.response for r in case.actual[0].tool_responses] == [RECORDED]
    accept_case(eval_file, "paris", case.actual, expected_turns=1)
    accepted = load_eval_set(eval_file).eval_cases[0].conversation or []
    assert [r.response for r in accepted[0].tool_responses] == [RECORDED]
    monkeypatch.delenv("WEATHER_BACKEND")
    (folder / "tool_calls.log").unlink()
    code, text = _run(str(folder), str(eval_file), "--mock-tools")
    assert code == 0 and "1 passed, 0 failed" in text, text
    assert _tool_log(folder) == []
