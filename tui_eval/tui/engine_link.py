"""The dashboard's side of its engine process (`tui_eval.engine.service`): start it, send it commands,
and put what it sends into the read model's inbound queue.

The two talk over a socket pair of their own (never stdout: the terminal belongs to the dashboard).
A full result stays in the engine until a screen shows it: `request` asks for it and returns; the answer
(sent from the engine's command thread, also while a run scores flat out) arrives among the other records,
so nothing the dashboard draws ever waits for the engine.
The engine runs in a new session, so the terminal's signals never reach it; it ends when the socket
closes, which the kernel does for the dashboard however it ends (even SIGKILL).
"""

from __future__ import annotations

import itertools
import logging
import pickle
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable

from ..engine.feed import Cancel, Chat, Close, EngineConfig, EngineGone, Fetch, Reload, RunCases, SetModes, Skip

if TYPE_CHECKING:  # pragma: no cover
    from multiprocessing.connection import Connection

    from ..engine.events import CaseKey
    from ..engine.feed import Command, Wanted

log = logging.getLogger(__name__)

#: Seconds quitting waits for the engine to save what finished and exit, before it is killed.
CLOSE_WAIT = 10.0


class EngineLink:
    """One engine process. `put(records)` is called on the link's reader thread with each batch."""

    def __init__(self, config: EngineConfig, put: Callable[[list[Any]], None]) -> None:
        self.config = config
        self._put = put
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self._closing = False
        self._reader: threading.Thread | None = None
        self._gone = False
        self._tickets = itertools.count(1)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        from multiprocessing.connection import Connection

        mine, theirs = socket.socketpair()
        stderr = _log_stream()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tui_eval.engine.service", "--fd", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr, start_new_session=True, close_fds=True)
        finally:
            theirs.close()
            if stderr is not None:
                stderr.close()
        self._conn = Connection(mine.detach())
        self.send(self.config)
        self._reader = threading.Thread(target=self._read, name="engine-link", daemon=True)
        self._reader.start()

    def send(self, command: Command | EngineConfig) -> bool:
        """Send a command; False if the engine is gone."""
        conn = self._conn
        if conn is None:
            return False
        data = pickle.dumps(command, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self._lock:
                conn.send_bytes(data)
        except OSError as exc:
            log.warning("could not reach the engine: %s", exc)
            return False
        return True

    # ---- the commands ----------------------------------------------------------------------------

    def run_cases(self, ticket: int, keys: list[CaseKey], label: str) -> bool:
        """Run these cases (the engine answers with RunEnded(ticket)); False if the engine is gone."""
        return self.send(RunCases(ticket, tuple(keys), label))

    def cancel(self) -> bool:
        """Stop the runs in progress (their finished cases are kept and saved)."""
        return self.send(Cancel())

    def chat(self, ticket: int, agent_ref: str, messages: tuple[str, ...], app_name: str) -> bool:
        return self.send(Chat(ticket, agent_ref, messages, app_name))

    def skip(self, key: CaseKey) -> bool:
        return self.send(Skip(key))

    def set_modes(self, live: bool, agent_reruns: bool) -> bool:
        return self.send(SetModes(live, agent_reruns))

    def reload(self, path: Path) -> bool:
        """Re-read a file the dashboard rewrote (the engine's watcher would see it too, when it runs)."""
        return self.send(Reload(str(path)))

    def request(self, wanted: list[Wanted]) -> bool:
        """Ask for the full results of finished cases; they arrive later, as a `Fetched` record among the
        others. False if the engine is gone. Never waits."""
        if not wanted or self._gone:
            return False
        return self.send(Fetch(next(self._tickets), tuple(wanted)))

    def _read(self) -> None:
        conn = self._conn
        assert conn is not None
        while True:
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):
                break
            self._put(pickle.loads(data))
        self._gone = True
        if not self._closing:
            code = self.process.wait() if self.process is not None else None
            self._put([EngineGone(_exit_text(code))])

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Ask the engine to stop (its finished cases are saved) and wait for it; kill it after `wait`."""
        if self._closing:
            return
        self._closing = True
        self.send(Close())
        process = self.process
        if process is not None:
            try:
                process.wait(wait)
            except subprocess.TimeoutExpired:
                log.error("the engine did not exit within %.0f s: killing it", wait)
                process.kill()
                process.wait()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _exit_text(code: int | None) -> str:
    if code is None:
        return "the engine process is gone"
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the engine process was killed by {name}"
    return f"the engine process exited with code {code} (see the log file)"


def _log_stream() -> IO[bytes] | None:
    """Where the engine's stderr goes: the dashboard's log file (a crash's traceback ends up there)."""
    from ..logging_setup import default_log_file

    path = default_log_file()
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return open(path, "ab")  # noqa: SIM115 - handed to the child, closed here once it has it
    except OSError as exc:
        log.warning("engine output not logged (%s): %s", path, exc)
        return None

