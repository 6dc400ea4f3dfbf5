"""Start-up loading, off the UI thread: discover the folder, parse eval files, read the newest saved results.

Runs in a thread worker after the first frame. Files land in the Workspace one by one (the browser
polls it, so they stream into the tree); saved results go through the Inbox.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .state import Inbox

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..engine.workspace import Workspace
    from ..schema.results import CaseResult, EvalSetResult


def history_dir_for(workspace: Workspace, eval_file: Path) -> Path:
    """Where runs of an eval file keep their history (the rule is `engine.store.history_dir`)."""
    from ..engine.store import history_dir

    return history_dir(eval_file, workspace.agent_for(eval_file))


def load_workspace(workspace: Workspace, cancelled: Callable[[], bool] = lambda: False) -> None:
    """Discover and load every file below the root: configs first, so eval files can see theirs."""
    from ..schema.config import CONFIG_FILE_NAME

    paths = workspace.discover()
    configs = [p for p in paths if p.name == CONFIG_FILE_NAME or p == workspace.config_override]
    for path in configs + [p for p in paths if p not in configs]:
        if cancelled():
            return
        workspace.reload(path)


def load_latest_results(
    workspace: Workspace, inbox: Inbox, cancelled: Callable[[], bool] = lambda: False
) -> dict[CaseKey, CaseResult]:
    """Each case's latest saved result across its eval set's whole history, not just the newest record:
    a failures-only, selected or cancelled run covers some cases, and older runs still speak for the rest.

    Records are read newest first and reading stops once every case of the file has a result, so a
    folder whose newest run was a full one costs one record per eval file, as before."""
    from ..engine.events import CaseKey
    from ..engine.store import list_history

    by_dir: dict[Path, list[Path]] = {}
    for path, state in list(workspace.eval_files.items()):
        if state.eval_set is not None:
            by_dir.setdefault(history_dir_for(workspace, path), []).append(path)
    loaded: dict[CaseKey, CaseResult] = {}
    records: dict[Path, EvalSetResult | None] = {}
    for directory, files in by_dir.items():
        if cancelled():
            break
        entries = list_history(directory)
        for path in files:
            file_state = workspace.eval_files.get(path)
            if not entries or file_state is None or file_state.eval_set is None:
                continue
            set_id = file_state.eval_set.eval_set_id
            agent = workspace.agent_for(path)
            # A replay of recorded turns is not an agent's result: never its latest status.
            usable = entries if agent is None or agent.startswith("replay:") else [e for e in entries if not e.replay]
            same_file = [e for e in usable if e.eval_file and _same_path(e.eval_file, path)]
            same_set = [e for e in usable
                        if e.eval_set_id == set_id and (not e.eval_file or Path(e.eval_file).name == path.name)]
            missing = {c.eval_id for c in file_state.eval_set.eval_cases}
            for entry in same_file or same_set:  # newest first
                if cancelled() or not missing:
                    break
                if entry.path not in records:
                    records[entry.path] = _read(entry.path, inbox)
                result = records[entry.path]
                if result is None:
                    continue
                for case in result.case_results:
                    key = CaseKey(str(path), case.eval_id)
                    if key in loaded:
                        continue
                    missing.discard(case.eval_id)
                    loaded[key] = case
                    # Tagged when the dashboard runs no replay itself (a replay-mode dashboard says so on top).
                    tag = entry.replay and agent is None
                    inbox.push_result(key, case, saved_origin(entry.creation_timestamp, replay=tag),
                                      entry.creation_timestamp)
    return loaded


def saved_origin(timestamp: float, *, replay: bool = False) -> str:
    """Where a saved result came from, as the summary shows it beside its age (a replay says so)."""
    return "saved " + time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp)) + (" · replay" if replay else "")


def _read(path: Path, inbox: Inbox) -> EvalSetResult | None:
    from ..engine.store import load_record

    try:
        return load_record(path)[1]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("could not read saved results %s", path, exc_info=exc)
        inbox.push_message(f"could not read saved results {path.name}: {exc}", "warning")
        return None


def _same_path(recorded: str, path: Path) -> bool:
    try:
        return Path(recorded).resolve() == path
    except OSError:
        return False
