"""A run's journal: each finished case written through the moment it finishes, so nothing is lost.

`<history>/<run_id>.tui-eval-journal.jsonl`, one JSON object per line: a head (the run's eval sets, their
kinds and criteria, the cases planned), then one line per finished case (its record fields and its turns).
Lines go straight to the file with one `os.write` each (no buffer in the process: a SIGKILL or an
out-of-memory kill keeps every case written), and a thread fsyncs the file at least every second (a lost
machine keeps all but the last second). The writer holds an exclusive `flock` on the file while its run
goes: a reader that can take the lock knows the writer is gone.

When the run ends its records are saved and the journal removed. A journal left behind is an interrupted
run: `recover_interrupted` (called whenever a history folder is listed) turns it into run records with
state `interrupted` holding its finished cases, and keeps the journal, which `--resume` reads. No partial
`.evalset_result.json` is written for an interrupted run (`adk web` would list it as a result like any
other): the resumed run writes the complete one. A torn last line (the write a kill cut short) is skipped.
"""

from __future__ import annotations

import fcntl
from glob import escape as glob_escape
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..schema.fast import adk_json_default
from ..schema.runrecord import RECORD_FORMAT, ExecutorInfo, RunKind, RunMeta, RunVersions
from .store import RECORD_SUFFIX, RecordError, _escape_name, check_segment, name_segment, record_chunks, record_json

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.results import CaseResult

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".tui-eval-journal.jsonl"
JOURNAL_FORMAT = "tui-eval.journal/1"
#: Seconds between two fsyncs of a journal that was written to.
SYNC_EVERY = 0.5
#: The largest journal read (as large as the largest record).
MAX_JOURNAL_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class JournalTarget:
    """One eval set of a journalled run, as its head line keeps it (what its records need)."""

    eval_file: str
    eval_set_id: str
    app_name: str
    case_ids: list[str]
    kind: RunKind | None
    criteria: dict[str, Any]
    config_source: str | None

    def to_json(self) -> dict[str, Any]:
        return {"eval_file": self.eval_file, "eval_set_id": self.eval_set_id, "app_name": self.app_name,
                "case_ids": self.case_ids, "kind": self.kind.model_dump(mode="json") if self.kind else None,
                "criteria": self.criteria, "config_source": self.config_source}


def journal_name(run_id: str) -> str:
    return check_segment(f"{run_id}{JOURNAL_SUFFIX}", "run id")


class JournalWriter:
    """Writes one history folder's journal of a run (see the module's text). Not thread-safe for writes:
    the run's loop writes; the sync thread only fsyncs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise
        self._dirty = False
        self._closed = threading.Event()
        self._sync = threading.Thread(target=self._sync_loop, name="tui-eval-journal-sync", daemon=True)
        self._sync.start()

    def head(self, run_id: str, started: float, num_runs: int, targets: list[JournalTarget], agent: str | None,
             versions: RunVersions, executor: ExecutorInfo | None) -> None:
        self._write(orjson.dumps({
            "journal": JOURNAL_FORMAT, "run_id": run_id, "started": started, "num_runs": num_runs,
            "agent": agent, "pid": os.getpid(), "versions": versions.model_dump(mode="json"),
            "executor": executor.model_dump(mode="json") if executor is not None else None,
            "targets": [t.to_json() for t in targets]}) + b"\n")

    def case(self, result: CaseResult, repetition: int) -> None:
        """One finished case, written through at once."""
        head = orjson.dumps({"file": result.eval_set_file, "rep": repetition})[:-1]
        line = (head + b',"case":' + record_json(result)
                + b',"actual":' + orjson.dumps(result.actual, default=adk_json_default,
                                               option=orjson.OPT_NON_STR_KEYS) + b"}\n")
        self._write(line)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._dirty = True

    def _sync_loop(self) -> None:
        while not self._closed.wait(SYNC_EVERY):
            self._fsync()

    def _fsync(self) -> None:
        if self._dirty:
            self._dirty = False
            try:
                os.fsync(self._fd)
            except OSError as exc:  # a full disk: the lines are in the kernel's hands all the same
                log.warning("journal %s: fsync failed: %s", self.path, exc)

    def close(self, *, remove: bool) -> None:
        """Stop syncing, sync a last time, release the lock; `remove` the journal (its records are saved)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._sync.join(timeout=5)
        self._fsync()
        if remove:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        os.close(self._fd)  # closing releases the lock


