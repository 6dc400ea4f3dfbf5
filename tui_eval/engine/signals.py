"""How `run` and `watch` are told to stop: Ctrl-C and SIGTERM (gracefully, finished cases kept), and the
reader of their output going away (`tui-eval run ... | head -1`).

A stop signal sent from inside an agent process (a tool that signals its parent, or the engine) is not the
user's: it is ignored, with a warning naming the worker and its cases. To know who sent a signal, the entry
point holds the stop signals (`hold_stop_signals`, before any thread starts, so every thread inherits the
block); `stop_on_signals` then takes each one with `signal.sigtimedwait`, which gives the sender's pid, and
traces that pid's ancestors to the agent processes the executors registered (`executors.child`). Where the
signals are not held (a library caller's threads, not Linux), the loop's own handlers stop the run on any.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from typing import Callable, Iterator, TextIO

log = logging.getLogger(__name__)

#: Ctrl-C, and SIGTERM (a CI job's timeout, `kill`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Seconds the signal reader waits at a time: how long the end of a run may wait for it to notice (a wake-up
#: costs a syscall and the GIL once).
_POLL = 0.05


def hold_stop_signals() -> Callable[[], None]:
    """For entry points, before any thread starts: block the stop signals in this thread (every thread started
    later inherits it), so they wait for `stop_on_signals`'s reader. Returns what lets them through again.
    Where no reader can take them (no `sigtimedwait`: macOS, Windows) nothing is held."""
    if not hasattr(signal, "sigtimedwait"):
        return lambda: None
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    except (AttributeError, OSError, ValueError) as exc:  # not POSIX
        log.debug("stop signals cannot be held here: %s", exc)
        return lambda: None

    def release() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)

    return release


def _held() -> bool:
    if not hasattr(signal, "sigtimedwait"):
        return False
    try:
        return set(STOP_SIGNALS) <= signal.pthread_sigmask(signal.SIG_BLOCK, ())
    except (AttributeError, OSError, ValueError):
        return False




@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """While inside, the stop signals call `stop` on the running loop instead of raising
    KeyboardInterrupt or ending the process, unless an agent process sent them (ignored, with a warning).
    Where handlers cannot be installed (not the main thread, Windows) the default behaviour stays, and a
    debug line says so."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError, ValueError) as exc:
            log.debug("%s cannot stop gracefully here: %s", sig.name, exc)
        else:
            installed.append(sig)
    done = threading.Event()
    reader = None
    if _held():
        reader = threading.Thread(target=_read_signals, args=(loop, stop, done), name="tui-eval signals",
                                  daemon=True)
        reader.start()
    try:
        yield
    finally:
        done.set()
        if reader is not None:
            reader.join()
        for sig in installed:
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError) as exc:  # the loop is closing
                log.debug("no %s handler to remove: %s", sig.name, exc)


def _read_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], None], done: threading.Event) -> None:
    """The signal reader's thread: each held stop signal, with its sender, handed to the loop."""
    from ..executors.procs import ancestry

    while not done.is_set():
        info = signal.sigtimedwait(STOP_SIGNALS, _POLL)
        if info is None:
            continue
        # Its ancestors are read here, at once, while the sender most likely still exists (the kernel for
        # Ctrl-C is pid 0); whether one is an agent process is the loop's to say (it owns the registry).
        chain = ancestry(info.si_pid) if info.si_pid > 0 else []
        try:
            loop.call_soon_threadsafe(_received, stop, info.si_signo, info.si_pid, chain)
        except RuntimeError:  # the loop has closed: the run is over anyway
            return


def _received(stop: Callable[[], None], signo: int, pid: int, chain: list[int]) -> None:
    """A stop signal from `pid` (`chain`: it and its ancestors): a stop, unless an agent process sent it."""
    from ..executors.child import agent_process_among

    culprit = agent_process_among(chain)
    if culprit is None:
        stop()
        return
    log.warning("ignored %s sent by pid %d, a process of the agent's in %s: agent code cannot stop the run",
                signal.Signals(signo).name, pid, culprit)


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
