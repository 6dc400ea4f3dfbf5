"""The case listing: the eval files and their cases as the dashboard lists them (order, filter, search),
with each case's latest result and what runs now. (The metric catalog is `schema.criteria.CATALOG`.)

Widgets read it (data flows down); only the read model (`readmodel.py`) on the UI thread changes it. It
never runs or scores anything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..engine.feed import summarize
from ..schema.status import EvalStatus
from .reviewbook import ReviewBook
from .runbook import RunBook
from .latest import Finished, LatestResults

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import CaseSummary, MetricSummary
    from ..engine.repeats import CaseRepeats
    from ..engine.workspace import EvalFileState, Workspace
    from ..schema.model import EvalCase
    from ..schema.results import CaseResult, MetricResult

_CASE_KEY: type[CaseKey] | None = None


def _case_key() -> type[CaseKey]:
    """The CaseKey class, imported on first use (the engine stays off the start path)."""
    global _CASE_KEY
    if _CASE_KEY is None:
        from ..engine.events import CaseKey

        _CASE_KEY = CaseKey
    return _CASE_KEY


def turn_status_of(result: CaseResult | None, index: int, metric: str | None = None) -> EvalStatus | None:
    """A turn's status in one full result, by the rule its summary follows (`CaseSummary.turn_status`)."""
    if result is None:
        return None
    return summarize(result, insight=False).turn_status(index, metric)


#: How the tree orders a file's cases: the file's order, worst score first, slowest first.
CASE_ORDERS: tuple[str, ...] = ("file", "score", "duration")
CASE_ORDER_WORDS = {"file": "file order", "score": "worst score first", "duration": "slowest first"}
#: The status a case's repetitions stand for (a flaky case has none: it is shown as flaky).
REPEAT_STATUS: dict[str, EvalStatus] = {"stable pass": EvalStatus.PASSED, "stable fail": EvalStatus.FAILED,
                                        "not evaluated": EvalStatus.NOT_EVALUATED}


def deciding_metric(summary: CaseSummary | None) -> MetricSummary | None:
    """The metric whose score stands for the case: its lowest-scoring failed metric if any failed, else
    its lowest-scoring passed one. Informational and unscored (not evaluated) metrics never do."""
    if summary is None:
        return None
    best: MetricSummary | None = None
    best_key: tuple[bool, float] | None = None
    for m in summary.metrics:
        if m.score is None or m.status not in (EvalStatus.PASSED, EvalStatus.FAILED):
            continue
        key = (m.status != EvalStatus.FAILED, m.score)
        if best_key is None or key < best_key:
            best, best_key = m, key
    return best


def value_text(m: MetricSummary) -> str | None:
    """The number the tree shows for one metric: a score `0.50`, an informational value with its unit
    as the mean per turn (`1.5 calls/turn`, `0.08 s/turn`), None without a value."""
    if m.score is None:
        return None
    if m.status == EvalStatus.INFORMATIONAL:
        from .text import info_value

        return info_value(m.name, m.score, per_turn=True)
    return f"{m.score:.2f}"


def _turn_match(inv: Any, needle: str) -> str | None:
    """Where a lower-case needle is in a turn: its user message, final response, or a tool call's name
    or arguments (the field's name in words), None if nowhere."""
    if needle in inv.user_content.text.lower():
        return "user message"
    if inv.final_response is not None and needle in inv.final_response.text.lower():
        return "response"
    for call in inv.tool_calls:
        if needle in (call.name or "").lower():
            return f"tool call {call.name}"
        if call.args and needle in str(call.args).lower():
            return f"arguments of {call.name}"
    return None


@dataclass(slots=True)
class Filter:
    """What the browser shows: failed cases only, one metric's view, a search text."""

    failed_only: bool = False
    metric: str | None = None
    query: str = ""
    #: Only cases whose repetitions (--num-runs) both passed and failed.
    flaky_only: bool = False

    @property
    def active(self) -> bool:
        return self.failed_only or self.flaky_only or self.metric is not None or bool(self.query)

    def describe(self, metric_width: int | None = None) -> str:
        """The filter in words; `metric_width` shortens a long metric name in the middle (the top bar)."""
        parts = []
        if self.failed_only:
            parts.append("failed only")
        if self.flaky_only:
            parts.append("flaky only")
        if self.metric:
            from .text import cut_middle

            name = self.metric if metric_width is None else cut_middle(self.metric, metric_width)
            parts.append(f"metric {name}")
        if self.query:
            parts.append(f"search {self.query!r}")
        return ", ".join(parts)


