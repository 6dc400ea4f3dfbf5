"""The run engine: status rules, NOT_EVALUATED reasons, events, bounded concurrency, cancel keeps results."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.evalfiles import case, dice_pair, turn, turns_of, write_set
from tui_eval.agents.base import Agent, AgentSession, CaseContext
from tui_eval.agents.replay import ReplayAgent
from tui_eval.engine.events import CaseFinished, CaseKey, Event, MetricProgress, RunFinished, RunStarted
from tui_eval.engine.plan import plan_run
from tui_eval.engine.runner import Run, RunOptions
from tui_eval.engine.store import ResultStore, compare_results, list_history, load_record
from tui_eval.schema.model import Content, EvalCase, Invocation
from tui_eval.schema.results import EvalStatus


class ScriptedAgent(Agent):
    """A real Agent implementation whose turns echo, raise or wait, as each test needs."""

    def __init__(self, *, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.name = "scripted"
        self.delay = delay
        self.fail_on = fail_on
        self.in_flight = 0
        self.max_in_flight = 0
        self.started: list[str] = []

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        agent = self
        self.started.append(case.eval_id)

        class Session(AgentSession):
            async def turn(self, user_content: Content, index: int) -> Invocation:
                agent.in_flight += 1
                agent.max_in_flight = max(agent.max_in_flight, agent.in_flight)
                try:
                    await asyncio.sleep(agent.delay)
                    if agent.fail_on and agent.fail_on in user_content.text:
                        raise RuntimeError("tool exploded")
                    expected = turns_of(case)[index]
                    return Invocation(user_content=user_content, final_response=expected.final_response,
                                      intermediate_data=expected.intermediate_data)
                finally:
                    agent.in_flight -= 1

        return Session()


def _many(tmp_path: Path, n: int) -> Path:
    return write_set(tmp_path / "many.evalset.json", "many",
                     *[case(f"c{i:02d}", turn(f"q{i}", "same answer", [("f", {"i": i})])) for i in range(n)])


async def test_statuses_events_and_progress(tmp_path: Path):
    golden, recorded = dice_pair(tmp_path)
    events: list[Event] = []
    record = await Run(plan_run([str(golden)]), ReplayAgent(recorded), on_event=events.append).execute()
    statuses = {c.eval_id: c.status for c in record.results[0].case_results}
    assert statuses == {"c_pass": EvalStatus.PASSED, "c_args": EvalStatus.FAILED,
                        "c_words": EvalStatus.FAILED, "c_two": EvalStatus.FAILED}
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.metric_totals == {"tool_trajectory_avg_score": 5, "response_match_score": 5}
    last = {}
    for e in events:
        if isinstance(e, MetricProgress):
            last[e.metric_name] = (e.done, e.total)
    assert last == {"tool_trajectory_avg_score": (5, 5), "response_match_score": (5, 5)}
    assert sum(isinstance(e, CaseFinished) for e in events) == 4
    assert isinstance(events[-1], RunFinished) and events[-1].counts[EvalStatus.PASSED] == 1


async def test_agent_error_fails_the_case_with_the_error_kept(tmp_path: Path):
    golden, _ = dice_pair(tmp_path)
    events: list[Event] = []
    record = await Run(plan_run([str(golden)]), ScriptedAgent(fail_on="prime"), on_event=events.append).execute()
    by_id = {c.eval_id: c for c in record.results[0].case_results}
    failed = by_id["c_words"]
    # A crashed case still fills its share of every progress bar.
    last = {e.metric_name: (e.done, e.total) for e in events if isinstance(e, MetricProgress)}
    assert all(done == total == 5 for done, total in last.values())
    # The reason on the first line, the agent's traceback kept below it.
    assert failed.status == EvalStatus.FAILED and failed.error is not None
    assert failed.error.splitlines()[0] == "RuntimeError: tool exploded"
    assert "Traceback" in failed.error and 'raise RuntimeError("tool exploded")' in failed.error
    assert all(m.status == EvalStatus.NOT_EVALUATED and "the agent failed" in (m.reason or "") for m in failed.metrics)
    assert by_id["c_pass"].status == EvalStatus.PASSED  # one crash sinks only its own case


async def test_turn_timeout_fails_the_case(tmp_path: Path):
    golden, _ = dice_pair(tmp_path)
    plan = plan_run([f"{golden}:c_pass"])
    record = await Run(plan, ScriptedAgent(delay=5), options=RunOptions(turn_timeout=0.05)).execute()
    result = record.results[0].case_results[0]
    assert result.status == EvalStatus.FAILED and "turn 1 timed out after 0.05 s" in (result.error or "")


async def test_turn_count_mismatch_and_missing_judge_are_not_evaluated_with_reasons(tmp_path: Path):
    golden = write_set(tmp_path / "g.evalset.json", "g", case("c", turn("a", "b"), turn("c", "d")),
                       case("same", turn("a", "b")))
    recorded = write_set(tmp_path / "r.evalset.json", "r", case("c", turn("a", "b"), turn("c", "d"), turn("e", "f")),
                         case("same", turn("a", "b")))
    (tmp_path / "test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "final_response_match_v2": 0.5}}))

    # Score stored output that has one turn more than expected (as a live re-score would).
    plan = plan_run([str(golden)])
    stored = ReplayAgent(recorded)._cases
    inferences = {CaseKey(str(golden), i): turns_of(stored[i]) for i in ("c", "same")}
    events: list[Event] = []
    record = await Run(plan, None, inferences=inferences, on_event=events.append).execute()
    by_id = {c.eval_id: c for c in record.results[0].case_results}
    # Progress bars finish exactly full, sized by the stored turns (3 + 1), not the expected ones.
    last = {e.metric_name: (e.done, e.total) for e in events if isinstance(e, MetricProgress)}
    assert last == {"tool_trajectory_avg_score": (4, 4), "final_response_match_v2": (4, 4)}
    metrics = {m.metric_name: m for m in by_id["c"].metrics}
    for name in ("tool_trajectory_avg_score", "final_response_match_v2"):
        assert metrics[name].status == EvalStatus.NOT_EVALUATED
        assert metrics[name].reason == "actual and expected turn counts differ (3 vs 2)"
    assert by_id["c"].status == EvalStatus.NOT_EVALUATED  # never a silent pass
    judge = by_id["same"].metric("final_response_match_v2")
    assert judge is not None and judge.status == EvalStatus.NOT_EVALUATED and judge.reason == "no judge credentials"
    trajectory = by_id["same"].metric("tool_trajectory_avg_score")
    assert trajectory is not None and trajectory.status == EvalStatus.PASSED
    assert by_id["same"].status == EvalStatus.PASSED


async def test_concurrency_is_bounded(tmp_path: Path):
    plan = plan_run([str(_many(tmp_path, 12))])
    agent = ScriptedAgent(delay=0.02)
    await Run(plan, agent, options=RunOptions(concurrency=3)).execute()
    assert agent.max_in_flight == 3


async def test_cancel_keeps_finished_cases_and_saves_them(tmp_path: Path):
    plan = plan_run([str(_many(tmp_path, 20))])
    agent = ScriptedAgent(delay=0.05)
    finished = []
    run = Run(plan, agent, options=RunOptions(concurrency=2), store=ResultStore(tmp_path / "hist"),
              on_event=lambda e: finished.append(e) if isinstance(e, CaseFinished) else None)

    async def cancel_soon():
        while len(finished) < 4:
            await asyncio.sleep(0.01)
        run.cancel()

    record, _ = await asyncio.gather(run.execute(), cancel_soon())
    kept = record.results[0].case_results
    assert record.cancelled
    assert 4 <= len(kept) < 20
    assert all(c.status == EvalStatus.PASSED for c in kept)
    meta, saved = load_record(next((tmp_path / "hist").glob("*.tui-eval.json")))
    assert meta["cancelled"] is True and len(saved.case_results) == len(kept)


async def test_saved_record_round_trips_and_compares(tmp_path: Path):
    golden, recorded = dice_pair(tmp_path)
    store = ResultStore(tmp_path / "hist")
    first = await Run(plan_run([str(golden)]), ReplayAgent(recorded), store=store).execute()
    # The agent "regresses": c_pass now answers with the wrong die.
    data = json.loads(recorded.read_text())
    data["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"] = {"sides": 8}
    recorded.write_text(json.dumps(data))
    second = await Run(plan_run([str(golden)]), ReplayAgent(recorded), store=store).execute()
    entries = list_history(tmp_path / "hist")
    assert [e.run_id for e in entries] == [second.run_id, first.run_id]
    _, before = load_record(entries[1].path)
    _, after = load_record(entries[0].path)
    # The record keeps everything the dashboard needs: statuses, scores, actual turns.
    assert after.case_results[0].actual[0].tool_calls[0].args == {"sides": 8}
    changes = compare_results(before, after)
    assert changes[0].eval_id == "c_pass" and changes[0].kind == "regression"
    assert changes[0].score_deltas["tool_trajectory_avg_score"] == (1.0, 0.0)
    # The other cases failed in both runs (or passed in both): still failing, or unchanged.
    assert all(c.kind == ("still failing" if c.after == EvalStatus.FAILED else "unchanged") for c in changes[1:])
    assert {c.kind for c in changes[1:]} == {"still failing"}


def test_core_never_imports_the_ui():
    code = (
        "import sys\n"
        "import tui_eval.schema.load, tui_eval.schema.config, tui_eval.schema.results\n"
        "import tui_eval.metrics, tui_eval.engine.runner, tui_eval.engine.store, tui_eval.engine.workspace\n"
        "import tui_eval.agents.replay, tui_eval.report\n"
        "from tui_eval.metrics.base import registered_metrics; registered_metrics()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", "a\\b", "C:evil", ""])
def test_unsafe_eval_set_ids_never_write_outside_history(tmp_path: Path, bad: str):
    from tui_eval.engine.store import UnsafeNameError, check_segment

    with pytest.raises(UnsafeNameError):
        check_segment(bad, "eval_set_id")


def test_history_lives_in_the_agent_folder_else_beside_the_eval_file(tmp_path: Path):
    from tui_eval.engine.store import history_dir

    agent_dir = tmp_path / "my_agent"
    agent_dir.mkdir()
    eval_file = tmp_path / "evals" / "set.evalset.json"
    assert history_dir(eval_file, agent_dir) == agent_dir.resolve() / ".adk" / "eval_history"
    assert history_dir(eval_file, str(agent_dir)) == agent_dir.resolve() / ".adk" / "eval_history"
    beside = (tmp_path / "evals").resolve() / ".adk" / "eval_history"
    assert history_dir(eval_file, f"replay:{tmp_path / 'recorded.json'}") == beside
    assert history_dir(eval_file, None) == beside
