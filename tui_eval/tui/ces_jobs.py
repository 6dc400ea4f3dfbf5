"""What the dashboard asks of CES, as blocking calls for a thread worker: pull an app into a file, and run
its evaluations, following the run until it ends, then pull the new results. Cancellable from any thread.

Each call opens its own asyncio loop (the dashboard's loop never waits on the network, and the `mcp`
SDK is imported in the worker, not at start-up). Failures come back as one-line `CesError`s.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

# The light module: `tui-eval PATH` calls ces_target_of before the first paint, and the CES models
# (pydantic classes, plus pydantic) load only for CES work.
from ..ces.address import DEFAULT_ENDPOINT, SCHEME, parse_app_url

if TYPE_CHECKING:  # pragma: no cover
    from ..ces.cache import SavedPull
    from ..ces.client import CesClient
    from ..ces.remote import RunOutcome
    from ..schema.ces.model import EvaluationRun

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class CesTarget:
    """A CES app the dashboard shows: where it is, how it is reached, and the file it is pulled into."""

    app: str
    eval_file: Path
    endpoint: str = DEFAULT_ENDPOINT
    #: Seconds between two looks at a run's progress.
    poll_interval: float = 2.0
    #: The app version runs in CES use (`--app-version`); None: CES's choice.
    app_version: str | None = None


class Cancel:
    """Stops work running in another thread's asyncio loop: the task is cancelled at its next await."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[object] | None = None
        self.requested = False

    def cancel(self) -> None:
        with self._lock:
            self.requested = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)

    def _attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[object]) -> bool:
        with self._lock:
            self._loop, self._task = loop, task
            return not self.requested


def _blocking(work: Callable[[], Awaitable[T]], cancel: Cancel | None) -> T:
    """Run a coroutine in a fresh loop in this thread; asyncio.CancelledError when cancelled."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        if cancel is not None and not cancel._attach(asyncio.get_running_loop(), task):
            raise asyncio.CancelledError
        return await work()

    return asyncio.run(main())


def pull_app(target: CesTarget, *, cancel: Cancel | None = None) -> SavedPull:
    """Pull the app's evaluations (with their last ten results) into its file, keeping unpushed edits."""
    from ..ces.cache import save_pull
    from ..ces.client import with_client
    from ..ces.remote import pull

    async def work(client: CesClient) -> SavedPull:
        evaluations = await pull(client, target.app)
        return save_pull(target.eval_file, target.app, evaluations)

    return _blocking(lambda: with_client(target.endpoint, work), cancel)


@dataclass
class RunAndPull:
    outcome: RunOutcome
    saved: SavedPull


def run_and_pull(
    target: CesTarget,
    evaluations: list[str] | None,
    on_progress: Callable[[EvaluationRun], None],
    *,
    cancel: Cancel | None = None,
) -> RunAndPull:
    """run_evaluation, follow the run until it ends (reporting each look), then pull the new results."""
    from ..ces.cache import save_pull
    from ..ces.client import with_client
    from ..ces.remote import pull, run

    async def work(client: CesClient) -> RunAndPull:
        outcome = await run(client, target.app, evaluations, on_progress=on_progress,
                            poll_interval=target.poll_interval, app_version=target.app_version)
        fresh = await pull(client, target.app)
        return RunAndPull(outcome, save_pull(target.eval_file, target.app, fresh))

    return _blocking(lambda: with_client(target.endpoint, work), cancel)


def ces_target_of(paths: list[str], endpoint: str | None,
                  app_version: str | None = None) -> tuple[Path, CesTarget | None]:
    """The dashboard's command line: (the local folder or file, the CES app), from `[PATH] [ces://APP]`.

    With only a ces:// app, the folder is the app's cache folder (created), so the dashboard shows the
    copy pulled last at once and the fresh pull when it arrives. ValueError for a bad combination."""
    apps = [p for p in paths if p.startswith(SCHEME)]
    local = [p for p in paths if not p.startswith(SCHEME)]
    if len(apps) > 1:
        raise ValueError("one ces:// app at a time")
    if len(local) > 1:
        raise ValueError(f"one folder or eval file at a time (got {', '.join(local)})")
    if not apps:
        return Path(local[0] if local else "."), None
    from ..ces.cache import cache_dir_for, eval_file_for

    app = parse_app_url(apps[0])
    directory = cache_dir_for(app)
    if not local:
        directory.mkdir(parents=True, exist_ok=True)
    target = CesTarget(app, eval_file_for(directory, app), endpoint or DEFAULT_ENDPOINT, app_version=app_version)
    return (Path(local[0]) if local else directory), target
