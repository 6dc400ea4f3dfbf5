"""What a Ray worker runs for `--executor ray`: one case of an agent folder, every turn streamed back.

The engine's Ray driver (`executors/ray_driver.py`) submits `stream_case` (a Ray streaming generator) or,
over Ray Client, `whole_case`, with an `AgentBox` (the agent folder as a zip in Ray's object store, the
run's token, the agent's allowlisted variables), the case's job number and its `protocol.CaseSpec`. A Ray
worker process unpacks the folder once per code version under its original name (the folder is imported
as a package named after itself, as `adk web` does) in this user's private folder, checks the copy against
the digest of what was packed, imports it once, and keeps it, with one event loop on a thread of its own,
for every later case of that version it is given.
What it yields are frames of the protocol, exactly as a pool worker writes them (`executors/runtime.py`
runs the case in both): TurnStarted(-1) when the case starts, then TurnStarted/TurnFinished per turn and
CaseEnded.

Ray itself is only imported here inside a Ray worker (to read the zip); this module is importable without it.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import queue
import shutil
import stat
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence, cast

from ..protocol import AgentLoaded, CaseEnded, CaseOutcome, CaseSpec, TurnStarted, encode
from .runtime import CaseRuntime, import_agent, warm_up

if TYPE_CHECKING:  # pragma: no cover
    from ..agents.base import Agent

log = logging.getLogger(__name__)
#: Folders never packed: caches, history, version control, virtualenvs.
SKIP_DIRS = frozenset({"__pycache__", ".adk", ".git", ".venv", "venv", "node_modules"})
#: Bytes of files an agent folder may hold to be sent to Ray (TUI_EVAL_RAY_MAX_FOLDER_MB raises it).
MAX_FOLDER_BYTES = int(float(os.environ.get("TUI_EVAL_RAY_MAX_FOLDER_MB") or 100) * 1_000_000)
#: Seconds a cancelled case may take to close its session before the worker gives up on it.
CANCEL_WAIT = 2.0


class FolderTooLarge(OSError):
    """The agent folder holds more than Ray is sent (`MAX_FOLDER_BYTES`)."""


@dataclass(frozen=True, slots=True)
class AgentBox:
    """What every task of a run is given: the agent folder's name, the digest of its files, the zip in
    Ray's object store, the run's token (its unpacked copies live under it) and the environment the
    agent gets (the engine's allowlisted variables: they travel with the task, never in a runtime
    environment, which Ray writes to its logs)."""

    name: str
    digest: str
    #: [ObjectRef of the zip]: inside a list, so Ray hands the ref over (fetched once per worker and code
    #: version), not the bytes every time.
    data: Sequence[Any]
    run: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.run}/{self.digest}"


_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_agents: dict[str, Agent | str] = {}
_runtime = CaseRuntime()


def _packed_files(folder: Path) -> Iterator[tuple[str, Path, int]]:
    """(relative name, path, size) of each regular file to pack, in a stable order. A link is packed only
    when it points at a regular file inside the folder; links out of it (`/proc/self/environ`, a file
    elsewhere), FIFOs and devices are left out."""
    root = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(root):  # links to folders are never walked into
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith((".pyc", ".pyo")):
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    log.warning("%s points out of the agent folder: not sent to Ray", path)
                    continue
                path = target
            try:
                info = path.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield (Path(dirpath) / name).relative_to(root).as_posix(), path, info.st_size


def _digest_of(files: Iterator[tuple[str, bytes]]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for relative, data in files:
        digest.update(relative.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def pack_folder(folder: Path, *, limit: int | None = None) -> tuple[str, bytes]:
    """The agent folder as a zip (its name at the root; no caches, history, version control or
    virtualenvs, no link out of it) and a digest of its files, which names the code version. Raises
    FolderTooLarge before reading anything when its files hold more than `limit` bytes."""
    limit = MAX_FOLDER_BYTES if limit is None else limit
    files = list(_packed_files(folder))
    total = sum(size for _, _, size in files)
    if total > limit:
        largest = sorted(files, key=lambda f: -f[2])[:3]
        named = ", ".join(f"{rel} ({size / 1e6:,.1f} MB)" for rel, _, size in largest)
        raise FolderTooLarge(
            f"the agent folder {folder} holds {total / 1e6:,.1f} MB of files, over the {limit / 1e6:,.0f} MB "
            f"sent to Ray (largest: {named}); move data out of it, or raise TUI_EVAL_RAY_MAX_FOLDER_MB")
    contents: list[tuple[str, bytes]] = []
    budget = limit
    for relative, path, _size in files:
        with path.open("rb") as handle:  # a file that grew since: read no more than the bound
            data = handle.read(budget + 1)
        budget -= len(data)
        if budget < 0:
            raise FolderTooLarge(f"the agent folder {folder} grew past the {limit / 1e6:,.0f} MB sent to Ray")
        contents.append((relative, data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for relative, data in contents:
            archive.writestr(f"{folder.name}/{relative}", data)
    return _digest_of(iter(contents)), buffer.getvalue()


def _unpacked_digest(folder: Path) -> str:
    """The digest `pack_folder` gives the files of an unpacked copy (what it would pack of it)."""
    return _digest_of((rel, path.read_bytes()) for rel, path, _ in _packed_files(folder))


def _root() -> Path:
    return Path(tempfile.gettempdir()) / f"tui-eval-ray-{os.getuid()}"


def private_root() -> Path:
    """This user's folder for unpacked agent copies, `TMPDIR/tui-eval-ray-UID`, made private (0700). One
    that is not a folder of this user's is never used: a fresh private one is made instead."""
    root = _root()
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(root)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            if info.st_mode & 0o077:
                os.chmod(root, 0o700)
            return root
        log.warning("%s is not this user's folder: not used", root)
    except OSError as exc:
        log.warning("cannot use %s: %s", root, exc)
    return Path(tempfile.mkdtemp(prefix="tui-eval-ray-"))


