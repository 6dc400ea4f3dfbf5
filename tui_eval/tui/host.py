"""A long-lived asyncio loop in a daemon thread, where the engine (LiveSession, Runs, the watcher) lives.

The engine is asyncio and partly CPU-bound (scoring); in its own thread it never blocks the UI, and the
UI reaches it only through thread-safe calls (`submit`, `call`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


class EngineHost:
    """Owns one event loop running in a daemon thread until `stop()`."""

    def __init__(self, name: str = "tui-eval-engine") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self.loop)
                for task in pending:
                    task.cancel()
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def start(self) -> EngineHost:
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._started and self._thread.is_alive() and not self.loop.is_closed()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run a coroutine in the engine loop; the returned future may be waited on from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call a plain function in the engine loop's thread (soon, without waiting)."""
        if self.running:
            self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, before: Coroutine[Any, Any, Any] | None = None, timeout: float = 2.0) -> None:
        """Run `before` (a clean-up coroutine) if given, then stop the loop and join the thread briefly."""
        if not self.running:
            if before is not None:
                before.close()
            return
        if before is not None:
            try:
                self.submit(before).result(timeout)
            except Exception:  # shutting down: a failed clean-up must not block exit
                log.exception("engine clean-up failed while shutting down")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
