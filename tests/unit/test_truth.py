"""Every result knows what it was computed from, and a save is never dropped (issue 28, items 1 and 2).

Driven through the live loop as the dashboard's engine and `watch` drive it: real agent folders in real
worker processes, handle_changes called the way the watcher calls it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.test_live import Env, _agent_source, env  # noqa: F401 - the fixture
from tui_eval.agents.version import agent_version, loaded_version
from tui_eval.engine.events import AgentPaused, CaseStarted, LiveRunFinished, StaleChanged
from tui_eval.engine.live import LiveSession
from tui_eval.engine.own_writes import SELF_WRITE_LIMIT
from tui_eval.engine.runner import RunOptions
from tui_eval.schema.results import EvalStatus

FRUIT = {"apple": "red", "banana": "yellow", "cherry": "dark red"}
# One case at a time: the worker pool never grows a second worker whose load could straddle a save (the
# pool's restart does not yet drop a worker still growing; the worker's own report of the version it
# loaded is what makes that case read as stale).
ONE_AT_A_TIME = RunOptions(turn_timeout=5, save=False, concurrency=1)


def _answer(live: LiveSession, env: Env, eval_id: str) -> str:
    response = live.results[env.key(eval_id)].actual[0].final_response
    assert response is not None
    return response.text


def _save_agent(env: Env, **values: str) -> None:
    (env.bot / "agent.py").write_text(_agent_source(env.log, {**FRUIT, **values}))


async def test_every_result_carries_the_versions_it_was_computed_from(env: Env) -> None:
    live = env.session()
    await live.start()
    versions = live.results[env.key("a")].versions
    assert versions is not None
    assert versions.agent == agent_version(env.bot)
    assert versions.tools == "live"
    assert versions.case and versions.criteria
    # b's case differs from a's; both ran with the same criteria
    other = live.results[env.key("b")].versions
    assert other is not None and other.case != versions.case and other.criteria == versions.criteria
    assert live.stale == {}


def test_the_agent_version_covers_every_file_it_may_load_but_not_eval_files(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "agent.py").write_text("root_agent = None\n")
    first = agent_version(folder)
    (folder / ".env").write_text("GREETING=hi\n")
    with_env = agent_version(folder)
    (folder / "root_agent.yaml").write_text("name: bot\n")
    with_yaml = agent_version(folder)
    assert len({first, with_env, with_yaml}) == 3
    (folder / "bot.evalset.json").write_text("{}")
    (folder / "test_config.json").write_text("{}")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "agent.cpython-312.pyc").write_bytes(b"\0")
    assert agent_version(folder) == with_yaml
    # a module it imported from outside its folder (a sibling package) is part of its code
    shared = tmp_path / "shared.py"
    shared.write_text("X = 1\n")
    assert agent_version(folder, [str(shared)]) != with_yaml
    # in this process nothing outside the folder but the standard library, packages and tui-eval is loaded
    version, outside = loaded_version(folder)
    assert version == agent_version(folder, outside)


async def test_a_save_then_a_run_at_once_runs_the_saved_code(env: Env) -> None:
    live = env.session(rerun=False, options=ONE_AT_A_TIME)
    await live.start()
    assert _answer(live, env, "a") == "apple is red"
    # saved, and `R` pressed before the watcher reported the save
    _save_agent(env, apple="green")
    await live.run_keys(live.all_keys(), "run everything")
    assert _answer(live, env, "a") == "apple is green"
    assert live.results[env.key("a")].status == EvalStatus.FAILED
    versions = live.results[env.key("a")].versions
    assert versions is not None and versions.agent == agent_version(env.bot)


async def test_an_eval_case_saved_then_run_at_once_runs_as_saved(env: Env) -> None:
    live = env.session(rerun=False)
    await live.start()
    assert live.results[env.key("b")].status == EvalStatus.PASSED
    # saved, and `r` pressed before the watcher reported the save
    env.cases[1]["conversation"][0]["final_response"]["parts"][0]["text"] = "bananas are blue"
    env.write_eval()
    await live.run_keys([env.key("b")], "run b")
    result = live.results[env.key("b")]
    assert result.status == EvalStatus.FAILED
    assert result.expected is not None and result.expected[0].final_response is not None
    assert result.expected[0].final_response.text == "bananas are blue"
    assert live.stale == {}


async def test_two_saves_during_a_live_rerun_are_both_run(env: Env) -> None:
    live = env.session(options=ONE_AT_A_TIME)
    await live.start()
    saves = iter([{"apple": "blue"}])

    def save_b_when_the_rerun_starts(event: Any) -> None:
        env.events.append(event)
        if isinstance(event, CaseStarted):
            values = next(saves, None)
            if values is not None:
                _save_agent(env, **values)

    # version A is saved: a re-run starts; version B is saved while it runs
    _save_agent(env, apple="green")
    live.on_event = save_b_when_the_rerun_starts
    await live.handle_changes([env.bot / "agent.py"])
    assert _answer(live, env, "a") == "apple is blue"
    # the watcher reports the saves late: nothing left to run, and B stays
    env.events.clear()
    await live.handle_changes([env.bot / "agent.py"])
    assert not env.of(LiveRunFinished)
    await live.run_keys(live.all_keys(), "run everything")
    assert _answer(live, env, "a") == "apple is blue"
    assert live.stale == {}


SELF_WRITER = '''
from pathlib import Path
import time
from tui_eval.agents.native import NativeAgent


def lookup(key: str) -> str:
    """Look a key up (and, as agents that generate code do, write a module into its own folder)."""
    Path(__file__).with_name("generated_tool.py").write_text(f"STAMP = {time.perf_counter_ns()!r}\\n")
    return {"apple": "red", "banana": "yellow", "cherry": "dark red"}.get(key, "unknown")


def policy(turn):
    if turn.last("lookup") is None:
        return [("lookup", {"key": turn.user_text.split()[-1]})]
    return f"{turn.results[0].args['key']} is {turn.results[0].response['result']}"


root_agent = NativeAgent("bot", "look things up", tools=[lookup], policy=policy)
'''


async def test_an_agent_that_rewrites_its_own_source_pauses_its_live_reruns(env: Env) -> None:
    (env.bot / "agent.py").write_text(SELF_WRITER)
    live = env.session(options=ONE_AT_A_TIME)
    await live.start()
    # each run changed the agent's files: re-run while the streak is short, then paused with a notice
    assert len(env.of(LiveRunFinished)) == SELF_WRITE_LIMIT
    [paused] = env.of(AgentPaused)
    assert "changed its own files" in paused.message and "paused" in paused.message
    # never hidden: its results are marked stale
    assert set(live.stale) == {env.key(i) for i in "abc"}
    assert all("agent code changed" in r for r in live.stale.values())
    # the watcher reports the run's own writes: nothing runs
    env.events.clear()
    await live.handle_changes([env.bot / "generated_tool.py"])
    assert not env.of(LiveRunFinished)
    # a save of the user's re-runs it, once
    (env.bot / "agent.py").write_text(SELF_WRITER.replace("dark red", "black"))
    await live.handle_changes([env.bot / "agent.py"])
    [rerun] = env.of(LiveRunFinished)
    assert _answer(live, env, "c") == "cherry is black"


async def test_stale_follows_the_agent_the_case_and_the_criteria_on_disk(env: Env) -> None:
    live = env.session(rerun=False, options=ONE_AT_A_TIME)
    await live.start()
    assert live.stale == {}
    env.cases[1]["conversation"][0]["final_response"]["parts"][0]["text"] = "bananas are blue"
    env.write_eval()
    await live.handle_changes([env.eval_file])
    assert live.stale == {env.key("b"): ("eval case changed",)}
    [told] = env.of(StaleChanged)
    assert told.stale == ((env.key("b"), ("eval case changed",)),)
    env.write_config({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5})
    await live.handle_changes([env.config])
    assert live.stale[env.key("a")] == ("criteria changed",)
    assert live.stale[env.key("b")] == ("eval case changed", "criteria changed")
    _save_agent(env, apple="green")
    await live.handle_changes([env.bot / "agent.py"])
    assert live.stale[env.key("c")] == ("agent code changed", "criteria changed")
    # running exactly the stale cases makes them fresh
    env.events.clear()
    await live.run_keys(list(live.stale), "run the stale cases")
    assert live.stale == {}
    assert env.of(StaleChanged)[-1].fresh


EDITS_ITSELF_ONCE = '''
from pathlib import Path
from tui_eval.agents.native import NativeAgent

VALUES = {"apple": "red", "banana": "yellow", "cherry": "dark red"}


def lookup(key: str) -> str:
    """Look a key up; the first call edits this file (as a save during the run would)."""
    source = Path(__file__)
    text = source.read_text()
    marker = "# edited " + "during the run"  # (spelt apart: this very line must not count)
    if marker not in text:
        source.write_text(text + "\\n" + marker + "\\n")
    return VALUES.get(key, "unknown")


def policy(turn):
    if turn.last("lookup") is None:
        return [("lookup", {"key": turn.user_text.split()[-1]})]
    return f"{turn.results[0].args['key']} is {turn.results[0].response['result']}"


root_agent = NativeAgent("bot", "look things up", tools=[lookup], policy=policy)
'''


def test_a_headless_run_records_the_version_it_loaded_and_names_what_an_edit_made_stale(
        env: Env) -> None:
    import io
    import json

    from tui_eval.cli import main

    (env.bot / "agent.py").write_text(EDITS_ITSELF_ONCE)
    loaded = agent_version(env.bot)
    out, err = io.StringIO(), io.StringIO()
    outputs = env.root.parent / "out"
    outputs.mkdir()
    main(["run", str(env.bot), str(env.eval_file), "--concurrency", "1", "--json", str(outputs / "r.json"),
          "--junit", str(outputs / "r.xml"), "--md", str(outputs / "r.md")], out, err)
    text = out.getvalue()
    assert "Stale: 3 result(s) an edit during the run made stale (agent code changed)" in text, text
    assert "  a (bot.evalset.json): agent code changed" in text
    [record] = (env.bot / ".adk" / "eval_history").glob("*.tui-eval.json")
    cases = json.loads(record.read_text())["cases"]
    assert {c["versions"]["agent"] for c in cases} == {loaded} != {agent_version(env.bot)}
    # every output says so
    [adk] = json.loads((outputs / "r.json").read_text())
    assert [c["stale"] for c in adk["eval_case_results"]] == [["agent code changed"]] * 3
    junit = (outputs / "r.xml").read_text()
    assert junit.count('<property name="tui_eval.stale" value="agent code changed" />') == 3, junit
    markdown = (outputs / "r.md").read_text()
    assert "### Stale: 3 result(s)" in markdown and "- a (bot.evalset.json): agent code changed" in markdown
    # `report` on the saved run says the same against the files now; once they are as the run had
    # them, nothing is stale
    report = io.StringIO()
    assert main(["report", str(record)], report, io.StringIO()) == 0
    assert "### Stale: 3 result(s)" in report.getvalue()
    (env.bot / "agent.py").write_text(EDITS_ITSELF_ONCE)
    report = io.StringIO()
    assert main(["report", str(record)], report, io.StringIO()) == 0
    assert "Stale" not in report.getvalue()
