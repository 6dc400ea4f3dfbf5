"""`tui-eval import-session`: a session a real google-adk Runner produced (against the local fake Gemini
server) becomes a case, which then replays, and runs against the agent again, to a pass."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from tests.support.cli_run import run_cli
from tests.support.fake_gemini import FakeGemini, RecordedRequest, function_call_reply, text_reply

AGENT_PY = '''
from google.adk.agents import LlmAgent


def get_weather(city: str) -> dict:
    """Current weather of a city."""
    return {"city": city, "forecast": "sunny", "celsius": 21}


root_agent = LlmAgent(
    name="weather_agent",
    model="gemini-2.5-flash",
    instruction="You answer weather questions with your tool.",
    tools=[get_weather],
)
'''


def _last_user_text(request: RecordedRequest) -> str:
    texts = [p["text"] for c in request.contents if c.get("role") == "user"
             for p in c.get("parts") or [] if "text" in p]
    return texts[-1] if texts else ""


def _script(fake: FakeGemini) -> None:
    """Turn 1 asks for Paris: a tool call, then the answer. Turn 2 says thanks: a plain answer."""

    def respond(request: RecordedRequest):
        user = _last_user_text(request)
        last = request.contents[-1] if request.contents else {}
        answered = any("functionResponse" in p or "function_response" in p for p in last.get("parts") or [])
        if "Paris" in user and not answered:
            return function_call_reply("get_weather", {"city": "Paris"}, id="call-w")
        if "Paris" in user:
            return text_reply("It is sunny and 21 C in Paris.")
        return text_reply("You are welcome!")

    fake.responder = respond


def _no_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


async def _session_json(folder: Path, *, by_alias: bool) -> tuple[str, list[object]]:
    """Two turns with the agent in ADK's own Runner: the session as ADK writes it, and the invocations
    `adk web`'s "add session to eval set" makes of it."""
    import importlib.util
    import sys

    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.genai import types

    spec = importlib.util.spec_from_file_location(f"agent_{id(folder)}", folder / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    service = InMemorySessionService()
    runner = Runner(app_name="weather_agent", agent=module.root_agent, session_service=service)
    session = await service.create_session(app_name="weather_agent", user_id="u7")
    for text in ("What is the weather in Paris?", "Thanks!"):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _event in runner.run_async(user_id="u7", session_id=session.id, new_message=message):
            pass
    stored = await service.get_session(app_name="weather_agent", user_id="u7", session_id=session.id)
    assert stored is not None
    await runner.close()
    from google.adk.cli.utils.evals import convert_session_to_eval_invocations

    adk_made = [_no_nulls(inv.model_dump(mode="json")) for inv in convert_session_to_eval_invocations(stored)]
    # `adk api_server` answers with camelCase keys and no nulls (FastAPI: by_alias, exclude_none).
    text = stored.model_dump_json(by_alias=True, exclude_none=True) if by_alias else stored.model_dump_json()
    return text, adk_made


@pytest.mark.parametrize("by_alias", [True, False], ids=["api_server", "model_dump_json"])
def test_a_runner_session_imports_and_replays_to_a_pass(
    tmp_path: Path, gemini_env: FakeGemini, by_alias: bool
) -> None:
    _script(gemini_env)
    folder = tmp_path / "weather_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    session_file = tmp_path / "session.json"
    text, adk_made = asyncio.run(_session_json(folder, by_alias=by_alias))
    session_file.write_text(text)
    eval_file = folder / "chat.evalset.json"

    code, out, err = run_cli("import-session", str(session_file), str(eval_file), "--id", "paris_chat")
    assert code == 0, err
    assert "as case paris_chat (2 turn(s)) into new eval set" in out

    data = json.loads(eval_file.read_text())
    [case] = data["eval_cases"]
    assert data["eval_set_id"] == "chat" and case["eval_id"] == "paris_chat"
    assert case["session_input"] == {"app_name": "weather_agent", "user_id": "u7", "state": {}}
    first, second = case["conversation"]
    assert first["user_content"]["parts"][0]["text"] == "What is the weather in Paris?"
    assert first["final_response"]["parts"][0]["text"] == "It is sunny and 21 C in Paris."
    calls = [p["function_call"] for e in first["intermediate_data"]["invocation_events"]
             for p in (e["content"] or {}).get("parts", []) if "function_call" in p]
    responses = [p["function_response"] for e in first["intermediate_data"]["invocation_events"]
                 for p in (e["content"] or {}).get("parts", []) if "function_response" in p]
    assert [(c["name"], c["args"]) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert responses[0]["response"] == {"city": "Paris", "forecast": "sunny", "celsius": 21}
    assert second["final_response"]["parts"][0]["text"] == "You are welcome!"
    # As ADK builds it: the final answer's event stays, its text only on final_response, usage snake_case.
    [event] = second["intermediate_data"]["invocation_events"]
    assert event["author"] == "weather_agent" and event["content"] is None
    assert event["usage_metadata"]["total_token_count"] > 0
    # The same turns as google-adk's own conversion of the session (adk web's "add session to eval set").
    assert _no_nulls(case["conversation"]) == adk_made
    # ADK itself reads the case back.
    from google.adk.evaluation.eval_set import EvalSet

    EvalSet.model_validate(data)

    code, out, err = run_cli("run", f"replay:{eval_file}", str(eval_file), "--no-save")
    assert code == 0, out + err
    assert "1 passed" in out
    # And the agent, run again on the same (scripted) model, passes its own conversation.
    code, out, err = run_cli("run", str(folder), str(eval_file), "--no-save")
    assert code == 0, out + err
    assert "1 passed" in out


@pytest.mark.parametrize(("content", "says"), [
    ("{not json", "invalid JSON"),
    ('{"eval_set_id": "x", "eval_cases": []}', "this is an eval set, not an ADK session"),
    ('[{"id": "s"}]', "this is a JSON list"),
    ('{"id": "s", "appName": "a", "userId": "u", "events": []}', "has no events: nothing to import"),
    ('{"id": "s", "appName": "a", "userId": "u", "events": [{"author": "user"}]}', "$.events[0]: no invocation id"),
    ('{"id": "s", "appName": "a", "userId": "u", "events": [{"invocationId": "e", "author": "user", '
     '"content": {"parts": [{"txt": "hi"}]}}]}', "$.events[0].content.parts[0]"),
])
def test_bad_or_foreign_json_is_one_error_and_the_eval_set_is_untouched(
    tmp_path: Path, content: str, says: str
) -> None:
    session_file = tmp_path / "session.json"
    session_file.write_text(content)
    eval_file = tmp_path / "kept.evalset.json"
    original = b'{\n    "eval_set_id": "kept",\n    "eval_cases": []\n}'
    eval_file.write_bytes(original)
    code, out, err = run_cli("import-session", str(session_file), str(eval_file))
    assert code == 2 and out == ""
    [line] = err.splitlines()
    assert line.startswith("error: ") and says in line and line.endswith("the eval set was not changed")
    assert eval_file.read_bytes() == original


def test_an_id_already_taken_is_refused(tmp_path: Path) -> None:
    session = {"id": "s1", "app_name": "a", "user_id": "u", "events": [
        {"invocation_id": "e-1", "author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}},
        {"invocation_id": "e-1", "author": "a", "content": {"role": "model", "parts": [{"text": "hello"}]}},
    ]}
    session_file = tmp_path / "s.json"
    session_file.write_text(json.dumps(session))
    eval_file = tmp_path / "set.evalset.json"
    original = b'{"eval_set_id": "set", "eval_cases": [{"eval_id": "s1", "conversation": []}]}\n'
    eval_file.write_bytes(original)
    code, _out, err = run_cli("import-session", str(session_file), str(eval_file))
    assert code == 2 and "case id 's1' is taken; choose another (--id)" in err
    assert eval_file.read_bytes() == original
    code, out, _err = run_cli("import-session", str(session_file), str(eval_file), "--id", "s2")
    assert code == 0 and "as case s2 (1 turn(s)) into " + str(eval_file) in out
    text = eval_file.read_text()
    # Written as accept writes: the file's own layout (one line here), its case untouched, the new one last.
    assert text.startswith('{"eval_set_id": "set", "eval_cases": [{"eval_id": "s1", "conversation": []}, '
                           '{"eval_id": "s2", "conversation": [{"invocation_id": "e-1", ')
    assert text.endswith("}\n") and text.count("\n") == 1
