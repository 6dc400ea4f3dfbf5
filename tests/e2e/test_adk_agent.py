"""A real google-adk LlmAgent, run by `tui-eval run` against the local fake Gemini server."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from tests.support.evalfiles import first_turn, turns_of
from tests.support.fake_gemini import FakeGemini, RecordedRequest, function_call_reply, text_reply
from tui_eval.cli import main

AGENT_PY = '''
from google.adk.agents import LlmAgent


def get_weather(city: str) -> dict:
    """Current weather of a city."""
    return {"city": city, "forecast": "sunny", "celsius": 21}


def get_time(city: str) -> dict:
    """Current local time of a city."""
    return {"city": city, "time": "10:30"}


root_agent = LlmAgent(
    name="weather_agent",
    model="gemini-2.5-flash",
    instruction="You answer weather and time questions with your tools.",
    tools=[get_weather, get_time],
)
'''


def _turn(text: str, calls: list[tuple[str, dict]], final: str) -> dict:
    return {
        "invocation_id": "",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": final}]},
        "intermediate_data": {
            "tool_uses": [{"name": n, "args": a} for n, a in calls],
            "tool_responses": [],
            "intermediate_responses": [],
        },
    }


def _write_agent(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "weather_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    eval_set = {
        "eval_set_id": "weather",
        "eval_cases": [
            {
                "eval_id": "paris",
                "conversation": [_turn("Weather and time in Paris?", [("get_weather", {"city": "Paris"}),
                                                                      ("get_time", {"city": "Paris"})],
                                       "Sunny, 21 C, and it is 10:30 in Paris.")],
                "session_input": {"app_name": "weather_agent", "user_id": "u1", "state": {}},
            },
            {
                "eval_id": "rome",
                "conversation": [_turn("Weather in Rome?", [("get_weather", {"city": "Rome"})],
                                       "It is sunny in Rome.")],
                "session_input": {"app_name": "weather_agent", "user_id": "u2", "state": {}},
            },
        ],
    }
    eval_file = folder / "weather.evalset.json"
    eval_file.write_text(json.dumps(eval_set))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    return folder, eval_file


def _user_text(request: RecordedRequest) -> str:
    for content in request.contents:
        if content.get("role") == "user":
            for part in content.get("parts") or []:
                if "text" in part:
                    return part["text"]
    return ""


def _script(fake: FakeGemini) -> None:
    """Paris: two tool calls then an answer; Rome: the agent calls the wrong tool (get_time)."""

    def respond(request: RecordedRequest):
        user = _user_text(request)
        answered = [fr["name"] for fr in request.function_responses]
        if "Paris" in user:
            if not answered:
                return function_call_reply("get_weather", {"city": "Paris"}, id="call-w")
            if answered == ["get_weather"]:
                return function_call_reply("get_time", {"city": "Paris"}, id="call-t")
            return text_reply("Sunny, 21 C, and it is 10:30 in Paris.")
        if not answered:
            return function_call_reply("get_time", {"city": "Rome"}, id="call-r")
        return text_reply("It is 10:30 in Rome.")

    fake.responder = respond


def test_adk_agent_runs_against_fake_gemini(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / "results.json"
    code = main(["run", str(folder), str(eval_file), "--json", str(json_out), "--no-save"], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert "1 passed, 1 failed" in out.getvalue()

    # Every model call reached the fake server through GOOGLE_GEMINI_BASE_URL, with our tools declared.
    assert fake_gemini.calls == 5
    declared = {d["name"] for d in fake_gemini.requests[0].tools[0]["functionDeclarations"]}
    assert declared == {"get_weather", "get_time"}

    [result] = json.loads(json_out.read_text())
    from google.adk.evaluation.eval_result import EvalSetResult

    EvalSetResult.model_validate(result)
    cases = {c["eval_id"]: c for c in result["eval_case_results"]}
    paris, rome = cases["paris"], cases["rome"]
    assert paris["final_eval_status"] == 1 and rome["final_eval_status"] == 2
    metric, *informational = paris["overall_eval_metric_results"]
    assert [m["metric_name"] for m in informational] == ["tool_call_count_v1", "inference_call_count_v1",
                                                         "token_usage_v1", "invocation_duration_v1"]
    assert metric["metric_name"] == "tool_trajectory_avg_score" and metric["score"] == 1.0
    assert rome["overall_eval_metric_results"][0]["score"] == 0.0
    assert paris["session_id"] and paris["user_id"] == "u1"

    actual = paris["eval_metric_result_per_invocation"][0]["actual_invocation"]
    assert actual["final_response"]["parts"][0]["text"] == "Sunny, 21 C, and it is 10:30 in Paris."
    events = actual["intermediate_data"]["invocation_events"]
    calls = [p["function_call"] for e in events for p in (e["content"] or {}).get("parts", []) if "function_call" in p]
    responses = [p["function_response"] for e in events for p in (e["content"] or {}).get("parts", [])
                 if "function_response" in p]
    assert [(c["name"], c["args"], c["id"]) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call-w"), ("get_time", {"city": "Paris"}, "call-t")]
    assert [r["id"] for r in responses] == ["call-w", "call-t"]
    assert responses[0]["response"] == {"city": "Paris", "forecast": "sunny", "celsius": 21}
    assert all(e["author"] == "weather_agent" for e in events)
    assert actual["duration"] > 0
    details = actual["app_details"]["agent_details"]["weather_agent"]
    assert "weather and time questions" in details["instructions"]
    names = {d["name"] for t in details["tool_declarations"] for d in t["function_declarations"]}
    assert names == {"get_weather", "get_time"}


async def test_adk_session_records_tool_timings(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    from tui_eval.agents import load_agent
    from tui_eval.agents.adk import AdkAgent
    from tui_eval.agents.base import CaseContext
    from tui_eval.schema.load import load_eval_set

    agent = load_agent(str(folder))
    assert isinstance(agent, AdkAgent) and agent.name == "weather_agent" and agent.home == folder.resolve()
    eval_set = load_eval_set(eval_file)
    case = eval_set.eval_cases[0]
    session = await agent.new_session(case, CaseContext(eval_set, eval_file))
    inv = await session.turn(turns_of(case)[0].user_content, 0)
    await session.close()
    assert [(t.name, t.call_id) for t in inv.tool_timings] == [("get_weather", "call-w"), ("get_time", "call-t")]
    assert all(t.seconds >= 0 for t in inv.tool_timings)
    assert [c.name for c in inv.tool_calls] == ["get_weather", "get_time"]
    assert inv.intermediate_texts == []


APP_PY = AGENT_PY + '''
from google.adk.apps.app import App

app = App(name="weather_agent", root_agent=root_agent)
'''

FACTORY_PY = AGENT_PY.replace("root_agent = LlmAgent(", "_agent = LlmAgent(") + '''

async def get_agent_async():
    return _agent, None
'''


@pytest.mark.parametrize("source", [APP_PY, FACTORY_PY], ids=["app", "get_agent_async"])
async def test_app_and_agent_factory_entries(
    source: str, tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    _script(fake_gemini)
    folder, eval_file = _write_agent(tmp_path)
    (folder / "agent.py").write_text(textwrap.dedent(source))
    inv = await first_turn(folder, eval_file, 1)
    assert [c.name for c in inv.tool_calls] == ["get_time"]
    assert inv.final_response is not None and inv.final_response.text == "It is 10:30 in Rome."
