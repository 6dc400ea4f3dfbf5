"""`replay:PATH`: answer each turn with the invocation recorded for the same case and turn in PATH."""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson
from pydantic import ValidationError

from ..schema.details import trusted
from ..schema.load import parse_eval_set, read_regular_file
from ..schema.model import Content, EvalCase, EvalSet, Invocation, LoadContext, share_loaded_fields_sets
from .base import Agent, AgentError, AgentSession, CaseContext

log = logging.getLogger(__name__)

_TOP_KEYS = frozenset(EvalSet.model_fields)


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
        # field in declaration order, as validation would give them (0.21 -> ~0.1 s CPU for 12k turns).
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
        )


# Cases whose models share their fields-sets at a time (as `load_eval_set` shares a whole file's): one
# C-level pass per batch, so no single GIL hold grows with the file.
_SHARE_BATCH = 256


def _share(batch: list[EvalCase]) -> None:
    """The recorded models share their fields-sets, as a loaded eval set's do (`load_eval_set`)."""
    share_loaded_fields_sets(batch)
    batch.clear()


def _cases_one_by_one(data: Any, path: Path) -> dict[str, EvalCase] | None:
    """A plain, valid eval set's cases by eval_id, validated one case per call; None when anything is
    off (a legacy file, an unknown top-level key, an invalid case, a duplicate id), so the caller can
    ask the full loader for its report of every fault.

    One `model_validate` of a whole 100,000-case file held the GIL for ~2.5 s, and the dashboard's UI
    thread (the agent loads in a thread while the dashboard runs) froze for as long; between two cases
    the interpreter hands the GIL over as usual."""
    if not isinstance(data, dict) or not _TOP_KEYS.issuperset(data):
        return None
    raw_cases = data.get("eval_cases")
    if not isinstance(raw_cases, list):
        return None
    context = LoadContext()
    try:
        # The top level without its cases: the same checks as the full loader's, at no cost.
        EvalSet.model_validate({**data, "eval_cases": []}, context=context)
        cases: dict[str, EvalCase] = {}
        batch: list[EvalCase] = []
        for i, raw in enumerate(raw_cases):
            case = EvalCase.model_validate(raw, context=context)
            if case.eval_id in cases:
                return None
            cases[case.eval_id] = case
            # Free the parsed JSON case by case too: freeing 100,000 of them at once held the GIL 0.15 s.
            raw_cases[i] = None
            batch.append(case)
            if len(batch) == _SHARE_BATCH:
                _share(batch)
    except ValidationError:
        return None
    _share(batch)
    if context.ignored_event_keys:
        keys = ", ".join(sorted(context.ignored_event_keys))
        log.warning("%s: invocation_events: unknown event key(s) %s ignored (as ADK does)", path, keys)
    return cases


# The last parsed replay files, by (resolved path, mtime_ns, size, inode): the dashboard's `r` starts
# a new ReplayAgent per run, and a 100,000-case file took ~3.5 s to parse and validate each time.
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
    of every fault), exactly as `load_eval_set` does: the JSON is parsed once, and only a file that is
    not a plain valid eval set goes through the full loader again for its error report."""
    raw = read_regular_file(path)  # LoadError for what cannot be read
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None  # the full loader reports it with line and column
    cases = _cases_one_by_one(data, path) if data is not None else None
    if cases is None:
        eval_set, _legacy = parse_eval_set(raw, path)  # LoadError names the file and place
        cases = {c.eval_id: c for c in eval_set.eval_cases}
    return cases


class ReplayAgent(Agent):
    """Scores recorded conversations without running anything."""

    # Our own code, no user code: replayed turns run on the engine's loop at no cost.
    needs_isolation = False

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
