"""Helpers only the tests use, over the metrics' real code (moved out of the package: no caller there)."""

from __future__ import annotations

import unicodedata
from typing import Sequence, TypeVar

from pydantic import BaseModel

from tui_eval.metrics import response_match as rm
from tui_eval.metrics.alignment import TrajectoryAlignment, align_all, any_order_match, exact_match, in_order_match
from tui_eval.schema.criteria import MatchType
from tui_eval.schema.model import FunctionCall
from tui_eval.schema.results import CaseResult, InvocationMetricResult, MetricResult


def tokens_per_character(text: str) -> list[str]:
    """ADK's tokenizer as literally written: one rewrite of the whole text (the yardstick for
    `response_match.tokenize`, which tokenizes in chunks)."""
    return rm._word_list_tokens(unicodedata.normalize("NFKC", text).lower().translate(rm._char_rule).split())


def rouge1(candidate: str, reference: str) -> tuple[float, float, float]:
    """(precision, recall, fmeasure) of ROUGE-1, as rouge_scorer._score_ngrams computes them."""
    precision, recall, fmeasure = rm.rouge1_details(candidate, reference)[:3]
    return precision, recall, fmeasure


def trajectory_matches(
    expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], match_type: MatchType, ignore_args: bool
) -> bool:
    """ADK's verdict alone, without building an alignment."""
    if match_type is MatchType.EXACT:
        return exact_match(expected, actual, ignore_args)
    if match_type is MatchType.IN_ORDER:
        return in_order_match(expected, actual, ignore_args)
    if match_type is MatchType.ANY_ORDER:
        return any_order_match(expected, actual, ignore_args)
    raise ValueError(f"unsupported match type {match_type!r}")


def align_all_match_types(
    expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool = False
) -> dict[str, TrajectoryAlignment]:
    """How EXACT, IN_ORDER and ANY_ORDER would each judge the same turn, keyed by match type name."""
    exact, in_order, any_order = align_all(expected, actual, ignore_args)
    return {"EXACT": exact, "IN_ORDER": in_order, "ANY_ORDER": any_order}


D = TypeVar("D", bound=BaseModel)


def details_as(result: MetricResult | InvocationMetricResult, kind: type[D]) -> D:
    """A result's details, checked to be of the class its metric writes."""
    assert isinstance(result.details, kind), f"{type(result.details).__name__} is not {kind.__name__}"
    return result.details


def metric_of(case: CaseResult, name: str) -> MetricResult:
    """A case result's verdict by one metric (the case must have it)."""
    found = case.metric(name)
    assert found is not None, f"{case.eval_id} has no result of {name}"
    return found
