"""Tool-trajectory matching: ADK's EXACT / IN_ORDER / ANY_ORDER verdicts and a call-by-call alignment to draw.

The verdict (`passed`) follows google-adk 2.13's TrajectoryEvaluator rule for rule. The alignment is
for people: which expected call each actual call answered, which are missing, extra or out of order,
and which argument paths differ when the right tool got the wrong arguments.

`TrajectoryAlignment.to_dict()` shape (stored in result records, drawn by the dashboard):

    {"match_type": "EXACT" | "IN_ORDER" | "ANY_ORDER", "ignore_args": bool, "passed": bool,
     "expected": [{"index", "name", "status": "matched" | "missing", "actual_index": int | None,
                   "arg_diffs"?: [ArgDiff]}],
     "actual":   [{"index", "name", "status": "matched" | "extra" | "out_of_order",
                   "expected_index": int | None, "arg_diffs"?: [ArgDiff]}]}
    ArgDiff = {"path": "filters.room" | "items[2]" | "" (the whole args), "kind": "changed" | "missing" |
               "extra", "expected"?: value, "actual"?: value}

A missing expected call points (`actual_index`) at the actual call that answered it out of order, or
else at a same-name call with other arguments (then both carry `arg_diffs`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..schema.config import MatchType
from ..schema.details import ActualStep, Alignment, ArgDiff, ExpectedStep
from ..schema.calls import calls_match as calls_match  # the one call equality (mocked tools use it too)
from ..schema.model import FunctionCall

_IDENT = re.compile(r"[A-Za-z0-9_\-]+")
# Enum member and `.name` lookups are not free, and this runs for every turn.
_EXACT, _IN_ORDER, _ANY_ORDER = MatchType.EXACT, MatchType.IN_ORDER, MatchType.ANY_ORDER
_NAME = {mt: mt.name for mt in MatchType}


# --- the verdicts, as google-adk 2.13 computes them ------------------------------------------------
def exact_match(expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool) -> bool:
    """Same length, and each call matches the one at the same position."""
    if len(actual) != len(expected):
        return False
    for a, e in zip(actual, expected):  # inlined calls_match: this runs once per turn of every case
        if a.name != e.name or (not ignore_args and a.args != e.args):
            return False
    return True


# --- pairings, on a precomputed match matrix -------------------------------------------------------
# hit[j][i]: actual call i matches expected call j (calls_match). A failing turn is aligned under all
# three match types; they share one matrix, so each pair of calls is compared once, not once per type.
MatchMatrix = list[list[bool]]


def match_matrix(expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool) -> MatchMatrix:
    """hit[j][i] = calls_match(actual[i], expected[j]) for every pair (calls_match inlined)."""
    return [[a.name == e.name and (ignore_args or a.args == e.args) for a in actual] for e in expected]


def _greedy_in_order(hit: MatchMatrix, m: int) -> list[tuple[int, int]]:
    """(expected index, actual index) pairs of ADK's forward scan over `m` actual calls."""
    pairs: list[tuple[int, int]] = []
    j = 0
    n = len(hit)
    for i in range(m):
        if j == n:
            break
        if hit[j][i]:
            pairs.append((j, i))
            j += 1
    return pairs


def _any_order_pairs(hit: MatchMatrix, m: int, *, stop_at_miss: bool) -> list[tuple[int, int]]:
    """(expected index, actual index) pairs of ADK's consume-first-match loop. ADK stops at the first
    expected call with no match (`stop_at_miss`); the display carries on, to show every call's fate."""
    remaining = list(range(m))
    pairs: list[tuple[int, int]] = []
    for j, row in enumerate(hit):
        for k, i in enumerate(remaining):
            if row[i]:
                pairs.append((j, i))
                del remaining[k]
                break
        else:
            if stop_at_miss:
                return pairs
    return pairs


