"""The version of an agent's code: one content hash of what its process loads from outside the standard
library and site-packages.

That is every file of the agent's folder (modules it imports, `.env`, `root_agent.yaml`, data it reads),
except eval sets, criteria and caches, plus any module it imported from outside the folder that is
neither the standard library nor an installed package (a sibling package of the repository). The worker
that loads an agent computes it there (`loaded_version`); the engine computes it for what is on disk now
(`agent_version` with the outside files the worker named): two equal strings mean the same code.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

# Folders that hold caches, sessions or environments rather than the agent's source.
EXCLUDED_DIRS = frozenset({"__pycache__", ".adk", ".venv", "venv", ".git", ".mypy_cache", ".pytest_cache",
                           "node_modules"})
# Eval sets and criteria beside the agent are the case's and the criteria's versions, not the agent's.
_CONFIG_NAME = "test_config.json"
_EVAL_SUFFIXES = (".evalset.json", ".test.json")
# Files larger than this (data, not code) are known by size and modification time rather than read whole.
HASH_CAP_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 16
#: The length of a version string (hex digits of a sha256).
VERSION_DIGITS = 16


def sha256_file(path: Path) -> str | None:
    """sha256 of a regular file's bytes; None when it cannot be read or is not a regular file (a FIFO
    would block for ever, /dev/zero never ends). A file over HASH_CAP_BYTES is known by its size and
    modification time instead, so no file makes a run wait on hashing."""
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > HASH_CAP_BYTES:
            return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
        left = HASH_CAP_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


def is_eval_or_config(name: str) -> bool:
    """An eval set or criteria file (its edits are the case's or the criteria's, not the agent's)."""
    return name == _CONFIG_NAME or name.endswith(_EVAL_SUFFIXES)


def folder_files(folder: Path) -> list[str]:
    """Every file of an agent folder the agent's code may load, as sorted relative posix paths: all but
    eval sets, criteria and the cache/environment folders (hidden files like `.env` are included)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        base = Path(dirpath).relative_to(folder)
        out.extend((base / name).as_posix() for name in filenames if not is_eval_or_config(name))
    return sorted(out)


def agent_version(folder: Path, outside: Iterable[str] = ()) -> str:
    """The version of the agent in `folder` as it is on disk now: a hash over its files (`folder_files`)
    and the `outside` files (absolute paths of modules it imported from elsewhere, as `loaded_version`
    names them). A file that cannot be read counts as absent."""
    h = hashlib.sha256()
    for rel in folder_files(folder):
        digest = sha256_file(folder / rel)
        if digest is not None:
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + digest.encode() + b"\n")
    for path in sorted(set(outside)):
        digest = sha256_file(Path(path))
        h.update(b"/" + path.encode("utf-8", "surrogateescape") + b"\0" + (digest or "-").encode() + b"\n")
    return h.hexdigest()[:VERSION_DIGITS]


def _library_roots() -> tuple[str, ...]:
    """Where the standard library and installed packages live (their modules are not the agent's code)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(sysconfig.get_path(name))
        except KeyError:
            continue
    roots.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def outside_modules(folder: Path) -> tuple[str, ...]:
    """Files of modules loaded in this process from outside `folder`, the standard library, installed
    packages and tui-eval itself: the rest of the agent's code (call it in the worker, after the load)."""
    libraries = _library_roots()
    ours = os.path.join(os.path.realpath(Path(__file__).parent.parent), "")
    inside = os.path.join(os.path.realpath(folder), "")
    found: set[str] = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        real = os.path.realpath(file)
        if real.startswith(inside) or real.startswith(ours) or real.startswith(libraries):
            continue
        found.add(real)
    return tuple(sorted(found))


def loaded_version(folder: Path) -> tuple[str, tuple[str, ...]]:
    """In the process that has just loaded the agent of `folder`: (its version, the outside files that
    version covers). The worker sends both with every case it runs (`Inference.agent_version`,
    `Inference.agent_outside`)."""
    outside = outside_modules(folder)
    return agent_version(folder, outside), outside
