"""The judge's on-disk cache: one JSON file per (model, full request, sample index), written atomically."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ..schema.fileio import atomic_write

# Bump when the key material or the entry shape changes, so old entries are simply never hit.
CACHE_VERSION = 1


def cache_key(material: dict[str, Any]) -> str:
    """A stable hash of everything that decides the judge's answer."""
    blob = orjson.dumps(
        {"v": CACHE_VERSION, **material}, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
    )
    return hashlib.sha256(blob).hexdigest()


class JudgeCache:
    """Directory of `<key[:2]>/<key>.json` entries. Unreadable or corrupt entries count as misses."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = orjson.loads(self._path(key).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            return None
        return data

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write via a temp file and os.replace: a run cancelled mid-write never leaves a torn entry."""
        try:
            atomic_write(self._path(key), orjson.dumps(entry, default=str), durable=False)
        except OSError:
            pass  # a read-only or full disk costs a re-ask next time, never the run

    def clear(self) -> int:
        """Delete every entry; returns how many were removed."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for entry in self.root.glob("*/*.json"):
            try:
                entry.unlink()
                removed += 1
            except OSError:
                pass
        return removed
