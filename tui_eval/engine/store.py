"""The result store: ADK eval history files plus our richer run records, written atomically.

Per eval set per run, in `<home>/.adk/eval_history/` (home = the agent folder, or the eval file's
folder for replay):
  `<app>_<eval_set_id>_<time>.evalset_result.json`  google-adk 2.13's EvalSetResult (adk web reads it)
  `<app>_<eval_set_id>_<time>.tui-eval.json`        our record: reasons, alignments, judge details
"""

from __future__ import annotations

import functools
import logging
import math
import re
import reprlib
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import orjson
from pydantic import BaseModel

from ..schema.fileio import atomic_write
from ..schema.errors import SchemaError
from ..schema.fast import adk_json_default
from ..schema.load import read_invocation
from ..schema.model import Invocation
from ..schema.runrecord import OLD_RECORD_FORMATS, GateRecord, RunKind, RunMeta, RunState
from ..schema.runrecord import RECORD_FORMAT as _RECORD_FORMAT
from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    # The result models are imported where results are read or written: the dashboard creates its
    # store at start-up, and a folder without history never needs them.
    from ..schema.results import CaseResult, EvalSetResult
    from ..agents.base import Agent
    from .codestate import CodeChange
    from ..executors import Executor
    from .journal import RunJournal
    from .plan import RunPlan
    from .runner import RunRecord

HISTORY_DIR = Path(".adk") / "eval_history"
ADK_SUFFIX = ".evalset_result.json"
RECORD_SUFFIX = ".tui-eval.json"
# The record's format and its typed places: schema/runrecord.py. Readers accept /2 and /1.
RECORD_FORMAT = _RECORD_FORMAT
_OLD_RECORD_FORMATS = OLD_RECORD_FORMATS
# Version 1 kept metric details as free-form dicts: its records still load, without details.
_V1_FORMATS = ("tui-eval.run/1",)

logger = logging.getLogger(__name__)
_DRIVE = re.compile(r"^[A-Za-z]:")


class UnsafeNameError(ValueError):
    """An id that would make a file land outside the history folder."""


def check_segment(value: str, what: str) -> str:
    """Reject ids that could alter a path (separators, traversal, NUL, drive letters), as ADK does."""
    if not value:
        raise UnsafeNameError(f"{what} must not be empty")
    if "\x00" in value or "/" in value or "\\" in value or value in (".", "..") or _DRIVE.match(value):
        raise UnsafeNameError(f"{what} {value!r} cannot be used in a file name (path separators or traversal)")
    return value


# Characters a file name must not carry verbatim: C0/C1 controls, DEL, line and paragraph separators,
# bidirectional marks, overrides and isolates (a right-to-left override makes `ls` show another name).
_NAME_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def name_segment(value: str, what: str) -> str:
    """`value` as part of a history file name: refused when it could alter the path (`check_segment`),
    and every control or bidirectional character written as `%XX` / `%uXXXX`, so no file name carries an
    escape sequence, a newline or a reordering mark. Names without such characters are unchanged."""
    return _escape_name(check_segment(value, what))


def _escape_name(value: str) -> str:
    return _NAME_UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}" if ord(m.group()) < 0x100
                            else f"%u{ord(m.group()):04X}", value)


def dump_json(obj: Any, *, indent: bool = True) -> bytes:
    opts = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, option=opts | orjson.OPT_NON_STR_KEYS)


@functools.cache
def _record_default() -> Callable[[object], dict[str, Any]]:
    """orjson's `default` for run records; built on first use, so importing the store loads no result models."""
    from ..schema.results import CaseResult

    def model_fields(obj: object) -> dict[str, Any]:
        if isinstance(obj, CaseResult):
            return obj.record_fields()
        if isinstance(obj, BaseModel):
            return obj.__dict__
        raise TypeError(f"{type(obj).__name__} is not JSON serialisable")

    return model_fields


def record_json(record: dict[str, Any] | BaseModel) -> bytes:
    """A run record as JSON. Result models are written field by field by orjson: our result and
    details models have no aliases, serialisers or computed fields, so this equals `model_dump(mode=
    "json")` (a test checks it) at a fraction of the cost. A CaseResult is written as its
    CaseRecord (`CaseResult.record_fields`), without building one."""
    return orjson.dumps(record, default=_record_default(), option=orjson.OPT_NON_STR_KEYS)


