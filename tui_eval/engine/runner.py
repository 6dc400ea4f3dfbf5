"""Run a plan: infer each case with the agent, score it with every configured metric, emit events.

Cases run concurrently (bounded), each in its own agent session. Cancelling keeps every case that had
finished; nothing is ever marked PASSED by default: a metric that cannot run is NOT_EVALUATED with the
reason kept.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol, TypeVar

from ..agents.base import Agent
from ..agents.conversation import CaseJob, Inference, error_text
from ..judge.client import JudgeClient, JudgeStats
from ..metrics.base import MetricInput, MetricSpec, judge_unavailable
from ..metrics.custom import spec_for
from ..metrics.efficiency import efficiency_results
from ..schema.config import Criterion, EvalConfig
from ..schema.criteria import MetricKind
from ..schema.fast import trusted
from ..schema.model import EvalCase, Invocation
from ..schema.runrecord import ExecutorInfo, GateRecord, RunKind, RunState, RunVersions
from ..schema.results import (
    CaseResult,
    EvalSetResult,
    EvalStatus,
    MetricResult,
    ResultVersions,
    combine_statuses,
    nested_by_turn,
    status_counts,
)
from .causes import strict_status
from .codestate import CodeState
from ..executors import Executor, InlineExecutor
from .events import (
    CaseFinished,
    CaseKey,
    CaseStarted,
    CasesStopped,
    Event,
    InvocationInferred,
    MetricProgress,
    RunError,
    RunFinished,
    RunNotice,
    RunStarted,
    deliver,
)
from .insight import RunInsight
from .options import RunOptions as RunOptions  # re-exported: callers import it from here
from .plan import EvalTarget, RunPlan
from .pricing import PriceTable

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.options import JudgeOptions
    from ..judge.service import JudgeService
    from .journal import RunJournal

EventSink = Callable[[Event], None]
T = TypeVar("T")
logger = logging.getLogger(__name__)
# Seconds of uninterrupted scoring after which a worker lets the loop run (signals, the UI, events).
# Each of the `concurrency` workers may run this long before a loop callback gets its turn, which is
# why a cancel first sets a flag they read between cases (`request_stop`).
YIELD_EVERY = 0.01
#: Why a judged metric of a case that finished its turns has no verdict after a cancel.
STOPPED_REASON = "the run was cancelled before the judge answered"


class _StoppedJudge:
    """The judge after a cancel: judged metrics are not evaluated, deterministic ones still score."""

    stats = JudgeStats()
    available = False
    unavailable_reason: str | None = STOPPED_REASON

    def unavailable_for(self, model: str) -> str | None:
        return STOPPED_REASON

    async def ask(self, **_kwargs: Any) -> Any:
        from ..judge.service import JudgeCallError

        raise JudgeCallError(STOPPED_REASON)

    async def aclose(self) -> None:
        return None


_STOPPED_JUDGE = _StoppedJudge()
#: The reason of a case a person skipped while it ran (the dashboard's in-flight view).
SKIPPED = "skipped"


@dataclass(slots=True, repr=False)
class RunRecord:
    """What a run produced: one EvalSetResult per eval set and repetition, in plan order."""

    def __repr__(self) -> str:
        # asyncio.run() reprs its main task (and so this result) while restoring the SIGINT
        # handler; a full repr of thousands of cases took seconds.
        return f"RunRecord({self.run_id!r}, {sum(len(r.case_results) for r in self.results)} cases)"

    run_id: str
    started: float
    finished: float = 0.0
    cancelled: bool = False
    results: list[EvalSetResult] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    # Why results could not be saved as eval history (the CLI exits 2 when there is any).
    save_errors: list[str] = field(default_factory=list)
    judge_stats: JudgeStats = field(default_factory=JudgeStats)
    # all | failures | selection | cancelled: what part of the eval sets this run covered.
    coverage: str = "all"
    num_runs: int = 1
    # The repetition (1-based) each entry of `results` belongs to.
    repetitions: list[int] = field(default_factory=list)
    code_state: CodeState | None = None
    insight: RunInsight | None = None
    #: What produced the run (store.provenance): agent folder or replay file, models, judge credentials.
    source: dict[str, Any] | None = None
    #: The run was strict (RunOptions.strict): its statuses already count a metric not evaluated as a
    #: failure, and its verdict (gate.run_outcome) counts an incomplete run as failed. Every face reads it here.
    strict: bool = False
    #: The run record's places (schema/runrecord.py): each eval file's kind, the versions, the journal's
    #: file name, the CI gate's outcome (set before saving) and what ran the agent.
    kinds: dict[str, RunKind] = field(default_factory=dict)
    versions: RunVersions = field(default_factory=RunVersions)
    journal: str | None = None
    gate: GateRecord | None = None
    executor: ExecutorInfo | None = None
    #: (eval file, case id) -> why its result is stale: what an edit during the run changed on disk
    #: (`versions.stale_of`, filled by the face once the run ends); every output names them.
    stale: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    #: The cases a cancelled run did not finish: (eval file, eval_set_id, eval_id, repetition).
    unfinished: list[tuple[str, str, str, int]] = field(default_factory=list)

    @property
    def state(self) -> RunState:
        """finished, or cancelled (a run still going, or killed, is told by its journal)."""
        return "cancelled" if self.cancelled else "finished"

    def counts(self) -> dict[EvalStatus, int]:
        return status_counts(c for r in self.results for c in r.case_results)


class ResultSink(Protocol):
    """Where a run's results are saved (`engine.store.ResultStore`, the eval history)."""

    def save_run(self, record: RunRecord, plan: RunPlan, agent: Executor | Agent | None) -> list[str]:
        """Save the record; returns the paths written. Raises OSError/ValueError when it cannot."""
        ...

    def history_dir(self, agent: Executor | Agent | None, eval_file: Path) -> Path:
        """The folder the results of `eval_file` go to."""
        ...


