"""Remove the temp files a killed atomic write left behind, so they never pile up in a folder.

`atomic_write` writes `.<name>.<8 random chars>.tmp` beside the file and renames it over the file; a
process killed mid-write (SIGKILL, power loss) leaves the temp file. The next run removes those that are
older than `STALE_AFTER` seconds: a younger one may belong to another tui-eval writing right now (the
dashboard and a CI run on the same agent folder), and a results write takes well under a second.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Iterable

logger = logging.getLogger(__name__)

STALE_AFTER = 10.0
# mkstemp's random part: 8 characters of [a-z0-9_].
_ANY_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def remove_stale_temp_files(
    directory: Path, *, name: str | None = None, older_than: float = STALE_AFTER, now: float | None = None
) -> list[Path]:
    """Remove the atomic-write temp files in `directory` (only those of the file `name`, when given)
    whose last change is more than `older_than` seconds ago. Returns what was removed."""
    pattern = re.compile(r"\." + re.escape(name) + r"\.[a-z0-9_]{8}\.tmp") if name else _ANY_TEMP
    limit = (time.time() if now is None else now) - older_than
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    except OSError as exc:
        logger.warning("cannot list %s for leftover temp files: %s", directory, exc)
        return removed
    for entry in entries:
        if not entry.name.startswith(".") or not entry.name.endswith(".tmp") or not pattern.fullmatch(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_mtime > limit:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # another run removed it first
        except OSError as exc:
            logger.warning("cannot remove leftover temp file %s: %s", entry.path, exc)
            continue
        logger.info("removed leftover temp file %s", entry.path)
        removed.append(Path(entry.path))
    return removed


def remove_stale_temp_files_for(paths: Iterable[Path]) -> list[Path]:
    """Leftover temp files of these output files (each file's own temp files only)."""
    removed: list[Path] = []
    for path in paths:
        removed.extend(remove_stale_temp_files(path.parent, name=path.name))
    return removed