def record_chunks(meta: dict[str, Any], cases: list[CaseResult]) -> Iterator[bytes]:
    """A run record (`meta` plus its "cases", last), case by case, as `record_json` writes it whole:
    streamed like the ADK file, so a big record is never one buffer of tens of MB (and its copies)."""
    head = record_json(meta)
    from ..schema.results import SharedJson

    yield (head[:-1] + b',"cases":[') if meta else b'{"cases":['
    shared = SharedJson()  # a metric result several cases hold is serialised once
    for i, case in enumerate(cases):
        yield (b"," if i else b"") + orjson.dumps(case.record_fields(shared), default=_record_default(),
                                                  option=orjson.OPT_NON_STR_KEYS)
    yield b"]}"


def adk_result_chunks(result: EvalSetResult, name: str) -> Iterator[bytes]:
    """An ADK EvalSetResult file, case by case: compact (unlike ADK's indent=2, since it repeats
    every turn twice) and streamed, so thousands of cases never sit in memory as one dict."""
    head = {
        "eval_set_result_id": name,
        "eval_set_result_name": name,
        "eval_set_id": result.eval_set_id,
        "creation_timestamp": result.creation_timestamp,
    }
    from ..schema.results import SharedJson

    yield dump_json(head, indent=False)[:-1] + b',"eval_case_results":['
    shared = SharedJson()  # a metric result several cases hold is serialised once
    for i, case in enumerate(result.case_results):
        # The turns go to orjson as models (`adk_json_default`): no dict tree per turn.
        yield (b"," if i else b"") + orjson.dumps(case.adk_shallow(shared), default=adk_json_default,
                                                  option=orjson.OPT_NON_STR_KEYS)
    yield b"]}"


def history_dir(eval_file: str | Path, agent_home: str | Path | None = None) -> Path:
    """Where runs of an eval file keep their history (the one place this rule is written).

    ADK's place, `<agent folder>/.adk/eval_history/`, when the agent is a folder; beside the eval file
    otherwise (replay:PATH, or no agent). `agent_home` is an agent's `home` or an agent reference.
    """
    if agent_home is not None:
        ref = str(agent_home)
        if not ref.startswith("replay:") and Path(ref).is_dir():
            return Path(ref).resolve() / HISTORY_DIR
    return Path(eval_file).resolve().parent / HISTORY_DIR


def app_name_for(agent: Executor | Agent | None, eval_file: Path) -> str:
    if agent is not None and agent.home is not None:
        return agent.name
    return Path(eval_file).resolve().parent.name or "eval"


