"""Read eval set files (current schema and both legacy `.test.json` forms) into the data model.

JSON is parsed with orjson, then validated by the pydantic models of `model.py` (faster than
`model_validate_json` on the bench file). Every fault of a file is reported at once (up to 20),
each with its JSON path; top-level keys ADK ignores load with a warning.
"""

from __future__ import annotations

import difflib
import errno
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_snake

from .errors import Issue, LoadError, SchemaError, did_you_mean, issues_of, json_type_name, schema_error, syntax_error
from .legacy import is_legacy, read_legacy
from .fast import fast_paths_on, read_one_case_at_a_time, share_loaded_fields_sets
from .model import Content, EvalCase, EvalSet, Invocation, LoadContext

logger = logging.getLogger(__name__)

EVAL_FILE_SUFFIXES = (".evalset.json", ".test.json")

_TOP_KEYS = tuple(EvalSet.model_fields)
_REQUIRED_TOP = tuple(name for name, info in EvalSet.model_fields.items() if info.is_required())

M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], data: Any, root: str, context: LoadContext | None = None) -> M:
    """`model.model_validate(data)`, faults raised as one SchemaError with paths under `root`."""
    try:
        return model.model_validate(data, context=context or LoadContext())
    except ValidationError as exc:
        raise schema_error(issues_of(exc, model, root)) from None


def read_content(data: Any, path: str = "$") -> Content:
    return _validate(Content, data, path)


def read_invocation(data: Any, path: str = "$", *, ours: bool = False) -> Invocation:
    """An ADK Invocation; `ours`: one of our own records (a run record, a turn from an agent process),
    which also keeps our per-turn fields (`Invocation.to_wire`)."""
    return _validate(Invocation, data, path, LoadContext(adk_file=False) if ours else None)


def read_eval_case(data: Any, path: str = "$") -> EvalCase:
    return _validate(EvalCase, data, path)


def _top_level(data: dict[str, Any]) -> tuple[list[Issue], list[str], set[str]]:
    """(errors, warnings, required keys whose misspelling was already reported) of the top-level keys.

    ADK's EvalSet is a plain model: unknown top-level keys are ignored, so they load with a warning,
    unless the key is a misspelling of a required key that is missing (then ADK rejects the file, and
    the misspelt key is the useful place to point at).
    """
    errors: list[Issue] = []
    warnings: list[str] = []
    covered: set[str] = set()
    for key in data:
        if key in _TOP_KEYS:
            continue
        snake = to_snake(key)
        if snake in _TOP_KEYS:
            target: str | None = snake
            hint = f" (top-level keys are snake_case: use {snake!r})"
        else:
            close = difflib.get_close_matches(key, _TOP_KEYS, n=1, cutoff=0.6)
            target = close[0] if close else None
            hint = did_you_mean(key, _TOP_KEYS)
        if target in _REQUIRED_TOP and target not in data:
            errors.append(Issue(f"$.{key}", f"unknown top-level key {key!r}{hint}"))
            covered.add(target)
        else:
            warnings.append(f"$.{key}: unknown top-level key {key!r} ignored{hint}")
    return errors, warnings, covered


def _duplicate_ids(data: dict[str, Any]) -> list[Issue]:
    cases = data.get("eval_cases")
    if not isinstance(cases, list):
        return []
    seen: set[Any] = set()
    issues = []
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            continue
        eval_id = case.get("eval_id", case.get("evalId"))
        if isinstance(eval_id, str):
            if eval_id in seen:
                issues.append(Issue(f"$.eval_cases[{i}].eval_id", f"duplicate eval_id {eval_id!r}"))
            seen.add(eval_id)
    return issues


def read_eval_set(data: Any) -> EvalSet:
    """The current schema: validate a parsed JSON object. Raises SchemaError with every fault."""
    if not isinstance(data, dict):
        raise SchemaError("$", f"expected an object, got {json_type_name(data)}")
    issues, warnings, covered = _top_level(data)
    context = LoadContext()
    eval_set: EvalSet | None = None
    try:
        eval_set = EvalSet.model_validate(data, context=context)
    except ValidationError as exc:
        found = issues_of(exc, EvalSet)
        issues.extend(i for i in found if not (i.json_path == "$" and _missing_key(i) in covered))
    issues.extend(_duplicate_ids(data))
    if issues or eval_set is None:
        raise schema_error(issues)
    eval_set.load_warnings = warnings + context.warnings()
    return eval_set


def _missing_key(issue: Issue) -> str | None:
    prefix = "missing required key '"
    if issue.message.startswith(prefix):
        return issue.message[len(prefix):-1]
    return None


def eval_set_id_for(path: Path) -> str:
    """The id a legacy file gets: its name without the eval-file suffix."""
    name = path.name
    for suffix in EVAL_FILE_SUFFIXES + (".json",):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def encoding_problem(raw: bytes) -> str | None:
    """Why these bytes are not UTF-8 JSON text when their encoding says so (UTF-16 or UTF-32, as
    PowerShell and some editors write; a UTF-8 byte order mark), else None."""
    head = raw[:4]
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        found = "UTF-32"
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        found = "UTF-16"
    elif len(head) >= 4 and (head[1] == head[3] == 0 != head[0] or head[0] == head[2] == 0 != head[1]):
        found = "UTF-16"  # no byte order mark: ASCII with a zero byte before or after each character
    elif head.startswith(b"\xef\xbb\xbf"):
        return "the file starts with a byte order mark (BOM): save it as UTF-8 without a BOM"
    else:
        return None
    return f"the file is {found} encoded: save it as UTF-8 (ADK reads UTF-8 only)"


