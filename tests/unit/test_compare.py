"""Comparing two runs (issue 9, item 3): a case in only one run is "not run", never a regression; run
records say what part of the eval set they covered (all, a selection, failures only, cancelled)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.evalfiles import dice_pair
from tui_eval.agents.replay import ReplayAgent
from tui_eval.engine.plan import plan_run
from tui_eval.engine.runner import Run
from tui_eval.engine.store import NOT_RUN, ResultStore, compare_results, list_history, load_record
from tui_eval.schema.results import CaseResult, EvalSetResult, EvalStatus


def _result(**statuses: EvalStatus) -> EvalSetResult:
    return EvalSetResult(eval_set_result_id="r", eval_set_id="s", creation_timestamp=0.0, case_results=[
        CaseResult(eval_set_id="s", eval_id=eval_id, status=status) for eval_id, status in statuses.items()])


def test_a_case_in_only_one_run_is_not_run_never_a_regression() -> None:
    before = _result(a=EvalStatus.PASSED, b=EvalStatus.PASSED, gone=EvalStatus.PASSED)
    # The newer run re-ran failures only: `b` and `gone` are absent, `new` is a case added since.
    after = _result(a=EvalStatus.FAILED, new=EvalStatus.FAILED)
    kinds = {c.eval_id: c.kind for c in compare_results(before, after)}
    assert kinds == {"a": "regression", "b": NOT_RUN, "gone": NOT_RUN, "new": NOT_RUN}
    assert NOT_RUN == "not run"
    # Regressions still come first.
    assert compare_results(before, after)[0].eval_id == "a"


def test_history_records_coverage_and_duration(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    store = ResultStore(tmp_path / "hist")
    import asyncio

    async def runs() -> None:
        await Run(plan_run([str(golden)]), ReplayAgent(recorded), store=store).execute()
        await Run(plan_run([f"{golden}:c_pass"]), ReplayAgent(recorded), store=store).execute()
        await Run(plan_run([f"{golden}:c_args,c_words,c_two"]), ReplayAgent(recorded), store=store,
                  coverage="failures").execute()
        cancelled = Run(plan_run([str(golden)]), ReplayAgent(recorded), store=store)
        cancelled.cancel()
        await cancelled.execute()

    asyncio.run(runs())
    entries = list_history(tmp_path / "hist")
    assert [e.coverage for e in reversed(entries)] == ["all", "selection", "failures", "cancelled"]
    assert [e.partial for e in reversed(entries)] == [False, True, True, True]
    assert all(e.duration >= 0 for e in entries) and entries[-1].duration > 0
    meta, _ = load_record(entries[-1].path, with_turns=False)
    assert meta["coverage"] == "all" and meta["duration"] == entries[-1].duration


def test_records_without_coverage_load_as_all_or_cancelled(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    store = ResultStore(tmp_path / "hist")
    import asyncio

    asyncio.run(Run(plan_run([str(golden)]), ReplayAgent(recorded), store=store).execute())
    [path] = (tmp_path / "hist").glob("*.tui-eval.json")
    data = json.loads(path.read_text())
    del data["coverage"], data["duration"]
    data["cancelled"] = True
    path.write_text(json.dumps(data))
    [entry] = list_history(tmp_path / "hist")
    assert entry.coverage == "cancelled" and entry.duration == 0.0
