"""Work the scoring path shares instead of repeating: one comparison per pair of calls across the three
trajectory alignments, and shared read-only results for turns that score alike."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tui_eval.metrics import efficiency
from tui_eval.metrics import response_match as rm
from tui_eval.metrics.alignment import align_all, align_trajectory
from tui_eval.metrics.base import MetricInput
from tui_eval.schema.config import Criterion, EvalConfig, MatchType
from tui_eval.schema.model import Content, EvalCase, FunctionCall, IntermediateData, Invocation, Part
from tui_eval.schema.results import EvalStatus

EXACT, IN_ORDER, ANY_ORDER = MatchType.EXACT, MatchType.IN_ORDER, MatchType.ANY_ORDER


class Probe:
    """An argument value that counts how often it is compared (every call comparison compares args)."""

    compared = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        Probe.compared += 1
        return isinstance(other, Probe) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Probe({self.value})"


def call(name: str, value: int) -> FunctionCall:
    return FunctionCall(name=name, args={"v": Probe(value)})


def test_a_failing_turn_compares_each_pair_of_calls_once_for_all_three_match_types() -> None:
    expected = [call("f", 1), call("g", 2), call("h", 3)]
    actual = [call("g", 2), call("f", 9), call("h", 3)]
    Probe.compared = 0
    exact, in_order, any_order = align_all(expected, actual)
    shared = Probe.compared
    # 1 for EXACT's in-place check (h against h), 3 same-name pairs in the match matrix, 1 to find where
    # f's args differ. Aligning the match types one by one (as the metric did) compared args 20 times.
    assert shared == 5
    Probe.compared = 0
    separately = [align_trajectory(expected, actual, mt) for mt in (EXACT, IN_ORDER, ANY_ORDER)]
    assert Probe.compared > shared
    for together, alone in zip((exact, in_order, any_order), separately):
        assert (together.match_type, together.passed, together.expected, together.actual) == (
            alone.match_type, alone.passed, alone.expected, alone.actual)
    # EXACT and IN_ORDER fail along the same pairing: one set of steps, held by both.
    assert in_order.expected is exact.expected and in_order.actual is exact.actual
    assert exact.expected[0]["arg_diffs"] == [{"path": "v", "kind": "changed", "expected": "Probe(1)",
                                               "actual": "Probe(9)"}]


def turn(text: str, calls: int = 0) -> Invocation:
    return Invocation(
        user_content=Content.from_text("q"),
        final_response=Content(parts=[Part(text=text)], role="model"),
        intermediate_data=IntermediateData(tool_uses=[FunctionCall(name="t", args={}) for _ in range(calls)]),
    )


def test_turns_with_the_same_tool_counts_share_their_efficiency_results() -> None:
    first = efficiency.efficiency_results([turn("a", 2), turn("b", 1)])
    second = efficiency.efficiency_results([turn("c", 2), turn("d", 1)])
    other = efficiency.efficiency_results([turn("c", 1), turn("d", 2)])
    assert first == second
    assert all(a is b for a, b in zip(first, second))  # one result held by both cases (memory)
    assert first is not second  # each case gets its own list
    tool_calls = {m.metric_name: m for m in first}[efficiency.TOOL_CALL_COUNT]
    assert tool_calls.score == 1.5 and [t.score for t in tool_calls.per_invocation] == [2.0, 1.0]
    assert {m.metric_name: m for m in other}[efficiency.TOOL_CALL_COUNT] != tool_calls
    # A result both cases hold cannot be rewritten through either of them.
    with pytest.raises(ValidationError, match="frozen"):
        tool_calls.score = 0.0  # type: ignore[misc]  # (what the test proves cannot be done)
    with pytest.raises(ValidationError, match="frozen"):
        tool_calls.per_invocation[0].score = 0.0  # type: ignore[misc]
    assert {m.metric_name: m for m in second}[efficiency.TOOL_CALL_COUNT].score == 1.5
    # A timed turn is computed for itself, never shared.
    timed = turn("e", 2)
    timed.duration = 1.5
    results = {m.metric_name: m for m in efficiency.efficiency_results([timed, turn("f", 1)])}
    assert results[efficiency.INVOCATION_DURATION].score == 1.5
    assert results[efficiency.TOOL_CALL_COUNT] is not tool_calls


def _rouge_input(actual: list[Invocation], expected: list[Invocation], threshold: float) -> MetricInput:
    crit = Criterion("response_match_score", threshold, raw={"threshold": threshold})
    return MetricInput(criterion=crit, case=EvalCase(eval_id="c", conversation=expected), actual=actual,
                       expected=expected, config=EvalConfig(criteria={"response_match_score": crit}))


def test_unchanged_responses_share_one_rouge_result_with_the_computed_values() -> None:
    texts = ["the dogs were running home", "two cats ran away", "", "the dogs were running home"]
    result = rm.evaluate(_rouge_input([turn(t) for t in texts], [turn(t) for t in texts], 0.5))
    first, second, empty, again = result.per_invocation
    assert again == first and second != first
    assert again is first  # one result for both turns: what this test is about (memory), not a value
    # Each equals what the general arithmetic gives for that text against itself.
    for inv, text in zip(result.per_invocation, texts):
        precision, recall, score, shared, cand, ref = rm.rouge1_details(text, text + " ")
        assert (inv.score, inv.details.precision, inv.details.recall) == (score, precision, recall)  # type: ignore[union-attr]
        assert (inv.details.shared_tokens, inv.details.reference_tokens) == (shared, ref)  # type: ignore[union-attr]
    assert first.status is EvalStatus.PASSED and empty.status is EvalStatus.FAILED and empty.score == 0.0
    # Another threshold's verdict is another result.
    strict = rm.evaluate(_rouge_input([turn(texts[0])], [turn(texts[0])], 1.5)).per_invocation[0]
    assert strict.status is EvalStatus.FAILED and strict != first



def test_the_run_efficiency_line_counts_a_shared_result_once_per_case_that_holds_it() -> None:
    from tui_eval.schema.results import CaseResult

    def case_of(turns: list[Invocation]) -> CaseResult:
        return CaseResult(eval_set_id="s", eval_id="c", status=EvalStatus.PASSED,
                          metrics=efficiency.efficiency_results(turns), actual=turns)

    timed = [turn("t", 1), turn("u", 0)]
    timed[0].duration, timed[1].duration = 0.1, 0.2
    # 7 cases of (2, 1) tool calls share one result; one case of (3,); one timed case (1, 0).
    cases = [case_of([turn("a", 2), turn("b", 1)]) for _ in range(7)] + [case_of([turn("c", 3)]), case_of(timed)]
    # Turn by turn: 7 * (2 + 1) + 3 + (1 + 0) = 25 calls over 7 * 2 + 1 + 2 = 17 turns; durations only
    # from the timed case: (0.1 + 0.2) / 2.
    assert efficiency.run_efficiency(cases) == (
        f"{25 / 17:.1f} tool calls/turn, n/a model calls/turn, n/a tokens/turn, {(0.1 + 0.2) / 2:.2f} s/turn")
    assert efficiency.run_efficiency([]) is None
