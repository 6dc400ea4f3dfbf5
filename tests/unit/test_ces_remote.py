"""The update mask a push sends: only what changed, never an output-only field."""

from __future__ import annotations

import copy

from tests.support.fake_ces import golden_evaluation, scenario_evaluation
from tui_eval.ces.remote import update_mask


def test_nothing_changed_is_an_empty_mask() -> None:
    assert update_mask(golden_evaluation(), golden_evaluation()) == []


def test_output_only_fields_are_never_named() -> None:
    new = golden_evaluation()
    new["etag"] = "other"
    new["updateTime"] = "2030-01-01T00:00:00Z"
    new["lastCompletedResult"] = {}
    assert update_mask(golden_evaluation(), new) == []


def test_golden_and_scenario_are_named_whole() -> None:
    """The reference documents no sub-paths (golden.turns) for an update mask: a changed golden or
    scenario is named as a whole, as it is sent whole."""
    new = golden_evaluation()
    new["golden"]["turns"][0]["steps"][1]["userInput"]["text"] = "changed"
    new["tags"] = ["smoke"]
    del new["description"]
    assert update_mask(golden_evaluation(), new) == ["description", "golden", "tags"]

    old = scenario_evaluation()
    edited = copy.deepcopy(old)
    edited["scenario"]["rubrics"].append("The agent is brief.")
    edited["scenario"]["maxTurns"] = 4
    edited["displayName"] = "Refund, short"
    assert update_mask(old, edited) == ["displayName", "scenario"]
