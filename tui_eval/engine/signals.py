"""How `run` and `watch` are told to stop: Ctrl-C and SIGTERM (gracefully, finished cases kept), and the
reader of their output going away (`tui-eval run ... | head -1`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from typing import Callable, Iterator, TextIO

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


class ReaderMayLeave:
    """Standard output whose reader may stop reading (`tui-eval run ... | head -1`). Once the pipe is
    closed, what is left to print is dropped quietly and `on_left` is called: a run goes on (eval
    history, --json, --junit and --md are still written, and the exit code is the run's own); `watch`,
    which only ends when stopped, stops."""

    def __init__(self, stream: TextIO, on_left: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._on_left = on_left
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._left()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._left()

    def _left(self) -> None:
        self.reader_left = True
        log.debug("standard output was closed by its reader: the rest of the output is dropped")
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a file (a StringIO): nothing is buffered below it
            fd = None
        if fd is not None:
            # What is still buffered would fail again when the stream is flushed on the way out: send it nowhere.
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, fd)
            finally:
                os.close(devnull)
        if self._on_left is not None:
            self._on_left()

    def __getattr__(self, name: str) -> object:  # isatty, encoding, fileno...: the stream's own
        return getattr(self._stream, name)
