"""Atomic file writes shared by the result store, the judge cache and eval-file edits."""

from __future__ import annotations

import logging
import os
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterable

log = logging.getLogger(__name__)

_umask_lock = threading.Lock()
_umask: int | None = None


def current_umask() -> int:
    """The process umask, read once (on first need, never at import) and remembered.

    Linux reports it in /proc/self/status, which reads it without changing it. Elsewhere the only
    way to read a umask is to set one and put the old one back; that happens once, under a lock,
    and a file another thread creates in that instant would get 0o022, which is the common umask.
    """
    global _umask
    with _umask_lock:
        if _umask is None:
            _umask = _read_umask()
        return _umask


def _read_umask() -> int:
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        log.debug("no umask in /proc/self/status; reading it with os.umask")
    old = os.umask(0o022)
    os.umask(old)
    return old


def default_mode(path: Path) -> int:
    """The mode a write to `path` should leave: the file's own when it exists (an edit or an overwrite
    never changes permissions), else what a plain open() gives a new file (0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def atomic_write(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True, mode: int | None = None) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file and a
    cancelled or crashed writer leaves the old version. `data` may be an iterable of chunks, so a
    large file never has to exist whole in memory. `durable` fsyncs before the rename (results and
    user files); a cache entry can skip it, since losing one only costs a re-ask. `mode` defaults
    to `default_mode(path)`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    file_mode = default_mode(path) if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600, whatever the file should be.
        os.fchmod(fd, file_mode)
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError as exc:  # the original error matters more; this one is only worth a note
            log.debug("could not remove temp file %s: %s", tmp, exc)
        raise


def write_output(path: Path, data: bytes | Iterable[bytes], *, append: bool = False) -> None:
    """Write a file the user named as an output (--json, --junit, --md, --html). A regular file is
    written atomically (`atomic_write`). Anything else is written through, never replaced: a character
    device or a pipe (`/dev/stdout`, a FIFO, `>(cmd)`) gets the bytes, and a symlink keeps pointing
    where it did (`--json /dev/stdout` as root once replaced the /dev/stdout link with a file). With
    `append` the bytes go at the end (a CI step summary collects several steps' reports)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if not append and st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a folder, not a file", str(path))
    if append or (st is not None and not stat.S_ISREG(st.st_mode)):
        # `/dev/stdout` is our own output: what was printed before must come out before this.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):  # closed or replaced streams
                pass
        chunks = [data] if isinstance(data, bytes) else data
        with open(path, "ab" if append else "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
        return
    atomic_write(path, data)
