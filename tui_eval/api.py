"""The Python face: `evaluate()` scores eval files against an agent and returns the typed run record.

Like google-adk's `AgentEvaluator.evaluate`, a run with failures raises an AssertionError that names
every failing case and metric (score against threshold, or why it was not evaluated), so a plain
`def test_agent(): evaluate("my_agent", "my_agent/tests")` is a complete pytest test.

`evaluate()` is synchronous and works from plain code and from inside a running event loop (an
`async def` test under pytest-asyncio): there it runs the evaluation on its own loop in a worker
thread and blocks until it is done. In async code, `await aevaluate(...)` runs on the caller's loop.
The CLI's `run` prepares its runs with `prepare_run` too, so both faces resolve agents, eval files,
folders and eval set ids the same way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib.util
import logging
import types
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Coroutine, ParamSpec, Sequence, TypeVar

from .engine.setup import SetupError, agent_ref_of, resolve_agent, start_executor
from .report import metric_line
from .schema.results import CaseResult, EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from .executors import Executor
    from .engine.gate import BaselineReport, Outcome
    from .engine.plan import RunPlan
    from .engine.runner import RunOptions, RunRecord
    from .schema.config import EvalConfig

__all__ = ["SetupError", "PreparedRun", "aevaluate", "evaluate", "execute", "failures_of", "outcome", "prepare_run",
           "run_sync"]

logger = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(slots=True)
class PreparedRun:
    """A planned run and the executor that will run its agent (a Run opens and closes it)."""

    plan: RunPlan
    agent: Executor
    agent_ref: str


def agent_ref_for(agent: str | Path | types.ModuleType) -> str:
    """A path, `replay:PATH`, an imported agent module, or a dotted module name as ADK's
    AgentEvaluator takes it (`"my_project.my_agent"`): the folder (or replay file) to load."""
    if isinstance(agent, types.ModuleType):
        file = getattr(agent, "__file__", None)
        if not file:
            raise SetupError(f"module {agent.__name__} has no source file to load the agent from")
        path = Path(file)
        # `my_agent.agent` names the module inside the folder; `my_agent` names the package itself.
        return str(path.parent)
    text = str(agent)
    ref = agent_ref_of(text)
    if ref is not None:
        return ref
    if not Path(text).exists() and text.replace(".", "").replace("_", "").isalnum():
        name = text.removesuffix(".agent")
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError) as exc:
            raise SetupError(f"{text}: not an agent folder, and the module cannot be found: {exc}") from None
        if spec is not None and spec.submodule_search_locations:
            return str(Path(next(iter(spec.submodule_search_locations))))
    raise SetupError(f"agent folder not found: {text}")


def prepare_run(
    agent_ref: str | None,
    targets: Sequence[str],
    *,
    config_path: str | Path | None = None,
    config: EvalConfig | None = None,
    num_runs: int = 1,
    options: RunOptions | None = None,
) -> PreparedRun:
    """Resolve the agent (or find it around the first eval file), plan the run and make the agent's
    executor (a replay file is read now; an agent folder is imported by `start_agent`, in a worker).
    Raises SetupError with every problem on its own line."""
    from .agents import AgentError
    from .executors import executor_for
    from .engine.options import RunOptions
    from .engine.plan import PlanError, plan_run
    from .schema.errors import LoadError

    agent_ref = resolve_agent(agent_ref, targets)
    if config_path:
        from .schema.load import file_problem

        problem = file_problem(config_path, "config file")
        if problem is not None:
            raise SetupError(problem)
    agent_dir = None if agent_ref.startswith("replay:") else Path(agent_ref)
    try:
        plan = plan_run(list(targets), config_path=config_path, config=config, num_runs=num_runs,
                        agent_dir=agent_dir)
    except PlanError as exc:
        raise SetupError(str(exc)) from None
    try:
        agent = executor_for(agent_ref, (options or RunOptions()).executor_options())
    except (AgentError, LoadError) as exc:
        raise SetupError(str(exc)) from None
    return PreparedRun(plan, agent, agent_ref)


async def start_agent(prepared: PreparedRun) -> None:
    """Load the prepared run's agent yourself, for a Run that does not own it (`engine.setup.start_executor`)."""
    await start_executor(prepared.agent)


def _config_arg(config: str | Path | EvalConfig | None) -> tuple[str | Path | None, EvalConfig | None]:
    if config is None or isinstance(config, str | Path):
        return config, None
    return None, config


def _case_failures(case: CaseResult, strict: bool) -> list[str]:
    """Why one case counts as a failure (empty when it passed)."""
    from .engine.causes import strict_status

    status = strict_status(case.status, case.metrics) if strict else case.status
    if status == EvalStatus.PASSED:
        return []
    lines = [f"agent error: {case.error}"] if case.error else []
    lines += [
        metric_line(m)
        for m in case.metrics
        if m.status == EvalStatus.FAILED or (m.status == EvalStatus.NOT_EVALUATED and not case.error)
    ]
    return lines or [f"status {case.status.name}"]


def failures_of(record: RunRecord, *, strict: bool | None = None) -> list[str]:
    """One block per case that did not pass: `eval_set / eval_id (file): STATUS` and its failing
    metrics. A strict run (`strict=True`, `--strict`) recorded a case with a metric not evaluated as
    failed (ADK's rule); `strict` defaults to the run's own, `strict=True` judges a lenient run strictly."""
    strict = record.strict if strict is None else strict
    blocks: list[str] = []
    for result in record.results:
        for case in result.case_results:
            lines = _case_failures(case, strict)
            if lines:
                head = f"{result.eval_set_id} / {case.eval_id} ({result.eval_set_file}): {case.status.name}"
                blocks.append("\n".join([head, *(f"  {line}" for line in lines)]))
    if record.cancelled:
        blocks.append("the run was cancelled: unfinished cases were not evaluated")
    return blocks