@dataclass(slots=True)
class WorkspaceDelta:
    """What changed in the workspace since the last poll."""

    added: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    reloaded: list[Path] = field(default_factory=list)
    # Files (eval or config) known before that broke just now, with their error.
    broke: list[tuple[Path, Any]] = field(default_factory=list)
    configs_changed: bool = False

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.reloaded or self.broke or self.configs_changed)


@dataclass(slots=True)
class CaseListing:
    """Eval files in display order, their cases under the filter and order, the latest results and what
    is running now."""

    root: Path
    workspace: Workspace | None = None
    files: list[Path] = field(default_factory=list)
    results: LatestResults = field(default_factory=LatestResults)
    running: set[Any] = field(default_factory=set)
    filter: Filter = field(default_factory=Filter)
    #: The order of cases in the tree (one of CASE_ORDERS).
    order: str = "file"
    #: Results whose inputs changed since they were computed, with the reasons (the engine's
    #: `versions.stale_reasons`, and at once an accept of this dashboard's): shown, marked stale, until
    #: the case runs again. Read it through `stale_reasons`.
    stale: dict[Any, tuple[str, ...]] = field(default_factory=dict)
    #: Bumped on every change of `stale`, so views can cache what they derive from it.
    stale_version: int = 0
    #: The start-up scan is over (until then an empty tree means "still looking").
    loaded: bool = False
    #: The wall clock saved results' ages are measured against (fixed in snapshot tests).
    clock: Callable[[], float] = time.time
    #: This session's repetitions, live usage and latency, and timeline of runs (see runbook.py).
    run_book: RunBook = field(default_factory=RunBook)
    #: People's verdicts beside the automatic ones (see reviewbook.py).
    reviews: ReviewBook = field(default_factory=ReviewBook)
    _counts: dict[Path, tuple[Any, dict[int | None, int]]] = field(default_factory=dict)
    _seen: dict[Path, tuple[Any, Any]] = field(default_factory=dict)
    _seen_configs: dict[Path, tuple[Any, Any]] = field(default_factory=dict)
    # eval_id -> case per file, so a finished case is found in O(1) (EvalSet.case scans the list: with
    # 100,000 cases streaming in, that scan per result froze the dashboard for minutes).
    _case_index: dict[Path, tuple[tuple[int, int], dict[str, EvalCase]]] = field(default_factory=dict)
    # CaseKey.eval_file -> Path: building a Path costs microseconds, paid per finished case otherwise.
    _paths: dict[str, Path] = field(default_factory=dict)
    # The folder paths are shown relative to (the root, or a root file's folder), once looked up.
    _base: Path | None = None
    _agents_shown: dict[str, str] = field(default_factory=dict)

    def poll(self) -> WorkspaceDelta:
        """Compare the workspace with what was seen last time (cheap identity checks: a reload makes new
        objects), and track added and removed eval files. The read model swaps files' states in."""
        delta = WorkspaceDelta()
        ws = self.workspace
        if ws is None:
            return delta
        now = {p: (st.eval_set, st.error) for p, st in list(ws.eval_files.items())}
        for path, (eval_set, error) in now.items():
            old = self._seen.get(path)
            if old is None:
                delta.added.append(path)
                self.add_file(path)
            elif old[0] is not eval_set or old[1] is not error:
                delta.reloaded.append(path)
                # A file seen before it finished loading (no set, no error yet) is not a break.
                if error is not None and old[1] is not error and old != (None, None):
                    delta.broke.append((path, error))
        for path in self._seen:
            if path not in now:
                delta.removed.append(path)
                self.remove_file(path)
        self._seen = now
        configs = {p: (st.config, st.error) for p, st in list(ws.configs.items())}
        for path, (config, error) in configs.items():
            old = self._seen_configs.get(path)
            if old is not None and (old[0] is not config or old[1] is not error):
                delta.configs_changed = True
                if error is not None and old[1] is not error:
                    delta.broke.append((path, error))
        if set(configs) != set(self._seen_configs):
            delta.configs_changed = True
        self._seen_configs = configs
        return delta

    # ---- files -------------------------------------------------------------------------------

    def add_file(self, path: Path) -> bool:
        """Track an eval file (kept sorted); False if it was known already."""
        if path in self.files:
            return False
        self.files.append(path)
        self.files.sort(key=lambda p: self.relpath(p).lower())
        return True

    def remove_file(self, path: Path) -> None:
        if path in self.files:
            self.files.remove(path)

    def file_state(self, path: Path) -> EvalFileState | None:
        if self.workspace is None:
            return None
        return self.workspace.eval_files.get(path)

    def relpath(self, path: Path) -> str:
        base = self._base
        if base is None:
            # Asked on every cursor move: the root's kind is looked up once it exists (a stat is a
            # syscall, and each syscall lets a busy engine thread take the GIL).
            if self.root.is_dir():
                base = self._base = self.root
            else:
                base = self.root.parent
                if self.root.is_file():
                    self._base = base
        try:
            rel = Path(path).relative_to(base)
        except ValueError:
            return str(path)
        return str(rel)

    def set_label(self, path: Path) -> str:
        """A short name for an eval file: its name without the suffix, with its folder if that is ambiguous."""
        from ..schema.load import EVAL_FILE_SUFFIXES

        def stem(p: Path) -> str:
            for suffix in EVAL_FILE_SUFFIXES:
                if p.name.endswith(suffix):
                    return p.name[: -len(suffix)]
            return p.name

        mine = stem(path)
        if sum(1 for p in self.files if stem(p) == mine) > 1:
            rel = self.relpath(path)
            return rel[: len(rel) - (len(path.name) - len(mine))]
        return mine

    def display_agent(self, ref: str | None) -> str:
        """An agent reference as the user would write it from the root (`replay:` paths made relative)."""
        if ref is None:
            return "none (start with --agent)"
        if ref.startswith("replay:"):
            shown = self._agents_shown.get(ref)
            if shown is None:  # resolved once per reference, not on every cursor move
                shown = self._agents_shown[ref] = "replay:" + self.relpath(Path(ref.removeprefix("replay:")).resolve())
            return shown
        rel = self.relpath(Path(ref))
        # Opened on the agent folder itself: its name, not `.`.
        return Path(ref).resolve().name if rel == "." else rel

    def error_text(self, error: object) -> str:
        """A LoadError with its path relative to the root (as the user sees the tree)."""
        path = getattr(error, "path", None)
        if path is None:
            return str(error)
        text = str(error)
        return self.relpath(Path(path)) + text[len(str(path)):] if text.startswith(str(path)) else text

    def cases(self, path: Path) -> list[EvalCase]:
        state = self.file_state(path)
        if state is None or state.eval_set is None:
            return []
        return state.eval_set.eval_cases

    def path_of(self, key: CaseKey) -> Path:
        """The eval file a case key names (interned: one Path per file)."""
        path = self._paths.get(key.eval_file)
        if path is None:
            path = self._paths[key.eval_file] = Path(key.eval_file)
        return path

    def case(self, key: CaseKey) -> EvalCase | None:
        path = self.path_of(key)
        state = self.file_state(path)
        if state is None or state.eval_set is None:
            return None
        return self._cases_by_id(path, state.eval_set.eval_cases).get(key.eval_id)

    def _cases_by_id(self, path: Path, cases: list[EvalCase]) -> dict[str, EvalCase]:
        # A reload makes a new list; an edit in place changes its length.
        stamp = (id(cases), len(cases))
        cached = self._case_index.get(path)
        if cached is None or cached[0] != stamp:
            cached = (stamp, {c.eval_id: c for c in cases})
            self._case_index[path] = cached
        return cached[1]

    def adopt_index(self, path: Path, cases: list[EvalCase], by_id: dict[str, EvalCase]) -> None:
        """Use a file's case index built off the UI thread (the dashboard's loader builds it)."""
        self._case_index[path] = ((id(cases), len(cases)), by_id)

    def key(self, path: Path, eval_id: str) -> CaseKey:
        return _case_key()(str(path), eval_id)

    def all_keys(self) -> list[CaseKey]:
        return [self.key(p, c.eval_id) for p in self.files for c in self.cases(p)]

    # ---- results -----------------------------------------------------------------------------

    def stale_reasons(self, key: CaseKey) -> tuple[str, ...]:
        """Why a case's result is stale (empty: it is not): every view asks this one question."""
        return self.stale.get(key, ())

    def mark_stale(self, key: CaseKey, reasons: tuple[str, ...]) -> None:
        """The result of `key` is stale for these reasons (an empty tuple: it is current)."""
        if reasons:
            self.stale[key] = reasons
        else:
            self.stale.pop(key, None)
        self.stale_version += 1

    def stale_keys(self, path: Path | None = None) -> list[CaseKey]:
        """The stale results' cases (of one eval file), in file order: what `S` runs."""
        files = [path] if path is not None else self.files
        return [k for p in files for c in self.cases(p) if (k := self.key(p, c.eval_id)) in self.stale]

    def stale_count(self, path: Path) -> int:
        """How many of an eval file's results are stale (the tree's counts show it)."""
        if not self.stale:
            return 0
        name = str(path)
        return sum(1 for key in self.stale if key.eval_file == name)

    def result(self, key: CaseKey) -> CaseResult | None:
        return self.results.get(key)

    def result_of_run(self, key: CaseKey, repetition: int | None = None) -> tuple[CaseResult | None, int | None]:
        """The result a screen shows for a case, and which run k of N it is: run `repetition` of this
        session's --num-runs run, else the latest result (the repetition it is, None when the session did
        not repeat the case). The turn view shows it and an accept writes it: one rule for both."""
        statuses = self.run_book.statuses_of(key)
        if statuses:
            rep = repetition or self.results.repetition(key) or len(statuses)
            if 0 < rep <= len(statuses) and statuses[rep - 1] is not None:
                return self.run_book.runs_of(key)[rep - 1], rep  # None while it is on its way
        return self.result(key), None

    def origin_text(self, key: CaseKey, *, short: bool = False) -> str:
        """Where a case's result came from, with its age if it was saved (`saved … · 2h ago`)."""
        return self.results.origin_text(key, self.clock(), short=short)

    def case_status(self, key: CaseKey) -> int | None:
        """The case's status (or, under a metric filter, that metric's): an EvalStatus value, None without a result."""
        return self.results.status(key, self.filter.metric)

    def score_metric(self, key: CaseKey) -> MetricSummary | None:
        """The metric whose value is shown beside a case: the filtered metric, else the deciding one."""
        summary = self.results.summary(key)
        if summary is None:
            return None
        if self.filter.metric:
            return summary.metric(self.filter.metric)
        return deciding_metric(summary)

    def case_score(self, key: CaseKey) -> float | None:
        """The score shown beside a case (see `deciding_metric`); never an informational value."""
        metric = self.score_metric(key)
        if metric is None or metric.status == EvalStatus.INFORMATIONAL:
            return None
        return metric.score

    def score_text(self, key: CaseKey) -> str | None:
        """The text beside a case: `0.50`, or under a filter on an informational metric `3 calls`."""
        metric = self.score_metric(key)
        return value_text(metric) if metric is not None else None

    def cycle_order(self) -> str:
        """Switch to the next case order and return it."""
        self.order = CASE_ORDERS[(CASE_ORDERS.index(self.order) + 1) % len(CASE_ORDERS)]
        return self.order

    def _ordered(self, path: Path, cases: list[EvalCase]) -> list[EvalCase]:
        """Cases in the current order; cases without a result (or a score) keep file order, last."""
        if self.order == "file":
            return cases
        name = str(path)
        make_key = _case_key()
        missing = float("inf")
        if self.order == "score":
            def by(case: EvalCase) -> float:
                score = self.case_score(make_key(name, case.eval_id))
                return missing if score is None else score
        else:
            def by(case: EvalCase) -> float:
                summary = self.results.summary(make_key(name, case.eval_id))
                return missing if summary is None else -summary.seconds
        return sorted(cases, key=by)

    def repeat_outcome(self, key: CaseKey) -> CaseRepeats | None:
        """A case's N repetitions in this session's run (--num-runs) as one outcome: k/N passed and its
        label (stable pass, flaky, stable fail). None until every repetition finished, and for a case
        not repeated. Once it is there, this is the case's status and figure in every view: the last
        repetition's result alone would flip ✔/✘ with whichever run ended last."""
        if self.run_book.num_runs < 2:
            return None
        runs = self.run_book.statuses_of(key)
        if len(runs) < 2 or any(r is None for r in runs):
            return None
        from ..engine.repeats import summarize_case

        return summarize_case(key.eval_id, [EvalStatus(r) for r in runs if r is not None])

    def shown_status(self, key: CaseKey) -> int | None:
        """The status the views show for a case: its repetitions' (a stable pass is passed, a flaky case
        has none of ✔ ✘ –: None) once all are in, else `case_status`. What `f` (failed only) filters by."""
        outcome = self.repeat_outcome(key) if not self.filter.metric else None
        if outcome is None:
            return self.case_status(key)
        return REPEAT_STATUS.get(outcome.label.value)

    def flaky(self, key: CaseKey) -> tuple[int, int] | None:
        """(passed, runs) of a case whose repetitions in this session's run both passed and failed (or
        were not evaluated); None for a case that is not flaky, or whose repetitions are not all done."""
        outcome = self.repeat_outcome(key)
        if outcome is None or not 0 < outcome.passed < outcome.runs:
            return None
        return outcome.passed, outcome.runs

    def flaky_count(self, path: Path) -> int:
        """Flaky cases of a file (see `flaky`); only cases this session repeated are looked at."""
        name = str(path)
        return sum(1 for key in self.run_book.repeats if key.eval_file == name and self.flaky(key) is not None)

    def shown_counts(self, path: Path) -> tuple[dict[int | None, int], int]:
        """A file's cases by the status the views show, and how many are flaky: `counts`, with each case
        of this session's --num-runs run counted by its repetitions' outcome (a stable pass as passed, a
        flaky case only as flaky), not by its last repetition."""
        counts = self.counts(path)
        if self.run_book.num_runs < 2 or not self.run_book.repeats or self.filter.metric:
            return counts, 0
        name, out, flaky = str(path), dict(counts), 0
        for key in self.run_book.repeats:
            if key.eval_file != name or (outcome := self.repeat_outcome(key)) is None:
                continue
            out[self.case_status(key)] -= 1
            status = REPEAT_STATUS.get(outcome.label.value)
            if status is None:
                flaky += 1
            else:
                out[status] += 1
        return out, flaky

    def turn_status(self, key: CaseKey, index: int) -> EvalStatus | None:
        """A turn's status in the case's latest result (under the metric filter)."""
        return self.results.turn_status(key, index, self.filter.metric)

    def counts(self, path: Path) -> dict[int | None, int]:
        """Cases of a file by status. Cached per file and metric filter; `set_result` keeps the cache
        current case by case, so a run streaming into a 5,000-case file never recounts it."""
        cases = self.cases(path)
        stamp = (id(cases), self.filter.metric)
        cached = self._counts.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        out: dict[int | None, int] = dict.fromkeys([*EvalStatus, None], 0)
        if len(self.results):
            make_key, name = _case_key(), str(path)
            for case in cases:
                out[self.case_status(make_key(name, case.eval_id))] += 1
        else:
            # Nothing run or saved yet: no key to build per case (100,000 of them held the UI thread).
            out[None] = len(cases)
        self._counts[path] = (stamp, out)
        return out

    def set_result(self, key: CaseKey, result: CaseResult | Finished | None, origin: str = "",
                   saved_at: float | None = None) -> None:
        """Store (or, with None, forget) a case's latest result, keeping the file's counts current. O(1)."""
        path = self.path_of(key)
        cached = self._counts.get(path)
        counts = cached[1] if cached is not None and self.case(key) is not None else None
        if counts is not None:
            counts[self.case_status(key)] -= 1
        if self.stale.pop(key, None) is not None:
            self.stale_version += 1
        if result is None:
            self.results.forget(key)
        else:
            self.results.put(key, result, origin, saved_at)
        if counts is not None:
            counts[self.case_status(key)] += 1

    def put_finished(self, items: list[tuple[CaseKey, Finished]], origin: str) -> None:
        """`set_result` for many finished cases of one origin at once (a slice of a streaming run): the
        counts of each file are adjusted in one pass over its cases."""
        results = self.results
        metric = self.filter.metric
        by_file: dict[str, list[tuple[CaseKey, Finished]]] = {}
        for item in items:
            by_file.setdefault(item[0].eval_file, []).append(item)
        for group in by_file.values():
            path = self.path_of(group[0][0])
            cached = self._counts.get(path)
            state = self.file_state(path)
            if cached is None or state is None or state.eval_set is None:
                continue
            counts, index = cached[1], self._cases_by_id(path, state.eval_set.eval_cases)
            # A case may finish more than once in a slice (its repetitions): each replaces the one before.
            shown: dict[CaseKey, int | None] = {}
            for key, finished in group:
                if key.eval_id in index:
                    counts[shown[key] if key in shown else results.status(key, metric)] -= 1
                    status = shown[key] = results.status_in(finished.summary, metric)
                    counts[status] += 1
        if self.stale:
            for key, _f in items:
                self.stale.pop(key, None)
            self.stale_version += 1
        results.put_finished(items, origin)

    def metric_names(self) -> list[str]:
        """Every metric with a result or in a config, results' first (the order `m` cycles through)."""
        names = dict.fromkeys(self.results.metric_names())
        ws = self.workspace
        if ws is not None:
            for state in list(ws.configs.values()):
                if state.config is not None:
                    names.update(dict.fromkeys(state.config.criteria))
        return list(names)

    # ---- filtering ---------------------------------------------------------------------------

    def matches(self, path: Path, case: EvalCase, found: dict[CaseKey, CaseResult] | None = None) -> bool:
        """Whether a case passes the filter; a search reads its result from `found` when given (the
        results of a whole file, fetched at once), else fetches it."""
        f = self.filter
        key = self.key(path, case.eval_id)
        if f.failed_only and self.shown_status(key) != EvalStatus.FAILED:
            return False
        if f.flaky_only and self.flaky(key) is None:
            return False
        if f.metric and not f.failed_only:
            if not self.results.has_metric(key, f.metric):
                return False
        if f.query:
            return self.search_match(path, case, found) is not None
        return True

    def search_match(self, path: Path, case: EvalCase, found: dict[CaseKey, CaseResult] | None = None) -> str | None:
        """Where the search text is in a case, in words (`id`, `conversation plan`, `agent turn 2:
        arguments of get_weather`); None when it is not, or there is no search. A search reads the
        case's result from `found` when given (a whole file's, fetched at once), else fetches it."""
        needle = self.filter.query.lower()
        if not needle:
            return None
        if needle in case.eval_id.lower():
            return "id"
        scenario = case.conversation_scenario
        if scenario is not None:
            if needle in scenario.starting_prompt.lower():
                return "starting prompt"
            if needle in scenario.conversation_plan.lower():
                return "conversation plan"
        key = self.key(path, case.eval_id)
        result = found.get(key) if found is not None else self.results.get(key)
        # The expected turns, then the agent's: user messages, responses, tool names and arguments.
        for whose, turns in (("expected", case.conversation or []), ("agent", result.actual if result is not None else [])):
            for i, inv in enumerate(turns):
                where = _turn_match(inv, needle)
                if where is not None:
                    return f"{whose} turn {i + 1}: {where}"
        return None

    def visible_cases(self, path: Path) -> list[EvalCase]:
        cases = self.cases(path)
        if self.filter.active:
            found = None
            if self.filter.query:
                found = self.results.get_many([k for c in cases if (k := self.key(path, c.eval_id)) in self.results])
            cases = [c for c in cases if self.matches(path, c, found)]
        return self._ordered(path, cases)

    def failed_keys(self) -> list[CaseKey]:
        return [k for k in self.all_keys() if self.results.status(k) == EvalStatus.FAILED]
