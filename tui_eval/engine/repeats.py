"""Repeated runs of a case: k/N passed, stable pass / flaky / stable fail, and pass@k / pass^k.

Counting: every repetition counts in N. Only PASSED counts as a pass; FAILED and NOT_EVALUATED
(a judge that never answered, an agent that errored) are both "not passed", so a case that passed 3
times and was not evaluated once is flaky at 3/4 (a reliability view: pass^k must not look better
because a run could not be scored). Labels, from c passed out of n:
  stable pass: c == n;  stable fail: c == 0 and at least one FAILED;  flaky: 0 < c < n;
  not evaluated: no repetition was evaluated (all NOT_EVALUATED) -> no pass/fail claim at all.
pass@k = 1 - C(n-c, k)/C(n, k) (at least one of k draws passes) and pass^k = C(c, k)/C(n, k) (all k
draws pass), the unbiased estimators of Chen et al. 2021 and the tau-bench paper, for k = 1..n.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from functools import lru_cache
from math import comb

from pydantic import BaseModel, ConfigDict

from ..schema.results import EvalStatus


class RepeatLabel(StrEnum):
    STABLE_PASS = "stable pass"
    FLAKY = "flaky"
    STABLE_FAIL = "stable fail"
    NOT_EVALUATED = "not evaluated"


# Summary order: what needs a look first. Flaky before stable fails: a stable fail is plainly broken,
# a flaky case is the one a single run would have misreported.
_ORDER = {RepeatLabel.FLAKY: 0, RepeatLabel.STABLE_FAIL: 1, RepeatLabel.NOT_EVALUATED: 2,
          RepeatLabel.STABLE_PASS: 3}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k repetitions drawn without replacement from n passed."""
    _check(n, c, k)
    # int / int is correctly rounded, as float(Fraction(...)) is, and far cheaper.
    total = comb(n, k)
    return (total - comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: probability that all k repetitions drawn without replacement from n passed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


class CaseRepeats(BaseModel):
    """One case over its N repetitions (statuses in repetition order, run 1 first)."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    statuses: tuple[EvalStatus, ...]
    passed: int
    failed: int
    not_evaluated: int
    label: RepeatLabel
    # Index k-1 holds the value for k repetitions, k = 1..N.
    pass_at_k: tuple[float, ...]
    pass_hat_k: tuple[float, ...]

    @property
    def runs(self) -> int:
        return len(self.statuses)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def fraction(self) -> str:
        """`k/N runs passed`."""
        return f"{self.passed}/{self.runs} runs passed"


def summarize_case(case_id: str, statuses: Sequence[EvalStatus]) -> CaseRepeats:
    """k/N, label and pass@k / pass^k of one case from its per-repetition statuses."""
    n = len(statuses)
    if n == 0:
        raise ValueError(f"case {case_id!r} has no repetitions")
    c = sum(1 for s in statuses if s == EvalStatus.PASSED)
    failed = sum(1 for s in statuses if s == EvalStatus.FAILED)
    if c == n:
        label = RepeatLabel.STABLE_PASS
    elif c > 0:
        label = RepeatLabel.FLAKY
    elif failed > 0:
        label = RepeatLabel.STABLE_FAIL
    else:
        label = RepeatLabel.NOT_EVALUATED
    at_k, hat_k = _curves(n, c)
    # Our own typed values: no validation (a run summarises thousands of cases).
    return CaseRepeats.model_construct(
        case_id=case_id,
        statuses=tuple(statuses),
        passed=c,
        failed=failed,
        not_evaluated=n - c - failed,
        label=label,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
    )


@lru_cache(maxsize=256)
def _curves(n: int, c: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """pass@k and pass^k for k = 1..n (a run has few distinct (n, c) pairs)."""
    return (tuple(pass_at_k(n, c, k) for k in range(1, n + 1)),
            tuple(pass_hat_k(n, c, k) for k in range(1, n + 1)))


def summarize_repeats(statuses_by_case: Mapping[str, Sequence[EvalStatus]]) -> list[CaseRepeats]:
    """Every case's repeat summary, in the mapping's order."""
    return [summarize_case(case_id, statuses) for case_id, statuses in statuses_by_case.items()]


def order_for_summary(cases: Iterable[CaseRepeats]) -> list[CaseRepeats]:
    """Flaky cases first, then stable fails, not evaluated, stable passes; within a group the lower
    pass rate first, then the given order (stable sort)."""
    return sorted(cases, key=lambda r: (_ORDER[r.label], r.pass_rate))


def label_counts(cases: Iterable[CaseRepeats]) -> dict[RepeatLabel, int]:
    """How many cases carry each label (every label present, zero when none)."""
    counts = dict.fromkeys(RepeatLabel, 0)
    for r in cases:
        counts[r.label] += 1
    return counts
