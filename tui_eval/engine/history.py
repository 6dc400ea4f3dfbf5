"""A run's kind, and the one resolver of `RUN`, `latest` and record paths.

`run_kind` is the one definition of what kind of run produced a result (agent or replay, live or
mocked tools, criteria, judge, selection, re-score, strict): the record keeps it (`runrecord.RunKind`)
and every comparison reads it. `find_records` resolves what the user named (`latest`, a run id, a
`.tui-eval.json` record, or a baseline file) for each eval set of a run: `--baseline`, `--resume` and
`rescore` call it; `records_of_run` resolves the records of one saved run for `report` and `rescore`.

`latest` is the newest run of the same eval set (and eval file) and the same kind that was not itself
a failed gate, ordered by the records' own run order (their creation time, then run id); a record dated
in the future or of another eval set is never `latest`.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import orjson

from ..schema.runrecord import AgentKind, ExecutorInfo, JudgeRef, RunKind, Selection, ToolsKind
from ..schema.fileio import atomic_write
from .store import (
    HISTORY_DIR,
    RECORD_SUFFIX,
    HistoryEntry,
    RecordError,
    check_record_head,
    history_entry,
    load_record,
    parse_record,
    read_json,
    read_record_head,
    scan_history,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.results import EvalSetResult
    from ..schema.config import EvalConfig
    from .options import RunOptions

log = logging.getLogger(__name__)
LATEST = "latest"
#: How far in the future a record may be dated and still count (clocks of two machines differ a little).
FUTURE_SLACK_SECONDS = 300.0


class ResolveError(ValueError):
    """What the user named cannot be resolved to saved runs (the message says what and why; exit 2)."""


# ---- the kind of a run ------------------------------------------------------------------------------


def agent_kind(agent_ref: str | None) -> AgentKind:
    """`replay` for `replay:PATH`, `none` without an agent, else `agent`."""
    if agent_ref is None:
        return "none"
    return "replay" if str(agent_ref).startswith("replay:") else "agent"


def tools_kind(mock_tools: str | None) -> ToolsKind:
    """`--mock-tools` as a kind: live tools, or mocked strict / with fallback to the live tool."""
    if mock_tools is None:
        return "live"
    return "mock-fallback" if mock_tools == "fallback" else "mock-strict"


def criteria_hash(criteria: dict[str, dict[str, object]]) -> str:
    """A hash of the effective criteria (name -> ADK criterion dict, as the record keeps them): the same
    criteria give the same hash whatever their order."""
    data = orjson.dumps(criteria, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(data).hexdigest()


def config_criteria(config: EvalConfig) -> dict[str, dict[str, object]]:
    """A config's criteria as the record keeps them (`criteria` of a run record)."""
    return {name: crit.to_dict() for name, crit in config.criteria.items()}


def judge_of(config: EvalConfig, judge_base_url: str | None = None) -> JudgeRef | None:
    """The judge a config's judged criteria ask (the first one's judge_model), with its endpoint as the
    judge service reaches it; None when no criterion asks a judge."""
    from ..metrics.custom import spec_for
    from ..schema.judge_model import parse_judge_model

    for name, crit in config.criteria.items():
        spec = spec_for(name, config)
        if spec is None or not (spec.needs_judge or crit.judge_requested):
            continue
        model = crit.judge.judge_model
        try:
            ref = parse_judge_model(model)
        except ValueError:
            return JudgeRef(provider="gemini", model=model, endpoint=None)
        return JudgeRef(provider=ref.provider, model=ref.model, endpoint=_judge_endpoint(ref.provider, ref.base_url,
                                                                                           judge_base_url))
    return None


