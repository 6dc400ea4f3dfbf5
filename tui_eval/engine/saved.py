"""Each case's latest saved result in a loaded folder: what the dashboard shows before anything runs,
and the stored inferences its engine re-scores from."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from .events import CaseKey

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.results import CaseResult, EvalSetResult
    from .workspace import Workspace

log = logging.getLogger(__name__)


def history_dir_for(workspace: Workspace, eval_file: Path) -> Path:
    """Where runs of an eval file keep their history (the rule is `engine.store.history_dir`)."""
    from .store import history_dir

    return history_dir(eval_file, workspace.agent_for(eval_file))


def latest_saved_results(
    workspace: Workspace,
    cancelled: Callable[[], bool] = lambda: False,
    on_problem: Callable[[str], None] = lambda _text: None,
) -> Iterator[tuple[CaseKey, CaseResult, float, bool]]:
    """(case, result, when it was saved, whether a replay made it and the folder runs no replay itself:
    the dashboard tags those) for each case's latest saved result across its eval set's whole
    history, not just the newest record: a failures-only, selected or cancelled run covers some cases,
    and older runs still speak for the rest.

    Records are read newest first and reading stops once every case of the file has a result, so a
    folder whose newest run was a full one costs one record per eval file. A record that cannot be read
    is logged and told to `on_problem` in one line."""
    from .store import list_history

    by_dir: dict[Path, list[Path]] = {}
    for path, state in list(workspace.eval_files.items()):
        if state.eval_set is not None:
            by_dir.setdefault(history_dir_for(workspace, path), []).append(path)
    seen: set[CaseKey] = set()
    records: dict[Path, EvalSetResult | None] = {}
    for directory, files in by_dir.items():
        if cancelled():
            return
        entries = list_history(directory)
        for path in files:
            file_state = workspace.eval_files.get(path)
            if not entries or file_state is None or file_state.eval_set is None:
                continue
            set_id = file_state.eval_set.eval_set_id
            agent = workspace.agent_for(path)
            # A replay of recorded turns is not an agent's result: never its latest status.
            usable = entries if agent is None or agent.startswith("replay:") else [e for e in entries if not e.replay]
            # The agent's everyday runs speak first; a mocked, strict, re-scored or stand-in-judge run only
            # for the cases none of those covered (`HistoryEntry.comparable`).
            usable = [e for e in usable if e.comparable] + [e for e in usable if not e.comparable]
            same_file = [e for e in usable if e.eval_file and _same_path(e.eval_file, path)]
            same_set = [e for e in usable
                        if e.eval_set_id == set_id and (not e.eval_file or Path(e.eval_file).name == path.name)]
            missing = {c.eval_id for c in file_state.eval_set.eval_cases}
            for entry in same_file or same_set:  # newest first
                if cancelled() or not missing:
                    break
                if entry.path not in records:
                    records[entry.path] = _read(entry.path, on_problem)
                result = records[entry.path]
                if result is None:
                    continue
                for case in result.case_results:
                    key = CaseKey(str(path), case.eval_id)
                    if key in seen:
                        continue
                    seen.add(key)
                    missing.discard(case.eval_id)
                    yield key, case, entry.creation_timestamp, bool(entry.replay and agent is None)


def _read(path: Path, on_problem: Callable[[str], None]) -> EvalSetResult | None:
    from .store import load_record

    try:
        return load_record(path)[1]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("could not read saved results %s", path, exc_info=exc)
        on_problem(f"could not read saved results {path.name}: {exc}")
        return None


def _same_path(recorded: str, path: Path) -> bool:
    try:
        return Path(recorded).resolve() == path
    except OSError:
        return False
