"""Where agent code runs: the wire, the child-process plumbing, the case runtime a pool worker and a Ray task
share, the local pool and Ray. `executor_for` picks one for an agent reference."""

from .base import BrokenAgentExecutor, Executor, ExecutorOptions, InlineExecutor, OnTurn
from .choose import executor_for

__all__ = ["BrokenAgentExecutor", "Executor", "ExecutorOptions", "InlineExecutor", "OnTurn", "executor_for"]
