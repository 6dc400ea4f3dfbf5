"""The records a face exchanges with an engine that runs in another process: commands go down, and
typed records come up (the engine's own events, plus the few below).

A finished case travels as a `CaseDone`: the small `CaseSummary` that lists, counts, sorts, filters and
the run book need. The engine keeps the full result; a face asks for it (`Fetch`) only when it shows that
case, and gets it back pickled (`Fetched`). Nothing here imports the result models, Textual or Rich.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from ..schema.status import EvalStatus, combine_statuses
from .events import CaseKey, Event

if TYPE_CHECKING:  # pragma: no cover
    from .options import RunOptions
    from .runner import ResultSink
    from ..schema.model import Invocation
    from ..schema.results import CaseResult
    from ..schema.usage import TokenUsage


# ---- a finished case, small -------------------------------------------------------------------


class MetricSummary(NamedTuple):
    """One metric's verdict on a case: its status, score and the status of each turn it scored.

    Statuses are EvalStatus values as plain ints: summaries cross the process boundary one per case, and
    enum members pickle larger and load slower. EvalStatus members compare equal to them."""

    name: str
    status: int
    score: float | None
    turns: tuple[int, ...]


class ToolTime(NamedTuple):
    """One timed tool call (a `latency.TimedToolCall`)."""

    name: str
    seconds: float
    ok: bool


class CaseSummary(NamedTuple):
    """What a case's result says at a glance (its status, metric verdicts, turn count, agent error, how
    long it took), plus the agent's token usage and tool timings a run adds up (empty for saved results)."""

    status: int
    metrics: tuple[MetricSummary, ...]
    turns: int
    error: str | None
    usage: tuple[tuple[str, TokenUsage], ...] = ()
    timings: tuple[ToolTime, ...] = ()
    seconds: float = 0.0

    def metric(self, name: str) -> MetricSummary | None:
        for m in self.metrics:
            if m.name == name:
                return m
        return None

    def coverage(self) -> tuple[int, int]:
        """(deciding metrics that gave a verdict, deciding metrics): `CaseResult.coverage_text`'s figures
        (informational metrics never decide)."""
        deciding = [m.status for m in self.metrics if m.status != EvalStatus.INFORMATIONAL]
        return sum(1 for s in deciding if s != EvalStatus.NOT_EVALUATED), len(deciding)

    def turn_status(self, index: int, metric: str | None = None) -> EvalStatus | None:
        """A turn's status: its metrics' (or only `metric`'s) verdicts on it combined (`combine_statuses`);
        NOT_EVALUATED when none scored it, None when the case has no verdict at all."""
        metrics = [m for m in self.metrics if m.name == metric] if metric else self.metrics
        statuses = [m.turns[index] for m in metrics if index < len(m.turns)]
        if not statuses:
            return EvalStatus.NOT_EVALUATED if self.metrics or self.error else None
        return combine_statuses(statuses)


def summarize(result: CaseResult, *, insight: bool = True) -> CaseSummary:
    """A case's summary; with `insight`, the agent's usage and tool timings too (a run's cases)."""
    metrics = tuple(
        MetricSummary(m.metric_name, int(m.status), m.score, tuple(int(i.status) for i in m.per_invocation))
        for m in result.metrics
    )
    usage: tuple[tuple[str, TokenUsage], ...] = ()
    timings: tuple[ToolTime, ...] = ()
    if insight and result.actual:
        from .insight import invocation_usage
        from .trends import case_tool_timings

        usage = tuple(pair for inv in result.actual for pair in invocation_usage(inv))
        timings = tuple(ToolTime(t.name, t.seconds, t.ok) for t in case_tool_timings(result))
    return CaseSummary(int(result.status), metrics, len(result.actual), result.error, usage, timings,
                       result.wall_seconds)


def pack(result: CaseResult) -> bytes:
    """The full result as bytes (a `Fetched` answer; parsed back with `unpack`)."""
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(payload: bytes) -> CaseResult:
    result: CaseResult = pickle.loads(payload)
    return result


# ---- records up (engine -> face), besides the engine's own events ------------------------------
# The records sent once per case are named tuples: a batch of thousands unpickles several times faster
# than as dataclasses (whose pickled state is restored field by field).


class CaseBegun(NamedTuple):
    """A case started (the engine's CaseStarted)."""

    key: CaseKey



class TurnDone(NamedTuple):
    """A case in flight answered one turn (the engine's InvocationInferred), as the in-flight view shows
    it: the user's message, each tool call (`name(args)`) and the final response, each cut to a bound.
    The finished case carries the whole turns; this is only what a person watches while it runs."""

    key: CaseKey
    #: Which turn (from 0).
    turn: int
    user: str
    calls: tuple[str, ...]
    response: str

    @classmethod
    def of(cls, key: CaseKey, index: int, invocation: Invocation) -> TurnDone:
        import json

        calls = tuple(_cut(f"{c.name}({json.dumps(c.args or {}, ensure_ascii=False, default=str)})", 300)
                      for c in invocation.tool_calls)
        response = invocation.final_response.text if invocation.final_response is not None else ""
        return cls(key, index, _cut(invocation.user_content.text, 2000), calls, _cut(response, 4000))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class CaseDone(NamedTuple):
    """A case finished (once per repetition): its summary (the engine keeps the full result; `Fetch`)."""

    key: CaseKey
    summary: CaseSummary
    repetition: int = 1


