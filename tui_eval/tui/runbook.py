"""What this session's runs add up to beyond each case's latest result: every repetition's result
(--num-runs), the agent's tokens and tool latency as a run streams, and which cases each run flipped.

Plain state on the UI thread (fed by the read model's fold, read by the summary, the
run panel, the turn view and the timeline). Engine modules are imported on first use, not at start-up.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import Wanted
    from ..engine.latency import TimedToolCall, ToolLatency
    from ..engine.pricing import CostEstimate, PriceTable, UsageKey
    from ..schema.results import CaseResult
    from ..schema.usage import TokenUsage
    from .latest import Fetcher, Finished
    from .progress import RunPhase

log = logging.getLogger(__name__)


class HasStatus(Protocol):
    """A case's summary or its full result: what the timeline reads of the result a run replaces."""

    @property
    def status(self) -> int: ...


#: Runs the timeline keeps (newest first); older ones drop off.
TIMELINE_LIMIT = 200
#: While a run streams, tool latency is recomputed at most this often (seconds), and never for more than
#: a twentieth of the time: it sorts every call so far per tool (on the UI thread, and the run panel
#: asks on every tick).
LATENCY_EVERY = 1.0


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One finished run of this session: why it ran (a save, a key), when, and the cases it flipped."""

    label: str
    finished_at: float
    broke: tuple[CaseKey, ...]
    fixed: tuple[CaseKey, ...]
    ran: int
    phase: RunPhase

    def summary(self) -> str:
        """`2 cases broke, 1 fixed` (or `no case changed`)."""
        parts = []
        if self.broke:
            parts.append(f"{len(self.broke)} case{'s' if len(self.broke) != 1 else ''} broke")
        if self.fixed:
            parts.append(f"{len(self.fixed)} fixed")
        return ", ".join(parts) if parts else "no case changed"


@functools.cache  # a few (before, after) pairs; finishing a 100,000-case run asks for each case
def flip(before: int | None, after: int) -> str | None:
    """`broke`, `fixed` or None, as history compare reads a change (a case with no earlier result
    neither broke nor was fixed)."""
    from ..engine.store import status_change
    from ..schema.status import EvalStatus

    kind = status_change(None if before is None else EvalStatus(before), EvalStatus(after))
    return _FLIPS.get(kind)


_FLIPS = {"regression": "broke", "fixed": "fixed"}


@dataclass(slots=True)
class RunBook:
    """The run in progress (or the last one) and this session's timeline of runs."""

    #: Repetitions per run (the dashboard's --num-runs).
    num_runs: int = 1
    label: str = ""
    #: case -> repetition (1-based) -> its result (a `Finished` as the engine sent it until read), for the
    #: current run (only kept when num_runs > 1).
    repeats: dict[CaseKey, dict[int, Any]] = field(default_factory=dict)
    #: Asks for the full results the engine holds (see `LatestResults.fetcher`).
    fetcher: Fetcher | None = None
    _asked: set[Wanted] = field(default_factory=set)
    #: The agent's tokens per (who, model) in the current run.
    usage: dict[UsageKey, TokenUsage] = field(default_factory=dict)
    timings: list[TimedToolCall] = field(default_factory=list)
    #: Newest first.
    timeline: list[TimelineEntry] = field(default_factory=list)
    prices: PriceTable | None = None
    #: case -> what the run that produced its shown session result saved (the eval history files, the
    #: store's RunFinished.saved); a case absent here has no saved session result (yet).
    saved: dict[CaseKey, tuple[str, ...]] = field(default_factory=dict)
    _before: dict[CaseKey, int | None] = field(default_factory=dict)
    _after: dict[CaseKey, int] = field(default_factory=dict)
    _latency: tuple[int, list[ToolLatency]] = (0, [])
    _latency_due: float = 0.0
    _cost: tuple[int, CostEstimate | None] = (-1, None)
    _usage_version: int = 0
    _open: bool = False

    def start(self, label: str) -> None:
        """A new run: forget the last run's repetitions, usage and timings (the timeline stays)."""
        self.label = label
        self.repeats = {}
        self.usage = {}
        self.timings = []
        self._before, self._after = {}, {}
        self._latency = (0, [])
        self._latency_due = 0.0
        self._cost = (-1, None)
        self._usage_version = 0
        self._open = True

    def feed(self, finished: list[tuple[CaseKey, CaseResult | Finished]], repetitions: list[int],
             latest: Callable[[CaseKey], HasStatus | None]) -> None:
        """Fold finished cases, each a full CaseResult or a `Finished` one as the engine sent it (before the
        read model stores them as latest: `latest(key)` still gives what they replace, anything with a
        `status`, for the timeline's broke / fixed)."""
        if not finished:
            return
        from ..engine.feed import summarize
        from ..engine.pricing import UsageKey
        from ..schema.usage import TokenUsage
        from .latest import Finished

        for i, (key, result) in enumerate(finished):
            rep = repetitions[i] if i < len(repetitions) else 1
            summary = result.summary if isinstance(result, Finished) else summarize(result)
            self.saved.pop(key, None)  # its new result is not saved before its run ends
            if self.num_runs > 1:
                self.repeats.setdefault(key, {})[rep] = result
            if key not in self._before:
                old = latest(key)
                self._before[key] = old.status if old is not None else None
            self._after[key] = summary.status
            for model, usage in summary.usage:
                k = UsageKey("agent", model)
                self.usage[k] = self.usage.get(k, TokenUsage()) + usage
                self._usage_version += 1
            self.timings.extend(summary.timings)

    def finish(self, phase: RunPhase, now: float | None = None, saved: list[str] | tuple[str, ...] = ()) -> TimelineEntry | None:
        """The run ended and its records are saved (`saved`: their paths): add it to the timeline (once)."""
        if not self._open:
            return None
        self._open = False
        if saved:
            files = tuple(saved)
            for key in self._after:
                self.saved[key] = files
        broke, fixed = [], []
        for key, after in self._after.items():
            kind = flip(self._before.get(key), after)
            if kind == "broke":
                broke.append(key)
            elif kind == "fixed":
                fixed.append(key)
        entry = TimelineEntry(self.label, now if now is not None else time.time(), tuple(broke), tuple(fixed),
                              len(self._after), phase)
        self.timeline.insert(0, entry)
        del self.timeline[TIMELINE_LIMIT:]
        return entry

    # ---- what the views read -----------------------------------------------------------------

    def runs_of(self, key: CaseKey) -> list[CaseResult | None]:
        """A case's result in each repetition 1..N of the current run (None: not finished, or on its way
        from the engine: asked for here the first time, it arrives as a record, `arrived`)."""
        from .latest import Finished, Held

        mine = self.repeats.get(key)
        if not mine:
            return []
        wanted = [(key, rep) for rep, r in mine.items() if isinstance(r, Finished) and isinstance(r.full, Held)]
        new = [w for w in wanted if w not in self._asked]
        if new and self.fetcher is not None:
            self._asked.update(new)
            self.fetcher(new)
        for rep, result in list(mine.items()):
            if isinstance(result, Finished) and not isinstance(result.full, Held):
                mine[rep] = result.full
        return [r if not isinstance(r := mine.get(rep), Finished) else None for rep in range(1, self.num_runs + 1)]

    @property
    def waiting(self) -> bool:
        """Some repetition's result asked for has not arrived yet."""
        return bool(self._asked)

    def arrived(self, results: list[tuple[Wanted, CaseResult | None]]) -> None:
        """Results the engine sent for repetitions of the current run."""
        from .latest import Finished, Held

        for (key, repetition), result in results:
            self._asked.discard((key, repetition))
            mine = self.repeats.get(key)
            found = mine.get(repetition) if mine else None
            if mine is not None and result is not None and isinstance(found, Finished) \
                    and found.full == Held(repetition):
                mine[repetition] = result

    def statuses_of(self, key: CaseKey) -> list[int | None]:
        """A case's status in each repetition 1..N of the current run (None: not finished)."""
        from .latest import Finished

        mine = self.repeats.get(key)
        if not mine:
            return []
        out: list[int | None] = []
        for rep in range(1, self.num_runs + 1):
            r = mine.get(rep)
            out.append(None if r is None else r.summary.status if isinstance(r, Finished) else int(r.status))
        return out

    def total_tokens(self) -> TokenUsage | None:
        if not self.usage:
            return None
        from ..schema.usage import TokenUsage

        return TokenUsage.total(self.usage.values())

    def price_table(self) -> PriceTable:
        """The prices the dashboard's costs use: built-in ones and the $TUI_EVAL_PRICES file (the run
        record's cost also reads the config's), read once."""
        if self.prices is None:
            from ..engine.pricing import DEFAULT_PRICES, PriceFileError, PriceTable, load_price_table

            try:
                self.prices = load_price_table()
            except PriceFileError as exc:
                log.warning("price table: %s (built-in prices used)", exc)
                self.prices = PriceTable(prices=dict(DEFAULT_PRICES))
        return self.prices

    def cost(self) -> CostEstimate | None:
        """The agent's estimated cost so far (recomputed only when the usage changed)."""
        if not self.usage:
            return None
        if self._cost[0] != self._usage_version:
            from ..engine.pricing import estimate_cost

            self._cost = (self._usage_version, estimate_cost(self.usage, self.price_table()))
        return self._cost[1]

    def tool_latency(self) -> list[ToolLatency]:
        """Per tool count, pass/fail, mean and p95 so far: recomputed when calls were added, but while
        the run streams only every LATENCY_EVERY seconds at most (once it ended, on the next call)."""
        count = len(self.timings)
        if self._latency[0] != count:
            now = time.perf_counter()
            if not self._open or now >= self._latency_due:
                from ..engine.latency import tool_latencies

                self._latency = (count, tool_latencies(self.timings))
                self._latency_due = now + max(LATENCY_EVERY, 20 * (time.perf_counter() - now))
        return self._latency[1]