def _judge_endpoint(provider: str, named: str | None, option: str | None) -> str | None:
    """The endpoint a judge is reached at: the one its judge_model names, else the run's option, else the
    provider's environment variable (judge/service.py and judge/openai_compat.py read the same ones)."""
    env = os.environ
    if provider == "openai":
        url = named or env.get("OPENAI_BASE_URL") or None
    elif (env.get("GOOGLE_GENAI_USE_VERTEXAI") or "").strip().lower() in ("1", "true", "yes", "on"):
        url = option or env.get("GOOGLE_VERTEX_BASE_URL") or None
    else:
        url = option or env.get("GOOGLE_GEMINI_BASE_URL") or None
    return url.rstrip("/") if url else None


def run_kind(config: EvalConfig, *, agent: AgentKind, options: RunOptions,
             selection: Selection = "all", rescore_of: str | None = None) -> RunKind:
    """The kind of a run of one eval set (its config) by an agent (`agent_kind`) with these options."""
    return RunKind(agent=agent, tools=tools_kind(options.mock_tools),
                   criteria=criteria_hash(config_criteria(config)),
                   judge=judge_of(config, options.judge_base_url), selection=selection, rescore_of=rescore_of,
                   strict=options.strict)


def executor_agent_kind(executor: object | None) -> AgentKind:
    """`agent_kind` of an executor: none, a replay (runs no user code), or an agent."""
    if executor is None:
        return "none"
    return "agent" if getattr(executor, "runs_user_code", True) else "replay"


def executor_info(options: RunOptions, executor: object | None) -> ExecutorInfo:
    """What runs a run's agent, as the record says it: the local pool (with its workers), this process
    (a replay), the Ray tui-eval starts or joins on this machine, or the cluster at `ray://...`."""
    if executor is not None and not getattr(executor, "runs_user_code", True):
        return ExecutorInfo(kind="inline")
    if options.executor.startswith("ray://"):
        return ExecutorInfo(kind="ray-cluster", address=options.executor)
    if options.executor == "ray":
        address = os.environ.get("RAY_ADDRESS") or None
        return ExecutorInfo(kind="ray-cluster" if address else "ray", address=address)
    return ExecutorInfo(kind="local", workers=options.workers)


def selection_of(coverage: str) -> Selection:
    """A run's coverage as the selection part of its kind (a cancelled run was a run of everything)."""
    return "failures" if coverage == "failures" else "selection" if coverage == "selection" else "all"


def recorded_kind(entry: HistoryEntry) -> RunKind | None:
    """The kind a saved record names (None for records of format /2 and /1, which kept none)."""
    return entry.kind


def kind_differences(mine: RunKind, entry: HistoryEntry) -> list[str]:
    """How a saved run's kind differs from this run's (empty: the same kind). A record from before
    kinds were kept is compared by what it says: agent or replay."""
    theirs = recorded_kind(entry)
    if theirs is None:
        old = "replay" if entry.replay else "agent"
        return [] if old == mine.agent else [f"agent or replay: {mine.agent} here, {old} there"]
    return mine.differences(theirs)


# ---- resolving RUN, latest and record paths --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalSetPlace:
    """One eval set of a run, where its history is kept, and its kind in this run."""

    eval_set_id: str
    eval_file: str
    history: Path
    kind: RunKind


@dataclass(frozen=True, slots=True)
class Found:
    """The saved record chosen for one eval set: a record file, or (`data`) a record a baseline file holds."""

    path: Path
    run_id: str
    entry: HistoryEntry
    data: dict[str, Any] | None = None

    def load(self) -> tuple[dict[str, Any], EvalSetResult]:
        """The record's metadata and results (without turns). Raises RecordError."""
        if self.data is not None:
            return parse_record(copy.deepcopy(self.data), self.path, with_turns=False)
        return load_record(self.path, with_turns=False)


@dataclass(slots=True)
class Resolution:
    """What `find_records` found: a record per eval file, and for the others why there is none."""

    found: dict[str, Found]
    missing: dict[str, str]

    @property
    def run_ids(self) -> list[str]:
        return list(dict.fromkeys(f.run_id for f in self.found.values()))


