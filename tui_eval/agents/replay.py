"""`replay:PATH`: answer each turn with the invocation recorded for the same case and turn in PATH."""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ..schema.fast import share_loaded_fields_sets, trusted
from ..schema.load import parse_eval_set, read_regular_file
from ..schema.model import Content, EvalCase, Invocation
from .base import Agent, AgentError, AgentSession, CaseContext

log = logging.getLogger(__name__)


class ReplaySession(AgentSession):
    """Answers each turn with the recorded one. The recorded turns were validated when the file
    loaded, and nothing changes a turn once made (the runner, the metrics and the writers only read
    them), so a replayed turn is built without validation and shares the recorded turn's parts."""

    def __init__(self, recorded: EvalCase | None, eval_id: str, source: Path) -> None:
        self._recorded = recorded
        self._eval_id = eval_id
        self._source = source

    async def turn(self, user_content: Content, index: int) -> Invocation:
        if self._recorded is None:
            raise AgentError(f"{self._source}: no recorded case with eval_id {self._eval_id!r}")
        turns = self._recorded.conversation or []
        if index >= len(turns):
            raise AgentError(
                f"{self._source}: case {self._eval_id!r} has {len(turns)} recorded turn(s), no turn {index + 1}"
            )
        recorded = turns[index]
        # The recorded turn answers this user message; keep the message that was actually sent. Every
        # field in declaration order, as validation would give them (cheaper than validating; bench/README.md).
        return trusted(
            Invocation,
            invocation_id=recorded.invocation_id,
            user_content=user_content,
            final_response=recorded.final_response,
            intermediate_data=recorded.intermediate_data,
            creation_timestamp=recorded.creation_timestamp,
            duration=recorded.duration,
            model_duration=None,
            tool_duration=None,
            rubrics=None,
            app_details=recorded.app_details,
            tool_timings=[],
            nested_calls=[],
        )


# Cases whose models share their fields-sets at a time (as `load_eval_set` shares a whole file's): one
# C-level pass per batch, so no single GIL hold grows with the file.
_SHARE_BATCH = 256


# The last parsed replay files, by (resolved path, mtime_ns, size, inode): the dashboard's `r` starts
# a new ReplayAgent per run, and parsing and validating a 100,000-case file each time took seconds.
_CACHE_SIZE = 2
_cache: OrderedDict[tuple[str, int, int, int], Mapping[str, EvalCase]] = OrderedDict()
_cache_lock = threading.Lock()  # agents load on worker threads


def load_recorded_cases(path: Path) -> Mapping[str, EvalCase]:
    """The recorded cases of a replay file by eval_id (read-only, shared by every agent of the same
    unchanged file in this process). An unchanged file (same resolved path, mtime, size and inode)
    is parsed once; the last two files are kept."""
    try:
        resolved = path.resolve()
        st = os.stat(resolved)
    except (OSError, RuntimeError):
        return _parse_recorded_cases(path)  # read_regular_file reports what cannot be read
    # Stat before reading: a file changed while being read has a newer mtime than the key, so the
    # next load parses it again.
    key = (str(resolved), st.st_mtime_ns, st.st_size, st.st_ino)
    with _cache_lock:
        cases = _cache.get(key)
        if cases is not None:
            _cache.move_to_end(key)
            log.debug("%s: recorded cases reused (file unchanged)", path)
            return cases
    cases = MappingProxyType(_parse_recorded_cases(path))
    with _cache_lock:
        for old in [k for k in _cache if k[0] == key[0]]:
            del _cache[old]  # an older version of the same file is never asked for again
        _cache[key] = cases
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return cases


def _parse_recorded_cases(path: Path) -> dict[str, EvalCase]:
    """The recorded cases of a replay file by eval_id. Raises LoadError naming the file (and the place
    of every fault), exactly as `load_eval_set` does; `parse_eval_set` reads a plain file one case at a
    time, so the dashboard's UI thread is never held for long while an agent loads in a worker."""
    eval_set, _legacy = parse_eval_set(read_regular_file(path), path)  # LoadError names the file and place
    cases = eval_set.eval_cases
    for start in range(0, len(cases), _SHARE_BATCH):
        share_loaded_fields_sets(cases[start:start + _SHARE_BATCH])
    return {c.eval_id: c for c in cases}


class ReplayAgent(Agent):
    """Scores recorded conversations without running anything."""

    # Our own code, no user code: replayed turns run on the engine's loop at no cost.
    runs_user_code = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = "replay"
        # Eval history goes beside each eval file under test, not beside the recording.
        self.home = None
        self._cases = load_recorded_cases(self.path)

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        return ReplaySession(self._cases.get(case.eval_id), case.eval_id, self.path)

    def source_paths(self) -> list[Path]:
        return [self.path]
