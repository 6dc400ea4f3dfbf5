"""The dashboard's background jobs: thread workers started together with what follows their success and
the title their failure is shown under, settled on the UI thread."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from textual.worker import Worker, WorkerState

if TYPE_CHECKING:  # pragma: no cover
    from .app import EvalApp

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Job:
    failure: str
    then: Callable[[], None] | None
    failed: Callable[[BaseException], None] | None


class Jobs:
    """Starts the app's thread workers and settles each one once it ends: success runs its follow-up, an
    error is logged and shown under the job's title (the dashboard goes on), then its own clean-up runs."""

    def __init__(self, app: EvalApp) -> None:
        self.app = app
        self._pending: dict[Worker[Any], _Job] = {}

    def start(self, work: Callable[[], object], *, group: str, name: str, failure: str,
              then: Callable[[], None] | None = None, failed: Callable[[BaseException], None] | None = None,
              exclusive: bool = False) -> Worker[Any]:
        """Run `work` in a thread worker of `group`. Its state changes reach the UI thread only after
        this returns, so the job is known before it can end."""
        worker: Worker[Any] = self.app.run_worker(work, thread=True, group=group, name=name, exclusive=exclusive,
                                                   exit_on_error=False)
        self._pending[worker] = _Job(failure, then, failed)
        return worker

    def settle(self, event: Worker.StateChanged) -> None:
        """The app's worker state handler: finish the job whose worker ended."""
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        job = self._pending.pop(event.worker, None)
        if job is None:
            return
        if event.state == WorkerState.SUCCESS:
            if job.then is not None:
                job.then()
        elif event.state == WorkerState.ERROR:
            error = event.worker.error or RuntimeError("unknown error")
            self.app.report_error(job.failure, error)
            if job.failed is not None:
                job.failed(error)
        else:
            log.debug("job %r cancelled", event.worker.name)