class CasesDone(NamedTuple):
    """The cases a batch finished, as one record (the engine folds a batch's CaseDone records into it):
    each case's key and summary as plain tuples (`summary_of` makes the summary again; plain tuples load
    several times faster than named ones) and its repetition; and what the run panel counts (cases by
    status, verdicts per metric), so a face takes thousands of finished cases in one step and stores them
    later, a slice at a time. `ended`: the cases among them whose start was told before (CaseBegun)."""

    keys: tuple[tuple[str, str], ...]
    summaries: tuple[tuple[Any, ...], ...]
    repetitions: tuple[int, ...]
    counts: dict[int, int]
    evaluated: dict[str, int]
    ended: tuple[CaseKey, ...]


def cases_done(records: list[CaseDone], ended: tuple[CaseKey, ...] = ()) -> CasesDone:
    """Fold CaseDone records into one CasesDone."""
    counts: dict[int, int] = {}
    evaluated: dict[str, int] = {}
    summaries = []
    for r in records:
        s = r.summary
        counts[s.status] = counts.get(s.status, 0) + 1
        for m in s.metrics:
            # A judge with no credentials fills its bar all the same: count what it decided.
            evaluated[m.name] = evaluated.get(m.name, 0) + (m.status != EvalStatus.NOT_EVALUATED)
        summaries.append((s.status, tuple(tuple(m) for m in s.metrics), *s[2:]))
    return CasesDone(tuple((r.key.eval_file, r.key.eval_id) for r in records), tuple(summaries),
                     tuple(r.repetition for r in records), counts, evaluated, ended)


_new = tuple.__new__


def summary_of(plain: tuple[Any, ...]) -> CaseSummary:
    """A CasesDone summary as a CaseSummary again (tuple.__new__: no Python call per field)."""
    metrics = tuple([_new(MetricSummary, m) for m in plain[1]])
    return _new(CaseSummary, (plain[0], metrics, *plain[2:]))


#: Which result a face wants: a case, and the repetition of the run that made it (1 without --num-runs).
Wanted = tuple[CaseKey, int]


@dataclass(frozen=True, slots=True)
class Fetched:
    """The answer to a `Fetch`, sent alone in its batch: each wanted result pickled (`unpack`), or None
    when the engine holds no such result (the case was removed, or run again since)."""

    ticket: int
    results: tuple[tuple[Wanted, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class MetricsScored:
    """Invocations scored since the last batch, per metric (MetricProgress events, counted)."""

    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """Chat `ticket`'s conversation answered turn `turn`: the whole turn, as its JSON (`Invocation.to_wire`),
    read back with `schema.load.read_invocation` (the chat shows it and saves it as a case)."""

    ticket: int
    turn: int
    invocation: bytes


@dataclass(frozen=True, slots=True)
class ChatEnded:
    """Chat `ticket`'s conversation was played to its end (`error`: why it stopped early)."""

    ticket: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunBegan:
    """The engine started running cases (a requested run, or a live re-run of what a save changed)."""

    reason: str
    rescore: bool = False


@dataclass(frozen=True, slots=True)
class RunOver:
    """The run that `RunBegan` announced is over; its records are saved."""

    reason: str
    rescore: bool = False


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The engine is done with a `RunCases` command (`error`: it failed as a whole)."""

    ticket: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FilesChanged:
    """The engine re-read these files (a save it watched, a reload asked for): the face reloads its copy."""

    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EngineReady:
    """The engine loaded the folder and its saved results: runs start at once from now on."""


@dataclass(frozen=True, slots=True)
class WatchReady:
    """The engine's file watcher is up."""


@dataclass(frozen=True, slots=True)
class EngineGone:
    """The engine process ended (made by the face's side of the link, never sent)."""

    message: str


#: Everything that comes up from an engine: its events (the one union, `events.Event`) and the records above.
Record = Union[Event, CaseBegun, TurnDone, ChatTurn, ChatEnded, CaseDone, CasesDone, Fetched, MetricsScored, RunBegan, RunOver, RunEnded,
               FilesChanged, EngineReady, WatchReady, EngineGone]


# ---- commands down (face -> engine) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Everything the engine process needs to start: the first message down."""

    root: str
    agent_ref: str | None
    options: RunOptions | None
    store: ResultSink | None
    num_runs: int
    live: bool
    agent_reruns: bool
    watch: bool
    log_level: str = "WARNING"


@dataclass(frozen=True, slots=True)
class RunCases:
    ticket: int
    keys: tuple[CaseKey, ...]
    label: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the runs in progress (finished cases are kept and saved)."""


@dataclass(frozen=True, slots=True)
class SetModes:
    """Live mode (saves re-run what they change) and re-runs on agent edits."""

    live: bool
    agent_reruns: bool


@dataclass(frozen=True, slots=True)
class Reload:
    """Re-read one file now (an edit the face wrote while no watcher runs)."""

    path: str


@dataclass(frozen=True, slots=True)
class Fetch:
    """Send these full results back (answered at once from the command thread, even during a run)."""

    ticket: int
    wanted: tuple[Wanted, ...]


@dataclass(frozen=True, slots=True)
class Skip:
    """Stop this running case without cancelling the run: it ends NOT_EVALUATED, "skipped"."""

    key: CaseKey


@dataclass(frozen=True, slots=True)
class Chat:
    """Play a chat with the agent `agent_ref` in its worker processes: every user message so far, from a
    fresh session (a chat's history is replayed, not kept: what is saved is what this play answered)."""

    ticket: int
    agent_ref: str
    messages: tuple[str, ...]
    app_name: str
    user_id: str = "user"


@dataclass(frozen=True, slots=True)
class Close:
    """Stop watching, cancel runs (their finished cases are saved), close agents, exit."""


Command = Union[RunCases, Cancel, SetModes, Reload, Fetch, Skip, Chat, Close]