_error_text = error_text


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class ScoreProgress:
    """Run-wide per-metric counters behind the progress bars."""

    def __init__(self, emit: EventSink) -> None:
        self.emit = emit
        self.done: dict[str, int] = defaultdict(int)
        self.total: dict[str, int] = defaultdict(int)

    def grow(self, metric: str, n: int) -> None:
        self.total[metric] += n

    def tick(self, key: CaseKey, metric: str, index: int | None, status: EvalStatus | None = None) -> None:
        self.done[metric] += 1
        self.emit(MetricProgress(key, metric, index, self.done[metric], self.total[metric], status))


def _no_progress(_i: int) -> None:
    pass


async def score_case(
    config: EvalConfig,
    case: EvalCase,
    actual: list[Invocation],
    *,
    judge: JudgeClient | None = None,
    key: CaseKey | None = None,
    progress: ScoreProgress | None = None,
    final_session_state: dict[str, Any] | None = None,
) -> list[MetricResult]:
    """Score one case's actual invocations (and the session state they left) with every metric of the
    config (concurrently)."""
    expected = case.conversation
    turns = len(actual)

    async def one(name: str, spec: MetricSpec | None) -> MetricResult:
        crit = config.criteria[name]
        if progress is None or key is None:
            return await _score_metric(name, spec, crit, config, case, actual, expected, judge, _no_progress,
                                       final_session_state)
        seen: set[int] = set()

        def on_progress(i: int) -> None:
            if i not in seen and i < turns:
                seen.add(i)
                progress.tick(key, name, i)

        result = await _score_metric(name, spec, crit, config, case, actual, expected, judge, on_progress,
                                     final_session_state)
        if len(seen) < turns:
            # Top the bar up for invocations the metric did not report (not evaluated, or silent).
            for i in range(turns):
                if i not in seen:
                    seen.add(i)
                    progress.tick(key, name, i, result.status)
        return result

    names = list(config.criteria)
    specs = [spec_for(n, config) for n in names]
    if sum(1 for s in specs if s is not None and s.needs_judge) < 2:
        # Deterministic metrics never suspend: awaiting them in turn skips a Task per metric per case.
        results = [await one(n, s) for n, s in zip(names, specs)]
    else:
        results = list(await asyncio.gather(*(one(n, s) for n, s in zip(names, specs))))
    # As ADK: the informational efficiency metrics are reported for every eval (never pass or fail).
    return results + efficiency_results(actual, skip=set(names))


