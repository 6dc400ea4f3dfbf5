"""Differential tests: our deterministic metrics against google-adk 2.13's own evaluators on generated data."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import (
    RougeEvaluator,
    _calculate_rouge_1_scores,
    _UnicodeAwareTokenizer,
)
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.metric_helpers import rouge1
from tui_eval.metrics import response_match as rm
from tui_eval.metrics import trajectory
from tui_eval.metrics.base import MetricInput
from tui_eval.schema.config import Criterion, EvalConfig, MatchType
from tui_eval.schema.details import MATCH_TYPE_NAMES, TrajectoryDetails
from tui_eval.schema.model import (
    Content,
    EvalCase,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
)
from tui_eval.schema.results import MetricResult

SETTINGS = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
ADK_TOKENIZER = _UnicodeAwareTokenizer(use_stemmer=True)


def to_adk(invocations: list[Invocation]) -> list[AdkInvocation]:
    return [AdkInvocation.model_validate(inv.to_dict()) for inv in invocations]


def metric_input(name: str, actual: list[Invocation], expected: list[Invocation], threshold: float,
                 match_type: MatchType = MatchType.EXACT, ignore_args: bool = False) -> MetricInput:
    crit = Criterion(name, threshold, match_type, ignore_args, raw={"threshold": threshold})
    return MetricInput(criterion=crit, case=EvalCase(eval_id="c", conversation=expected), actual=actual,
                       expected=expected, config=EvalConfig(criteria={name: crit}))


def assert_same(ours: MetricResult, adk: Any) -> None:
    assert ours.score is not None and adk.overall_score is not None
    assert abs(ours.score - adk.overall_score) <= 1e-9
    assert int(ours.status) == adk.overall_eval_status.value
    assert len(ours.per_invocation) == len(adk.per_invocation_results)
    for mine, theirs in zip(ours.per_invocation, adk.per_invocation_results):
        assert mine.score is not None and abs(mine.score - theirs.score) <= 1e-9
        assert int(mine.status) == theirs.eval_status.value


# --- trajectories -----------------------------------------------------------------------------------
NAMES = st.sampled_from(["search", "book", "cancel"])
KEYS = st.sampled_from(["city", "n", "filters", "items"])
# Small value pools so that equal args (and the 1 == 1.0 == True corner) come up often; two levels of
# nesting are enough for dict key order and list order, and keep generation cheap.
LEAVES = st.sampled_from([0, 1, 2, -1, 0.0, 1.0, 2.5, True, False, None, "", "paris", "Paris", "1"])
INNER = st.one_of(LEAVES, st.lists(LEAVES, max_size=3), st.dictionaries(KEYS, LEAVES, max_size=2))
VALUES = st.one_of(INNER, st.lists(INNER, max_size=2), st.dictionaries(KEYS, INNER, max_size=2))
ARGS = st.one_of(st.none(), st.dictionaries(KEYS, VALUES, max_size=3))
CALLS = st.builds(FunctionCall, name=NAMES, args=ARGS, id=st.one_of(st.none(), st.sampled_from(["c1", "c2"])))


@st.composite
def actual_calls(draw: st.DrawFn, expected: list[FunctionCall]) -> list[FunctionCall]:
    """Near misses as often as strangers: copies, shuffles, drops, insertions, re-typed args."""
    new_ids = draw(st.booleans())  # ids never count: change them all or none
    calls = [FunctionCall(name=c.name, args=copy.deepcopy(c.args), id=f"x{k}" if new_ids else c.id)
             for k, c in enumerate(expected)]
    kind = draw(st.sampled_from(["same", "shuffle", "edit", "edit", "fresh"]))
    if kind == "fresh":
        return draw(st.lists(CALLS, max_size=3))
    if kind == "shuffle":
        return draw(st.permutations(calls))
    if kind == "edit":
        for _ in range(draw(st.integers(1, 3))):
            op = draw(st.sampled_from(["drop", "insert", "dup", "args", "int2float", "swap"]))
            if op == "drop" and calls:
                calls.pop(draw(st.integers(0, len(calls) - 1)))
            elif op == "insert":
                calls.insert(draw(st.integers(0, len(calls))), draw(CALLS))
            elif op == "dup" and calls:
                calls.insert(draw(st.integers(0, len(calls))), copy.deepcopy(draw(st.sampled_from(calls))))
            elif op == "args" and calls:
                k = draw(st.integers(0, len(calls) - 1))
                calls[k] = FunctionCall(name=calls[k].name, args=draw(ARGS))
            elif op == "int2float" and calls:
                k = draw(st.integers(0, len(calls) - 1))
                calls[k] = FunctionCall(name=calls[k].name, args=_floats(calls[k].args))
            elif op == "swap" and len(calls) > 1:
                i, j = draw(st.integers(0, len(calls) - 1)), draw(st.integers(0, len(calls) - 1))
                calls[i], calls[j] = calls[j], calls[i]
    return calls


def _floats(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


@st.composite
def turn_with(draw: st.DrawFn, calls: list[FunctionCall]) -> Invocation:
    """A turn carrying `calls` in either intermediate-data shape (or none at all when there are none)."""
    shape = draw(st.sampled_from(["tool_uses", "events", "none"] if not calls else ["tool_uses", "events"]))
    if shape == "none":
        data: Any = None
    elif shape == "tool_uses":
        data = IntermediateData(tool_uses=calls, tool_responses=[FunctionResponse(name=c.name, response={"ok": True}) for c in calls])
    else:
        events = []
        for c in calls:  # interleave text and responses, which must not count as calls
            events.append(InvocationEvent(author="agent", content=Content(parts=[Part(text="thinking"), Part(function_call=c)], role="model")))
            events.append(InvocationEvent(author="tool", content=Content(parts=[Part(function_response=FunctionResponse(name=c.name))], role="user")))
        data = InvocationEvents(invocation_events=events)
    return Invocation(user_content=Content.from_text("go"), invocation_id="i", intermediate_data=data,
                      final_response=Content.from_text("done", role="model"))


@st.composite
def trajectory_cases(draw: st.DrawFn) -> tuple[list[Invocation], list[Invocation]]:
    expected, actual = [], []
    for _ in range(draw(st.integers(1, 2))):
        exp_calls = draw(st.lists(CALLS, max_size=3))
        expected.append(draw(turn_with(exp_calls)))
        actual.append(draw(turn_with(draw(actual_calls(exp_calls)))))
    return actual, expected


THRESHOLDS = st.one_of(st.sampled_from([0.0, 0.5, 2 / 3, 1.0]), st.floats(0.0, 1.0))


def adk_trajectory(threshold: float, match_type: MatchType, ignore_args: bool) -> TrajectoryEvaluator:
    return TrajectoryEvaluator(eval_metric=EvalMetric(
        metric_name="tool_trajectory_avg_score",
        criterion=ToolTrajectoryCriterion(threshold=threshold, match_type=match_type.name, ignore_args=ignore_args),
    ))


@SETTINGS
@given(case=trajectory_cases(), threshold=THRESHOLDS)
def test_trajectory_equals_adk(case: tuple[list[Invocation], list[Invocation]], threshold: float) -> None:
    actual, expected = case
    adk_actual, adk_expected = to_adk(actual), to_adk(expected)
    for match_type in MatchType:  # every match type x ignore_args on the same turns
        for ignore_args in (False, True):
            theirs = adk_trajectory(threshold, match_type, ignore_args).evaluate_invocations(adk_actual, adk_expected)
            ours = trajectory.evaluate(metric_input("tool_trajectory_avg_score", actual, expected, threshold,
                                                    match_type, ignore_args))
            assert_same(ours, theirs)
            for inv, act, exp in zip(ours.per_invocation, actual, expected):
                details = inv.details  # the stored alignment agrees with the verdict
                assert isinstance(details, TrajectoryDetails)
                alignment = details.alignment()
                assert alignment["passed"] is (inv.score == 1.0)
                assert details.match_type == match_type.name
                assert len(alignment["expected"]) == len(exp.tool_calls)
                assert len(alignment["actual"]) == len(act.tool_calls)
                for name in MATCH_TYPE_NAMES:  # and every match type's stored alignment is ADK's verdict for it
                    theirs_other = adk_trajectory(threshold, MatchType[name], ignore_args).evaluate_invocations(
                        to_adk([act]), to_adk([exp]))
                    assert details.alignment(name)["passed"] is (theirs_other.overall_score == 1.0)


def test_trajectory_corner_cases_equal_adk() -> None:
    # The hand-picked corners, through ADK too, so the vectors in test_trajectory cannot drift from it.
    corners = [
        ([FunctionCall(name="f", args=None)], [FunctionCall(name="f", args={})]),
        ([FunctionCall(name="f", args={"n": 1})], [FunctionCall(name="f", args={"n": 1.0})]),
        ([FunctionCall(name="f", args={"n": True})], [FunctionCall(name="f", args={"n": 1})]),
        ([FunctionCall(name="f", args={"a": 1, "b": [1, 2]})], [FunctionCall(name="f", args={"b": [1, 2], "a": 1})]),
        ([FunctionCall(name="f", args={"b": [1, 2]})], [FunctionCall(name="f", args={"b": [2, 1]})]),
        ([], []),
        ([], [FunctionCall(name="f")]),
        ([FunctionCall(name="f")], []),
        ([FunctionCall(name="f"), FunctionCall(name="f")], [FunctionCall(name="f")]),
        ([FunctionCall(name="f", id="a")], [FunctionCall(name="f", id="b")]),
    ]
    for exp_calls, act_calls in corners:
        expected = [Invocation(user_content=Content.from_text("q"), intermediate_data=IntermediateData(tool_uses=exp_calls))]
        actual = [Invocation(user_content=Content.from_text("q"), intermediate_data=IntermediateData(tool_uses=act_calls))]
        for match_type in MatchType:
            for ignore_args in (False, True):
                theirs = adk_trajectory(1.0, match_type, ignore_args).evaluate_invocations(
                    to_adk(actual), to_adk(expected))
                ours = trajectory.evaluate(metric_input("tool_trajectory_avg_score", actual, expected, 1.0,
                                                        match_type, ignore_args))
                assert_same(ours, theirs)


# --- response match ---------------------------------------------------------------------------------
WORDS = ("The the running runs ran run dogs dog's cats booked booking hotel Paris paris is a an of to "
         "generously relational sky skies news 42 1st x2 abc123 Straße café naïve résumé").split()
SCRIPTS = [
    "你好", "世界", "中", "ひらがな", "カタカナ", "ﾊﾝｶｸ", "한국어", "สวัสดีครับ", "ภาษาไทย", "ไทย", "ລາວ", "ខ្មែរ",
    "မြန်မာ", "привет", "مرحبا", "שלום", "नमस्ते", "ﬁnance", "１２３", "ＡＢＣ", "①", "½", "Ⅻ", "😀", "e\u0301",
    "\u0e31", "\u3099", "İ", "ǅ", "K", "\u00a0", "\u2028", "\u3000", "—", "’", "“", "…", "_", "-", "'",
]
SEPARATORS = st.sampled_from([" ", " ", " ", "", "\n", "\t", ", ", ". ", "!", "?", "(", ")", "  "])
PIECES = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(SCRIPTS),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789", min_size=1, max_size=12),
    st.text(max_size=4),  # any Unicode category, surrogates excluded
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.tuples(PIECES, SEPARATORS), max_size=8))
    return "".join(p + s for p, s in pieces)


@SETTINGS
@given(candidate=texts(), reference=texts())
def test_rouge_equals_adk(candidate: str, reference: str) -> None:
    assert rm.tokenize(candidate) == ADK_TOKENIZER.tokenize(candidate)
    assert rm.tokenize(reference) == ADK_TOKENIZER.tokenize(reference)
    theirs = _calculate_rouge_1_scores(candidate, reference)
    ours = rouge1(candidate, reference)
    assert abs(ours[0] - theirs.precision) <= 1e-9
    assert abs(ours[1] - theirs.recall) <= 1e-9
    assert abs(ours[2] - theirs.fmeasure) <= 1e-9
    same = _calculate_rouge_1_scores(candidate, candidate)  # the identical-text shortcut
    assert rouge1(candidate, candidate) == (same.precision, same.recall, same.fmeasure)


@SETTINGS
@given(text=st.text(max_size=40))
def test_tokenizer_equals_adk_on_arbitrary_unicode(text: str) -> None:
    assert rm.tokenize(text) == ADK_TOKENIZER.tokenize(text)


@SETTINGS
@given(text=st.text(alphabet=st.characters(codec="ascii"), max_size=60))
def test_ascii_fast_path_equals_adk(text: str) -> None:
    assert rm.tokenize(text) == ADK_TOKENIZER.tokenize(text)


@st.composite
def responses(draw: st.DrawFn) -> Content | None:
    if draw(st.integers(0, 7)) == 0:
        return None
    parts = draw(st.lists(st.one_of(texts(), st.none(), st.just("")), max_size=2))
    return Content(parts=[Part(text=p) for p in parts], role="model")


@SETTINGS
@given(pairs=st.lists(st.tuples(responses(), responses()), min_size=1, max_size=2), threshold=THRESHOLDS)
def test_response_match_metric_equals_adk(pairs: list[tuple[Content | None, Content | None]], threshold: float) -> None:
    actual = [Invocation(user_content=Content.from_text("q"), invocation_id="i", final_response=a) for a, _ in pairs]
    expected = [Invocation(user_content=Content.from_text("q"), invocation_id="i", final_response=e) for _, e in pairs]
    evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=threshold))
    theirs = evaluator.evaluate_invocations(to_adk(actual), to_adk(expected))
    ours = rm.evaluate(metric_input("response_match_score", actual, expected, threshold))
    assert_same(ours, theirs)


HAND_TEXTS = [
    "Hello, World!", "running runs ran", "cats dogs was has", "generously sky skies dying", "ﬁnance",
    "１２３ ＡＢＣ", "你好世界", "abc中def", "ひらがな カタカナ 한국어", "ﾊﾝｶｸ", "สวัสดีครับ", "ภาษา", "฿100", "café naïve",
    "Straße İstanbul", "The cats’ toys — “nice”", "e\u0301t\u00e9", "x\u0301yz", "привет мир running", "٣ apples",
    "emoji 😀 here", "it's a well-known fact_checked e-mail", "", "...!!!",
]


@pytest.mark.parametrize("text", HAND_TEXTS)
def test_hand_vectors_are_adks(text: str) -> None:
    assert rm.tokenize(text) == ADK_TOKENIZER.tokenize(text)
    theirs = _calculate_rouge_1_scores(text, "the cat runs in Paris 你好 สวัสดี café")
    assert rouge1(text, "the cat runs in Paris 你好 สวัสดี café") == tuple(theirs)
