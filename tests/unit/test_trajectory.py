"""tool_trajectory_avg_score and its alignment: hand-written vectors for every matching rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.metric_helpers import align_all_match_types, trajectory_matches
from tui_eval.metrics import get_metric
from tui_eval.schema.details import MATCH_TYPE_NAMES, TrajectoryDetails
from tui_eval.metrics.alignment import (
    align_trajectory,
    arg_diffs,
)
from tui_eval.metrics.base import MetricInput
from tui_eval.metrics.trajectory import evaluate
from tui_eval.schema.config import Criterion, EvalConfig, MatchType
from tui_eval.schema.model import (
    Content,
    EvalCase,
    FunctionCall,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
)
from tui_eval.schema.results import EvalStatus

EXACT, IN_ORDER, ANY_ORDER = MatchType.EXACT, MatchType.IN_ORDER, MatchType.ANY_ORDER


def call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> FunctionCall:
    return FunctionCall(name=name, args=args, id=id)


def verdicts(expected: list[FunctionCall], actual: list[FunctionCall], ignore_args: bool = False) -> dict[str, bool]:
    return {name: a.passed for name, a in align_all_match_types(expected, actual, ignore_args).items()}


A, B, C = call("a", {"x": 1}), call("b", {"y": "z"}), call("c", {})


# --- verdicts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expected", "actual", "want"),
    [
        ([A, B], [A, B], (True, True, True)),
        ([A, B], [B, A], (False, False, True)),
        ([A, B], [A, C, B], (False, True, True)),
        ([A, B], [A], (False, False, False)),
        ([A], [A, A], (False, True, True)),  # a duplicate actual call is extra
        ([A, A], [A], (False, False, False)),  # one actual call cannot answer two expected ones
        ([A, A], [A, C, A], (False, True, True)),
        ([A, B, A], [B, A, A], (False, False, True)),
        ([], [], (True, True, True)),
        ([], [A], (False, True, True)),  # empty expected passes IN_ORDER and ANY_ORDER only
        ([A], [], (False, False, False)),
        ([C, A, B], [A, B, C], (False, False, True)),
    ],
)
def test_match_types(expected: list[FunctionCall], actual: list[FunctionCall], want: tuple[bool, bool, bool]) -> None:
    assert verdicts(expected, actual) == dict(zip(("EXACT", "IN_ORDER", "ANY_ORDER"), want))
    for mt, ok in zip(MatchType, want):
        assert trajectory_matches(expected, actual, mt, False) is ok


def test_in_order_is_a_greedy_subsequence_even_with_repeated_names() -> None:
    x1, x2 = call("x", {"n": 1}), call("x", {"n": 2})
    assert trajectory_matches([x1, x2], [x2, x1, x1, x2], IN_ORDER, False)
    assert not trajectory_matches([x1, x2, x1], [x2, x1, x2], IN_ORDER, False)


def test_long_trajectories() -> None:
    noise = [call(f"noise{k}") for k in range(20)]
    assert trajectory_matches([A, B], noise[:9] + [A] + noise[9:] + [B], IN_ORDER, False)
    assert trajectory_matches([B, A], noise + [A, B], ANY_ORDER, False)
    assert not trajectory_matches([B, A], noise + [A, B], IN_ORDER, False)
    assert trajectory_matches(noise + [A], noise + [A], EXACT, False)
    assert not trajectory_matches(noise + [A], noise + [B], EXACT, False)


def test_any_order_each_expected_call_consumes_one_actual_call() -> None:
    assert trajectory_matches([A, A], [B, A, C, A], ANY_ORDER, False)
    assert not trajectory_matches([A, A, A], [A, B, A], ANY_ORDER, False)


@pytest.mark.parametrize(
    ("expected_args", "actual_args", "equal"),
    [
        ({"n": 1}, {"n": 1.0}, True),  # Python values: int == float
        ({"n": True}, {"n": 1}, True),  # ...and bool == int, as ADK's `==` says
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order ignored
        ({"l": [1, 2]}, {"l": [2, 1]}, False),  # list order kept
        ({"d": {"x": [1, {"y": 2}]}}, {"d": {"x": [1, {"y": 2.0}]}}, True),
        (None, {}, False),  # args absent is not args {}
        (None, None, True),
        ({}, {}, True),
        ({"s": "1"}, {"s": 1}, False),
        ({"n": 1}, {"n": 1, "extra": None}, False),
    ],
)
def test_args_compare_as_python_values(expected_args: Any, actual_args: Any, equal: bool) -> None:
    e, a = call("f", expected_args), call("f", actual_args)
    assert verdicts([e], [a]) == {"EXACT": equal, "IN_ORDER": equal, "ANY_ORDER": equal}
    # ignore_args: only names count
    assert verdicts([e], [a], ignore_args=True) == {"EXACT": True, "IN_ORDER": True, "ANY_ORDER": True}
    assert verdicts([e], [call("g", expected_args)], ignore_args=True)["ANY_ORDER"] is False


def test_call_ids_are_ignored() -> None:
    assert verdicts([call("f", {"a": 1}, id="one")], [call("f", {"a": 1}, id="two")])["EXACT"] is True


def test_ignore_args_changes_the_verdict() -> None:
    e = [call("search", {"q": "paris"}), call("book", {"room": 1})]
    a = [call("search", {"q": "rome"}), call("book", {"room": 2})]
    assert verdicts(e, a) == {"EXACT": False, "IN_ORDER": False, "ANY_ORDER": False}
    assert verdicts(e, a, ignore_args=True) == {"EXACT": True, "IN_ORDER": True, "ANY_ORDER": True}


def test_match_type_accepts_names_and_numbers() -> None:
    assert align_trajectory([A, B], [B, A], "any-order").passed
    assert not align_trajectory([A, B], [B, A], 1).passed
    assert align_trajectory([A, B], [B, A], 2).match_type is ANY_ORDER


# --- alignment --------------------------------------------------------------------------------------
def statuses(expected: list[FunctionCall], actual: list[FunctionCall], mt: MatchType, ignore_args: bool = False):
    al = align_trajectory(expected, actual, mt, ignore_args)
    return (
        [(s["status"], s["actual_index"]) for s in al.expected],
        [(s["status"], s["expected_index"]) for s in al.actual],
    )


def test_alignment_of_a_passing_turn() -> None:
    for mt in MatchType:
        assert statuses([A, B], [A, B], mt) == ([("matched", 0), ("matched", 1)], [("matched", 0), ("matched", 1)])


def test_alignment_marks_extra_and_missing() -> None:
    assert statuses([A, B], [A, C], EXACT) == ([("matched", 0), ("missing", None)], [("matched", 0), ("extra", None)])
    assert statuses([A], [C, A, C], IN_ORDER) == ([("matched", 1)], [("extra", None), ("matched", 0), ("extra", None)])


def test_alignment_marks_out_of_order_calls() -> None:
    exp, act = statuses([A, B], [B, A], EXACT)
    # Ties go to the earliest expected calls: A is matched in order; B was made, but too early.
    assert exp == [("matched", 1), ("missing", 0)]
    assert act == [("out_of_order", 1), ("matched", 0)]
    # ANY_ORDER never calls anything out of order
    assert statuses([A, B], [B, A], ANY_ORDER) == ([("matched", 1), ("matched", 0)], [("matched", 1), ("matched", 0)])


def test_failed_in_order_alignment_pairs_the_most_calls() -> None:
    x = call("x")
    al = align_trajectory([x, A, B], [A, B, x], IN_ORDER, False)
    assert not al.passed
    # The greedy scan would pair only x; the display pairs A and B and calls x out of order.
    assert [s["status"] for s in al.expected] == ["missing", "matched", "matched"]
    assert [s["status"] for s in al.actual] == ["matched", "matched", "out_of_order"]
    assert al.counts() == {"matched": 2, "missing": 1, "extra": 0, "out_of_order": 1}
    assert al.summary() == "IN_ORDER: out of order: x"


def test_alignment_duplicates_are_extra_not_out_of_order() -> None:
    exp, act = statuses([A], [A, A], EXACT)
    assert exp == [("matched", 0)]
    assert act == [("matched", 0), ("extra", None)]


def test_same_name_with_other_args_shows_the_differing_paths() -> None:
    e = call("book", {"filters": {"room": "101", "beds": 2}, "items": [1, 2, 3], "sides": "fries"})
    a = call("book", {"filters": {"room": "102", "beds": 2.0}, "items": [1, 2, 4], "sides": "salad"})
    al = align_trajectory([e], [a], EXACT, False)
    assert not al.passed
    assert al.expected[0]["status"] == "missing" and al.expected[0]["actual_index"] == 0
    assert al.actual[0]["status"] == "extra" and al.actual[0]["expected_index"] == 0
    diffs = al.expected[0]["arg_diffs"]
    assert [d["path"] for d in diffs] == ["filters.room", "items[2]", "sides"]
    assert diffs[0] == {"path": "filters.room", "kind": "changed", "expected": "101", "actual": "102"}
    assert al.actual[0]["arg_diffs"] == diffs
    assert al.summary() == "EXACT: other args: book"


def test_arg_diff_kinds_and_paths() -> None:
    assert arg_diffs({"sides": 1}, {"sides": 2}) == [{"path": "sides", "kind": "changed", "expected": 1, "actual": 2}]
    assert arg_diffs({"a": 1, "b": 2}, {"a": 1, "c": 3}) == [
        {"path": "b", "kind": "missing", "expected": 2},
        {"path": "c", "kind": "extra", "actual": 3},
    ]
    assert arg_diffs({"l": [1]}, {"l": [1, 2]}) == [{"path": "l[1]", "kind": "extra", "actual": 2}]
    assert arg_diffs({"l": [1, 2]}, {"l": [1]}) == [{"path": "l[1]", "kind": "missing", "expected": 2}]
    assert arg_diffs({"a.b c": 1}, {"a.b c": 2})[0]["path"] == '["a.b c"]'
    assert arg_diffs({"x": {"k": [0, {"deep": 1}]}}, {"x": {"k": [0, {"deep": 2}]}})[0]["path"] == "x.k[1].deep"
    assert arg_diffs({"n": 1}, {"n": 1.0}) == []  # equal as Python values: no diff
    assert arg_diffs({"t": [1]}, {"t": {"0": 1}}) == [
        {"path": "t", "kind": "changed", "expected": [1], "actual": {"0": 1}}
    ]
    assert arg_diffs(None, {}) == [{"path": "", "kind": "changed", "expected": None, "actual": {}}]


def test_none_versus_empty_args_is_explained_at_the_root() -> None:
    al = align_trajectory([call("f", None)], [call("f", {})], EXACT, False)
    assert not al.passed
    assert al.expected[0]["arg_diffs"] == [{"path": "", "kind": "changed", "expected": None, "actual": {}}]


def test_alignment_is_json_even_for_odd_python_args() -> None:
    al = align_trajectory([call("f", {"s": {1, 2}})], [call("f", {"s": (1, 2), "o": object()})], EXACT, False)
    text = json.dumps(al.to_dict())
    assert '"kind": "extra"' in text and '"path": "s"' in text


def test_to_dict_shape() -> None:
    d = align_trajectory([A, B], [A], IN_ORDER, False).to_dict()
    assert d == {
        "match_type": "IN_ORDER",
        "ignore_args": False,
        "passed": False,
        "expected": [
            {"index": 0, "name": "a", "status": "matched", "actual_index": 0},
            {"index": 1, "name": "b", "status": "missing", "actual_index": None},
        ],
        "actual": [{"index": 0, "name": "a", "status": "matched", "expected_index": 0}],
    }
    assert json.loads(json.dumps(d)) == d


def test_alignment_agrees_with_the_verdict() -> None:
    # Passed exactly when every expected call is matched (and for EXACT every actual call too).
    calls = [A, B, C, call("a", {"x": 2}), call("b")]
    import itertools

    for n in range(4):
        for expected in itertools.product(calls[:3], repeat=min(n, 2)):
            for actual in itertools.product(calls, repeat=n):
                for mt in MatchType:
                    for ignore in (False, True):
                        al = align_trajectory(list(expected), list(actual), mt, ignore)
                        all_expected = all(s["status"] == "matched" for s in al.expected)
                        all_actual = all(s["status"] == "matched" for s in al.actual)
                        want = all_expected and (all_actual or mt is not EXACT)
                        assert al.passed is want, (expected, actual, mt, ignore)
                        assert al.passed is trajectory_matches(list(expected), list(actual), mt, ignore)


# --- the metric -------------------------------------------------------------------------------------
def turn(calls: list[FunctionCall], events: bool = False) -> Invocation:
    if events:
        data: Any = InvocationEvents(
            invocation_events=[InvocationEvent(author="agent", content=Content(
                parts=[Part(function_call=c) for c in calls], role="model"))]
        )
    else:
        data = IntermediateData(tool_uses=calls)
    return Invocation(user_content=Content.from_text("hi"), intermediate_data=data)


def metric_input(actual: list[Invocation], expected: list[Invocation], threshold: float = 1.0,
                 match_type: MatchType = EXACT, ignore_args: bool = False, seen: list[int] | None = None) -> MetricInput:
    raw: dict[str, Any] = {"threshold": threshold, "match_type": match_type.name}
    crit = Criterion("tool_trajectory_avg_score", threshold, match_type, ignore_args, raw=raw)
    progress = seen.append if seen is not None else (lambda _i: None)
    return MetricInput(
        criterion=crit,
        case=EvalCase(eval_id="case", conversation=expected),
        actual=actual,
        expected=expected,
        config=EvalConfig(criteria={"tool_trajectory_avg_score": crit}),
        progress=progress,
    )


def test_metric_is_registered() -> None:
    spec = get_metric("tool_trajectory_avg_score")
    assert spec is not None and spec.needs_reference and not spec.needs_judge
    assert spec.evaluate is evaluate


def test_metric_scores_each_turn_and_averages() -> None:
    seen: list[int] = []
    expected = [turn([A, B]), turn([A]), turn([])]
    actual = [turn([A, B]), turn([B], events=True), turn([C])]
    result = evaluate(metric_input(actual, expected, threshold=0.6, seen=seen))
    assert [r.score for r in result.per_invocation] == [1.0, 0.0, 0.0]  # EXACT: [] vs [C] fails
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.FAILED]
    assert result.score == pytest.approx(1 / 3)
    assert result.status is EvalStatus.FAILED
    assert result.metric_name == "tool_trajectory_avg_score" and result.threshold == 0.6
    assert result.criterion == {"threshold": 0.6, "match_type": "EXACT"}
    assert seen == [0, 1, 2]
    details = result.per_invocation[1].details
    assert isinstance(details, TrajectoryDetails)
    assert details.match_type == "EXACT"
    assert details.alignment()["expected"][0]["status"] == "missing"
    assert result.per_invocation[1].reason == "EXACT: missing: a; extra: b"
    assert result.per_invocation[0].reason is None
    json.dumps(result.to_record())


def test_metric_uses_match_type_and_ignore_args() -> None:
    expected = [turn([A, B])]
    actual = [turn([call("b", {"other": 1}), A])]
    assert evaluate(metric_input(actual, expected, match_type=ANY_ORDER)).score == 0.0
    result = evaluate(metric_input(actual, expected, match_type=ANY_ORDER, ignore_args=True))
    assert result.score == 1.0 and result.status is EvalStatus.PASSED
    details = result.per_invocation[0].details
    assert isinstance(details, TrajectoryDetails) and details.ignore_args is True


def test_metric_threshold_is_inclusive() -> None:
    expected = [turn([A]), turn([A])]
    result = evaluate(metric_input([turn([A]), turn([])], expected, threshold=0.5))
    assert result.score == 0.5 and result.status is EvalStatus.PASSED


def test_metric_without_reference_is_not_evaluated() -> None:
    inp = metric_input([turn([A])], [turn([A])])
    inp.expected = None
    result = evaluate(inp)
    assert result.status is EvalStatus.NOT_EVALUATED and result.score is None


def test_metric_stores_every_match_types_alignment_equal_to_computing_it() -> None:
    # Stored once when two match types pair alike; read back, each equals that type's own alignment.
    from tui_eval.metrics.alignment import align_trajectory as align

    cases = [([A, B], [A, B]), ([A, B], [B, A]), ([A], [A, C]), ([A, B], [call("a", {"x": 9}), B]), ([], [C])]
    for configured in (EXACT, IN_ORDER, ANY_ORDER):
        for exp_calls, act_calls in cases:
            result = evaluate(metric_input([turn(act_calls)], [turn(exp_calls)], match_type=configured))
            details = result.per_invocation[0].details
            assert isinstance(details, TrajectoryDetails) and details.match_type == configured.name
            for name in MATCH_TYPE_NAMES:
                mt = MatchType[name]
                own = align(exp_calls, act_calls, mt, False)
                stored = details.alignment(name)
                assert stored == {"passed": own.passed, "expected": own.expected, "actual": own.actual}, (mt, exp_calls)


def test_passed_turns_with_the_same_trajectory_share_one_details_object() -> None:
    # A 5,000-case run keeps a details object per turn: identical EXACT passes (most turns) share one.
    expected = [turn([A, B]), turn([A, B]), turn([A])]
    actual = [turn([A, B]), turn([A, B], events=True), turn([A])]
    result = evaluate(metric_input(actual, expected))
    first, second, third = (r.details for r in result.per_invocation)
    assert first is second and first is not third
    assert isinstance(first, TrajectoryDetails)
    assert first == TrajectoryDetails.model_validate(first.model_dump())
    assert isinstance(first, TrajectoryDetails) and first.alignment("ANY_ORDER")["actual"] == [
        {"index": 0, "name": "a", "status": "matched", "expected_index": 0},
        {"index": 1, "name": "b", "status": "matched", "expected_index": 1},
    ]
    # Another match type or ignore_args is another details object.
    other = evaluate(metric_input([turn([A, B])], [turn([A, B])], match_type=IN_ORDER)).per_invocation[0].details
    assert isinstance(other, TrajectoryDetails) and other is not first and other.match_type == "IN_ORDER"