class RunJournal:
    """A run's journals, one per history folder it saves to; `case` routes each finished case to its own."""

    def __init__(self, writers: dict[str, JournalWriter]) -> None:
        self._by_file = writers
        self.writers = list({id(w): w for w in writers.values()}.values())

    @property
    def name(self) -> str | None:
        """The journal's file name (the same in every folder)."""
        return self.writers[0].path.name if self.writers else None

    def case(self, result: CaseResult, repetition: int) -> None:
        writer = self._by_file.get(result.eval_set_file)
        if writer is None:
            return
        try:
            writer.case(result, repetition)
        except (OSError, TypeError, ValueError) as exc:  # a full disk, a case too deep for JSON: the run goes on
            log.warning("journal %s: case %s not written: %s", writer.path, result.eval_id, exc)

    def close(self, *, remove: bool) -> None:
        for writer in self.writers:
            writer.close(remove=remove)


@dataclass(slots=True)
class JournalContents:
    """What a journal holds: its head and each finished case (turns included)."""

    path: Path
    run_id: str
    started: float
    num_runs: int
    agent: str | None
    versions: RunVersions
    executor: ExecutorInfo | None
    targets: list[JournalTarget]
    #: (eval file, repetition) -> finished cases, in the order they finished.
    cases: dict[tuple[str, int], list[CaseResult]] = field(default_factory=dict)
    torn: bool = False


def read_journal(path: Path) -> JournalContents:
    """A journal's head and finished cases; a torn last line is skipped (and said). Raises RecordError."""
    from pydantic import ValidationError

    from ..schema.errors import LoadError, SchemaError
    from ..schema.load import read_invocation, read_regular_file
    from ..schema.results import CaseResult

    try:
        raw = read_regular_file(path, MAX_JOURNAL_BYTES)
    except LoadError as exc:
        raise RecordError(f"{path}: {exc.message}") from None
    lines = raw.split(b"\n")
    torn = bool(lines[-1])  # no newline after the last line: a write cut short
    body = [line for line in lines[:-1] if line] + ([lines[-1]] if torn else [])
    if not body:
        raise RecordError(f"{path}: an empty journal")
    try:
        head = orjson.loads(body[0])
        if not isinstance(head, dict) or head.get("journal") != JOURNAL_FORMAT:
            raise RecordError(f"{path}: not a tui-eval journal")
        targets = [JournalTarget(t["eval_file"], t["eval_set_id"], t["app_name"], list(t["case_ids"]),
                                 RunKind.model_validate(t["kind"]) if t.get("kind") else None,
                                 dict(t.get("criteria") or {}), t.get("config_source"))
                   for t in head["targets"]]
        out = JournalContents(path, str(head["run_id"]), float(head["started"]), int(head["num_runs"]),
                              head.get("agent"), RunVersions.model_validate(head.get("versions") or {}),
                              ExecutorInfo.model_validate(head["executor"]) if head.get("executor") else None,
                              targets)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, ValidationError) as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError(f"{path}: the journal's head cannot be read: {exc}") from None
    for i, line in enumerate(body[1:], start=1):
        last = i == len(body) - 1
        try:
            data = orjson.loads(line)
            actual = [read_invocation(inv, f"$.actual[{n}]") for n, inv in enumerate(data["actual"])]
            case = CaseResult.from_record(data["case"], actual)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, ValidationError, SchemaError) as exc:
            if last:  # the line a kill cut short
                out.torn = True
                log.info("%s: its last line is torn (the run was stopped while writing it); skipped", path)
                break
            raise RecordError(f"{path}: line {i + 1} cannot be read: {exc}") from None
        out.cases.setdefault((str(data["file"]), int(data["rep"])), []).append(case)
    return out


