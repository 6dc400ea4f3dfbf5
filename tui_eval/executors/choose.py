"""Which executor runs an agent reference: `replay:PATH` in this process, an agent folder in the local pool
or on Ray."""

from __future__ import annotations

from pathlib import Path

from .base import Executor, ExecutorOptions, InlineExecutor


def executor_for(ref: str, options: ExecutorOptions, *, live: bool = False) -> Executor:
    """The executor for an agent reference: `replay:PATH` here, an agent folder in worker processes
    (the local pool, or Ray with `options.kind`). Raises AgentError/LoadError for a bad replay file;
    an agent folder's import errors come from `start()`."""
    if ref.startswith("replay:"):
        from ..agents import load_agent

        return InlineExecutor(load_agent(ref))
    from ..agents.base import AgentError

    folder = Path(ref)
    if not folder.is_dir():
        raise AgentError(f"agent folder not found: {ref}")
    kind = options.kind
    if kind == "local":
        from .pool import ProcessPool

        return ProcessPool(str(folder.resolve()), size=options.workers, memory_limit=options.memory_limit,
                           keep_spare=live, concurrency=options.concurrency,
                           retry_after_crash=options.retry_after_crash)
    if kind == "ray" or kind.startswith("ray://"):
        from .ray import RayExecutor

        return RayExecutor(str(folder.resolve()), address=None if kind == "ray" else kind)
    raise AgentError(f"unknown executor {kind!r} (local, ray or ray://HOST:PORT)")
