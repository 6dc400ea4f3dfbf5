"""Small helpers for Textual workers: inside a thread worker, and on a screen showing a worker's outcome."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from textual.worker import WorkerState

if TYPE_CHECKING:  # pragma: no cover
    from textual.widgets import Static
    from textual.worker import Worker

log = logging.getLogger(__name__)


def current_worker_cancelled() -> bool:
    """Whether the thread worker running this code was cancelled (False outside a worker)."""
    from textual.worker import NoActiveWorker, get_current_worker

    try:
        return get_current_worker().is_cancelled
    except NoActiveWorker:
        return False


def worker_succeeded(event: Worker.StateChanged, group: str, shown: Static, failure: str) -> bool:
    """Whether `event` says the worker of `group` finished with its result. A failure is logged and
    shown in `shown` as `failure: why` (the error's text literally)."""
    from .text import plain

    if event.worker.group != group:
        return False
    if event.state == WorkerState.ERROR:
        log.error("%s", failure, exc_info=event.worker.error)
        shown.update(plain(f"{failure}: {event.worker.error}", "$text-error"))
        return False
    return event.state == WorkerState.SUCCESS
