"""Small helpers for code running inside Textual thread workers."""

from __future__ import annotations


def current_worker_cancelled() -> bool:
    """Whether the thread worker running this code was cancelled (False outside a worker)."""
    from textual.worker import NoActiveWorker, get_current_worker

    try:
        return get_current_worker().is_cancelled
    except NoActiveWorker:
        return False