def remove_run(run: str) -> bool:
    """Remove this machine's unpacked copies of a run (the driver sends a task to each node at the end)."""
    shutil.rmtree(_root() / run, ignore_errors=True)
    return True


def _unpacked(box: AgentBox) -> Path:
    """The folder of this code version on this machine: an unpacked copy whose files have the box's
    digest (checked before every use), else a fresh one."""
    parent = private_root() / box.run
    folder = parent / box.digest / box.name
    if folder.is_dir() and _unpacked_digest(folder) == box.digest:
        return folder
    import ray

    (ref,) = box.data
    data = cast(bytes, ray.get(ref))
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{box.digest}.", dir=parent))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(staging)
    if _unpacked_digest(staging / box.name) != box.digest:
        shutil.rmtree(staging, ignore_errors=True)
        raise OSError("the agent's files arrived changed (their digest does not match what was packed)")
    try:
        os.rename(staging, parent / box.digest)
    except OSError:  # another worker got there first, or a copy that failed its check is in the way
        return staging / box.name
    return folder


def _agent(box: AgentBox) -> Agent | str:
    """The loaded agent of this code version, or why it cannot be loaded."""
    with _lock:
        found = _agents.get(box.key)
        if found is not None:
            return found
        if not _agents:
            warm_up()  # the models' validators, built once per worker rather than on its first cases
        os.environ.update(box.env)  # the engine's allowlisted variables, before the agent reads them
        try:
            agent = import_agent(_unpacked(box))
        except OSError as exc:
            agent = f"cannot unpack the agent folder: {exc}"
        _agents[box.key] = agent
        # The agent's .env, as loaded, is part of its environment; what a tool changes later is not.
        _runtime.settle()
        return agent


def _event_loop() -> asyncio.AbstractEventLoop:
    """One loop for the life of this worker: the agent's and the judge's clients stay bound to it."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="tui-eval-agent-loop", daemon=True).start()
            _loop = loop
        return _loop


def probe(box: AgentBox) -> bytes:
    """Load the agent in this worker: an AgentLoaded frame with its name, or why it cannot be loaded."""
    agent = _agent(box)
    if isinstance(agent, str):
        return encode(AgentLoaded("", agent))
    return encode(AgentLoaded(agent.name))


def case_items(box: AgentBox, job_id: int, spec: CaseSpec) -> Iterator[bytes]:
    """Run one case and yield its reports as frames, as they happen (see the module docstring). The agent
    is loaded first (a fresh Ray worker imports it): the case's clock starts with its first report."""
    agent = _agent(box)
    yield encode(TurnStarted(job_id, -1))
    if isinstance(agent, str):
        yield encode(CaseEnded(job_id, CaseOutcome(error=f"agent could not start a session: {agent}")))
        return
    loop = _event_loop()
    frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    async def conversation() -> None:
        try:
            await _runtime.run(agent, job_id, spec, frames.put)
        finally:
            frames.put(None)

    future = asyncio.run_coroutine_threadsafe(conversation(), loop)
    try:
        while True:
            try:
                # A timeout, so that Ray's cancel (an exception raised in this thread) gets its chance.
                frame = frames.get(timeout=0.1)
            except queue.Empty:
                continue
            if frame is None:
                future.result()  # the conversation itself failed (a bug of ours): Ray reports it
                return
            yield frame
    finally:
        if not future.done():
            future.cancel()
            try:
                future.result(CANCEL_WAIT)
            except BaseException as exc:  # noqa: BLE001 - cancelled, or failed while cancelling: it is over
                log.debug("case %s ended on its cancel: %r", spec.eval_id, exc)


def stream_case(box: AgentBox, job_id: int, spec: CaseSpec) -> Iterator[bytes]:
    """The Ray streaming generator task: each frame reaches the driver as soon as it is yielded."""
    yield from case_items(box, job_id, spec)


def whole_case(box: AgentBox, job_id: int, spec: CaseSpec) -> list[bytes]:
    """The same as one plain task (Ray Client has no streaming generators): the frames come back together."""
    return list(case_items(box, job_id, spec))