async def _score_metric(
    name: str,
    spec: MetricSpec | None,
    crit: Criterion,
    config: EvalConfig,
    case: EvalCase,
    actual: list[Invocation],
    expected: list[Invocation] | None,
    judge: JudgeClient | None,
    on_progress: Callable[[int], None],
    final_session_state: dict[str, Any] | None = None,
) -> MetricResult:
    def skip(reason: str) -> MetricResult:
        return MetricResult.not_evaluated(name, crit.threshold, reason, crit.to_dict())

    if spec is None:
        return skip(f"metric {name!r} is not available in this build of tui-eval")
    if spec.scenario_only and not case.is_scenario:
        return skip("only for conversation_scenario cases")
    if spec.needs_reference:
        if case.is_scenario or expected is None:
            return skip("reference metric on a scenario case (no expected turns)")
        if len(actual) != len(expected):
            return skip(f"actual and expected turn counts differ ({len(actual)} vs {len(expected)})")
    if not actual:
        return skip("no invocations to score")
    if spec.needs_judge:
        unavailable = judge_unavailable(judge, crit.judge.judge_model)
        if unavailable is not None:
            return skip(unavailable)
    inp = MetricInput(
        criterion=crit,
        case=case,
        actual=actual,
        expected=expected if spec.needs_reference else case.conversation,
        config=config,
        judge=judge,
        progress=on_progress,
        final_session_state=final_session_state,
    )
    try:
        value = spec.evaluate(inp)
        # Deterministic metrics return their result; a coroutine (judge metrics) is awaited.
        result: MetricResult = value if isinstance(value, MetricResult) else await _maybe_await(value)
        return result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a metric bug or judge failure must not sink the run
        return skip(f"metric error: {_error_text(exc)}")


def _judge_needed(plan: RunPlan) -> bool:
    for target in plan.targets:
        for name, crit in target.config.criteria.items():
            spec = spec_for(name, target.config)
            # A criterion may ask for the judge itself (safety_v1's judge mode).
            if spec is not None and (spec.needs_judge or crit.judge_requested):
                return True
        if any(c.is_scenario for c in target.cases):
            return True  # the user simulator talks through the judge service
    return False


def judge_options(options: RunOptions) -> JudgeOptions:
    """The judge settings of a run: the one carrier of them from the command line to every judge service
    (the run's, and the user simulator's in each agent process). What the options leave unset is the
    judge service's default."""
    from ..judge import JudgeOptions

    asked: dict[str, Any] = {"base_url": options.judge_base_url, "use_cache": options.judge_cache}
    if options.judge_concurrency is not None:
        asked["concurrency"] = options.judge_concurrency
    if options.judge_timeout is not None:
        asked["timeout"] = options.judge_timeout
    return JudgeOptions(**asked)


def make_judge(options: RunOptions) -> JudgeService:
    """The judge service for a run."""
    from ..judge import create_judge_service

    return create_judge_service(judge_options(options))


def judge_notice(plan: RunPlan, judge: JudgeClient | None) -> RunNotice | None:
    """The one notice a run gives when configured metrics cannot run at all: judge metrics without
    judge credentials, Vertex metrics without Vertex AI settings (one group per reason)."""
    vertex_ok: bool | None = None  # looked up only when a Vertex metric is configured
    groups: dict[str, list[str]] = {}
    for target in plan.targets:
        for name, crit in target.config.criteria.items():
            spec = spec_for(name, target.config)
            if spec is None:
                continue
            asks_judge = spec.needs_judge or crit.judge_requested
            if asks_judge:
                # Per judge_model: a Gemini judge and an `openai:` judge need different credentials.
                unavailable = judge_unavailable(judge, crit.judge.judge_model)
                if unavailable is None:
                    continue
                reason = unavailable
            elif spec.kind is MetricKind.VERTEX and not asks_judge:
                if vertex_ok is None:
                    from ..judge.vertex import VertexSettings

                    vertex_ok = VertexSettings.from_env() is not None
                if vertex_ok:
                    continue
                from ..judge.vertex import NO_SETTINGS

                reason = NO_SETTINGS
            else:
                continue
            names = groups.setdefault(reason, [])
            if name not in names:
                names.append(name)
    if not groups:
        return None
    parts = [f"{len(names)} {'metric' if len(names) == 1 else 'metrics'} will not be evaluated: {reason}"
             for reason, names in groups.items()]
    return RunNotice("; ".join(parts), tuple(n for names in groups.values() for n in names))


def plan_coverage(plan: RunPlan) -> str:
    """`selection` when some eval set runs only some of its cases, else `all`."""
    for target in plan.targets:
        if len(target.cases) < len(target.eval_set.eval_cases):
            return "selection"
    return "all"


#: How long a finished run waits for its code state (git and file hashes, each bounded on its own).
CODE_STATE_WAIT_SECONDS = 30.0