class ResultStore:
    """Saves each run's results as eval history. `root` overrides where history goes (tests, CI)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def history_dir(self, agent: Executor | Agent | None, eval_file: Path) -> Path:
        if self.root is not None:
            return self.root
        return history_dir(eval_file, agent.home if agent is not None else None)

    def open_journal(self, record: RunRecord, plan: RunPlan, agent: Executor | Agent | None) -> RunJournal:
        """The run's journal in each history folder it saves to (engine/journal.py), its head written."""
        from .journal import JournalTarget, JournalWriter, RunJournal, journal_name

        writers: dict[str, JournalWriter] = {}
        by_folder: dict[Path, tuple[JournalWriter, list[JournalTarget]]] = {}
        try:
            for target in plan.targets:
                try:  # an eval set whose id no file name can carry has no history: nor a journal
                    check_segment(target.eval_set.eval_set_id, "eval_set_id")
                except UnsafeNameError:
                    continue
                directory = self.history_dir(agent, target.eval_file)
                if directory not in by_folder:
                    directory.mkdir(parents=True, exist_ok=True)
                    by_folder[directory] = (JournalWriter(directory / journal_name(record.run_id)), [])
                writer, targets = by_folder[directory]
                targets.append(JournalTarget(
                    str(target.eval_file), target.eval_set.eval_set_id, app_name_for(agent, target.eval_file),
                    [c.eval_id for c in target.cases], record.kinds.get(str(target.eval_file)),
                    {k: c.to_dict() for k, c in target.config.criteria.items()}, target.config.source))
                writers[str(target.eval_file)] = writer
            for writer, targets in by_folder.values():
                writer.head(record.run_id, record.started, plan.num_runs, targets, getattr(agent, "name", None),
                            record.versions, record.executor)
        except BaseException:
            for writer, _ in by_folder.values():
                writer.close(remove=True)
            raise
        return RunJournal(writers)

    def save_run(self, record: RunRecord, plan: RunPlan, agent: Executor | Agent | None) -> list[str]:
        saved: list[str] = []
        configs = {str(t.eval_file): t.config for t in plan.targets}
        diffs: dict[Path, str] = {}  # one side file of the dirty diff per history folder
        taken: set[Path] = set()  # names this save already used: two results never share a file
        for index, result in enumerate(record.results):
            eval_file = Path(result.eval_set_file)
            directory = self.history_dir(agent, eval_file)
            app = name_segment(app_name_for(agent, eval_file), "app name")
            # Checked here, not before the run: an id any file name refuses runs fine (--no-save), and
            # only its history cannot be written; the message names the id and its file.
            check_segment(result.eval_set_id, f"{result.eval_set_file}: eval_set_id")
            # The runner names results `<eval_set_id>_<time>[_runN]`; ADK prefixes the app name.
            stem = f"{app}_{_escape_name(result.eval_set_result_id)}"
            name = _unique_name(directory, stem, taken)
            adk_path = directory / (name + ADK_SUFFIX)
            record_path = directory / (name + RECORD_SUFFIX)
            # Belt and braces: whatever the id, the file must sit directly in the history folder.
            for p in (adk_path, record_path):
                if p.resolve().parent != directory.resolve():
                    raise UnsafeNameError(f"eval_set_id {result.eval_set_id!r} would write outside {directory}")
            atomic_write(adk_path, adk_result_chunks(result, name))
            config = configs.get(result.eval_set_file)
            # Our own values, typed: constructed, not validated (a big run's insight is large).
            meta = RunMeta.model_construct(
                format=RECORD_FORMAT,
                run_id=record.run_id,
                name=name,
                state=record.state,
                kind=record.kinds.get(result.eval_set_file),
                versions=record.versions,
                journal=record.journal,
                gate=record.gate,
                executor=record.executor,
                adk_file=adk_path.name,
                app_name=app,
                agent=getattr(agent, "name", None),
                eval_file=result.eval_set_file,
                eval_set_id=result.eval_set_id,
                creation_timestamp=result.creation_timestamp,
                cancelled=record.cancelled,
                coverage="cancelled" if record.cancelled else record.coverage,
                duration=max(0.0, record.finished - record.started),
                criteria={k: c.to_dict() for k, c in config.criteria.items()} if config else {},
                config_source=config.source if config else None,
                counts={s.name: n for s, n in result.counts().items()},
                source=record.source or provenance(agent, record, [t.config for t in plan.targets]),
                **_insight_fields(record, index, directory, diffs),
            )
            rich = meta.model_dump(mode="json")
            atomic_write(record_path, record_chunks(rich, result.case_results))
            saved.append(str(adk_path))
        return saved


def _agent_models(record: RunRecord) -> list[str]:
    """The models the agent's turns name in their events (none for an offline policy or a replay)."""
    from .insight import UNKNOWN_MODEL, invocation_usage

    models: dict[str, None] = {}
    for result in record.results:
        for case in result.case_results:
            for inv in case.actual:
                for model, _usage in invocation_usage(inv):
                    if model != UNKNOWN_MODEL:
                        models[model] = None
    return list(models)


def provenance(agent: Executor | Agent | None, record: RunRecord, configs: list[Any]) -> dict[str, Any]:
    """What produced a run, kept in its record: a replay of recorded turns is not the agent's result.

    kind "agent" (an agent folder), "replay" (`replay:PATH`) or "none"; the models the agent's turns
    name, the judge models the configs name, and whether judge credentials were present."""
    from ..judge import JudgeOptions, create_judge_service
    from ..metrics.base import get_metric

    inner = getattr(agent, "agent", agent)  # an agent answering in this process (replay), else its executor
    replay_file = getattr(inner, "path", None) if type(inner).__name__ == "ReplayAgent" else None
    home = getattr(agent, "home", None)
    kind = "replay" if replay_file is not None else "agent" if agent is not None else "none"
    judge_models = list(dict.fromkeys(
        crit.judge.judge_model for c in configs if c is not None for name, crit in c.criteria.items()
        if (spec := get_metric(name)) is not None and spec.needs_judge))
    # Credentials of the judges the run asked (an `openai:` judge has its own), not only Gemini's.
    service = create_judge_service(JudgeOptions(use_cache=False, cache_dir=None))
    credentials = (all(service.unavailable_for(m) is None for m in judge_models) if judge_models
                   else service.available)
    return {
        "kind": kind,
        "agent_dir": str(Path(home).resolve()) if home is not None else None,
        "replay_file": str(Path(replay_file).resolve()) if replay_file is not None else None,
        "models": _agent_models(record),
        # The judged criteria's models only (a run with no judged metric asked no judge).
        "judge_models": judge_models,
        "judge_credentials": credentials,
    }


