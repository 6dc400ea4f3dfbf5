"""Issue 19 item 2: the trajectory diff shows the expected calls in the eval file's order and the
actual ones in the agent's, and a swap reads as one move (never missing and out of order at once)."""

from __future__ import annotations

import pytest

from tests.support.metric_helpers import align_all_match_types
from tui_eval.schema.details import alignment_counts
from tui_eval.schema.model import FunctionCall
from tui_eval.tui.verdicts import alignment_summary, trajectory_rows


def _calls(*names: str) -> list[FunctionCall]:
    return [FunctionCall(name=n, args={}) for n in names]


def _columns(rows) -> tuple[list[str], list[str]]:
    left = [r.expected.plain for r in rows if r.expected is not None]
    right = [r.actual.plain for r in rows if r.actual is not None]
    return left, right


@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER", "ANY_ORDER"])
def test_a_swap_keeps_each_columns_order_under_every_match_type(match_type: str) -> None:
    expected, actual = _calls("search_hotel", "book_hotel"), _calls("book_hotel", "search_hotel")
    alignment = align_all_match_types(expected, actual)[match_type].as_details()
    left, right = _columns(trajectory_rows(alignment, expected, actual))
    assert [c.split()[1] for c in left] == ["search_hotel()", "book_hotel()"]
    assert [c.split()[1] for c in right] == ["book_hotel()", "search_hotel()"]
    summary = alignment_summary(alignment)
    assert "missing" not in summary and not any("missing" in c for c in left + right)
    if match_type == "ANY_ORDER":
        assert summary == "2 matched"
    else:
        assert summary == "1 matched, book_hotel moved from 2 to 1"
        assert "↕ book_hotel() moved from 2 to 1" in right
        assert "↕ book_hotel() moved to 1" in left
        # The headless report's counts say the same: one call out of order, none missing.
        assert alignment_counts(alignment) == {"matched": 1, "missing": 0, "extra": 0, "out_of_order": 1}


def test_missing_extra_and_other_args_still_share_rows_in_order() -> None:
    expected = [FunctionCall(name="a", args={"d": 1}), FunctionCall(name="b", args={}), FunctionCall(name="c", args={})]
    actual = [FunctionCall(name="a", args={"d": 2}), FunctionCall(name="x", args={}), FunctionCall(name="c", args={})]
    alignment = align_all_match_types(expected, actual)["EXACT"].as_details()
    rows = [(r.expected.plain if r.expected else "", r.actual.plain if r.actual else "")
            for r in trajectory_rows(alignment, expected, actual)]
    assert rows == [
        ("≠ other args a(d=1)", "≠ other args a(d=2)"),
        ("✘ missing b()", ""),
        ("", "+ extra x()"),
        ("✔ c()", "✔ c()"),
    ]
    assert alignment_summary(alignment) == "1 matched, 1 with other args, 1 missing, 1 extra"


def test_the_event_trace_lists_texts_transfers_calls_and_responses_in_order() -> None:
    from tui_eval.schema.load import read_invocation
    from tui_eval.tui.verdicts import event_trace_lines, tool_response_lines

    inv = read_invocation({
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": "refund?"}]},
        "final_response": {"role": "model", "parts": [{"text": "Refunds take 5 days."}]},
        "intermediate_data": {"invocation_events": [
            {"author": "root", "content": {"role": "model", "parts": [
                {"text": "Let me ask billing."},
                {"function_call": {"id": "c1", "name": "transfer_to_agent", "args": {"agent_name": "billing"}}}]}},
            {"author": "billing", "content": {"role": "model", "parts": [
                {"function_call": {"id": "c2", "name": "search_kb", "args": {"q": "refund"}}}]}},
            {"author": "billing", "content": {"role": "user", "parts": [
                {"function_response": {"id": "c2", "name": "search_kb", "response": {"answer": "5 days"}}}]}},
        ]},
    }, "$")
    trace = [line.plain for line in event_trace_lines(inv)]
    assert trace == [
        "root: Let me ask billing.",
        'root transfers transfer_to_agent(agent_name="billing")',
        'billing calls search_kb(q="refund")',
        'billing ← search_kb: {"answer": "5 days"}',
        "final: Refunds take 5 days.",
    ]
    responses = [line.plain for line in tool_response_lines(inv)]
    assert responses == ['transfer_to_agent(agent_name="billing")  (no response recorded)',
                         'search_kb(q="refund") → {"answer": "5 days"}']


@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER"])
def test_a_call_at_the_same_place_in_both_lists_is_out_of_order_not_moved(match_type: str) -> None:
    """a b c against c b a: b is second in both, so it did not move (never `b moved from 2 to 2`)."""
    expected, actual = _calls("a", "b", "c"), _calls("c", "b", "a")
    alignment = align_all_match_types(expected, actual)[match_type].as_details()
    summary = alignment_summary(alignment)
    assert summary == "1 matched, c moved from 3 to 1, 1 out of order"
    _left, right = _columns(trajectory_rows(alignment, expected, actual))
    assert "↕ b() out of order" in right and not any("from 2 to 2" in c for c in right)