def check_mock_tools(value: str | None) -> str | None:
    """A `mock_tools` argument checked now (a SetupError names the choices), not in every session."""
    from .agents.mocks import parse_mock_mode

    try:
        return parse_mock_mode(value)
    except ValueError as exc:
        raise SetupError(f"mock_tools={value!r}: strict or fallback") from exc


def outcome(record: RunRecord, *, strict: bool | None = None, baseline: BaselineReport | None = None,
            fail_on_regression: bool = False) -> Outcome:
    """The run's verdict as `tui-eval run` gives it: `.code` is its exit code (0 passed, 1 failed, 3
    incomplete: a metric or case not evaluated, or a cancel; a strict run makes 3 into 1), `.text()` says
    why. `strict` defaults to the run's own (`record.strict`); `strict=True` judges a lenient run strictly."""
    from .engine.gate import run_outcome

    return run_outcome(record.results, cancelled=record.cancelled,
                       strict=record.strict if strict is None else strict, baseline=baseline,
                       fail_on_regression=fail_on_regression, num_runs=record.num_runs)


def check_record(record: RunRecord) -> None:
    """Raise an AssertionError naming every failing case and metric, as ADK's AgentEvaluator does."""
    blocks = failures_of(record)
    if blocks:
        raise AssertionError("Following are all the test failures.\n" + "\n".join(blocks))


async def execute(prepared: PreparedRun, options: RunOptions | None = None) -> RunRecord:
    """Run a prepared run to the end on the current loop. The run owns the prepared agent: it opens it
    (SetupError when it cannot be loaded) and closes it (its worker processes) on this loop, whatever happens."""
    from .engine.runner import Run, RunOptions
    from .engine.store import ResultStore

    options = options or RunOptions(save=False)
    logger.info("evaluating %d case(s) with %s", prepared.plan.total_cases, prepared.agent_ref)
    run = Run(prepared.plan, prepared.agent, options=options, store=ResultStore() if options.save else None,
              owns_agent=True)
    return await run.execute()


def run_sync(coro: Coroutine[object, object, T]) -> T:
    """Run a coroutine to the end from sync code, even when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from a running loop (an async test): that loop cannot be re-entered, so the run gets its
    # own loop in a worker thread while this call blocks.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tui-eval") as pool:
        return pool.submit(asyncio.run, coro).result()


async def aevaluate(
    agent_module_or_path: str | Path | types.ModuleType,
    eval_path_or_dir: str | Path | Sequence[str | Path],
    config: str | Path | EvalConfig | None = None,
    num_runs: int = 1,
    *,
    raise_on_failure: bool = True,
    strict: bool = False,
    save: bool = False,
    concurrency: int = 8,
    turn_timeout: float = 120.0,
    executor: str = "local",
    workers: int | None = None,
    agent_memory_limit: int | None = None,
    mock_tools: str | None = None,
) -> RunRecord:
    """`evaluate` on the caller's event loop (for `async def` code). Same arguments and result."""
    from .engine.runner import RunOptions

    if isinstance(eval_path_or_dir, str | Path):
        targets = [str(eval_path_or_dir)]
    else:
        targets = [str(t) for t in eval_path_or_dir]
    config_path, config_obj = _config_arg(config)
    options = RunOptions(concurrency=concurrency, turn_timeout=turn_timeout, save=save, strict=strict,
                         executor=executor, workers=workers, agent_memory_limit=agent_memory_limit,
                         mock_tools=check_mock_tools(mock_tools))
    prepared = prepare_run(agent_ref_for(agent_module_or_path), targets, config_path=config_path,
                           config=config_obj, num_runs=num_runs, options=options)
    record = await execute(prepared, options)
    if raise_on_failure:
        check_record(record)
    return record


def _blocking(coroutine_function: Callable[P, Coroutine[object, object, T]], name: str,
              doc: str) -> Callable[P, T]:
    """The synchronous twin of a coroutine function: the same parameters (one signature, written once),
    run to the end with `run_sync`."""

    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(coroutine_function(*args, **kwargs))

    functools.update_wrapper(call, coroutine_function)  # help() and inspect show aevaluate's parameters
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


evaluate = _blocking(aevaluate, "evaluate", """Run the eval cases of `eval_path_or_dir` (an eval file, `FILE:id1,id2`, a folder of eval
files, an eval set id of the agent, or a list of those) with the agent, and return the RunRecord
(`record.results`: one EvalSetResult per eval set and run).

`agent_module_or_path`: an agent folder, its `__init__.py`/`agent.py`, `replay:PATH`, an imported
agent module or a dotted module name. `config`: an EvalConfig or the path of one (default: each
eval file's test_config.json). Raises AssertionError naming every case that did not pass unless
`raise_on_failure=False`; with `strict=True` a metric that was not evaluated fails its case, as in
ADK's AgentEvaluator. Raises SetupError (a ValueError) for bad arguments or unreadable files.
History is written to `<agent>/.adk/eval_history` only with `save=True`. The agent runs in worker
processes (`workers`, `agent_memory_limit` in bytes), or on Ray with `executor="ray"` or
`"ray://HOST:PORT"`. `mock_tools="strict"` (or "fallback") answers every tool call from the case's
recorded tool_responses instead of running the tool (see `--mock-tools`).
""")
