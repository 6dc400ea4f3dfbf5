"""Agent code cannot take a run down: exit, block, leak threads, return junk or raise CancelledError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli_run import run_cli, saved_cases
from tests.support.evalfiles import case, turn, write_set

ROOT = str(Path(__file__).resolve().parents[2])

EXITING = '''
"""A native agent whose tool calls sys.exit(0)."""
import sys

from tui_eval.agents.native import NativeAgent


def quit_now() -> str:
    """Leave."""
    sys.exit(0)


def policy(turn):
    if "quit" in turn.user_text and not turn.results:
        return [("quit_now", {})]
    return "hello"


root_agent = NativeAgent("exiter", "Say hello.", tools=[quit_now], policy=policy)
'''

MISBEHAVING = '''
"""A custom agent that misbehaves in the way each prompt asks."""
import asyncio
import time

from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import FunctionCall, IntermediateData, Invocation


class Session(AgentSession):
    def __init__(self, case):
        self.case = case

    async def turn(self, user_content, index):
        text = user_content.text
        if text == "block":
            time.sleep(30)  # a sync call on the loop, as ADK runs sync tools
        if text == "none":
            return None
        if text == "dict":
            return {"final_response": {"parts": [{"text": "hello"}]}}
        if text == "unsaveable":
            # The models accept any JSON-ish args; a set inside them cannot be written to a file.
            return Invocation(user_content=user_content, intermediate_data=IntermediateData(
                tool_uses=[FunctionCall(name="t", args={"s": {1, 2}})]))
        if text == "cancel":
            raise asyncio.CancelledError()
        if text == "interrupt":
            raise KeyboardInterrupt
        expected = self.case.conversation[index]
        return Invocation(user_content=user_content, invocation_id=expected.invocation_id,
                          final_response=expected.final_response, intermediate_data=expected.intermediate_data)


class Misbehaving(Agent):
    async def new_session(self, case, ctx):
        return Session(case)


root_agent = Misbehaving()
'''

LEAKING = '''
"""A native agent whose tool starts a non-daemon thread that outlives the run."""
import threading
import time

from tui_eval.agents.native import NativeAgent


def start_job() -> str:
    """Start a background job."""
    threading.Thread(target=time.sleep, args=(300,), name="leaked-job", daemon=False).start()
    return "started"


def policy(turn):
    if not turn.results:
        return [("start_job", {})]
    return "hello"


root_agent = NativeAgent("leaker", "Start jobs.", tools=[start_job], policy=policy)
'''


def _folder(tmp_path: Path, name: str, source: str, *cases: dict) -> tuple[Path, Path]:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "agent.py").write_text(source)
    (folder / "__init__.py").write_text("from . import agent\n")
    evalset = write_set(folder / f"{name}.evalset.json", name, *cases)
    return folder, evalset


def test_a_tool_calling_sys_exit_fails_its_case_and_the_run_goes_on(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, "exiter", EXITING,
                              case("c_quit", turn("please quit", "bye")), case("c_ok", turn("hi", "hello")))
    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", str(folder), str(evalset), "--json", str(out_json), "--concurrency", "1")
    assert code == 1, (out, err)
    assert "Total: 1 passed, 1 failed, 0 not evaluated" in out
    assert "sys.exit(0)" in out
    cases = saved_cases(folder)
    assert cases["c_ok"]["status"] == 1 and cases["c_quit"]["status"] == 2
    error = cases["c_quit"]["error"]
    assert "sys.exit(0)" in error and "Traceback" in error and "quit_now" in error
    statuses = {c["eval_id"]: c["final_eval_status"] for c in json.loads(out_json.read_text())[0]["eval_case_results"]}
    assert statuses == {"c_quit": 2, "c_ok": 1}


def test_a_turn_blocking_its_loop_times_out_and_later_cases_still_run(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, "blocker", MISBEHAVING,
                              case("c_block", turn("block", "hello")), case("c_ok", turn("hi", "hello")))
    t0 = time.monotonic()
    code, out, err = run_cli("run", str(folder), str(evalset), "--turn-timeout", "1", "--concurrency", "1")
    assert time.monotonic() - t0 < 15, "the blocked turn held up the run"
    assert code == 1, (out, err)
    assert "Total: 1 passed, 1 failed, 0 not evaluated" in out
    assert "turn 1 timed out after 1 s" in out


def test_junk_returns_and_agent_raised_cancel_or_interrupt_fail_their_cases_only(tmp_path: Path) -> None:
    folder, evalset = _folder(
        tmp_path, "junk", MISBEHAVING,
        case("c_none", turn("none", "hello")), case("c_dict", turn("dict", "hello")),
        case("c_cancel", turn("cancel", "hello")), case("c_interrupt", turn("interrupt", "hello")),
        case("c_unsaveable", turn("unsaveable", "hello")), case("c_ok", turn("hi", "hello")),
    )
    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", str(folder), str(evalset), "--json", str(out_json))
    assert code == 1, (out, err)
    total = next(line for line in out.splitlines() if line.startswith("Total:"))
    assert total == "Total: 1 passed, 5 failed, 0 not evaluated", out  # not "cancelled"
    assert "returned an Invocation that cannot be saved: TypeError" in out
    assert "returned NoneType, not an Invocation" in out
    assert "returned dict, not an Invocation" in out
    assert "CancelledError" in out and "KeyboardInterrupt" in out
    results = json.loads(out_json.read_text())[0]["eval_case_results"]
    assert len(results) == 6
    cases = saved_cases(folder)
    assert "Traceback" in cases["c_interrupt"]["error"]


def test_the_process_exits_after_the_summary_despite_a_leaked_non_daemon_thread(tmp_path: Path) -> None:
    folder, evalset = _folder(tmp_path, "leaker", LEAKING, case("c1", turn("go", "hello", [("start_job", {})])))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TUI_EVAL_AGENT_MODE="offline")
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (out, err)
    assert "Total: 1 passed, 0 failed, 0 not evaluated" in out
    # The thread was left in the agent's worker process, which ended with the run: nothing waits for it.
    assert "not waiting" not in err


AT_EXIT = '''
"""A native agent whose tool registers an exit handler (as SDKs flushing telemetry do)."""
import atexit
import os
from pathlib import Path

from tui_eval.agents.native import NativeAgent


def _flush() -> None:
    Path(os.environ["MARKER"]).write_text("flushed")


def flush_later() -> str:
    """Register the flush."""
    atexit.register(_flush)
    return "ok"


def policy(turn):
    if not turn.results:
        return [("flush_later", {})]
    return "goodbye"


root_agent = NativeAgent("flusher", "Flush at exit.", tools=[flush_later], policy=policy)
'''


def test_the_console_script_runs_agent_exit_handlers_and_keeps_its_exit_code(tmp_path: Path) -> None:
    # The console script ends the process right after the exit handlers (no heap teardown): handlers
    # registered by agent code still run, what was printed is all there, and a failed run still exits 1.
    folder, evalset = _folder(tmp_path, "flusher", AT_EXIT, case("c1", turn("go", "hello", [("flush_later", {})])))
    marker = tmp_path / "marker.txt"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TUI_EVAL_AGENT_MODE="offline", MARKER=str(marker))
    proc = subprocess.run([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset),
                           "--log-level", "info"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)  # "goodbye" is not "hello": the case fails
    assert "Total: 0 passed, 1 failed, 0 not evaluated" in proc.stdout
    assert ".evalset_result.json\nResult: exit 1 (failed): 1 case failed\n" in proc.stdout  # saved, then the verdict
    assert proc.stdout.endswith("Result: exit 1 (failed): 1 case failed\n"), proc.stdout  # the last line made it out
    assert marker.read_text() == "flushed"


ADK_BLOCKING = '''
import time

from google.adk.agents import LlmAgent


def lookup(city: str) -> dict:
    """Look a city up (a sync tool: ADK runs it on the event loop)."""
    if city == "Paris":
        time.sleep(20)
    return {"city": city, "ok": True}


root_agent = LlmAgent(name="lookup_agent", model="gemini-2.5-flash", instruction="Look cities up.", tools=[lookup])
'''


def test_an_adk_sync_tool_that_blocks_times_out_and_the_next_case_runs(tmp_path: Path, gemini_env) -> None:
    from tests.support.fake_gemini import function_call_reply, text_reply

    def respond(request):
        user = next((p.get("text", "") for c in request.contents if c.get("role") == "user"
                     for p in c.get("parts") or [] if "text" in p), "")
        city = "Paris" if "Paris" in user else "Rome"
        if not request.function_responses:
            return function_call_reply("lookup", {"city": city}, id=f"call-{city}")
        return text_reply(f"{city} looked up.")

    gemini_env.responder = respond
    folder, evalset = _folder(
        tmp_path, "lookup_agent", ADK_BLOCKING,
        case("paris", turn("Look up Paris", "Paris looked up.", [("lookup", {"city": "Paris"})])),
        case("rome", turn("Look up Rome", "Rome looked up.", [("lookup", {"city": "Rome"})])),
    )
    t0 = time.monotonic()
    code, out, err = run_cli("run", str(folder), str(evalset), "--turn-timeout", "2", "--concurrency", "1",
                          "--no-save")
    assert time.monotonic() - t0 < 15, "the blocking sync tool held up the run"
    assert code == 1, (out, err)
    assert "Total: 1 passed, 1 failed, 0 not evaluated" in out, out + err
    assert "turn 1 timed out after 2 s" in out