def is_replay_record(data: dict[str, Any]) -> bool:
    """Whether a run record's results came from a replay (its kind; records before kinds say it in
    `source`, and records before `source` say agent "replay")."""
    kind = data.get("kind")
    if isinstance(kind, dict) and kind.get("agent"):
        return kind.get("agent") == "replay"
    source = data.get("source")
    if isinstance(source, dict) and source.get("kind"):
        return source.get("kind") == "replay"
    return data.get("agent") == "replay"


def _unique_name(directory: Path, stem: str, taken: set[Path]) -> str:
    """`stem`, or `stem_2`, `stem_3`...: the first name neither this save nor an earlier one used.
    Two eval sets with one id in one run (or `FILE:a FILE:b`, one file twice) share a stem."""
    name, n = stem, 1
    while (directory / name) in taken or (directory / (name + ADK_SUFFIX)).exists() \
            or (directory / (name + RECORD_SUFFIX)).exists():
        n += 1
        name = f"{stem}_{n}"
    taken.add(directory / name)
    return name


CODE_DIFF_SUFFIX = ".code.diff"


def _insight_fields(record: RunRecord, index: int, directory: Path, diffs: dict[Path, str]) -> dict[str, Any]:
    """Repetition, repeats/usage/latency and code state of a run, for each of its records."""
    out: dict[str, Any] = {
        "repetition": record.repetitions[index] if index < len(record.repetitions) else 1,
        "num_runs": record.num_runs,
        "wall_seconds": record.finished - record.started if record.finished else None,
    }
    if record.insight is not None:
        # Each record keeps its own eval file's repeats, and the run-wide usage, cost and latency.
        file = record.results[index].eval_set_file
        mine = {file: record.insight.repeats[file]} if file in record.insight.repeats else {}
        out["insight"] = record.insight.model_copy(update={"repeats": mine}).model_dump(mode="json")
    state = record.code_state
    if state is not None:
        out["code_state"] = state.for_record().model_dump(mode="json")
        if state.diff:
            if directory not in diffs:
                name = check_segment(f"{record.run_id}{CODE_DIFF_SUFFIX}", "run id")
                atomic_write(directory / name, state.diff.encode("utf-8"))
                diffs[directory] = name
            out["code_diff_file"] = diffs[directory]
    return out


def code_change(before: dict[str, Any], after: dict[str, Any]) -> CodeChange | None:
    """What changed in the code between two runs, from their records' metadata (None when either has
    no code state: an older record)."""
    from .codestate import CodeState, diff_code_states

    a, b = before.get("code_state"), after.get("code_state")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    return diff_code_states(CodeState.model_validate(a), CodeState.model_validate(b))


@dataclass(slots=True)
class HistoryEntry:
    """One saved eval set result, as listed in the history (cases load on demand)."""

    path: Path
    run_id: str
    eval_set_id: str
    eval_file: str
    creation_timestamp: float
    counts: dict[str, int]
    cancelled: bool
    # all | failures | selection | cancelled; None for records older than this field (not cancelled),
    # whose coverage a reader can only infer from their case count.
    coverage: str | None = None
    duration: float = 0.0
    #: The results came from a replay (`replay:PATH`), not from running the agent.
    replay: bool = False
    #: Which repetition of its run this record is, of how many (--num-runs).
    repetition: int = 1
    num_runs: int = 1
    #: running | finished | interrupted | cancelled (records before format /3: finished or cancelled).
    state: RunState = "finished"
    #: The run's kind (records before format /3 kept none).
    kind: RunKind | None = None
    #: The CI gate's outcome the run recorded (None: no gate, or a record before format /3).
    gate: GateRecord | None = None

    @property
    def comparable(self) -> bool:
        """The agent's own everyday run: it ran (not a replay or a re-score), its tools live, no `--strict`,
        a judge at its provider's own endpoint (not a stand-in). Trends draw these, and a case's latest
        result comes from one when there is one. Records from before run kinds (format /2) say only
        whether they were replays."""
        kind = self.kind
        if self.replay:
            return False
        if kind is None:
            return True
        return (kind.agent == "agent" and kind.tools == "live" and not kind.strict and kind.rescore_of is None
                and (kind.judge is None or kind.judge.endpoint is None))

    @property
    def gate_failed(self) -> bool:
        """The run's CI gate failed (`--fail-on-regression` exited 1): never `latest` for a later baseline."""
        return self.gate is not None and self.gate.fail_on_regression and self.gate.code == 1

    @property
    def partial(self) -> bool:
        """A run known not to have covered every case: its counts are not the eval set's state."""
        return self.coverage not in (None, "all") or self.state != "finished"


