"""A person's verdict beside the automatic one (Pilot): `V` on a case, kept in the run record of the shown
result; "review stale" once the case changes; review mode walking the judged verdicts that need a person."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.conftest import settle

LATEST = "travel_travel_1767229200.tui-eval.json"  # the newest saved run of travel: what the tree shows


def _record_case(workspace: Path, eval_id: str) -> dict:
    record = json.loads((workspace / "travel" / ".adk" / "eval_history" / LATEST).read_text())
    return next(c for c in record["cases"] if c["eval_id"] == eval_id)


def _summary(app) -> str:
    return str(app.main.summary.render())


async def test_v_keeps_a_verdict_in_the_run_record_and_it_goes_stale_when_the_case_changes(
    workspace: Path, make_app
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "down")
        assert app.main.selected.key.eval_id == "book_flight"
        await pilot.press("V")
        assert app.screen.__class__.__name__ == "VerdictScreen"
        await pilot.press("f", *"books the wrong day", "enter")
        await settle(pilot)
        [kept] = _record_case(workspace, "book_flight")["human_verdicts"]
        assert (kept["verdict"], kept["reason"]) == ("fail", "books the wrong day")
        assert "metric" not in kept and "turn" not in kept  # a verdict on the case
        assert kept["case_version"] and kept["turns_version"]
        assert any(n.message == "Human verdict kept: fail on case of book_flight (run: failed)"
                   for n in app._notifications)
        assert "human  ✘ fail case  books the wrong day" in _summary(app)

        # The person says the turn passed where the run failed it: a disagreement, shown as such.
        await pilot.press("right", "down", "down", "V", "p", "enter")  # turn 2 of book_flight
        await settle(pilot)
        turn = _record_case(workspace, "book_flight")["human_verdicts"][1]
        assert (turn["turn"], turn["verdict"]) == (1, "pass") and "metric" not in turn
        assert any("people and the run disagree" in n.message for n in app._notifications)

        # The history says where people and runs disagree.
        await pilot.press("h")
        await settle(pilot)
        status = str(app.screen.query_one("#history-status").render())
        assert "2 human verdict(s), 1 disagreeing with the run" in status
        assert "≠ book_flight, turn 2: human pass, run failed" in status
        await pilot.press("escape")

        # The expected turn is accepted: the case the person judged is not the case any more.
        await pilot.press("up", "up")
        await pilot.press("a", "y")
        await settle(pilot)
        await pilot.press("up", "down")
        assert "review stale: case" in _summary(app)


async def test_review_mode_walks_the_judged_verdicts_that_need_a_person(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        assert app.screen.id == "review"
        items = list(app.screen.items)
        assert items and all(i.why == "not reviewed" for i in items)
        assert {i.metric for i in items} <= {"hallucinations_v1", "rubric_based_final_response_quality_v1"}
        first = items[0]
        status = str(app.screen.query_one("#review-status").render())
        assert status.startswith(f"{len(items)} to review")
        judge_passed = first.judge.name == "PASSED"
        await pilot.press("f" if judge_passed else "p", *"not grounded", "enter")
        await settle(pilot)
        assert app.screen.id == "review"
        after = list(app.screen.items)
        # Still listed, now as a disagreement (the person said the opposite of the judge).
        [again] = [i for i in after if (i.key, i.metric) == (first.key, first.metric)]
        assert again.why == f"disagrees: human {'fail' if judge_passed else 'pass'}"
        status = str(app.screen.query_one("#review-status").render())
        assert f"{first.metric}: n 1, agree 0%, κ —" in status
        # Agreeing with the judge on the next one takes it off the list.
        second = after[1] if after[0] == again else after[0]
        app.screen.query_one("#review-table").move_cursor(row=after.index(second))
        await pilot.press("p" if second.judge.name == "PASSED" else "f", "enter")
        await settle(pilot)
        assert (second.key, second.metric) not in [(i.key, i.metric) for i in app.screen.items]
        await pilot.press("enter")  # the highlighted case, in the browser
        await settle(pilot)
        assert app.screen.id == "main"