def run_order(entry: HistoryEntry) -> tuple[float, str]:
    """The records' own run order: when the run's results were made, then the run id (which starts with
    its start time); never a file's modification time."""
    return entry.creation_timestamp, entry.run_id


def _usable(entry: HistoryEntry, now: float) -> bool:
    return entry.creation_timestamp <= now + FUTURE_SLACK_SECONDS


def _same_file(recorded: str, eval_file: str) -> bool:
    try:
        return Path(recorded).resolve() == Path(eval_file).resolve()
    except (OSError, ValueError):
        return recorded == eval_file


def entries_of(place: EvalSetPlace, folder: Path | None = None,
               listed: dict[Path, list[HistoryEntry]] | None = None) -> list[HistoryEntry]:
    """The saved runs of one eval set (same id and file), newest first by the records' run order."""
    directory = folder or place.history
    if listed is not None and directory in listed:
        entries = listed[directory]
    else:
        entries = scan_history(directory)[0]
        if listed is not None:
            listed[directory] = entries
    mine = [e for e in entries if e.eval_set_id == place.eval_set_id
            and (not e.eval_file or _same_file(e.eval_file, place.eval_file))]
    return sorted(mine, key=run_order, reverse=True)


def latest_of(place: EvalSetPlace, entries: Iterable[HistoryEntry], *, exclude_run: str | None = None,
              now: float | None = None) -> tuple[HistoryEntry | None, str]:
    """The `latest` saved run of an eval set for this run's kind, or None and why there is none."""
    now = time.time() if now is None else now
    candidates = [e for e in entries if e.run_id != exclude_run]
    if not candidates:
        return None, "no saved run of this eval set"
    dated = [e for e in candidates if _usable(e, now)]
    if not dated:
        return None, "its saved runs are all dated in the future"
    alike = [e for e in dated if not kind_differences(place.kind, e)]
    if not alike:
        why = kind_differences(place.kind, dated[0])
        return None, f"no saved run of the same kind (the newest differs in {'; '.join(why)})"
    passing = [e for e in alike if not e.gate_failed]
    if not passing:
        return None, "every saved run of the same kind failed its gate"
    # A complete run first (every case of the set, finished): a failures-only, selected, cancelled or
    # interrupted run speaks for only some cases.
    return next((e for e in passing if not e.partial), passing[0]), ""


