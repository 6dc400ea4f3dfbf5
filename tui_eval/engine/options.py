"""How a run runs (concurrency, timeouts, saving): apart from the runner, so start-up can build one cheaply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..executors.base import ExecutorOptions


@dataclass(slots=True)
class RunOptions:
    concurrency: int = 8
    # Seconds one agent turn may take before the case fails with a timeout.
    turn_timeout: float = 120.0
    # The most judge calls in flight (None: the judge service's default, JudgeOptions.concurrency).
    judge_concurrency: int | None = None
    judge_base_url: str | None = None
    judge_cache: bool = True
    save: bool = True
    # Seconds one judge call may take (None: the judge service's default).
    judge_timeout: float | None = None
    # A case with any metric not evaluated fails (ADK's rule, the default, lets it pass).
    strict: bool = False
    # Record the agent's code state (git commit, dirty diff, file hashes) at run start.
    code_state: bool = True
    # Where agent folders run: "local" (a pool of worker processes), "ray" or "ray://HOST:PORT".
    executor: str = "local"
    # Worker processes of the local pool (None: one per core, at most 4).
    workers: int | None = None
    # Bytes of address space each worker process may use (None: no limit): a runaway fails its case.
    agent_memory_limit: int | None = None
    # --mock-tools: None (tools run), "strict" or "fallback".
    mock_tools: str | None = None
    # A case whose worker died runs again alone (False, --no-retry-after-crash: it fails as its worker died).
    retry_after_crash: bool = True

    def executor_options(self) -> ExecutorOptions:
        return ExecutorOptions(self.executor, self.workers, self.agent_memory_limit, self.concurrency,
                               self.retry_after_crash)


def run_options_from_flags(args: Any) -> RunOptions:
    """The run options the `run` and `watch` flags ask for (one reading for both faces); `args` is
    their argparse namespace."""
    return RunOptions(
        concurrency=args.concurrency,
        turn_timeout=args.turn_timeout,
        judge_concurrency=args.judge_concurrency,
        judge_cache=not args.no_judge_cache,
        save=not getattr(args, "no_save", False),
        judge_timeout=args.judge_timeout,
        strict=args.strict,
        executor=args.executor,
        workers=args.workers,
        agent_memory_limit=args.agent_memory_limit,
        mock_tools=args.mock_tools,
        retry_after_crash=args.retry_after_crash,
    )
