"""Load errors that name the file, the JSON path of the fault and, for syntax errors, line and column."""

from __future__ import annotations

from pathlib import Path


class LoadError(Exception):
    """A file that could not be read as what it claims to be.

    A plain exception class, not a slotted frozen dataclass: Python must be able to set
    `__traceback__` on it (contextlib and asyncio do), which a frozen slotted class forbids.
    """

    def __init__(
        self,
        path: str,
        message: str,
        json_path: str = "$",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(path, message, json_path, line, column)
        self.path = path
        self.message = message
        self.json_path = json_path
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}:{self.column or 0}"
        if self.json_path and self.json_path != "$":
            where += f" at {self.json_path}"
        return f"{where}: {self.message}"


class SchemaError(Exception):
    """Raised inside the readers; carries the JSON path where the data broke the schema."""

    def __init__(self, json_path: str, message: str) -> None:
        super().__init__(message)
        self.json_path = json_path
        self.message = message

    def at(self, path: str | Path) -> LoadError:
        return LoadError(str(path), self.message, self.json_path)


def syntax_error(path: str | Path, exc: ValueError) -> LoadError:
    """A LoadError for invalid JSON, with line and column when the decoder gives them."""
    msg = getattr(exc, "msg", None) or str(exc)
    line = getattr(exc, "lineno", None)
    col = getattr(exc, "colno", None)
    if "unexpected end" in msg.lower() or "eof" in msg.lower():
        msg += " (the file may be half-saved)"
    return LoadError(str(path), f"invalid JSON: {msg}", "$", line, col)