def find_records(spec: str, places: list[EvalSetPlace], *, exclude_run: str | None = None,
                 check_kind: bool = True, what: str = "--baseline") -> Resolution:
    """The saved record each eval set of a run is compared with (or resumed from): `spec` is `latest`,
    a run id, a `.tui-eval.json` record (its run), or a baseline file (`baseline save`). Raises
    ResolveError when a named run is not a saved run of these eval sets, or (with `check_kind`) is of
    another kind, naming the difference."""
    found: dict[str, Found] = {}
    missing: dict[str, str] = {}
    listed: dict[Path, list[HistoryEntry]] = {}
    extra_folders: list[Path] = []
    held: list[tuple[HistoryEntry, dict[str, Any]]] | None = None  # the records a baseline file holds
    run_id = spec
    if spec != LATEST:
        path = Path(spec)
        if path.is_file() and is_baseline_file(path):
            try:
                held = read_baseline(path)
            except RecordError as exc:
                raise ResolveError(f"{what} {path}: {exc}") from None
            run_id = held[0][0].run_id if held else ""
        elif path.is_file():
            try:
                run_id = str(read_record_head(path)["run_id"])
            except (OSError, RecordError) as exc:
                raise ResolveError(f"{what} {path}: not a readable run record: {exc}") from None
            extra_folders.append(path.parent)
        elif path.suffix == ".json" or os.sep in spec:
            raise ResolveError(f"{what} {spec}: no such file (nor a run id)")
    for place in places:
        if place.eval_file in found or place.eval_file in missing:
            continue
        if held is not None:
            pick_held = _held_for(place, held)
            if pick_held is None:
                missing[place.eval_file] = f"the baseline file {spec} has no record of this eval set"
                continue
            entry, data = pick_held
            if check_kind and (diff := kind_differences(place.kind, entry)):
                raise ResolveError(f"{what} {spec}: the baseline of {place.eval_set_id} is of another kind than "
                                   "this run: " + "; ".join(diff))
            found[place.eval_file] = Found(entry.path, entry.run_id, entry, data)
            continue
        entries: list[HistoryEntry] = []
        for folder in [*extra_folders, place.history]:
            entries += [e for e in entries_of(place, folder, listed) if e not in entries]
        if spec == LATEST:
            pick, why = latest_of(place, entries, exclude_run=exclude_run)
            if pick is None:
                missing[place.eval_file] = why
                continue
        else:
            pick = next((e for e in sorted(entries, key=run_order, reverse=True) if e.run_id == run_id), None)
            if pick is None:
                missing[place.eval_file] = f"run {run_id} did not run this eval set"
                continue
            if check_kind:
                diff = kind_differences(place.kind, pick)
                if diff:
                    raise ResolveError(f"{what} {spec}: run {run_id} is of another kind than this run: "
                                       + "; ".join(diff))
        found[place.eval_file] = Found(pick.path, pick.run_id, pick)
    if spec != LATEST and not found:
        if held is not None:
            raise ResolveError(f"{what} {spec}: the baseline file holds none of the eval sets run here")
        raise ResolveError(f"{what} {spec}: no saved run with this id of the eval sets run here")
    return Resolution(found, missing)


# ---- baseline files: a saved run to commit beside the eval sets ------------------------------------

BASELINE_FORMAT = "tui-eval.baseline/1"


def is_baseline_file(path: Path) -> bool:
    """Whether a file is a baseline file (`tui-eval baseline save`), by its first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(200)
    except OSError:
        return False
    return BASELINE_FORMAT.encode() in head


def save_baseline(records: list[Path], out: Path) -> tuple[str, int]:
    """Write the records of one saved run (with their cases, without turns) as a baseline file at `out`,
    their eval files named relative to it, so a checkout elsewhere (CI) finds them. Returns the run id and
    how many records it holds. Raises RecordError (a record that cannot be read) or OSError."""
    held: list[dict[str, Any]] = []
    run_id = ""
    for path in records:
        data = read_json(path)
        head = check_record_head(data, path)
        run_id = str(head["run_id"])
        parse_record(copy.deepcopy(data), path, with_turns=False)  # a record that cannot be read is refused now
        data.pop("adk_file", None)
        data.pop("code_diff_file", None)
        eval_file = data.get("eval_file") or ""
        if eval_file:
            try:
                data["eval_file"] = Path(os.path.relpath(Path(eval_file).resolve(), out.resolve().parent)).as_posix()
            except ValueError:  # another drive (Windows): kept as it is
                pass
        held.append(data)
    body = {"format": BASELINE_FORMAT, "run_id": run_id, "saved": time.time(), "records": held}
    atomic_write(out, orjson.dumps(body, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return run_id, len(held)


def read_baseline(path: Path) -> list[tuple[HistoryEntry, dict[str, Any]]]:
    """The records a baseline file holds, each as the history lists it, their eval files resolved from
    the file's folder. Raises RecordError."""
    body = read_json(path)
    if not isinstance(body, dict) or body.get("format") != BASELINE_FORMAT or not isinstance(body.get("records"), list):
        raise RecordError(f"{path}: not a tui-eval baseline file (format {BASELINE_FORMAT})")
    out = []
    for i, data in enumerate(body["records"]):
        where = Path(f"{path}#records[{i}]")
        head = check_record_head(data, where)
        if head.get("eval_file"):
            head["eval_file"] = str((path.resolve().parent / head["eval_file"]).resolve())
        out.append((history_entry(head, path), head))
    return out


