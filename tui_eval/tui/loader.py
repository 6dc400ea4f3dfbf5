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
    from ..schema.results import CaseResult


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
    """For each eval file, the newest saved run record of its eval set, as its cases' last results."""
    from ..engine.events import CaseKey
    from ..engine.store import list_history, load_record

    by_dir: dict[Path, list[Path]] = {}
    for path, state in list(workspace.eval_files.items()):
        if state.eval_set is not None:
            by_dir.setdefault(history_dir_for(workspace, path), []).append(path)
    loaded: dict[CaseKey, CaseResult] = {}
    for directory, files in by_dir.items():
        if cancelled():
            break
        entries = list_history(directory)
        for path in files:
            file_state = workspace.eval_files.get(path)
            if not entries or file_state is None or file_state.eval_set is None:
                continue
            set_id = file_state.eval_set.eval_set_id
            same_file = [e for e in entries if e.eval_file and _same_path(e.eval_file, path)]
            same_set = [e for e in entries
                        if e.eval_set_id == set_id and (not e.eval_file or Path(e.eval_file).name == path.name)]
            candidates = same_file or same_set
            if not candidates:
                continue
            chosen = candidates[0]
            try:
                _meta, result = load_record(chosen.path)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("could not read saved results %s", chosen.path, exc_info=exc)
                inbox.push_message(f"could not read saved results {chosen.path.name}: {exc}", "warning")
                continue
            origin = "saved " + time.strftime("%Y-%m-%d %H:%M", time.localtime(chosen.creation_timestamp))
            for case in result.case_results:
                key = CaseKey(str(path), case.eval_id)
                loaded[key] = case
                inbox.push_result(key, case, origin)
    return loaded


def _same_path(recorded: str, path: Path) -> bool:
    try:
        return Path(recorded).resolve() == path
    except OSError:
        return False