def writer_alive(path: Path) -> bool:
    """Whether the process writing a journal still runs (it holds the journal's lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # also releases the lock if it was taken
    return False


def interrupted_record_name(app_name: str, eval_set_id: str, run_id: str, repetition: int) -> str:
    """The stem of the record an interrupted run's eval set (and repetition) is saved under."""
    suffix = f"_run{repetition}" if repetition > 1 else ""
    return f"{name_segment(app_name, 'app name')}_{_escape_name(check_segment(eval_set_id, 'eval_set_id'))}_" \
           f"{_escape_name(run_id)}_interrupted{suffix}"


def settle_journals(directory: Path) -> list[Path]:
    """Each journal in a history folder whose writer is gone: an interrupted run, turned into run records
    with state `interrupted` (its finished cases; no ADK file), the journal kept for `--resume`; or, when
    the run's finished records are there (it was stopped between saving them and removing its journal),
    removed. A journal's records are written again only when it changed since. Returns the records written.
    A journal that cannot be read is logged and left."""
    written: list[Path] = []
    try:
        journals = sorted(directory.glob("*" + JOURNAL_SUFFIX))
    except OSError:
        return written
    for path in journals:
        if writer_alive(path):
            continue
        run_id = path.name.removesuffix(JOURNAL_SUFFIX)
        if _saved_states(directory, run_id) - {"interrupted"}:
            log.info("%s: its run's records were saved; the journal is removed", path)
            path.unlink(missing_ok=True)
            continue
        if _settled(directory, run_id, path):
            continue
        try:
            contents = read_journal(path)
        except RecordError as exc:
            log.warning("%s", exc)
            continue
        written += write_interrupted_records(contents, directory)
    return written


def _settled(directory: Path, run_id: str, journal: Path) -> bool:
    """Whether a journal's interrupted records are there and newer than it (a resumed run that was killed
    again wrote more cases to it: its records are then written again)."""
    records = list(directory.glob(f"*_{glob_escape(_escape_name(run_id))}_interrupted*{RECORD_SUFFIX}"))
    try:
        changed = journal.stat().st_mtime
        return bool(records) and all(r.stat().st_mtime >= changed for r in records)
    except OSError:
        return False


def _saved_states(directory: Path, run_id: str) -> set[str]:
    """The states of the records of `run_id` in a history folder."""
    from .store import read_record_head

    states = set()
    for record in directory.glob("*" + RECORD_SUFFIX):
        try:
            head = read_record_head(record)
        except RecordError:
            continue
        if head.get("run_id") == run_id:
            states.add(str(head.get("state") or ("cancelled" if head.get("cancelled") else "finished")))
    return states


def write_interrupted_records(contents: JournalContents, directory: Path) -> list[Path]:
    """The run records of an interrupted run's journal (one per eval set and repetition)."""
    from ..schema.fileio import atomic_write
    from ..schema.results import status_counts

    written = []
    now = time.time()
    for target in contents.targets:
        for rep in range(1, contents.num_runs + 1):
            stem = interrupted_record_name(target.app_name, target.eval_set_id, contents.run_id, rep)
            path = directory / (stem + RECORD_SUFFIX)
            cases = contents.cases.get((target.eval_file, rep), [])
            meta = RunMeta.model_construct(
                format=RECORD_FORMAT, run_id=contents.run_id, name=stem, state="interrupted", kind=target.kind,
                versions=contents.versions, journal=contents.path.name, gate=None, executor=contents.executor,
                adk_file=None, app_name=target.app_name, agent=contents.agent, eval_file=target.eval_file,
                eval_set_id=target.eval_set_id,
                creation_timestamp=min(contents.started, now), cancelled=False, coverage="interrupted",
                duration=0.0, criteria=target.criteria, config_source=target.config_source,
                counts={s.name: n for s, n in status_counts(cases).items()}, repetition=rep,
                num_runs=contents.num_runs, wall_seconds=None, source=None, insight=None, code_state=None,
                code_diff_file=None)
            try:
                atomic_write(path, record_chunks(meta.model_dump(mode="json"), cases))
            except OSError as exc:
                log.warning("%s: the interrupted run's record cannot be written: %s", path, exc)
                continue
            written.append(path)
    return written
