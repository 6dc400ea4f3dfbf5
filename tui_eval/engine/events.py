"""The typed events of a run and of the live loop around runs, consumed alike by the CLI, `watch` and the
dashboard: one union, `Event`.

Events are small slotted dataclasses (treat them as immutable) posted in order from the engine's event loop. Consumers that
redraw (the dashboard) should fold them into state and repaint on a timer, not once per event.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    # Annotations only: the dashboard's start-up needs CaseKey, not the result models.
    from ..schema.model import Invocation
    from ..schema.results import CaseResult, EvalStatus
    from .runner import RunRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CaseKey:
    """Identifies a case across runs: the eval file it lives in and its eval_id."""

    eval_file: str
    eval_id: str

    def __str__(self) -> str:
        return f"{self.eval_file}:{self.eval_id}"

    def __reduce__(self) -> tuple[type[CaseKey], tuple[str, str]]:
        # Pickled as a call: a slotted dataclass's default state is restored field by field, several
        # times slower, and the dashboard unpickles one key per finished case from its engine process.
        return CaseKey, (self.eval_file, self.eval_id)


@dataclass(slots=True)
class RunStarted:
    run_id: str
    total_cases: int
    # metric name -> how many invocation scores to expect (0 for a case until its turns are known).
    metric_totals: dict[str, int]
    eval_files: tuple[str, ...] = ()


@dataclass(slots=True)
class RunNotice:
    """Said once before any case runs: something the whole run will lack (e.g. judge metrics that
    cannot run without credentials). `metrics` names what is affected."""

    message: str
    metrics: tuple[str, ...] = ()


@dataclass(slots=True)
class CaseStarted:
    key: CaseKey


@dataclass(slots=True)
class InvocationInferred:
    """The agent answered one turn of a case."""

    key: CaseKey
    index: int
    invocation: Invocation


@dataclass(slots=True)
class MetricProgress:
    """One invocation was scored by one metric (or the metric finished for the case when `index` is None)."""

    key: CaseKey
    metric_name: str
    index: int | None
    done: int
    total: int
    # A metric's expected invocation count can grow once a scenario case's turns are known.
    status: EvalStatus | None = None


@dataclass(slots=True)
class CaseFinished:
    key: CaseKey
    result: CaseResult
    # Which of the run's --num-runs repetitions this is (1-based): a case finishes once per repetition.
    repetition: int = 1


@dataclass(slots=True)
class CasesStopped:
    """No case of the run runs any more (each finished or was cancelled): what remains is recording and
    saving the `finished` cases, which takes seconds for many thousands of them, until RunFinished."""

    run_id: str
    finished: int
    cancelled: bool = False


@dataclass(slots=True)
class RunFinished:
    run_id: str
    counts: dict[EvalStatus, int]
    cancelled: bool = False
    wall_seconds: float = 0.0
    # Where the eval history and the run record were written.
    saved: tuple[str, ...] = ()


@dataclass(slots=True)
class RunError:
    """Something went wrong outside any one case (saving results, loading the agent...)."""

    message: str
    key: CaseKey | None = None
    fatal: bool = False


@dataclass(slots=True)
class Log:
    message: str
    level: str = "info"
    extra: dict[str, str] = field(default_factory=dict)


# ---- events of the live loop (`engine.live`: files, agents, re-runs) ------------------------------


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file could not be loaded. `stale`: its last good version is still used and shown."""

    path: str
    message: str
    stale: bool


@dataclass(frozen=True, slots=True)
class CasesRemoved:
    keys: tuple[CaseKey, ...]


@dataclass(frozen=True, slots=True)
class AgentReloaded:
    """An agent was (re)loaded; `error` says why it could not be, and its cases will fail with it."""

    ref: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AgentStale:
    """An agent's source changed while re-runs on agent edits are off: it reloads before the next run."""

    ref: str
    path: str


@dataclass(frozen=True, slots=True)
class AgentPaused:
    """Live re-runs of an agent pause: each of its last runs changed its own files (`own_writes`)."""

    ref: str
    message: str


@dataclass(frozen=True, slots=True)
class StaleChanged:
    """Results whose inputs changed on disk since they were computed (`versions.stale_reasons`): each
    key in `stale` with its reasons is stale now; each in `fresh` is not any more."""

    stale: tuple[tuple[CaseKey, tuple[str, ...]], ...]
    fresh: tuple[CaseKey, ...] = ()


@dataclass(frozen=True, slots=True)
class LiveRunStarted:
    reason: str
    keys: tuple[CaseKey, ...]
    rescore: bool = False


@dataclass(frozen=True, slots=True)
class LiveRunFinished:
    """A re-run (or re-score) finished; the latest result of each key is in `LiveSession.results`."""

    reason: str
    keys: tuple[CaseKey, ...]
    rescore: bool
    records: tuple[RunRecord, ...]
    wall_seconds: float


@dataclass(frozen=True, slots=True)
class WatchFailed:
    """The file watcher itself failed (a watched folder vanished...); it restarts after `retry_after` s."""

    message: str
    retry_after: float


#: Every event a face receives: a run's, and the live loop's around its runs. Consumers (the CLI, `watch`,
#: the dashboard's engine) take this one union and match on the class.
Event = (RunStarted | RunNotice | CaseStarted | InvocationInferred | MetricProgress | CaseFinished | CasesStopped
         | RunFinished | RunError | Log
         | FileProblem | CasesRemoved | AgentReloaded | AgentStale | AgentPaused | StaleChanged | LiveRunStarted
         | LiveRunFinished | WatchFailed)


_E = TypeVar("_E")


def deliver(sink: Callable[[_E], None], event: _E, report: Callable[[str], _E]) -> bool:
    """Hand one event to a consumer; False if the consumer raised.

    A consumer's exception is a bug to show, not a reason to stop a run: it is logged with its
    traceback and reported to the same consumer as the event `report` makes (a RunError), so the
    face shows it. Should that report fail too, the log still has both.
    """
    try:
        sink(event)
        return True
    except Exception as exc:
        name = type(event).__name__
        log.exception("an event consumer failed on %s", name)
        try:
            sink(report(f"an event consumer failed on {name}: {type(exc).__name__}: {exc} (see the log)"))
        except Exception:
            log.exception("the event consumer also failed to take the report of its failure")
        return False
