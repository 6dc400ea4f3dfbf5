"""Repeated runs: k/N, labels, pass@k and pass^k against hand-computed values."""

from __future__ import annotations

import pytest

from tui_eval.engine.repeats import (
    RepeatLabel,
    label_counts,
    order_for_summary,
    pass_at_k,
    pass_hat_k,
    summarize_case,
    summarize_repeats,
)
from tui_eval.schema.results import EvalStatus

P, F, N = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED


def test_two_of_four_by_hand() -> None:
    r = summarize_case("c", [P, F, P, F])
    assert (r.passed, r.runs, r.fraction) == (2, 4, "2/4 runs passed")
    assert r.label is RepeatLabel.FLAKY
    # n=4, c=2. pass@1 = 2/4; pass@2 = 1 - C(2,2)/C(4,2) = 1 - 1/6; pass@3 = 1 - 0/4 = 1; pass@4 = 1.
    assert r.pass_at_k == pytest.approx((0.5, 5 / 6, 1.0, 1.0))
    # pass^1 = 2/4; pass^2 = C(2,2)/C(4,2) = 1/6; pass^3 = pass^4 = 0.
    assert r.pass_hat_k == pytest.approx((0.5, 1 / 6, 0.0, 0.0))


def test_three_of_five_by_hand() -> None:
    # n=5, c=3: C(5,k) = 5, 10, 10, 5, 1; C(2,k) = 2, 1, 0, 0, 0; C(3,k) = 3, 3, 1, 0, 0.
    assert [pass_at_k(5, 3, k) for k in range(1, 6)] == pytest.approx([1 - 2 / 5, 1 - 1 / 10, 1, 1, 1])
    assert [pass_hat_k(5, 3, k) for k in range(1, 6)] == pytest.approx([3 / 5, 3 / 10, 1 / 10, 0, 0])


def test_stable_labels_and_edges() -> None:
    ok = summarize_case("ok", [P, P, P])
    assert ok.label is RepeatLabel.STABLE_PASS
    assert ok.pass_at_k == (1.0, 1.0, 1.0) and ok.pass_hat_k == (1.0, 1.0, 1.0)
    bad = summarize_case("bad", [F, F, F])
    assert bad.label is RepeatLabel.STABLE_FAIL
    assert bad.pass_at_k == (0.0, 0.0, 0.0) and bad.pass_hat_k == (0.0, 0.0, 0.0)
    one = summarize_case("one", [P])
    assert (one.label, one.fraction) == (RepeatLabel.STABLE_PASS, "1/1 runs passed")


def test_not_evaluated_counts_as_a_run_not_passed() -> None:
    r = summarize_case("c", [P, P, P, N])
    assert (r.passed, r.failed, r.not_evaluated, r.runs) == (3, 0, 1, 4)
    assert r.label is RepeatLabel.FLAKY
    assert r.pass_hat_k[1] == pytest.approx(3 / 6)  # C(3,2)/C(4,2)
    assert summarize_case("f", [F, N]).label is RepeatLabel.STABLE_FAIL
    assert summarize_case("n", [N, N]).label is RepeatLabel.NOT_EVALUATED


def test_order_flaky_first_then_fails_then_passes() -> None:
    cases = summarize_repeats({
        "pass": [P, P], "fail": [F, F], "flaky_high": [P, P, P, F], "none": [N], "flaky_low": [F, F, F, P],
    })
    assert [r.case_id for r in cases] == ["pass", "fail", "flaky_high", "none", "flaky_low"]
    assert [r.case_id for r in order_for_summary(cases)] == ["flaky_low", "flaky_high", "fail", "none", "pass"]
    assert label_counts(cases) == {RepeatLabel.FLAKY: 2, RepeatLabel.STABLE_FAIL: 1,
                                   RepeatLabel.NOT_EVALUATED: 1, RepeatLabel.STABLE_PASS: 1}


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError):
        summarize_case("c", [])
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_record_round_trip() -> None:
    r = summarize_case("c", [P, F])
    back = type(r).model_validate_json(r.model_dump_json())
    assert back == r and back.statuses == (P, F)
