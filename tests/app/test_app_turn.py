"""The turn view: word diff, trajectory diff under each match type, hallucination labels, rubric votes,
judge errors and NOT_EVALUATED reasons, from saved run records (no model needed)."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from tests.app.conftest import settle
from tui_eval.tui.screens.turn import TurnScreen


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def grid_text(screen) -> list[str]:
    return [str(cell.render()) for cell in screen.query("#trajectory-grid > .cell")]


async def open_turn(app, pilot, eval_id: str, index: int = 0) -> TurnScreen:
    key = app.listing.key(app.listing.root / "travel" / "travel.evalset.json", eval_id)
    app.open_turn(key, index)
    await pilot.pause()
    assert isinstance(app.screen, TurnScreen)
    return app.screen


async def test_failing_trajectory_side_by_side_with_arg_diffs(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "book_flight", 1)
        assert "book_flight › turn 2/2" in text_of(screen, "#turn-title")
        assert text_of(screen, "#turn-user") == "Book the cheapest one."
        cells = grid_text(screen)
        assert cells[:2] == ["expected (1)", "actual (2)"]
        assert cells[2:] == [
            "", "+ extra get_weather(city=\"Rome\")",
            "≠ other args book_flight(flight_id=\"AZ331\", passengers=1)",
            "≠ other args book_flight(flight_id=\"AZ331\", passengers=2)",
        ]
        args = text_of(screen, "#trajectory-args")
        assert "≠ book_flight passengers 1 → 2" in args
        head = text_of(screen, "#trajectory-head")
        assert "EXACT*" in head and "1 with other args, 1 extra" in head


async def test_match_type_switch_shows_how_each_would_judge(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "transfer_order")
        head = text_of(screen, "#trajectory-head")
        assert "[EXACT* ✘]" in head and "IN_ORDER ✘" in head and "ANY_ORDER ✔" in head
        cells = grid_text(screen)
        assert "↕ get_balance() moved from 3 to 1" in cells
        await pilot.press("m")
        assert screen.match_type == "IN_ORDER"
        assert "[IN_ORDER ✘]" in text_of(screen, "#trajectory-head")
        await pilot.press("m")
        assert "[ANY_ORDER ✔]" in text_of(screen, "#trajectory-head")
        cells = grid_text(screen)
        assert all(c.startswith("✔") for c in cells[2:] if c)
        await pilot.press("m")
        assert screen.match_type == "EXACT"


async def test_response_word_diff_marks_changed_words(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "book_flight", 1)
        content = screen.query_one("#turn-response", Static).render()
        assert isinstance(content, Content)
        plain = str(content)
        assert "Booked AZ 331 for 1 passenger. Your confirmation code is QX7T2." in plain
        assert "Booked AZ 331 for 2 passengers. Confirmation code QX7T2." in plain
        struck = {plain[s.start:s.end] for s in content.spans if "strike" in str(s.style)}
        added = {plain[s.start:s.end] for s in content.spans if "underline" in str(s.style)}
        assert "1 passenger. Your confirmation" in struck
        assert "2 passengers. Confirmation" in added
        assert "✘ tool_trajectory_avg_score 0.00 / 1" in plain


async def test_hallucination_labels_inline_with_selected_rationale(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "weather_paris")
        content = screen.query_one("#turn-hallucinations", Static).render()
        assert isinstance(content, Content)
        plain = str(content)
        assert "✘ score 0.33" in plain
        styles = {plain[s.start:s.end]: str(s.style) for s in content.spans}
        assert "success" in styles["Tomorrow in Paris it will be sunny and 24°C."]
        assert "error" in styles["Expect a thunderstorm in the evening."]
        assert "warning" in styles["The Eiffel Tower is open until midnight."]
        assert "sentence 1/3 supported" in plain
        await pilot.press("s")
        plain = str(screen.query_one("#turn-hallucinations", Static).render())
        assert "sentence 2/3 contradictory" in plain
        assert "The tool output says there is no rain tomorrow." in plain
        assert 'contradicting excerpt: {"rain": false}' in plain
        await pilot.press("s", "s")  # stops at the last one
        assert "sentence 3/3 unsupported" in str(screen.query_one("#turn-hallucinations", Static).render())
        await pilot.press("S")
        assert "sentence 2/3" in str(screen.query_one("#turn-hallucinations", Static).render())


async def test_rubric_verdicts_with_votes_and_rationales(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "hotel_rubrics")
        judges = text_of(screen, "#turn-judges")
        assert "rubric_based_final_response_quality_v1  score 0.67" in judges
        assert "✔ mentions_price  votes 5/5 yes" in judges
        assert "✔ quiet  votes 4/5 yes" in judges
        assert "✘ alternative  votes 2/5 yes" in judges
        assert "The answer offers an alternative hotel." in judges
        assert "Only one hotel is suggested." in judges


async def test_judge_errors_and_not_evaluated_reasons(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "judge_down")
        problems = text_of(screen, "#turn-problems")
        assert "– hallucinations_v1: judge failed: 503 UNAVAILABLE (after 4 attempts)" in problems
        assert "hallucinations_v1: sample 0: 503 UNAVAILABLE" in problems
        crash = await open_turn(app, pilot, "agent_crash")
        problems = text_of(crash, "#turn-problems")
        assert "agent error: travel/travel.recorded.json: no recorded case with eval_id 'agent_crash'" in problems
        assert "the agent failed" in problems


async def test_next_and_previous_turn(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = await open_turn(app, pilot, "book_flight", 0)
        assert "turn 1/2" in text_of(screen, "#turn-title")
        await pilot.press("n")
        assert "turn 2/2" in text_of(screen, "#turn-title")
        await pilot.press("n")
        assert "turn 2/2" in text_of(screen, "#turn-title")
        await pilot.press("p")
        assert "turn 1/2" in text_of(screen, "#turn-title")


async def test_a_case_without_a_result_shows_the_expected_turn(workspace: Path, make_app) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        key = app.listing.key(workspace / "travel" / "travel.evalset.json", "book_flight")
        app.listing.results.forget(key)
        screen = await open_turn(app, pilot, "book_flight", 0)
        assert "no result yet" in text_of(screen, "#turn-title")
        cells = grid_text(screen)
        assert "search_flights" in cells[2]
