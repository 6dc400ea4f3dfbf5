"""Load an agent folder (`agent.py` or a package `__init__.py` exposing `root_agent`) fresh from source.

Every load purges the folder's modules from sys.modules and compiles them from source (never from a
possibly stale .pyc), so a reload right after an edit sees the new code. The folder is imported as a
package named after the folder, as `adk web` does, so `from . import tools` and `from <folder> import x`
both work. What it exposes decides how it runs: a NativeAgent runs natively, a google.adk agent (or App)
with google-adk's Runner, any other tui_eval Agent as it is.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import keyword
import os
import re
import sys
import threading
import traceback
import types
from pathlib import Path
from typing import Any, Sequence

from .base import Agent, AgentError

ADK_EXTRA_HINT = "pip install 'tui-eval[adk]'"
_SKIP = {"__pycache__", ".adk", ".git", ".venv", "venv", "node_modules"}
_lock = threading.RLock()


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source every time: a .pyc written in the same second as an edit (same mtime,
    same size) would otherwise be reused and the edit missed."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def set_data(self, path: str, data: Any, *, _mode: int = 0o666) -> None:
        pass  # write no bytecode into the user's folder


class _AgentFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of loaded agent packages (package name -> folder) before the path finders do."""

    def __init__(self) -> None:
        self.packages: dict[str, Path] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        root = fullname.split(".", 1)[0]
        folder = self.packages.get(root)
        if folder is None:
            return None
        parts = fullname.split(".")[1:]
        base = folder.joinpath(*parts)
        if base.is_dir():
            init = base / "__init__.py"
            if init.is_file():
                return importlib.util.spec_from_file_location(
                    fullname, init, loader=_SourceLoader(fullname, str(init)), submodule_search_locations=[str(base)]
                )
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [str(base)]
            return spec
        file = base.with_suffix(".py")
        if parts and file.is_file():
            return importlib.util.spec_from_file_location(fullname, file, loader=_SourceLoader(fullname, str(file)))
        return None


_finder = _AgentFinder()


def _install_finder() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def _package_name(folder: Path) -> str:
    """The folder's own name when it is a free module name (ADK's convention), else a private one."""
    name = folder.name
    owner = _finder.packages.get(name)
    if owner == folder:
        return name
    if owner is None and name.isidentifier() and not keyword.iskeyword(name) and name not in sys.modules \
            and name not in sys.stdlib_module_names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        locations = [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []
        if spec is None or folder in locations:
            return name
    digest = hashlib.blake2b(str(folder).encode(), digest_size=4).hexdigest()
    safe = re.sub(r"\W", "_", name)
    return f"_tui_eval_agent_{safe}_{digest}"


def _purge(package: str, folder: Path) -> None:
    """Forget every module of this agent: by package name, and any module whose file lives in the folder."""
    prefix = package + "."
    folder_str = str(folder) + os.sep
    for mod_name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if mod_name == package or mod_name.startswith(prefix) or (file and file.startswith(folder_str)):
            del sys.modules[mod_name]


def source_files(folder: Path) -> list[Path]:
    """The Python files of an agent folder (edits to any of them reload the agent)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith("."))
        out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def _load_dotenv(folder: Path) -> None:
    """ADK loads the agent folder's .env (keys people keep beside their agent); variables already set
    in the environment win, as they do for ADK."""
    env = folder / ".env"
    if not env.is_file():
        return
    try:
        lines = env.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key and key not in os.environ:
            os.environ[key] = value


def _where(exc: BaseException, folder: Path) -> str:
    """file:line of the innermost frame in the agent folder (where the user should look)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno or 0}"
    folder_str = str(folder) + os.sep
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(folder_str):
            where = f"{frame.filename}:{frame.lineno}"
    return where


def _import_error(exc: BaseException, folder: Path) -> AgentError:
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[:2] == ["google", "adk"]:
        return AgentError(f"{folder}: this agent needs google-adk, which is not installed: {ADK_EXTRA_HINT}")
    where = _where(exc, folder)
    if isinstance(exc, SyntaxError):
        text = f"SyntaxError: {exc.msg}"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return AgentError(f"{where or folder}: cannot import the agent: {text}")


_ENTRY_NAMES = ("app", "root_agent", "get_agent_async")


def _entry(module: Any) -> tuple[str, Any] | None:
    for name in _ENTRY_NAMES:
        value = getattr(module, name, None)
        if value is not None:
            return name, value
    return None


def _import_folder(folder: Path) -> tuple[str, Any]:
    """Import the folder fresh; returns what it exposes: ("root_agent"|"app"|"get_agent_async", value)."""
    has_agent_py = (folder / "agent.py").is_file()
    if not has_agent_py and not (folder / "__init__.py").is_file():
        raise AgentError(f"{folder}: not an agent folder (no agent.py or __init__.py)")
    with _lock:
        _install_finder()
        package = _package_name(folder)
        old = [k for k, v in _finder.packages.items() if v == folder and k != package]
        for k in old:
            _purge(k, folder)
            del _finder.packages[k]
        _purge(package, folder)
        _finder.packages[package] = folder
        importlib.invalidate_caches()
        _load_dotenv(folder)
        try:
            module = importlib.import_module(package)
            found = _entry(module)
            if found is None and has_agent_py:
                found = _entry(importlib.import_module(package + ".agent"))
        except AgentError:
            raise
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: an agent calling sys.exit() at import is an error
            raise _import_error(exc, folder) from exc
    if found is None:
        raise AgentError(
            f"{folder}: no root_agent found (looked in {folder.name}/agent.py and {folder.name}/__init__.py "
            "for root_agent, app or get_agent_async)"
        )
    return found


def _is_adk(value: Any) -> bool:
    """Whether a value is a google.adk object, without importing google.adk to find out."""
    return any(c.__module__.startswith("google.adk.") for c in type(value).__mro__)


def load_agent_folder(path: str | Path) -> Agent:
    """Load an agent folder fresh. Raises AgentError (with file:line for import errors)."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise AgentError(f"agent folder not found: {path}")
    kind, value = _import_folder(folder)
    sources = source_files(folder)

    from .native import NativeAgent

    if isinstance(value, NativeAgent):
        value.bind_folder(folder, sources)
        return value
    if kind == "get_agent_async" or _is_adk(value):
        try:
            from .adk import AdkAgent
        except ModuleNotFoundError as exc:
            if (exc.name or "").startswith("google"):
                raise AgentError(f"{folder}: this agent needs google-adk, which is not installed: {ADK_EXTRA_HINT}")
            raise
        return AdkAgent.from_entry(kind, value, folder=folder, sources=sources)
    if isinstance(value, Agent):
        if value.home is None:
            value.home = folder
        if getattr(value, "name", "agent") == "agent":
            value.name = folder.name
        return value
    raise AgentError(
        f"{folder}: {kind} is a {type(value).__module__}.{type(value).__qualname__}, "
        "not an agent (expected a google.adk agent or a tui_eval NativeAgent)"
    )
