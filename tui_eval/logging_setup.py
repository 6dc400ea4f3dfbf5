"""Logging for the entry points: stdlib logging at a `--log-level`, to stderr (run, watch) or a file (dashboard).

Library modules only call `logging.getLogger(__name__)`; this is the one place that decides where records
go. The dashboard owns the terminal, so it logs to a file: `$TUI_EVAL_LOG_FILE`, else
`$XDG_STATE_HOME/tui-eval/tui-eval.log`, else `~/.local/state/tui-eval/tui-eval.log`.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import TextIO

from .userpaths import user_path

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "WARNING"
LOG_FILE_ENV = "TUI_EVAL_LOG_FILE"

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Control characters other than newline and tab (agent text in an error can carry escape sequences).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: The handler this module installed last (so a second configuration replaces it instead of doubling
#: it) and the root level it replaced.
_installed: logging.Handler | None = None
_previous_level = logging.WARNING


def parse_level(value: str) -> str:
    """A level name in any case ("debug", "INFO"); the upper-case name. ValueError for anything else."""
    name = value.strip().upper()
    if name not in LEVELS:
        raise ValueError(f"unknown log level {value!r} (choose from {', '.join(n.lower() for n in LEVELS)})")
    return name


def default_log_file() -> Path:
    """Where the dashboard logs: $TUI_EVAL_LOG_FILE, else the XDG state folder."""
    return user_path("state", "tui-eval.log", env=LOG_FILE_ENV)


class _EscapingFormatter(logging.Formatter):
    """Writes control characters as escapes, so a logged message can never drive the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", super().format(record))


class _LazyFileHandler(logging.FileHandler):
    """A file handler that creates its folder and file only when the first record arrives."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=True)

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:  # FileHandler opens the file on first emit
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        super().emit(record)


def configure_logging(level: str = DEFAULT_LEVEL, file: Path | None = None, *,
                      stream: TextIO | None = None) -> logging.Handler:
    """Send log records at `level` and above to `file` (created on first use) or to `stream`
    (default stderr). Calling it again replaces what the previous call installed."""
    global _installed, _previous_level
    reset_logging()
    handler: logging.Handler
    if file is not None:
        handler = _LazyFileHandler(Path(file))
    else:
        handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_EscapingFormatter(_FORMAT))
    root = logging.getLogger()
    _previous_level = root.level
    root.addHandler(handler)
    root.setLevel(parse_level(level))
    _installed = handler
    return handler


def reset_logging() -> None:
    """Remove (and close) the handler `configure_logging` installed, if any, and restore the root level."""
    global _installed
    if _installed is not None:
        root = logging.getLogger()
        root.removeHandler(_installed)
        root.setLevel(_previous_level)
        _installed.close()
        _installed = None