def new_run_id() -> str:
    """A new run's id: its start time (sortable), then six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class Run:
    """One execution of a plan. `await run.execute()`; `run.cancel()` from the same loop stops it,
    keeping every finished case. `inferences` lets a re-score reuse stored agent output."""

    def __init__(
        self,
        plan: RunPlan,
        agent: Executor | Agent | None,
        *,
        options: RunOptions | None = None,
        on_event: EventSink | None = None,
        judge: JudgeClient | None = None,
        inferences: dict[CaseKey, list[Invocation]] | None = None,
        store: ResultSink | None = None,
        run_id: str | None = None,
        coverage: str | None = None,
        owns_agent: bool = False,
        rescore_of: str | None = None,
        before_save: Callable[[RunRecord], None] | None = None,
        done: dict[tuple[str, str, int], CaseResult] | None = None,
        agent_version: str | None = None,
        inference_versions: dict[CaseKey, str | None] | None = None,
        session_states: dict[CaseKey, dict[str, Any] | None] | None = None,
    ) -> None:
        self.plan = plan
        #: The version of the agent code the executor loaded (`engine.versions`), for results whose
        #: worker does not say; `inference_versions`: the agent version each stored inference came from.
        self.agent_version = agent_version
        self.inference_versions = inference_versions or {}
        self._case_versions: dict[int, str] = {}
        self._criteria_versions: dict[int, str] = {}
        # Where the agent's turns run (an agent object handed over directly answers in this process:
        # the engine's own tests; agent folders come as worker-process executors, see executor_for).
        self.executor: Executor | None = InlineExecutor(agent, owns=False) if isinstance(agent, Agent) else agent
        #: What the eval history is named after (`name`) and stored under (`home`).
        self.agent = self.executor
        # A run that owns its agent opens it when it starts and closes it when it ends, on its own loop:
        # no caller can leave it open or close it elsewhere. A live session shares one across runs.
        self._owns_agent = owns_agent and self.executor is not None
        self.options = options or RunOptions()
        self._emit_fn = on_event
        self.judge = judge
        self.inferences = inferences or {}
        # The session state each stored inference left (a re-score of a saved run).
        self.session_states = session_states or {}
        self.store = store
        self.run_id = run_id or new_run_id()
        self.record = RunRecord(self.run_id, started=time.time())
        # The caller knows a failures-only re-run; a subset of cases is a selection otherwise.
        self.record.coverage = coverage or plan_coverage(plan)
        from .history import executor_agent_kind, executor_info, run_kind, selection_of

        agent_kind = executor_agent_kind(self.executor)
        self.record.kinds = {str(t.eval_file): run_kind(t.config, agent=agent_kind, options=self.options,
                                                        selection=selection_of(self.record.coverage),
                                                        rescore_of=rescore_of) for t in plan.targets}
        self.record.executor = executor_info(self.options, self.executor)
        #: Called with the finished record before it is saved (the CLI decides its gate there).
        self._before_save = before_save
        #: Cases an interrupted run finished, kept as they are (`--resume`): (eval file, eval_id, repetition).
        self._done = done or {}
        self._journal: RunJournal | None = None
        self._tasks: list[asyncio.Future[None]] = []
        self._cancelled = False
        self._progress: ScoreProgress | None = None
        # How an agent process builds the user simulator's judge for scenario cases (as make_judge does here).
        self._judge_options = judge_options(self.options)
        self._owns_judge = False
        self._last_yield = time.perf_counter()
        # The cases whose agent runs now (their inference task), and those a person asked to skip.
        self._inferring: dict[CaseKey, asyncio.Future[Inference]] = {}
        self._skipped: set[CaseKey] = set()

    def emit(self, event: Event) -> None:
        # A consumer that raises is logged and told (as a RunError); the run goes on.
        if self._emit_fn is not None:
            deliver(self._emit_fn, event, RunError)

    def request_stop(self) -> None:
        """From any thread: start no further case. Cases under way go on until `cancel`."""
        self._cancelled = True

    def cancel(self) -> None:
        """Stop starting and running cases; finished ones are kept and saved. In the run's loop."""
        self._cancelled = True
        for task in self._tasks:
            task.cancel()

    def skip(self, key: CaseKey) -> bool:
        """Stop one case whose agent is running, without cancelling the run: it ends NOT_EVALUATED with
        the reason SKIPPED (so the run is incomplete). In the run's loop; False if the case is not running."""
        task = self._inferring.get(key)
        if task is None or task.done():
            return False
        self._skipped.add(key)
        task.cancel()
        return True

    def _make_judge(self) -> None:
        """The run's own judge service when one is needed and none was given, warming its client."""
        if self.judge is None and _judge_needed(self.plan):
            judge = make_judge(self.options)
            judge.warm()
            self.judge = judge
            self._owns_judge = True

    async def execute(self) -> RunRecord:
        """Run the plan to the end (or the cancel) and return the record. A run that owns its agent
        opens it first (SetupError when it cannot be loaded) and closes it last, whatever happens."""
        self._make_judge()  # its client is made in a thread while the executor starts
        if not self._owns_agent or self.executor is None:
            return await self._execute()
        from .setup import start_executor

        if self.agent_version is None:
            # Read just before the load: the agent loads these files or newer ones (then its results
            # read as stale, never as fresh).
            self.agent_version = await asyncio.to_thread(self._agent_version_on_disk)
        # A cancel (Ctrl-C, SIGTERM) while the agent loads (a Ray cluster being joined) stops the loading
        # too: the run then ends with nothing run, at once.
        starting = asyncio.ensure_future(start_executor(self.executor))
        self._tasks.append(starting)
        try:
            try:
                await starting
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not self._cancelled or (current is not None and current.cancelling()):
                    raise
            finally:
                self._tasks.remove(starting)
            return await self._execute()
        finally:
            await self.executor.aclose()

    async def _execute(self) -> RunRecord:
        t0 = time.perf_counter()
        self.record.strict = self.options.strict
        plan = self.plan
        self._make_judge()
        if self.options.save and self.store is not None:
            self._remove_leftovers()
            opener = getattr(self.store, "open_journal", None)
            if opener is not None:
                # Each finished case is written through to the journal: a killed run keeps it.
                self._journal = opener(self.record, plan, self.agent)
                self.record.journal = self._journal.name if self._journal is not None else None
        try:
            return await self._execute_journalled(t0, plan)
        except BaseException:
            if self._journal is not None:
                self._journal.close(remove=False)  # the run did not end: its journal is its record
            raise

    async def _execute_journalled(self, t0: float, plan: RunPlan) -> RunRecord:
        code_task = asyncio.ensure_future(asyncio.to_thread(self._code_state)) if self.options.code_state else None
        prices = self._price_table()  # optional inputs are read up front (issue 23)
        progress = self._progress = ScoreProgress(self.emit)
        for target in plan.targets:
            for case in target.cases:
                # Scenario cases grow their totals turn by turn, as the simulated user speaks.
                stored = self.inferences.get(target.key(case))
                turns = len(stored) if stored is not None else len(case.conversation or [])
                for name in target.config.criteria:
                    progress.grow(name, turns * plan.num_runs)
        self.emit(
            RunStarted(
                self.run_id,
                plan.total_cases,
                dict(progress.total),
                tuple(str(t.eval_file) for t in plan.targets),
            )
        )
        notice = judge_notice(plan, self.judge)
        if notice is not None:
            self.emit(notice)
        slots: list[tuple[EvalTarget, list[CaseResult | None], int]] = []
        jobs: list[tuple[EvalTarget, EvalCase, list[CaseResult | None], int, int]] = []
        for rep in range(plan.num_runs):
            for target in plan.targets:
                cases = target.cases
                results: list[CaseResult | None] = [None] * len(cases)
                slots.append((target, results, rep))
                for i, case in enumerate(cases):
                    kept = self._done.get((str(target.eval_file), case.eval_id, rep + 1))
                    if kept is not None:  # finished by the run this one resumes
                        results[i] = kept
                        if self._journal is not None:
                            self._journal.case(kept, rep + 1)
                        continue
                    jobs.append((target, case, results, i, rep + 1))
        # A fixed pool of workers pulling from one iterator: thousands of cases cost thousands of
        # loop iterations, not thousands of Tasks queued on a semaphore.
        pending = iter(jobs)
        workers = min(max(1, self.options.concurrency), len(jobs)) if jobs else 0
        self._tasks = [asyncio.ensure_future(self._worker(pending, progress)) for _ in range(workers)]
        if self._cancelled:
            for task in self._tasks:
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.record.cancelled = self._cancelled or any(t.cancelled() for t in self._tasks)
        if self.record.cancelled:
            self.record.coverage = "cancelled"
        # Saving thousands of cases takes seconds: say now that nothing runs any more (x is honoured).
        self.emit(CasesStopped(self.run_id, sum(r is not None for _t, rs, _r in slots for r in rs),
                               self.record.cancelled))
        created = time.time()
        for target, results, rep in slots:
            finished = [r for r in results if r is not None]
            self.record.unfinished += [(str(target.eval_file), target.eval_set.eval_set_id, c.eval_id, rep + 1)
                                       for c, r in zip(target.cases, results) if r is None]
            suffix = f"_run{rep + 1}" if plan.num_runs > 1 else ""
            # Our own, typed values: validating them would first build pydantic's schema of every result
            # model (a CPU cost deferred until needed), only to accept them as they are.
            self.record.results.append(
                trusted(
                    EvalSetResult,
                    eval_set_result_id=f"{target.eval_set.eval_set_id}_{created}{suffix}",
                    eval_set_id=target.eval_set.eval_set_id,
                    creation_timestamp=created,
                    case_results=finished,
                    eval_set_file=str(target.eval_file),
                )
            )
            self.record.repetitions.append(rep + 1)
        self.record.num_runs = plan.num_runs
        self.record.finished = time.time()
        if self.judge is not None:
            self.record.judge_stats = self.judge.stats.copy()
        if code_task is not None:
            # Bounded: the results are in, and a run never waits on its code state for ever.
            done, _ = await asyncio.wait({code_task}, timeout=CODE_STATE_WAIT_SECONDS)
            if done:
                self.record.code_state = code_task.result()
            else:
                logger.warning("the code state took over %g s; the run is saved without it", CODE_STATE_WAIT_SECONDS)
        self.record.insight = self._insight(prices)
        from .store import provenance

        self.record.source = provenance(self.agent, self.record, [t.config for t in plan.targets])
        if self._owns_judge and self.judge is not None:
            try:
                await self.judge.aclose()
            except Exception:  # closing a client must never lose results
                logger.warning("closing the judge service failed", exc_info=True)
        if self._before_save is not None:
            self._before_save(self.record)
        journal, self.record.journal = self._journal, None  # removed once the records are saved
        if self.options.save and self.store is not None:
            try:
                self.record.saved = self.store.save_run(self.record, self.plan, self.agent)
            except Exception as exc:  # an unsaveable result (too deep, a name too long) must not lose the run
                message = f"could not save eval history{self._history_places()}: {_error_text(exc)}"
                # An unsafe id or a full disk is the user's to fix: the message says it all (one line).
                expected = isinstance(exc, OSError | ValueError)
                logger.log(logging.DEBUG if expected else logging.ERROR, "%s", message, exc_info=True)
                self.record.save_errors.append(message)
                self.emit(RunError(message))
        if journal is not None:
            # Kept when the records could not be saved: the journal still holds every finished case.
            journal.close(remove=not self.record.save_errors)
            if self.record.save_errors:
                self.record.journal = journal.name
        self.emit(
            RunFinished(
                self.run_id,
                self.record.counts(),
                self.record.cancelled,
                time.perf_counter() - t0,
                tuple(self.record.saved),
            )
        )
        return self.record

    def _versions(self, target: EvalTarget, case: EvalCase, key: CaseKey, inference: Inference) -> ResultVersions:
        """What this result is computed from (hashes cached per case and config object for the run)."""
        from .versions import case_version, criteria_version, judge_version, result_versions, tools_mode

        case_hash = self._case_versions.get(id(case))
        if case_hash is None:
            case_hash = self._case_versions[id(case)] = case_version(case)
        criteria_hash = self._criteria_versions.get(id(target.config))
        if criteria_hash is None:
            criteria_hash = self._criteria_versions[id(target.config)] = criteria_version(target.config)
        if key in self.inference_versions:
            agent = self.inference_versions[key]
        else:
            agent = inference.agent_version or self.agent_version
        return result_versions(agent=agent, agent_outside=inference.agent_outside, tools=tools_mode(self.options),
                               case=case_hash, criteria=criteria_hash,
                               judge=judge_version(self.options) if self.judge is not None else None)

    def _agent_version_on_disk(self) -> str | None:
        """The version of the run's agent as the files are now (None for no agent)."""
        from .versions import files_version, version_of_agent_ref

        executor = self.executor
        if executor is None or executor.home is None:
            return None
        if not executor.runs_user_code:  # replay: the recording it answers from
            return files_version(executor.source_paths())
        ref = getattr(executor, "ref", None)
        return version_of_agent_ref(ref if isinstance(ref, str) else str(executor.home))

    def _code_state(self) -> CodeState | None:
        """The code state at run start (on a thread: git takes tens of milliseconds)."""
        from .codestate import capture_code_state

        home = getattr(self.agent, "home", None)
        configs = dict.fromkeys(Path(t.config.source) for t in self.plan.targets if t.config.source)
        try:
            return capture_code_state(Path(home) if home is not None else None,
                                      [t.eval_file for t in self.plan.targets], list(configs))
        except OSError as exc:  # a run never fails over its code state
            logger.warning("could not record the code state: %s", exc)
            return None

    def _price_table(self) -> PriceTable | None:
        """The price table, read before any case runs: a price file that cannot be read ($TUI_EVAL_PRICES
        in UTF-16, a FIFO, /dev/zero) is a warning and the built-in prices, never a run lost at its end."""
        from .pricing import PriceFileError, load_price_table

        sources = [Path(t.config.source) for t in self.plan.targets if t.config.source]
        try:
            return load_price_table(sources[0] if sources else None)
        except PriceFileError as exc:
            logger.warning("price table: %s (built-in prices used)", exc)
            return None

    def _insight(self, prices: PriceTable | None) -> RunInsight | None:
        from .insight import build_insight

        configs = [t.config for t in self.plan.targets]
        return build_insight(self.record.results, self.record.repetitions, num_runs=self.plan.num_runs,
                             judge_stats=self.record.judge_stats, configs=configs, prices=prices,
                             wall_seconds=self.record.finished - self.record.started)

    def _remove_leftovers(self) -> None:
        """Temp files a killed save left in the history folders this run writes to."""
        from .tempfiles import remove_stale_temp_files

        if self.store is None:
            return
        for directory in {self.store.history_dir(self.agent, t.eval_file) for t in self.plan.targets}:
            remove_stale_temp_files(Path(directory))

    async def _worker(
        self,
        pending: Iterator[tuple[EvalTarget, EvalCase, list[CaseResult | None], int, int]],
        progress: ScoreProgress,
    ) -> None:
        for target, case, results, index, repetition in pending:
            if self._cancelled:
                return
            try:
                result = results[index] = await self._run_case(target, case, progress, repetition)
            except Exception as exc:  # a bug of ours on one case fails that case, never the cases after it
                logger.exception("could not evaluate case %s of %s", case.eval_id, target.eval_file)
                result = results[index] = self._unevaluated(target, case, repetition, exc)
            if self._journal is not None:
                self._journal.case(result, repetition)
            # Replayed cases and deterministic metrics never suspend: without a yield now and then, a
            # run of 100k cases would hold the loop for a minute and Ctrl-C (a loop callback) would wait.
            now = time.perf_counter()
            if now - self._last_yield > YIELD_EVERY:
                self._last_yield = now
                await asyncio.sleep(0)

    async def _infer(self, target: EvalTarget, case: EvalCase, key: CaseKey) -> Inference:
        """Run the agent over the case (or take its stored inference, for a re-score)."""
        stored = self.inferences.get(key)
        if stored is not None:
            return Inference(actual=stored, final_session_state=self.session_states.get(key))
        executor = self.executor
        if executor is None:
            return Inference(error="no agent to run and no stored inference for this case")
        job = CaseJob(str(target.eval_file), case.eval_id, case, self.options.turn_timeout,
                      config=target.config if case.is_scenario else None,
                      judge=self._judge_options if case.is_scenario else None,
                      eval_set=target.eval_set if not executor.runs_user_code else None,
                      mock_tools=self.options.mock_tools)
        progress = self._progress
        assert progress is not None

        def on_turn(i: int, inv: Invocation) -> None:
            if case.is_scenario:
                for name in target.config.criteria:
                    progress.grow(name, 1)
            self.emit(InvocationInferred(key, i, inv))

        return await executor.infer(job, judge=self.judge, on_turn=on_turn)

    def _history_places(self) -> str:
        """` in FOLDER[, FOLDER]`: where the run's history goes (a full disk or a read-only folder is the
        user's to fix, and an OSError from a write does not say where)."""
        places = getattr(self.store, "history_dir", None)
        if places is None:
            return ""
        try:
            folders = dict.fromkeys(str(places(self.agent, t.eval_file)) for t in self.plan.targets)
        except (OSError, ValueError):
            return ""
        return f" in {', '.join(folders)}" if folders else ""

    def _unevaluated(self, target: EvalTarget, case: EvalCase, repetition: int, exc: Exception) -> CaseResult:
        """The result of a case tui-eval itself could not evaluate: FAILED, with why (a run that lost it
        would pass)."""
        why = f"tui-eval could not evaluate this case: {type(exc).__name__}: {exc}"
        result = CaseResult(
            eval_set_id=target.eval_set.eval_set_id, eval_id=case.eval_id, status=EvalStatus.FAILED,
            metrics=[MetricResult.not_evaluated(n, c.threshold, why, c.to_dict())
                     for n, c in target.config.criteria.items()],
            eval_set_file=str(target.eval_file), session_id=f"tui-eval-{os.urandom(6).hex()}", error=why,
            repetition=repetition)
        self.emit(CaseFinished(target.key(case), result, repetition))
        return result

    async def _run_case(self, target: EvalTarget, case: EvalCase, progress: ScoreProgress,
                        repetition: int = 1) -> CaseResult:
        key = target.key(case)
        self.emit(CaseStarted(key))
        task = self._inferring[key] = asyncio.ensure_future(self._infer(target, case, key))
        try:
            inference = await task
        except asyncio.CancelledError:
            if key not in self._skipped or self._cancelled:
                raise
            # Skipped by a person: not evaluated (as a user-simulator outage is), never a failure.
            inference = Inference(error=SKIPPED, simulator_failed=True)
        finally:
            self._inferring.pop(key, None)
            self._skipped.discard(key)
        t0 = time.perf_counter()
        actual, error, session_id = inference.actual, inference.error, inference.session_id
        if error is not None:
            reason = error.split("\n", 1)[0]
            simulator_failed = inference.simulator_failed
            why = reason if simulator_failed else f"the agent failed: {reason}"
            metrics = [
                MetricResult.not_evaluated(n, c.threshold, why, c.to_dict())
                for n, c in target.config.criteria.items()
            ]
            # Complete the bars by what this case added to them: its expected turns, or for a
            # scenario the turns the simulated user got to say.
            planned = len(actual) if case.is_scenario else len(case.conversation or [])
            for name in target.config.criteria:
                for i in range(planned):
                    progress.tick(key, name, i, EvalStatus.NOT_EVALUATED)
            status = EvalStatus.FAILED
            if simulator_failed:
                # A user-simulator outage says nothing about the agent: NOT_EVALUATED (FAILED if --strict).
                status = EvalStatus.NOT_EVALUATED
                error = None
        else:
            try:
                metrics = await score_case(
                    target.config, case, actual, judge=self.judge, key=key, progress=progress,
                    final_session_state=inference.final_session_state,
                )
            except asyncio.CancelledError:
                if not self._cancelled:
                    raise
                # Cancelled while the judges answered: the agent's turns are done, so every verdict that
                # needs no judge is kept; the judged metrics are not evaluated, and say why.
                metrics = await score_case(target.config, case, actual, judge=_STOPPED_JUDGE,
                                           final_session_state=inference.final_session_state)
            status = combine_statuses([m.status for m in metrics])
        if self.options.strict:
            status = strict_status(status, metrics)  # --strict: a metric that never ran counts as a failure
        user_id = case.session_input.user_id if case.session_input is not None else None
        # Every field given, each of its type (validating them was a measurable share of a bench run).
        result = trusted(
            CaseResult,
            eval_set_id=target.eval_set.eval_set_id,
            eval_id=case.eval_id,
            status=status,
            metrics=metrics,
            actual=actual,
            expected=case.conversation,
            eval_set_file=str(target.eval_file),
            # 12 random hex digits, as uuid4().hex[:12] gave, at a fifth of its cost.
            session_id=session_id or f"tui-eval-{os.urandom(6).hex()}",
            user_id=user_id,
            error=error,
            # The case's own time: its conversation where the agent ran, then its scoring; never time
            # spent waiting for a free worker.
            wall_seconds=inference.seconds + (time.perf_counter() - t0),
            versions=self._versions(target, case, key, inference),
            repetition=repetition,
            nested_calls=nested_by_turn(actual),
            final_session_state=inference.final_session_state,
            human_verdicts=[],
            reruns_after_crash=inference.reruns_after_crash,
        )
        self.emit(CaseFinished(key, result, repetition))
        return result