def _held_for(place: EvalSetPlace, held: list[tuple[HistoryEntry, dict[str, Any]]]
              ) -> tuple[HistoryEntry, dict[str, Any]] | None:
    """The record of a baseline file for one eval set: same id and file, else same id and file name."""
    same_id = [(e, d) for e, d in held if e.eval_set_id == place.eval_set_id]
    exact = [(e, d) for e, d in same_id if e.eval_file and _same_file(e.eval_file, place.eval_file)]
    named = [(e, d) for e, d in same_id if Path(e.eval_file).name == Path(place.eval_file).name]
    pool = exact or named
    return min(pool, key=lambda ed: ed[0].repetition) if pool else None


def history_folder(path: Path) -> Path:
    """A folder's eval history: `<path>/.adk/eval_history` when there is one, else the folder itself."""
    return path / HISTORY_DIR if (path / HISTORY_DIR).is_dir() else path


def history_folders(where: Path) -> list[Path]:
    """The eval history folders at and below `where` (its own, its agents', their sub-folders'): where a
    run id or `latest` is looked for when no record or folder is named."""
    found = [history_folder(where)]
    for pattern in ("*/" + HISTORY_DIR.as_posix(), "*/*/" + HISTORY_DIR.as_posix()):
        found += sorted(p for p in where.glob(pattern) if p.is_dir())
    return list(dict.fromkeys(found))


def _scan(folders: Iterable[Path]) -> list[HistoryEntry]:
    out: list[HistoryEntry] = []
    for folder in folders:
        listed, unreadable = scan_history(folder)
        for bad in unreadable:
            log.warning("unreadable run record: %s", bad.reason)
        out += listed
    return out


def records_of_run(spec: str, where: Path = Path("."), *, for_baseline: bool = False) -> list[Path]:
    """The record files of one saved run, for `report`, `rescore` and `baseline save`: `spec` is a
    `.tui-eval.json` record (its run's records beside it), a folder (its eval history's newest run),
    `latest` (the newest run in the eval histories at and below `where`), or a run id (found there). The
    newest run is an agent run where there is any (a replay is not the agent's result); `for_baseline`
    also passes over runs that failed their gate or did not finish every case. Raises ResolveError."""
    path = Path(spec)
    now = time.time()
    if spec == LATEST or path.is_dir():
        folders = history_folders(where) if spec == LATEST else [history_folder(path)]
        entries = [e for e in _scan(folders) if _usable(e, now)]
        if not entries:
            named = where if spec == LATEST else path
            raise ResolveError(f"{named}: no run records ({RECORD_SUFFIX}) in this folder"
                               + (" or the agent folders in it" if spec == LATEST else ""))
        entries.sort(key=run_order, reverse=True)
        pool = [e for e in entries if not e.replay] or entries
        if for_baseline:
            pool = [e for e in pool if not e.gate_failed and not e.partial]
            if not pool:
                raise ResolveError(f"{spec}: no finished run of every case that passed its gate in the eval history")
        run_id = pool[0].run_id
        return [e.path for e in entries if e.run_id == run_id]
    if path.is_file() or path.suffix or os.sep in spec:
        if not path.name.endswith(RECORD_SUFFIX):
            raise ResolveError(f"{path}: not a run record (a {RECORD_SUFFIX} file from the eval history)")
        try:
            run_id = read_record_head(path)["run_id"]
        except (OSError, ValueError) as exc:
            raise ResolveError(f"cannot read this run record: {exc}") from None
        return [e.path for e in scan_history(path.parent)[0] if e.run_id == run_id] or [path]
    folders = history_folders(where)
    paths = [e.path for e in _scan(folders) if e.run_id == spec]
    if not paths:
        raise ResolveError(f"{spec}: no such run record, folder, or run id in the eval history of {where}")
    return paths
