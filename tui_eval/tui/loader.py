"""The dashboard's own copy of the folder's files, read off the UI thread.

A `FolderLoader` owns a private Workspace that only its callers' threads (the start-up loader, reload
workers) touch, one at a time. Each file it reads becomes a `FileLoaded` record in the dashboard's one
inbound queue, carrying a copy of the file's state and its case index; the read model folds it into
the Workspace the widgets read, on the UI thread. Saved results become `ResultLoaded` records the same
way. The engine (another process) reads the same files for itself.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..engine.saved import history_dir_for

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.feed import CaseSummary
    from ..engine.workspace import ConfigState, EvalFileState, Workspace
    from ..schema.model import EvalCase
    from ..schema.results import CaseResult

log = logging.getLogger(__name__)

__all__ = ["FileLoaded", "FolderLoader", "FolderOpened", "LoadDone", "Notice", "ResultLoaded", "history_dir_for",
           "load_workspace", "saved_origin"]


@dataclass(frozen=True, slots=True)
class FileLoaded:
    """A file as just read: `state` a copy of its EvalFileState or ConfigState (None: it is gone).
    `index` maps eval ids to the eval set's cases (built here, not on the UI thread)."""

    path: Path
    kind: str  # "eval" | "config"
    state: EvalFileState | ConfigState | None
    agent_dirs: frozenset[Path]
    index: dict[str, EvalCase] | None = None


@dataclass(frozen=True, slots=True)
class ResultLoaded:
    """A case's latest saved result, with its summary (computed here, not on the UI thread)."""

    key: CaseKey
    summary: CaseSummary
    result: CaseResult
    origin: str
    saved_at: float


@dataclass(frozen=True, slots=True)
class FolderOpened:
    """The empty Workspace the UI thread folds FileLoaded records into (made off the UI thread: its
    modules are imported after the first frame); the loader never touches it."""

    workspace: Workspace


@dataclass(frozen=True, slots=True)
class LoadDone:
    """The start-up scan (files and saved results) is over."""


@dataclass(frozen=True, slots=True)
class Notice:
    """A line for the user (a notification)."""

    text: str
    severity: str = "information"


def load_workspace(workspace: Workspace, cancelled: Callable[[], bool] = lambda: False) -> None:
    """Discover and load every file below the root: configs first, so eval files can see theirs."""
    for path in workspace.load_order(workspace.discover()):
        if cancelled():
            return
        workspace.reload(path)


def saved_origin(timestamp: float, *, replay: bool = False) -> str:
    """Where a saved result came from, as the summary shows it beside its age (a replay says so)."""
    return "saved " + time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp)) + (" · replay" if replay else "")


class FolderLoader:
    """Reads the folder for the dashboard; `put` is the inbound queue's producer side."""

    def __init__(self, root: Path, agent_ref: str | None, put: Callable[[Any], None]) -> None:
        if agent_ref is not None and not agent_ref.startswith("replay:"):
            agent_ref = str(Path(agent_ref).resolve())
        self._root = root
        self._agent_ref = agent_ref
        self._workspace: Workspace | None = None
        self._put = put
        self._lock = threading.Lock()

    def _ws(self) -> Workspace:
        """The private Workspace (under the lock); made on first use, with the UI's empty copy."""
        if self._workspace is None:
            from ..engine.workspace import Workspace

            ws = self._workspace = Workspace(self._root, agent_ref=self._agent_ref)
            self._put(FolderOpened(Workspace(ws.root, agent_ref=ws.agent_ref, config_override=ws.config_override)))
        return self._workspace

    def load_all(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Thread: every file below the root (configs first), then each case's latest saved result."""
        from ..engine.feed import summarize
        from ..engine.saved import latest_saved_results

        try:
            with self._lock:
                ws = self._ws()
                for path in ws.load_order(ws.discover()):
                    if cancelled():
                        return
                    self._reload(path)
                snapshot = _snapshot_of(ws)
            problem = lambda text: self._put(Notice(text, "warning"))  # noqa: E731
            for key, result, saved_at, replay in latest_saved_results(snapshot, cancelled, problem):
                self._put(ResultLoaded(key, summarize(result, insight=False), result,
                                       saved_origin(saved_at, replay=replay), saved_at))
        finally:
            self._put(LoadDone())

    def reload(self, path: Path) -> None:
        """Thread: re-read one file (the engine reloaded it, or an edit rewrote it)."""
        with self._lock:
            self._reload(path)

    def _reload(self, path: Path) -> None:
        ws = self._ws()
        change = ws.reload(path)
        if change.kind == "eval":
            state: Any = ws.eval_files.get(change.path)
        elif change.kind == "config":
            state = ws.configs.get(change.path)
        else:
            return
        copy = dataclasses.replace(state) if state is not None else None
        eval_set = getattr(copy, "eval_set", None)
        index = {c.eval_id: c for c in eval_set.eval_cases} if eval_set is not None else None
        self._put(FileLoaded(change.path, change.kind, copy, frozenset(ws.agent_dirs), index))


def _snapshot_of(ws: Workspace) -> Workspace:
    """A shallow copy of a workspace, read by the saved-results scan outside the lock."""
    from ..engine.workspace import Workspace

    copy = Workspace(ws.root, agent_ref=ws.agent_ref, config_override=ws.config_override)
    copy.eval_files = {p: dataclasses.replace(s) for p, s in ws.eval_files.items()}
    copy.configs = {p: dataclasses.replace(s) for p, s in ws.configs.items()}
    copy.agent_dirs = set(ws.agent_dirs)
    return copy