def decode_json_text(raw: bytes) -> str:
    """A JSON file's text: UTF-8, or a ValueError that names the encoding it is in instead."""
    problem = encoding_problem(raw)
    if problem is not None:
        raise ValueError(problem)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start}): save the file as UTF-8") from None


def loads_json(raw: bytes, path: str | Path) -> Any:
    """Parse a JSON file as ADK (pydantic) does: `NaN`, `Infinity` and `-Infinity` are numbers. orjson
    parses the common case; a file it refuses is read again by the standard library, which takes those
    words, before its error is reported (with the encoding when that is the fault). Raises LoadError."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        problem = encoding_problem(raw)
        if problem is not None:
            raise LoadError(str(path), f"invalid JSON: {problem}") from None
        if b"NaN" in raw or b"Infinity" in raw:
            try:
                return json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
                pass  # orjson's error names the place of the first fault
        raise syntax_error(path, exc) from None


def parse_eval_set(raw: bytes, path: str | Path) -> tuple[EvalSet, bool]:
    """Parse bytes into an EvalSet; returns (eval_set, is_legacy). Raises LoadError."""
    path = Path(path)
    data = loads_json(raw, path)
    if not is_legacy(data):
        quick = read_one_case_at_a_time(data)  # (schema/fast.py; None when the fast paths are off)
        if quick is not None:
            for warning in quick.load_warnings:
                logger.warning("%s: %s", path, warning)
            return quick, False
        if fast_paths_on():
            data = loads_json(raw, path)  # spent by the attempt: the full reader reports every fault
    try:
        if is_legacy(data):
            return read_legacy(data, eval_set_id_for(path)), True
        eval_set = read_eval_set(data)
    except SchemaError as exc:
        raise exc.at(path) from None
    for warning in eval_set.load_warnings:
        logger.warning("%s: %s", path, warning)
    return eval_set, False


def _not_regular(mode: int) -> str:
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a folder" if stat.S_ISDIR(mode) else "not a plain file")
    return f"cannot read file: it is {kind}, not a regular file"


def _cannot_read(path: Path, exc: OSError) -> LoadError:
    if exc.errno == errno.ELOOP:
        return LoadError(str(path), "cannot read file: symlink loop")
    return LoadError(str(path), f"cannot read file: {exc.strerror or exc}")


#: The largest eval file (or config, or CES file) read: 256 MiB, about 60,000 cases of the size of
#: bench/headless_run.py's (20 MB for 5,000). Parsing needs several times the file's size in memory: a
#: 2 GiB file made the JSON parser fail to allocate (a segfault under a 4 GB cap). Larger files are
#: refused with a clear error; $TUI_EVAL_MAX_FILE_MB raises (or lowers) the limit.
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_FILE_ENV = "TUI_EVAL_MAX_FILE_MB"


def max_file_bytes() -> int:
    """The size limit of the files a run reads (`MAX_FILE_BYTES`, or $TUI_EVAL_MAX_FILE_MB megabytes)."""
    raw = os.environ.get(MAX_FILE_ENV, "").strip()
    if raw:
        try:
            megabytes = float(raw)
        except ValueError:
            logger.warning("$%s=%r is not a number of megabytes; the limit stays %d MB", MAX_FILE_ENV, raw,
                           MAX_FILE_BYTES >> 20)
        else:
            if megabytes > 0 and megabytes == megabytes:
                return int(megabytes * 1024 * 1024)
    return MAX_FILE_BYTES


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB" if n < 1024 ** 3 else f"{n / 1024 ** 3:,.2f} GB"


def _too_large(size: int, limit: int) -> str:
    return (f"cannot read file: it is too large ({_megabytes(size)}; files up to {_megabytes(limit)} are read, "
            f"set ${MAX_FILE_ENV} to change that)")


def read_regular_file(path: str | Path, max_bytes: int | None = -1) -> bytes:
    """The bytes of a regular file. A FIFO, socket, device or folder with an eval file's name (or a
    symlink loop) is a LoadError, never a read that blocks: the type is checked before opening, and the
    open is non-blocking and checked again, in case the file was swapped in between. A file larger than
    `max_bytes` (default `max_file_bytes()`; None: no limit) is a LoadError before anything is read."""
    path = Path(path)
    limit = max_file_bytes() if max_bytes == -1 else max_bytes
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise LoadError(str(path), _not_regular(mode))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _cannot_read(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(str(path), _not_regular(st.st_mode))
        if limit is not None and st.st_size > limit:
            raise LoadError(str(path), _too_large(st.st_size, limit))
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            if limit is None:
                return fh.read()
            data = fh.read(limit + 1)  # a file that grew since fstat is cut off, never read whole
            if len(data) > limit:
                raise LoadError(str(path), _too_large(len(data), limit))
            return data
    except OSError as exc:
        raise _cannot_read(path, exc) from None
    finally:
        if fd >= 0:
            os.close(fd)


def read_json_file(path: str | Path) -> Any:
    """A JSON file's parsed value: read as `read_regular_file` reads (never blocking on a FIFO); a syntax
    error is a LoadError with line:column. Eval files, configs and CES files all come through here."""
    path = Path(path)
    return loads_json(read_regular_file(path), path)


def load_eval_set(path: str | Path) -> EvalSet:
    """Read one eval file. Raises LoadError naming the file (and place) of every fault.

    Its models share their fields-sets (`fast.share_loaded_fields_sets`): a run holds both eval sets
    for its whole length (peak RSS: bench/README.md). The dashboard's workspace parses with
    `parse_eval_set`, which does not: its start-up load is timed (bench/tui_startup.py).
    """
    path = Path(path)
    eval_set = parse_eval_set(read_regular_file(path), path)[0]
    share_loaded_fields_sets(eval_set.eval_cases)
    return eval_set
