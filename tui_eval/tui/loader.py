"""Background work on the folder: load eval files and saved results after first paint, watch for saves.

These functions run in thread workers. They mutate the Workspace under one lock (it has a single owner
at a time) and report through the Inbox; the UI never waits on them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .state import FileNews, Inbox

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.workspace import FileChange, Workspace


def news_of(change: FileChange, *, initial: bool = False) -> FileNews:
    """The UI's view of a workspace FileChange."""
    removed = change.kind in ("eval", "config") and not change.path.exists()
    return FileNews(
        path=change.path,
        kind=change.kind,
        removed=removed,
        error=change.error,
        changed_cases=[*change.changed_cases, *change.added_cases, *change.removed_cases],
        criteria_changed=change.criteria_changed,
        agent_dir=change.agent_dir,
        initial=initial,
    )


def history_dir_for(workspace: Workspace, eval_file: Path) -> Path:
    """Where runs of an eval file keep their history: its agent folder, else beside the file (replay)."""
    from ..engine.store import HISTORY_DIR

    ref = workspace.agent_for(eval_file)
    if ref and not ref.startswith("replay:") and Path(ref).is_dir():
        return Path(ref).resolve() / HISTORY_DIR
    return Path(eval_file).resolve().parent / HISTORY_DIR


def load_workspace(
    workspace: Workspace,
    inbox: Inbox,
    lock: threading.Lock,
    cancelled: Callable[[], bool] = lambda: False,
) -> None:
    """Discover and load every file, streaming news to the inbox, then the newest saved results."""
    from ..schema.config import CONFIG_FILE_NAME

    with lock:
        paths = workspace.discover()
    configs = [p for p in paths if p.name == CONFIG_FILE_NAME or p == workspace.config_override]
    evals = [p for p in paths if p not in configs]
    for path in configs + evals:
        if cancelled():
            return
        with lock:
            change = workspace.reload(path)
        inbox.push_file(news_of(change, initial=True))
    if not cancelled():
        load_latest_results(workspace, inbox, cancelled)


def load_latest_results(
    workspace: Workspace, inbox: Inbox, cancelled: Callable[[], bool] = lambda: False
) -> None:
    """For each eval file, the newest saved run record of its eval set, pushed as the cases' last results."""
    from ..engine.events import CaseKey
    from ..engine.store import list_history, load_record

    by_dir: dict[Path, list[Path]] = {}
    for path, state in list(workspace.eval_files.items()):
        if state.eval_set is not None:
            by_dir.setdefault(history_dir_for(workspace, path), []).append(path)
    for directory, files in by_dir.items():
        if cancelled():
            return
        entries = list_history(directory)
        if not entries:
            continue
        for path in files:
            state = workspace.eval_files.get(path)
            if state is None or state.eval_set is None:
                continue
            set_id = state.eval_set.eval_set_id
            same_file = [e for e in entries if e.eval_file and _same_path(e.eval_file, path)]
            same_set = [e for e in entries if e.eval_set_id == set_id and (not e.eval_file or Path(e.eval_file).name == path.name)]
            chosen = (same_file or same_set or [None])[0]
            if chosen is None:
                continue
            try:
                _meta, result = load_record(chosen.path)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                inbox.push_message(f"could not read saved results {chosen.path.name}: {exc}", "warning")
                continue
            origin = "saved " + time.strftime("%Y-%m-%d %H:%M", time.localtime(chosen.creation_timestamp))
            for case in result.case_results:
                inbox.push_result(CaseKey(str(path), case.eval_id), case, origin)


def _same_path(recorded: str, path: Path) -> bool:
    try:
        return Path(recorded).resolve() == path
    except OSError:
        return False


WATCHED_SUFFIXES = (".evalset.json", ".test.json", "test_config.json", ".py")


def watch_workspace(
    workspace: Workspace,
    inbox: Inbox,
    lock: threading.Lock,
    stop: threading.Event,
    debounce_ms: int = 200,
) -> None:
    """Reload eval files and configs as they are saved (agent sources are reported, not reloaded)."""
    from watchfiles import watch

    from ..engine.workspace import SKIP_DIRS

    root = workspace.root if workspace.root.is_dir() else workspace.root.parent

    def wanted(_change: object, name: str) -> bool:
        if not name.endswith(WATCHED_SUFFIXES):
            return False
        parts = Path(name).relative_to(root).parts if name.startswith(str(root)) else Path(name).parts
        return not any(p in SKIP_DIRS or p.startswith(".") for p in parts[:-1])

    for batch in watch(root, watch_filter=wanted, stop_event=stop, debounce=debounce_ms, step=50,
                       raise_interrupt=False, rust_timeout=500, yield_on_timeout=False):
        for path in sorted({Path(p) for _c, p in batch}):
            if stop.is_set():
                return
            with lock:
                change = workspace.reload(path)
            if change.kind != "other":
                inbox.push_file(news_of(change))