def _longest_in_order(hit: MatchMatrix, m: int) -> list[tuple[int, int]]:
    """The largest in-order pairing (longest common subsequence); ties pair the earliest expected calls.

    A failed greedy scan can pair badly (expected [X, A, B] against actual [A, B, X] pairs only X); the
    longest pairing shows the user the fewest calls out of place.
    """
    n = len(hit)
    # best[j][i]: longest pairing of expected[j:] with actual[i:]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for j in range(n - 1, -1, -1):
        row, below, hits = best[j], best[j + 1], hit[j]
        for i in range(m - 1, -1, -1):
            if hits[i]:
                row[i] = below[i + 1] + 1
            else:
                row[i] = below[i] if below[i] >= row[i + 1] else row[i + 1]
    pairs: list[tuple[int, int]] = []
    j = i = 0
    while j < n and i < m:
        if hit[j][i] and best[j][i] == best[j + 1][i + 1] + 1:
            pairs.append((j, i))
            j += 1
            i += 1
        elif best[j][i + 1] >= best[j + 1][i]:
            i += 1
        else:
            j += 1
    return pairs


def matrix_passes(hit: MatchMatrix, m: int, match_type: MatchType) -> bool:
    """ADK's verdict under `match_type` for a match matrix computed by another call equality (the argument
    rules of `metrics/arg_rules.py`): the same pairings as the verdicts above."""
    if match_type is _EXACT:
        return len(hit) == m and all(row[k] for k, row in enumerate(hit))
    if match_type is _IN_ORDER:
        return len(_greedy_in_order(hit, m)) == len(hit)
    return len(_any_order_pairs(hit, m, stop_at_miss=True)) == len(hit)


def in_order_match(expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool) -> bool:
    """Expected is a subsequence of actual, found by one greedy forward scan. Empty expected passes."""
    j = 0
    n = len(expected)
    for a in actual:
        if j == n:
            break
        if calls_match(a, expected[j], ignore_args):
            j += 1
    return j == n


def any_order_match(expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool) -> bool:
    """Each expected call consumes the first still-unused matching actual call. Empty expected passes."""
    remaining = list(actual)
    for e in expected:
        for k, a in enumerate(remaining):
            if calls_match(a, e, ignore_args):
                del remaining[k]
                break
        else:
            return False
    return True


# --- argument differences ---------------------------------------------------------------------------
def arg_diffs(expected: Any, actual: Any) -> list[ArgDiff]:
    """Differing paths between two args values, compared with Python `==` (so 1 == 1.0, key order ignored)."""
    out: list[ArgDiff] = []
    _diff(expected, actual, "", out)
    return out


def _same(expected: Any, actual: Any) -> bool:
    # Containers compare their items with an identity shortcut; mirror it so diffs agree with `==`.
    return actual is expected or actual == expected


