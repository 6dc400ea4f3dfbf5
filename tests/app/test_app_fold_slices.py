"""A big run's finished cases reach the run book in the same bounded slices as the listing (issue 9,
item 15): the book once took every case finished since the last tick at once, and a 100k-case replay
kept the UI thread in it for seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.app.conftest import settle
from tests.support.evalfiles import case, turn, write_set
from tui_eval.tui import pump
from tui_eval.tui import readmodel
from tui_eval.tui.runbook import RunBook

CASES = 400


async def test_the_run_book_is_fed_a_slice_a_tick_and_its_timeline_entry_counts_every_case(
        tmp_path: Path, make_app, monkeypatch: pytest.MonkeyPatch) -> None:
    write_set(tmp_path / "many.evalset.json", "many",
              *[case(f"c{i:03d}", turn(f"q{i}", "same answer")) for i in range(CASES)])
    monkeypatch.setattr(readmodel, "FOLD_CHUNK", 50)
    app = make_app(tmp_path, recording="many.evalset.json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        book = app.listing.run_book
        fed: list[int] = []
        feed = RunBook.feed

        def counting_feed(self, finished, repetitions, latest):  # the real feed, counted
            fed.append(len(finished))
            return feed(self, finished, repetitions, latest)

        monkeypatch.setattr(RunBook, "feed", counting_feed)
        await pilot.press("R")
        await settle(pilot)
        assert sum(fed) == CASES
        assert max(fed) <= 50, fed  # never more than one slice a call
        entry = book.timeline[0]
        assert entry.ran == CASES and entry.phase == "finished"  # made once every case was folded
        assert len(app.listing.results) == CASES


async def test_a_run_started_while_the_last_ones_cases_are_still_folding_keeps_its_timeline_entry(
        tmp_path: Path, make_app, monkeypatch: pytest.MonkeyPatch) -> None:
    write_set(tmp_path / "many.evalset.json", "many",
              *[case(f"c{i:03d}", turn(f"q{i}", "same answer")) for i in range(CASES)])
    # One case a tick: the first run ends long before the screen has folded its cases.
    monkeypatch.setattr(readmodel, "FOLD_CHUNK", 1)
    monkeypatch.setattr(pump, "FOLD_BUDGET", 0.0)
    monkeypatch.setattr(pump, "STORE_BUDGET", 0.0)
    app = make_app(tmp_path, recording="many.evalset.json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        # The engine finishes the run long before the ticks (one case each) stored its cases.
        deadline = time.monotonic() + 30
        while app.run_state.active and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.run_state.phase == "finished"
        assert app.model.backlog  # the first run's cases are still being folded
        await pilot.press("R")
        await settle(pilot)
        second, first = app.listing.run_book.timeline[:2]
        assert first.ran == CASES and first.phase == "finished"
        assert second.ran == CASES and second.phase == "finished"
