"""Ctrl-C and SIGTERM stop a command gracefully (finished cases kept): the one helper `run` and `watch` use."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Callable, Iterator

log = logging.getLogger(__name__)

#: Ctrl-C, and SIGTERM (a CI job's timeout, `kill`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """While inside, the stop signals call `stop` on the running loop instead of raising
    KeyboardInterrupt or ending the process. Where handlers cannot be installed (not the main thread,
    Windows) the default behaviour stays, and a debug line says so."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError, ValueError) as exc:
            log.debug("%s cannot stop gracefully here: %s", sig.name, exc)
        else:
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError) as exc:  # the loop is closing
                log.debug("no %s handler to remove: %s", sig.name, exc)
