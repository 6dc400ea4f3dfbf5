"""The live loop, driven directly through handle_changes (no real time) and once through watchfiles."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from tests.support.evalfiles import turns_of
from tests.support.metric_helpers import metric_of
from tui_eval.engine.events import (
    AgentReloaded,
    AgentStale,
    CaseFinished,
    CaseKey,
    CasesRemoved,
    CaseStarted,
    FileProblem,
    LiveRunFinished,
    RunError,
)
from tui_eval.engine.live import LiveSession
from tui_eval.engine.runner import RunOptions
from tui_eval.schema.results import EvalStatus

AGENT = '''
from pathlib import Path
from tui_eval.agents.native import NativeAgent

VALUES = {VALUES}
LOG = Path({log!r})


def lookup(key: str) -> str:
    """Look a key up."""
    {tool_body}
    return VALUES.get(key, "unknown")


def policy(turn):
    LOG.open("a").write(turn.user_text + "\\n")  # proves when the agent really ran
    if turn.last("lookup") is None:
        return [("lookup", {{"key": turn.user_text.split()[-1]}})]
    return f"{{turn.results[0].args['key']}} is {{turn.results[0].response['result']}}"


root_agent = NativeAgent("bot", "look things up", tools=[lookup], policy=policy)
'''


def _agent_source(log: Path, values: dict[str, str], tool_body: str = "pass") -> str:
    return AGENT.format(VALUES=repr(values), log=str(log), tool_body=tool_body)


def _case(eval_id: str, key: str, answer: str) -> dict[str, Any]:
    return {
        "eval_id": eval_id,
        "conversation": [{
            "invocation_id": "",
            "user_content": {"role": "user", "parts": [{"text": f"lookup {key}"}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
            "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"key": key}}],
                                  "tool_responses": [], "intermediate_responses": []},
        }],
        "session_input": {"app_name": "bot", "user_id": "u", "state": {}},
    }


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        self.bot = self.root / "bot"
        self.bot.mkdir(parents=True)
        self.log = tmp_path / "calls.log"
        self.eval_file = (self.bot / "bot.evalset.json").resolve()
        self.config = self.bot / "test_config.json"
        self.cases = [_case("a", "apple", "apple is red"), _case("b", "banana", "banana is yellow"),
                      _case("c", "cherry", "cherry is dark red")]
        (self.bot / "agent.py").write_text(_agent_source(self.log, {"apple": "red", "banana": "yellow",
                                                                    "cherry": "dark red"}))
        self.write_eval()
        self.write_config({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})
        self.events: list[Any] = []
        #: Every session a test opens; the fixture closes them (their workers stop at once, instead of the
        #: event loop's teardown waiting for each to end).
        self.sessions: list[LiveSession] = []

    def write_eval(self) -> None:
        self.eval_file.write_text(json.dumps({"eval_set_id": "bot", "eval_cases": self.cases}, indent=1))

    def write_config(self, criteria: dict[str, Any]) -> None:
        self.config.write_text(json.dumps({"criteria": criteria}))

    def agent_calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def key(self, eval_id: str) -> CaseKey:
        return CaseKey(str(self.eval_file), eval_id)

    def session(self, **kw: Any) -> LiveSession:
        kw.setdefault("options", RunOptions(turn_timeout=5, save=False))
        return self.track(LiveSession(self.root, on_event=self.events.append, **kw))

    def track(self, live: LiveSession) -> LiveSession:
        self.sessions.append(live)
        return live

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def started(self) -> list[str]:
        return [e.key.eval_id for e in self.of(CaseStarted)]


@pytest.fixture
async def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    made = Env(tmp_path)
    yield made
    for live in made.sessions:
        await live.aclose()


def status(live: LiveSession, env: Env, eval_id: str) -> EvalStatus:
    return live.results[env.key(eval_id)].status


async def test_initial_run_then_an_edited_case_reruns_only_that_case(env: Env) -> None:
    live = env.session()
    await live.start()
    assert sorted(env.started()) == ["a", "b", "c"]
    assert all(status(live, env, i) == EvalStatus.PASSED for i in "abc")
    before = {k: v for k, v in live.results.items()}

    env.events.clear()
    env.cases[1]["conversation"][0]["final_response"]["parts"][0]["text"] = "bananas are blue"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["b"]
    assert status(live, env, "b") == EvalStatus.FAILED
    # nothing from the earlier run is lost
    assert live.results[env.key("a")] == before[env.key("a")]
    [done] = env.of(LiveRunFinished)
    assert done.keys == (env.key("b"),) and not done.rescore and "bot.evalset.json: b" in done.reason


async def test_added_case_runs_and_removed_case_drops(env: Env) -> None:
    live = env.session()
    await live.start()
    env.events.clear()
    env.cases = [env.cases[0], env.cases[2], _case("d", "date", "date is unknown")]
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["d"]
    assert env.key("b") not in live.results and status(live, env, "d") == EvalStatus.PASSED
    [removed] = env.of(CasesRemoved)
    assert removed.keys == (env.key("b"),)


async def test_a_config_edit_rescore_judges_the_stored_session_state(env: Env) -> None:
    env.cases[0]["session_input"]["state"] = {"user": "ana"}
    env.cases[0]["final_session_state"] = {"user": "ana"}
    env.write_eval()
    live = env.session()
    await live.start()
    assert live.results[env.key("a")].final_session_state == {"user": "ana"}
    env.events.clear()
    env.write_config({"final_session_state_v1": 1.0})
    await live.handle_changes([env.config])
    [done] = env.of(LiveRunFinished)
    assert done.rescore
    # Re-scored from the stored turns and the state they left: judged, not "not known".
    assert metric_of(live.results[env.key("a")], "final_session_state_v1").status == EvalStatus.PASSED
    assert metric_of(live.results[env.key("b")], "final_session_state_v1").status == EvalStatus.NOT_EVALUATED


async def test_config_edit_rescores_without_calling_the_agent(env: Env) -> None:
    live = env.session()
    await live.start()
    calls = len(env.agent_calls())
    assert calls == 6  # three cases, two policy steps each
    inferences = {k: v.actual for k, v in live.results.items()}
    env.events.clear()
    env.write_config({"tool_trajectory_avg_score": 1.0, "response_match_score": 1.0})
    cherry_before = live.results[env.key("c")]
    (env.bot / "agent.py").write_text("raise RuntimeError('the agent must not be loaded for a re-score')\n")

    await live.handle_changes([env.config])
    assert len(env.agent_calls()) == calls  # the agent never ran
    assert not env.of(AgentReloaded)
    [done] = env.of(LiveRunFinished)
    assert done.rescore and sorted(k.eval_id for k in done.keys) == ["a", "b", "c"]
    for key, result in live.results.items():
        assert result.actual == inferences[key]  # the stored inference, re-scored
        assert metric_of(result, "response_match_score").threshold == 1.0
    assert live.results[env.key("c")] != cherry_before
    # the same criteria again: nothing to do
    env.events.clear()
    await live.handle_changes([env.config])
    assert not env.of(LiveRunFinished)


async def test_agent_source_edit_reloads_and_reruns(env: Env) -> None:
    live = env.session()
    await live.start()
    env.events.clear()
    (env.bot / "agent.py").write_text(_agent_source(env.log, {"apple": "green", "banana": "yellow",
                                                              "cherry": "dark red"}))
    await live.handle_changes([env.bot / "agent.py"])
    assert sorted(env.started()) == ["a", "b", "c"]
    assert [e.error for e in env.of(AgentReloaded)] == [None]
    assert status(live, env, "a") == EvalStatus.FAILED  # "apple is green" drifted from "apple is red"
    answer = live.results[env.key("a")].actual[0].final_response
    assert answer is not None and answer.text == "apple is green"
    assert status(live, env, "b") == EvalStatus.PASSED


async def test_syntax_error_fails_the_cases_with_the_error_then_a_fix_passes(env: Env) -> None:
    live = env.session()
    await live.start()
    env.events.clear()
    good = (env.bot / "agent.py").read_text()
    (env.bot / "agent.py").write_text(good.replace("def policy(turn):", "def policy(turn)"))
    await live.handle_changes([env.bot / "agent.py"])
    [reloaded] = env.of(AgentReloaded)
    assert reloaded.error is not None and f"{env.bot / 'agent.py'}:" in reloaded.error
    for eval_id in "abc":
        result = live.results[env.key(eval_id)]
        assert result.status == EvalStatus.FAILED
        assert "SyntaxError" in (result.error or "") and "agent.py:" in (result.error or "")

    (env.bot / "agent.py").write_text(good)
    await live.handle_changes([env.bot / "agent.py"])
    assert all(status(live, env, i) == EvalStatus.PASSED for i in "abc")


async def test_half_written_eval_file_keeps_the_last_good_version(env: Env) -> None:
    live = env.session()
    await live.start()
    before = dict(live.results)
    env.events.clear()
    full = env.eval_file.read_text()
    env.eval_file.write_text(full[: len(full) // 2])
    await live.handle_changes([env.eval_file])
    [problem] = env.of(FileProblem)
    assert problem.stale and "half-saved" in problem.message and str(env.eval_file) in problem.message
    assert live.workspace.eval_files[env.eval_file].stale
    assert live.results == before and not env.of(LiveRunFinished)

    # the next (complete) save is picked up against the last good version
    env.cases[2]["conversation"][0]["final_response"]["parts"][0]["text"] = "cherry is dark red indeed"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["c"]
    assert not live.workspace.eval_files[env.eval_file].stale


async def test_hanging_agent_times_out_and_the_loop_goes_on(env: Env) -> None:
    live = env.session(options=RunOptions(turn_timeout=0.3, save=False))
    await live.start()
    (env.bot / "agent.py").write_text(_agent_source(env.log, {"apple": "red"}, "import time; time.sleep(5)"))
    await live.handle_changes([env.bot / "agent.py"])
    for eval_id in "abc":
        result = live.results[env.key(eval_id)]
        assert result.status == EvalStatus.FAILED and result.error == "turn 1 timed out after 0.3 s"
    # still alive: an eval edit is handled as usual
    env.events.clear()
    env.cases[0]["conversation"][0]["final_response"]["parts"][0]["text"] = "apple"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["a"]


async def test_live_toggle_off_marks_the_agent_stale_instead_of_rerunning(env: Env) -> None:
    live = env.session(rerun_on_agent_change=False)
    await live.start()
    env.events.clear()
    (env.bot / "agent.py").write_text(_agent_source(env.log, {"apple": "green"}))
    await live.handle_changes([env.bot / "agent.py"])
    assert env.started() == [] and len(env.of(AgentStale)) == 1
    # the next run (here an eval edit) reloads the agent first
    env.cases[0]["conversation"][0]["final_response"]["parts"][0]["text"] = "apple is green"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["a"] and status(live, env, "a") == EvalStatus.PASSED


async def test_eval_file_outside_any_agent_is_reported_not_run(env: Env, tmp_path: Path) -> None:
    loose = env.root / "loose"
    loose.mkdir()
    (loose / "x.evalset.json").write_text(json.dumps({"eval_set_id": "x", "eval_cases": [env.cases[0]]}))
    live = env.session()
    await live.start()
    assert sorted(env.started()) == ["a", "b", "c"]
    from tui_eval.engine.events import RunError

    assert any("no agent for" in e.message for e in env.of(RunError))


async def test_watch_with_real_file_events(env: Env) -> None:
    live = env.session(debounce=0.05)
    await live.start()
    env.events.clear()
    ready = asyncio.Event()
    watcher = asyncio.create_task(live.watch(ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), 5)
        env.cases[0]["conversation"][0]["final_response"]["parts"][0]["text"] = "apple is red!"
        env.write_eval()
        # our own history writes (.adk) and hidden temp files are ignored
        (env.bot / ".adk").mkdir()
        (env.bot / ".adk" / "x.evalset.json").write_text("{}")
        for _ in range(100):
            if env.of(LiveRunFinished):
                break
            await asyncio.sleep(0.05)
        [done] = env.of(LiveRunFinished)
        assert done.keys == (env.key("a"),)
        assert any(isinstance(e, CaseFinished) for e in env.events)
    finally:
        live.stop()
        await asyncio.wait_for(watcher, 5)
    assert not live.relevant(env.bot / ".adk" / "eval_history" / "x.evalset.json")
    assert not live.relevant(env.bot / ".bot.evalset.json.123.tmp")
    assert live.relevant(env.eval_file) and live.relevant(env.bot / "agent.py")


async def test_user_simulator_edit_reruns_only_scenario_cases(env: Env) -> None:
    env.cases.append({"eval_id": "s", "conversation_scenario": {"starting_prompt": "lookup apple",
                                                                "conversation_plan": "ask about apples"},
                      "session_input": {"app_name": "bot", "user_id": "u", "state": {}}})
    env.write_eval()
    live = env.session()
    await live.start()
    env.events.clear()
    env.config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
                                      "user_simulator_config": {"max_allowed_invocations": 3}}))
    await live.handle_changes([env.config])
    assert env.started() == ["s"]  # criteria are unchanged: the static cases are left alone
    [done] = env.of(LiveRunFinished)
    assert "user simulator: re-run 1 scenario case" in done.reason


async def test_reload_only_mode_reloads_without_running_then_rerun_mode_runs(env: Env) -> None:
    """The dashboard's live mode off: saves reload files and mark agents stale; nothing runs."""
    live = env.session(rerun=False)
    await live.start()
    env.events.clear()
    env.cases[1]["conversation"][0]["final_response"]["parts"][0]["text"] = "bananas are blue"
    del env.cases[2]
    env.write_eval()
    env.write_config({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.1})
    (env.bot / "agent.py").write_text(_agent_source(env.log, {"apple": "green"}))
    await live.handle_changes([env.eval_file, env.config, env.bot / "agent.py"])
    assert env.started() == [] and not env.of(LiveRunFinished)
    [case_b] = [c for p, c in live.workspace.cases() if c.eval_id == "b"]
    answer_b = turns_of(case_b)[0].final_response
    assert answer_b is not None and answer_b.text == "bananas are blue"  # reloaded
    assert [k.eval_id for e in env.of(CasesRemoved) for k in e.keys] == ["c"]
    assert len(env.of(AgentStale)) == 1
    # Live on again: the next save runs what it changed, with the reloaded (stale) agent.
    live.rerun = True
    env.cases[0]["conversation"][0]["final_response"]["parts"][0]["text"] = "apple is green"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert env.started() == ["a"] and status(live, env, "a") == EvalStatus.PASSED