def _diff(expected: Any, actual: Any, path: str, out: list[ArgDiff]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key in actual:
                other = actual[key]
                if not _same(value, other):  # equal subtrees (most of them) cost one C-level compare
                    _diff(value, other, _key_path(path, key), out)
            else:
                out.append({"path": _key_path(path, key), "kind": "missing", "expected": _jsonable(value)})
        for key, value in actual.items():
            if key not in expected:
                out.append({"path": _key_path(path, key), "kind": "extra", "actual": _jsonable(value)})
    elif isinstance(expected, (list, tuple)) and type(expected) is type(actual):
        for k in range(max(len(expected), len(actual))):
            sub = f"{path}[{k}]"
            if k >= len(actual):
                out.append({"path": sub, "kind": "missing", "expected": _jsonable(expected[k])})
            elif k >= len(expected):
                out.append({"path": sub, "kind": "extra", "actual": _jsonable(actual[k])})
            elif not _same(expected[k], actual[k]):
                _diff(expected[k], actual[k], sub, out)
    elif not _same(expected, actual):
        out.append({"path": path, "kind": "changed", "expected": _jsonable(expected), "actual": _jsonable(actual)})


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and _IDENT.fullmatch(key):
        return f"{path}.{key}" if path else key
    quoted = json.dumps(key, ensure_ascii=False) if isinstance(key, str) else repr(key)
    return f"{path}[{quoted}]"


def _jsonable(value: Any) -> Any:
    """Args of a Python agent may hold any object; records must stay JSON."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


# --- the alignment ----------------------------------------------------------------------------------
# Steps are plain dicts (TypedDicts of schema.details), not objects: they go straight into the typed
# details, and a run aligns every turn of every case, so building them must cost next to nothing.


@dataclass(slots=True)
class TrajectoryAlignment:
    """ADK's verdict on one turn's tool calls under one match type, with the call-by-call alignment."""

    match_type: MatchType
    ignore_args: bool
    passed: bool
    expected: list[ExpectedStep]
    actual: list[ActualStep]

    @property
    def score(self) -> float:
        return 1.0 if self.passed else 0.0

    def counts(self) -> dict[str, int]:
        """Calls per status: "missing" counts expected calls, the other statuses actual calls."""
        out = {"matched": 0, "missing": 0, "extra": 0, "out_of_order": 0}
        for e in self.expected:
            if e["status"] == "missing":
                out["missing"] += 1
        for a in self.actual:
            out[a["status"]] += 1
        return out

    def summary(self) -> str:
        """One line saying why the turn failed (or that it passed)."""
        if self.passed:
            return f"tool calls match ({self.match_type.name})"
        missing = [e for e in self.expected if e["status"] == "missing"]
        groups = (
            ("other args", [e["name"] for e in missing if e.get("arg_diffs")]),
            ("missing", [e["name"] for e in missing if e["actual_index"] is None]),
            ("out of order", [a["name"] for a in self.actual if a["status"] == "out_of_order"]),
            ("extra", [a["name"] for a in self.actual if a["status"] == "extra" and not a.get("arg_diffs")]),
        )
        parts = [f"{label}: {', '.join(str(n) for n in names)}" for label, names in groups if names]
        return f"{self.match_type.name}: " + "; ".join(parts)

    def as_details(self) -> Alignment:
        """The stored form (schema.details.Alignment): the verdict and the steps."""
        return {"passed": self.passed, "expected": self.expected, "actual": self.actual}

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape described in the module docstring (steps are shared, not copied)."""
        return {
            "match_type": _NAME[self.match_type],
            "ignore_args": self.ignore_args,
            "passed": self.passed,
            "expected": self.expected,
            "actual": self.actual,
        }


class _TurnCalls:
    """One turn's expected and actual calls while they are aligned: the match matrix and the argument
    diffs of a pair of calls are computed once, however many match types align the turn."""

    __slots__ = ("expected", "actual", "ignore_args", "_hit", "_longest", "_diffs", "_steps")

    def __init__(self, expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool) -> None:
        self.expected = expected
        self.actual = actual
        self.ignore_args = ignore_args
        self._hit: MatchMatrix | None = None
        self._longest: list[tuple[int, int]] | None = None
        self._diffs: dict[tuple[int, int], list[ArgDiff]] = {}
        # Steps depend only on the pairing: match types that pair the calls alike share them.
        self._steps: dict[tuple[tuple[int, int], ...], tuple[list[ExpectedStep], list[ActualStep]]] = {}

    @property
    def hit(self) -> MatchMatrix:
        if self._hit is None:
            self._hit = match_matrix(self.expected, self.actual, self.ignore_args)
        return self._hit

    @property
    def longest(self) -> list[tuple[int, int]]:
        """The longest in-order pairing (a failed EXACT and a failed IN_ORDER both draw along it)."""
        if self._longest is None:
            self._longest = _longest_in_order(self.hit, len(self.actual))
        return self._longest

    def steps(self, pairs: list[tuple[int, int]]) -> tuple[list[ExpectedStep], list[ActualStep]]:
        """Every call's fate under a pairing: paired calls matched, the rest explained or missing/extra."""
        key = tuple(pairs)
        steps = self._steps.get(key)
        if steps is None:
            expected, actual = self.expected, self.actual
            exp_steps: list[ExpectedStep] = [
                {"index": j, "name": c.name, "status": "missing", "actual_index": None} for j, c in enumerate(expected)
            ]
            act_steps: list[ActualStep] = [
                {"index": i, "name": c.name, "status": "extra", "expected_index": None} for i, c in enumerate(actual)
            ]
            for j, i in pairs:
                exp_steps[j]["status"] = act_steps[i]["status"] = "matched"
                exp_steps[j]["actual_index"] = i
                act_steps[i]["expected_index"] = j
            if len(pairs) < len(expected):
                _explain_missing(self, exp_steps, act_steps)
            steps = self._steps[key] = (exp_steps, act_steps)
        return steps

    def arg_diffs(self, j: int, i: int) -> list[ArgDiff]:
        """How actual call i's args differ from expected call j's (never empty: a same-name call that
        does not match differs somewhere, if only as a whole)."""
        diffs = self._diffs.get((j, i))
        if diffs is None:
            want, got = self.expected[j].args, self.actual[i].args
            diffs = arg_diffs(want, got) or [
                {"path": "", "kind": "changed", "expected": _jsonable(want), "actual": _jsonable(got)}
            ]
            self._diffs[(j, i)] = diffs
        return diffs


def align_trajectory(
    expected: Sequence[FunctionCall],
    actual: Sequence[FunctionCall],
    match_type: MatchType | str | int,
    ignore_args: bool = False,
) -> TrajectoryAlignment:
    """ADK's verdict for `match_type` plus an alignment consistent with it.

    In-order types pair calls along the longest in-order pairing; ANY_ORDER pairs them as ADK's loop
    consumes them. Either way the turn passes exactly when every expected call is matched (and, for
    EXACT, every actual call too).
    """
    if type(match_type) is not MatchType:
        match_type = MatchType.parse(match_type)
    return _align(_TurnCalls(expected, actual, ignore_args), match_type)


def align_all(
    expected: Sequence[FunctionCall], actual: Sequence[FunctionCall], ignore_args: bool = False
) -> tuple[TrajectoryAlignment, TrajectoryAlignment, TrajectoryAlignment]:
    """The EXACT, IN_ORDER and ANY_ORDER alignments of one turn, each equal to `align_trajectory`'s.

    They share the work: one match matrix, one argument diff per pair of calls, and one set of steps
    per distinct pairing (a failed EXACT and a failed IN_ORDER both pair along the longest in-order
    pairing, and ANY_ORDER often pairs alike): such alignments hold the very same step lists.
    """
    turn = _TurnCalls(expected, actual, ignore_args)
    return _align(turn, _EXACT), _align(turn, _IN_ORDER), _align(turn, _ANY_ORDER)


def _align(turn: _TurnCalls, match_type: MatchType) -> TrajectoryAlignment:
    expected, actual, ignore_args = turn.expected, turn.actual, turn.ignore_args
    n, m = len(expected), len(actual)
    if match_type is _EXACT:
        passed = exact_match(expected, actual, ignore_args)
        if passed:  # the common case: nothing to search for
            exp_steps: list[ExpectedStep] = [
                {"index": k, "name": c.name, "status": "matched", "actual_index": k} for k, c in enumerate(expected)
            ]
            act_steps: list[ActualStep] = [
                {"index": k, "name": c.name, "status": "matched", "expected_index": k} for k, c in enumerate(actual)
            ]
            return TrajectoryAlignment(match_type, ignore_args, passed, exp_steps, act_steps)
        pairs = turn.longest
    elif match_type is _IN_ORDER:
        # ADK's verdict is this very scan; when it finds every call it is as good as any pairing.
        pairs = _greedy_in_order(turn.hit, m)
        passed = len(pairs) == n
        if not passed:
            pairs = turn.longest
    elif match_type is _ANY_ORDER:
        # Same pairs as ADK's loop up to its first miss, so "no miss" is ADK's verdict.
        pairs = _any_order_pairs(turn.hit, m, stop_at_miss=False)
        passed = len(pairs) == n
    else:
        raise ValueError(f"unsupported match type {match_type!r}")

    exp_steps, act_steps = turn.steps(pairs)
    return TrajectoryAlignment(match_type, ignore_args, passed, exp_steps, act_steps)


def _explain_missing(turn: _TurnCalls, exp_steps: list[ExpectedStep], act_steps: list[ActualStep]) -> None:
    """Tie each missing expected call to an unpaired actual call: the same call out of order, or else
    the same tool with other arguments."""
    hit, expected, actual = turn.hit, turn.expected, turn.actual
    free = [a for a in act_steps if a["expected_index"] is None]
    missing = [e for e in exp_steps if e["status"] == "missing"]
    for e in missing:
        row = hit[e["index"]]
        for a in free:
            if a["expected_index"] is None and row[a["index"]]:
                a["status"] = "out_of_order"
                a["expected_index"], e["actual_index"] = e["index"], a["index"]
                break
    for e in missing:
        if e["actual_index"] is not None:
            continue
        want = expected[e["index"]]
        for a in free:
            if a["expected_index"] is None and actual[a["index"]].name == want.name:
                a["expected_index"], e["actual_index"] = e["index"], a["index"]
                a["arg_diffs"] = e["arg_diffs"] = turn.arg_diffs(e["index"], a["index"])
                break