_CASES_KEY = b',"cases":['

#: The largest run record (or ADK history file beside it) read: far above bench/headless_run.py's.
MAX_RECORD_BYTES = 1024 * 1024 * 1024
#: The largest code diff side file read (the writer keeps at most `codestate.DIFF_CAP_BYTES`).
MAX_DIFF_BYTES = 4 * 1024 * 1024
# Timestamps a record may carry: from the epoch to the end of year 9999 (what a clock can show).
_MAX_TIMESTAMP = 253402300799.0


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxdict, _SHORT.maxlist = 2, 40, 40, 3, 3


class RecordError(ValueError):
    """A run record (or a file it names) that cannot be read, or is not what a record must be: the
    message says which file and why, in one line."""


def _read_bounded(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most `limit` of them: never a FIFO (it would block), a device (/dev/zero
    never ends) or a folder. Raises RecordError."""
    from ..schema.errors import LoadError
    from ..schema.load import read_regular_file

    try:
        return read_regular_file(path, limit)
    except LoadError as exc:
        raise RecordError(f"{path}: {exc.message}") from None


def _loads(raw: bytes, path: Path) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"{path}: not valid JSON: {exc}") from None


def read_json(path: Path) -> Any:
    """A history file's JSON (a record, a baseline file), bounded like every record read. Raises RecordError."""
    return _loads(_read_bounded(Path(path), MAX_RECORD_BYTES), Path(path))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_record_head(data: object, path: Path) -> dict[str, Any]:
    """A record's metadata, checked for what every reader relies on (types, finite numbers, times a
    clock can show, file names without folders). Returns it; raises RecordError naming the first fault.
    A record is data: a hostile or corrupt one is reported, never followed or trusted."""
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a JSON object")
    fmt = data.get("format")
    if fmt not in (RECORD_FORMAT, *_OLD_RECORD_FORMATS):
        raise RecordError(f"{path}: not a tui-eval run record (format {str(fmt)[:40]!r})")

    def fault(key: str, what: str) -> RecordError:
        # reprlib: a value nested a thousand deep (or a megabyte long) is shown in a few characters.
        return RecordError(f"{path}: {key}: expected {what}, got {type(data[key]).__name__} "
                           f"{_SHORT.repr(data[key])}")

    for key in ("run_id", "eval_set_id"):
        if not isinstance(data.get(key), str):
            raise fault(key, "a string") if key in data else RecordError(f"{path}: {key} is missing")
    for key in ("name", "eval_file", "coverage", "app_name", "agent", "config_source"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise fault(key, "a string")
    stamp = data.get("creation_timestamp", 0.0)
    if not _number(stamp) or not 0 <= stamp <= _MAX_TIMESTAMP:
        raise fault("creation_timestamp", "a time (seconds since 1970, up to year 9999)")
    for key in ("duration", "wall_seconds"):
        if data.get(key) is not None and not (_number(data[key]) and data[key] >= 0):
            raise fault(key, "a number of seconds")
    for key in ("repetition", "num_runs"):
        value = data.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise fault(key, "a count")
    if "cancelled" in data and not isinstance(data["cancelled"], bool):
        raise fault("cancelled", "true or false")
    counts = data.get("counts", {})
    if not isinstance(counts, dict) or not all(isinstance(n, int) and not isinstance(n, bool)
                                               for n in counts.values()):
        raise fault("counts", "an object of counts")
    for key in ("criteria", "code_state", "insight"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise fault(key, "an object")
    for key in ("adk_file", "code_diff_file"):
        name = data.get(key)
        if name is None:
            continue
        if not isinstance(name, str):
            raise fault(key, "a file name")
        try:
            check_segment(name, key)
        except UnsafeNameError:
            raise RecordError(f"{path}: {key} {name[:80]!r} is not a file name in the history folder") from None
    return data


def record_side_file(record: Path, name: str, what: str = "file") -> Path:
    """A file a record names (`adk_file`, `code_diff_file`): only a regular file directly inside the
    record's own history folder, symlinks resolved. Raises RecordError otherwise."""
    try:
        check_segment(name, what)
    except UnsafeNameError:
        raise RecordError(f"{record}: {what} {name[:80]!r} is not a file name in the history folder") from None
    folder = Path(record).parent
    path = folder / name
    try:
        target = path.resolve(strict=True)
        inside = target.parent == folder.resolve(strict=True)
        regular = stat.S_ISREG(target.stat().st_mode)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise RecordError(f"{path}: cannot read the {what}: {getattr(exc, 'strerror', None) or exc}") from None
    if not inside:
        raise RecordError(f"{path}: the {what} leads outside its history folder (to {target}); not read")
    if not regular:
        raise RecordError(f"{path}: the {what} is not a regular file; not read")
    return target


def read_code_diff(path: Path) -> str:
    """A saved code diff's text (bounded: a record's side file is data, never a device or a FIFO)."""
    return _read_bounded(Path(path), MAX_DIFF_BYTES).decode("utf-8", "replace")


def read_record_head(path: Path) -> dict[str, Any]:
    """A run record's keys without its cases, checked (`check_record_head`). The writer puts "cases"
    last (`record_chunks`, and the older writers did too), and the bytes `,"cases":[` cannot occur
    inside a JSON string (a quote there is escaped), so the head before them is parsed alone: a tiny
    part of a big record. A nested "cases" key found first leaves braces open; that, or a head
    without its format, is parsed whole. Raises RecordError (a ValueError)."""
    path = Path(path)
    raw = _read_bounded(path, MAX_RECORD_BYTES)
    at = raw.find(_CASES_KEY)
    if at > 0:
        try:
            head = orjson.loads(raw[:at] + b"}")
        except orjson.JSONDecodeError:
            head = None
        if isinstance(head, dict) and "format" in head:
            return check_record_head(head, path)
    data = _loads(raw, path)
    if isinstance(data, dict):
        data.pop("cases", None)
    return check_record_head(data, path)


@dataclass(frozen=True, slots=True)
class UnreadableRecord:
    """A file in a history folder that is not a readable run record, and why."""

    path: Path
    reason: str


def scan_history(directory: Path) -> tuple[list[HistoryEntry], list[UnreadableRecord]]:
    """Every readable run record in a history folder, newest first, and the unreadable ones with why."""
    entries: list[HistoryEntry] = []
    unreadable: list[UnreadableRecord] = []
    if not directory.is_dir():
        return entries, unreadable
    from .journal import settle_journals

    settle_journals(directory)  # a run that was killed: its finished cases as an interrupted run
    for path in directory.glob("*" + RECORD_SUFFIX):
        try:
            entries.append(history_entry(read_record_head(path), path))
        except RecordError as exc:
            unreadable.append(UnreadableRecord(path, str(exc)))
    entries.sort(key=lambda e: e.creation_timestamp, reverse=True)
    unreadable.sort(key=lambda u: u.path.name)
    return entries, unreadable


def history_entry(data: dict[str, Any], path: Path) -> HistoryEntry:
    """A record's metadata (checked by `check_record_head`) as the history lists it. Raises RecordError."""
    return HistoryEntry(
        path=path,
        run_id=data["run_id"],
        eval_set_id=data["eval_set_id"],
        eval_file=data.get("eval_file") or "",
        creation_timestamp=float(data.get("creation_timestamp", 0.0)),
        counts=dict(data.get("counts", {})),
        cancelled=bool(data.get("cancelled", False)),
        coverage=(data["coverage"] if data.get("coverage")
                  else "cancelled" if data.get("cancelled") else None),
        duration=float(data.get("duration") or 0.0),
        replay=is_replay_record(data),
        repetition=_count(data.get("repetition")),
        num_runs=_count(data.get("num_runs")),
        **_places(data, path),
    )


_STATES: tuple[RunState, ...] = ("running", "finished", "interrupted", "cancelled")


def _places(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A record's state, kind and gate, checked (records before /3: state from `cancelled`, no kind or gate)."""
    from pydantic import BaseModel, ValidationError

    state = data.get("state")
    if state is None:
        state = "cancelled" if data.get("cancelled") else "finished"
    elif state not in _STATES:
        raise RecordError(f"{path}: state: expected one of {', '.join(_STATES)}, got {_SHORT.repr(state)}")
    out: dict[str, Any] = {"state": state}
    model: type[BaseModel]
    for key, model in (("kind", RunKind), ("gate", GateRecord)):
        value = data.get(key)
        try:
            out[key] = None if value is None else model.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RecordError(f"{path}: {key}.{where}: {first['msg']}") from None
    return out


def _count(value: object) -> int:
    """A record's repetition or number of runs (1 when absent or not a positive whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def list_history(directory: Path) -> list[HistoryEntry]:
    """Every readable run record in a history folder, newest first (`scan_history` also says which
    files were unreadable, and why)."""
    return scan_history(directory)[0]


def load_record(path: Path, *, with_turns: bool = True) -> tuple[dict[str, Any], EvalSetResult]:
    """A saved run record: its metadata and its EvalSetResult with every case's details, and (unless
    `with_turns` is False) each case's actual and expected turns from the ADK file beside it. Raises
    RecordError (a ValueError) for a record that cannot be read or is not valid."""
    path = Path(path)
    return parse_record(_loads(_read_bounded(path, MAX_RECORD_BYTES), path), path, with_turns=with_turns)


def parse_record(data: object, path: Path, *, with_turns: bool = True) -> tuple[dict[str, Any], EvalSetResult]:
    """`load_record` of a record already parsed as JSON (`path`: where it was read, for messages and the
    ADK file beside it; a baseline file holds records without one)."""
    from pydantic import ValidationError

    from ..schema.results import CaseResult, EvalSetResult, RunRecordFile

    cases_in = data.get("cases", []) if isinstance(data, dict) else None
    data = check_record_head(data, path)
    if not isinstance(cases_in, list):
        raise RecordError(f"{path}: cases: expected a list")
    if data.get("format") in _V1_FORMATS:
        logger.info("%s: an older run record; its metric details are not shown", path)
        for case in cases_in:
            for metric in (case.get("metrics") or [] if isinstance(case, dict) else []):
                if isinstance(metric, dict):
                    metric.pop("details", None)
                    for inv in metric.get("per_invocation") or []:
                        if isinstance(inv, dict):
                            inv.pop("details", None)
    try:
        record = RunRecordFile.model_validate(data)
        meta = {k: v for k, v in data.items() if k != "cases"}
        # Readers build it from the metadata (history compare, reports): a record whose code state is
        # not valid is not valid. (Its insight is validated where it is read: `share.load_shared_run`.)
        if isinstance(meta.get("code_state"), dict):
            from .codestate import CodeState

            CodeState.model_validate(meta["code_state"])
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else None
        where = ".".join(str(p) for p in first["loc"]) if first else ""
        raise RecordError(f"{path}: {where or '$'}: {first['msg'] if first else exc}") from None
    turns: dict[str, tuple[list[Invocation], list[Invocation] | None]] = {}
    if with_turns and record.adk_file:
        try:
            turns = _turns_from_adk(record_side_file(path, record.adk_file, "ADK history file"))
        except RecordError as exc:
            logger.warning("%s (the turns of its cases are not shown)", exc)
    cases = []
    for c in record.cases:
        actual, expected = turns.get(c.eval_id, ([], None))
        cases.append(CaseResult.from_record(c, actual, expected))
    result = EvalSetResult(
        eval_set_result_id=record.name,
        eval_set_id=record.eval_set_id,
        creation_timestamp=record.creation_timestamp,
        case_results=cases,
        eval_set_file=record.eval_file,
    )
    return meta, result


def _turns_from_adk(path: Path) -> dict[str, tuple[list[Invocation], list[Invocation] | None]]:
    """eval_id -> (actual turns, expected turns) from an ADK EvalSetResult file; {} if unreadable."""
    try:
        data = orjson.loads(_read_bounded(path, MAX_RECORD_BYTES))
        out = {}
        for case in data.get("eval_case_results", []):
            actual, expected = [], []
            for i, per in enumerate(case.get("eval_metric_result_per_invocation", [])):
                actual.append(read_invocation(per["actual_invocation"], f"$.actual[{i}]"))
                if per.get("expected_invocation") is not None:
                    expected.append(read_invocation(per["expected_invocation"], f"$.expected[{i}]"))
            out[case["eval_id"]] = (actual, expected or None)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SchemaError) as exc:
        logger.warning("%s: the turns of its cases cannot be read: %s", path, exc)
        return {}


@dataclass(slots=True)
class CaseChange:
    """How one case moved between two runs."""

    eval_id: str
    before: EvalStatus | None
    after: EvalStatus | None
    score_deltas: dict[str, tuple[float | None, float | None]]

    @property
    def kind(self) -> str:
        return status_change(self.before, self.after)


def status_change(before: EvalStatus | None, after: EvalStatus | None) -> str:
    """How a case's status moved between two runs: the one rule of history compare, the dashboard's
    timeline of this session's runs, and `tui-eval run --baseline`.

    regression: passed there, fails now. fixed: failed there, passes now. still failing: failed in
    both. not evaluated: no verdict on one side (a judge or simulator outage says nothing of the
    agent: never a regression or a fix). not run: in only one of the two runs. unchanged otherwise."""
    # A case in only one of the two runs (a selection, failures only, cancelled, added or removed)
    # was not run in the other: nothing can be said of how it moved, least of all a regression.
    if before is None or after is None:
        return NOT_RUN
    if before == after:
        return STILL_FAILING if after == EvalStatus.FAILED else "unchanged"
    if EvalStatus.NOT_EVALUATED in (before, after):
        return NOT_EVALUATED
    if before == EvalStatus.PASSED and after == EvalStatus.FAILED:
        return "regression"
    if before == EvalStatus.FAILED and after == EvalStatus.PASSED:
        return "fixed"
    return "changed"


NOT_RUN = "not run"
NOT_EVALUATED = "not evaluated"
STILL_FAILING = "still failing"
#: Every kind status_change gives, in the order compares list them (regressions first).
CHANGE_KINDS = ("regression", "fixed", STILL_FAILING, "changed", NOT_EVALUATED, NOT_RUN, "unchanged")
_ORDER = {kind: i for i, kind in enumerate(CHANGE_KINDS)}


def compare_results(before: EvalSetResult, after: EvalSetResult) -> list[CaseChange]:
    """Case by case, regressions first, then fixes, then the rest."""
    from .causes import verdict_status

    old = {c.eval_id: c for c in before.case_results}
    new = {c.eval_id: c for c in after.case_results}
    changes = []
    for eval_id in list(new) + [i for i in old if i not in new]:
        a, b = old.get(eval_id), new.get(eval_id)
        deltas: dict[str, tuple[float | None, float | None]] = {}
        names = [m.metric_name for m in (b.metrics if b else [])] + [
            m.metric_name for m in (a.metrics if a else []) if not b or not b.metric(m.metric_name)
        ]
        for name in names:
            ma = a.metric(name) if a else None
            mb = b.metric(name) if b else None
            sa, sb = (ma.score if ma else None), (mb.score if mb else None)
            if sa != sb:
                deltas[name] = (sa, sb)
        # A case an outage failed (the agent's model API answered 503) has no verdict: never a regression.
        changes.append(CaseChange(eval_id, verdict_status(a) if a else None, verdict_status(b) if b else None,
                                  deltas))
    changes.sort(key=lambda c: (_ORDER[c.kind], c.eval_id))
    return changes


@dataclass(frozen=True, slots=True)
class CaseScores:
    """One case of a run record as trends read it: its status and each metric's score (None: no score)."""

    eval_id: str
    status: EvalStatus
    scores: dict[str, float | None]


def record_case_scores(path: Path) -> tuple[int, list[CaseScores]]:
    """A run record's repetition and each case's status and metric scores, without building its results
    (`load_record` validates every case: several times the CPU of this)."""
    path = Path(path)
    data = _loads(_read_bounded(path, MAX_RECORD_BYTES), path)
    cases = data.get("cases", []) if isinstance(data, dict) else []
    check_record_head(data, path)
    rep = data.get("repetition")
    out = []
    try:
        for case in cases:
            scores: dict[str, float | None] = {}
            for metric in case.get("metrics", []):
                score = metric.get("score")
                scores[str(metric["metric_name"])] = float(score) if _number(score) else None
            out.append(CaseScores(str(case["eval_id"]), EvalStatus(int(case["status"])), scores))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError(f"{path}: a case is not valid: {type(exc).__name__}: {exc}") from None
    return (rep if isinstance(rep, int) else 1), out