async def test_a_failing_event_consumer_is_logged_and_reported_and_the_loop_goes_on(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    from tui_eval.engine.events import RunError

    def consumer(event: Any) -> None:
        env.events.append(event)
        if isinstance(event, CaseStarted) and event.key.eval_id == "b":
            raise ValueError("consumer bug")

    live = env.track(LiveSession(env.root, on_event=consumer, options=RunOptions(turn_timeout=5, save=False)))
    with caplog.at_level("ERROR", logger="tui_eval.engine.events"):
        await live.start()
    assert all(status(live, env, i) == EvalStatus.PASSED for i in "abc")
    [report] = [e for e in env.of(RunError) if "consumer" in e.message]
    assert "CaseStarted" in report.message and "ValueError: consumer bug" in report.message
    [record] = [r for r in caplog.records if "event consumer failed" in r.getMessage()]
    assert record.exc_info is not None and "consumer bug" in str(record.exc_info[1])


async def test_a_vanished_watched_folder_is_reported_and_watched_again(env: Env, tmp_path: Path) -> None:
    # A folder that vanishes is no longer a watcher failure to retry (retry_after) or raise: the loop
    # reports it (WatchFailed, saying how often it looks) and waits for it, with or without retry_after.
    from tui_eval.engine.events import WatchFailed
    from tui_eval.engine.live import FOLDER_POLL_SECONDS

    gone = tmp_path / "gone"
    root = gone / "ws"
    root.mkdir(parents=True)
    live = env.track(LiveSession(root, on_event=env.events.append, debounce=0.05))
    await live.start(run=False)
    root.rmdir()
    gone.rmdir()  # nothing left to watch
    ready = asyncio.Event()
    watcher = asyncio.create_task(live.watch(ready=ready, retry_after=0.05))
    try:
        for _ in range(100):
            if env.of(WatchFailed):
                break
            await asyncio.sleep(0.02)
        [failed] = env.of(WatchFailed)
        assert failed.retry_after == FOLDER_POLL_SECONDS and str(root) in failed.message
        assert not watcher.done()  # still trying
        root.mkdir(parents=True)
        await asyncio.wait_for(ready.wait(), 5)  # back up once the folder is there again
    finally:
        live.stop()
        await asyncio.wait_for(watcher, 5)


async def test_without_retry_a_vanished_folder_is_waited_for_not_raised(env: Env, tmp_path: Path) -> None:
    from tui_eval.engine.events import WatchFailed

    root = tmp_path / "gone" / "ws"
    root.mkdir(parents=True)
    live = env.track(LiveSession(root, on_event=env.events.append, debounce=0.05))
    await live.start(run=False)
    root.rmdir()
    root.parent.rmdir()
    ready = asyncio.Event()
    watcher = asyncio.create_task(live.watch(ready=ready))
    try:
        for _ in range(100):
            if env.of(WatchFailed):
                break
            await asyncio.sleep(0.02)
        assert env.of(WatchFailed) and not watcher.done()
        root.mkdir(parents=True)
        await asyncio.wait_for(ready.wait(), 5)
        assert not watcher.done()
    finally:
        live.stop()
        await asyncio.wait_for(watcher, 5)  # stops cleanly: nothing was raised


async def test_a_watched_folder_deleted_and_recreated_is_watched_again(env: Env) -> None:
    # inotify keeps watching the deleted folder's inode: without noticing, saves in the new folder of
    # the same name would never be seen.
    from tui_eval.engine.events import WatchFailed

    live = env.session(debounce=0.05)
    await live.start()
    ready = asyncio.Event()
    watcher = asyncio.create_task(live.watch(ready=ready))
    saved = {p: p.read_bytes() for p in env.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    try:
        await asyncio.wait_for(ready.wait(), 5)
        import shutil

        shutil.rmtree(env.root)
        for _ in range(100):
            if env.of(WatchFailed):
                break
            await asyncio.sleep(0.02)
        assert env.of(WatchFailed)
        env.events.clear()
        staging = env.root.with_name("staging")  # the new folder appears whole, as a checkout or restore makes it
        for path, data in saved.items():
            copy = staging / path.relative_to(env.root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
        staging.rename(env.root)
        # everything below is re-read once the folder is back: its cases are there and run again
        for _ in range(200):
            if env.of(LiveRunFinished):
                break
            await asyncio.sleep(0.02)
        assert sorted(k.eval_id for k in env.of(LiveRunFinished)[-1].keys) == ["a", "b", "c"]
        # and a save in the new folder is picked up
        env.events.clear()
        env.cases[2]["conversation"][0]["final_response"]["parts"][0]["text"] = "cherry is blue"
        env.write_eval()
        for _ in range(200):
            if env.of(LiveRunFinished):
                break
            await asyncio.sleep(0.02)
        [done] = env.of(LiveRunFinished)
        assert done.keys == (env.key("c"),) and status(live, env, "c") == EvalStatus.FAILED
    finally:
        live.stop()
        await asyncio.wait_for(watcher, 5)


def test_loading_a_folder_imports_no_runner_results_or_metrics(env: Env) -> None:
    """The dashboard's loader builds a LiveSession and loads every file at start-up; the runner (with
    its metrics, insight, pricing and code state) and the result models wait for the first run."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tui_eval.engine.live import LiveSession\n"
        "from tui_eval.engine.options import RunOptions\n"
        "from tui_eval.engine.store import ResultStore\n"
        "from tui_eval.engine.saved import latest_saved_results\n"
        "from tui_eval.tui.loader import load_workspace\n"
        f"live = LiveSession(Path({str(env.root)!r}), options=RunOptions(), store=ResultStore())\n"
        "load_workspace(live.workspace)\n"
        "assert [c.eval_id for _p, c in live.workspace.cases()] == ['a', 'b', 'c']\n"
        "assert list(latest_saved_results(live.workspace)) == []\n"
        "lazy = ('tui_eval.engine.runner', 'tui_eval.engine.insight', 'tui_eval.engine.pricing',\n"
        "        'tui_eval.engine.codestate', 'tui_eval.engine.repeats', 'tui_eval.engine.latency',\n"
        "        'tui_eval.schema.results', 'tui_eval.schema.details', 'tui_eval.metrics',\n"
        "        'tui_eval.agents.isolation', 'tui_eval.share', 'html')\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(lazy))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


async def test_a_run_after_a_lazy_start_imports_what_it_needs(env: Env) -> None:
    # RunOptions lives apart from the runner; the runner still offers it under its old name.
    from tui_eval.engine import options, runner

    assert runner.RunOptions is options.RunOptions
    live = env.session()
    await live.start()
    assert all(status(live, env, i) == EvalStatus.PASSED for i in "abc")


async def test_a_misspelt_criterion_is_a_run_error_the_user_sees_not_a_dropped_metric(env: Env) -> None:
    """One policy with `tui-eval run` (exit 2): a criterion naming no metric refuses the run with a
    did-you-mean; it is never dropped while the other metrics run as if nothing were wrong."""
    live = env.session()
    await live.start()
    before = {k: metric_of(r, "response_match_score").threshold for k, r in live.results.items()}
    assert set(before.values()) == {0.8}

    env.events.clear()
    env.write_config({"tool_trajectory_avg_score": 1.0, "response_match_scor": 1.0})
    await live.handle_changes([env.config])
    [error] = env.of(RunError)
    assert "unknown metric(s) response_match_scor (did you mean 'response_match_score'?)" in error.message
    assert str(env.config) in error.message
    assert env.started() == []
    # Nothing was re-scored without the misspelt metric: the results keep the last good criteria.
    assert {k: metric_of(r, "response_match_score").threshold for k, r in live.results.items()} == before

    env.events.clear()
    env.write_config({"tool_trajectory_avg_score": 1.0, "response_match_score": 1.0})
    await live.handle_changes([env.config])
    assert not env.of(RunError)
    assert {metric_of(r, "response_match_score").threshold for r in live.results.values()} == {1.0}


async def test_a_misspelt_criterion_runs_no_case_from_the_start(env: Env) -> None:
    env.write_config({"tool_trajectory_avg_scor": 1.0})
    live = env.session()
    await live.start()
    [error] = env.of(RunError)
    assert "unknown metric(s) tool_trajectory_avg_scor (did you mean 'tool_trajectory_avg_score'?)" in error.message
    assert env.started() == [] and env.agent_calls() == [] and live.results == {}
