"""Atomic file writes shared by the result store, the judge cache and eval-file edits."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file and a
    cancelled or crashed writer leaves the old version. `data` may be an iterable of chunks, so a
    large file never has to exist whole in memory. `durable` fsyncs before the rename (results and
    user files); a cache entry can skip it, since losing one only costs a re-ask."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 less umask).
        os.fchmod(fd, 0o666 & ~_UMASK)
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
        except OSError:
            pass
        raise
