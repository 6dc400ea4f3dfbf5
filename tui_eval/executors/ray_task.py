"""What a Ray worker runs for `--executor ray`: one case of an agent folder, every turn streamed back.

The engine's Ray driver (`executors/ray_driver.py`) submits `stream_case` (a Ray streaming generator) or,
over Ray Client, `whole_case`, with the agent folder as a zip in Ray's object store, the case's job number
and its `protocol.CaseSpec`. A Ray worker process unpacks the folder once per code version under its
original name (the folder is imported as a package named after itself, as `adk web` does), imports it once,
and keeps it, with one event loop on a thread of its own, for every later case of that version it is given.
What it yields are frames of the protocol, exactly as a pool worker writes them (`executors/runtime.py`
runs the case in both): TurnStarted(-1) when the case starts, then TurnStarted/TurnFinished per turn and
CaseEnded.

Ray itself is only imported here inside a Ray worker (to read the zip); this module is importable without it.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import queue
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence, cast

from ..protocol import AgentLoaded, CaseEnded, CaseOutcome, CaseSpec, TurnStarted, encode
from .runtime import CaseRuntime, import_agent, warm_up

if TYPE_CHECKING:  # pragma: no cover
    from ..agents.base import Agent

#: (folder name, digest of its files, [ObjectRef of the zip]): the ref travels inside a list so that Ray
#: hands it over as a reference (fetched once per worker and code version), not as the bytes every time.
AgentBox = tuple[str, str, Sequence[Any]]

log = logging.getLogger(__name__)
_SKIP_DIRS = {"__pycache__", ".adk", ".git", ".venv", "venv", "node_modules"}
#: Seconds a cancelled case may take to close its session before the worker gives up on it.
CANCEL_WAIT = 2.0

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_agents: dict[str, Agent | str] = {}
_runtime = CaseRuntime()


def pack_folder(folder: Path) -> tuple[str, bytes]:
    """The agent folder as a zip (its name at the root; no caches, history or virtualenvs) and a digest of
    its files, which names the code version."""
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if name.endswith((".pyc", ".pyo")) or not path.is_file():
                    continue
                relative = path.relative_to(folder).as_posix()
                data = path.read_bytes()
                digest.update(relative.encode() + b"\0" + data + b"\0")
                archive.writestr(f"{folder.name}/{relative}", data)
    return digest.hexdigest(), buffer.getvalue()


def _unpacked(box: AgentBox) -> Path:
    """The folder of this code version on this machine (unpacked once; other workers may race)."""
    name, digest, (ref,) = box
    root = Path(tempfile.gettempdir()) / "tui-eval-ray" / digest
    folder = root / name
    if folder.is_dir():
        return folder
    import ray

    data = cast(bytes, ray.get(ref))
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=root.parent))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(staging)
    try:
        os.rename(staging, root)
    except OSError:  # another worker got there first
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _agent(box: AgentBox) -> Agent | str:
    """The loaded agent of this code version, or why it cannot be loaded."""
    digest = box[1]
    with _lock:
        found = _agents.get(digest)
        if found is not None:
            return found
        if not _agents:
            warm_up()  # the models' validators, built once per worker rather than on its first cases
        agent = import_agent(_unpacked(box))
        _agents[digest] = agent
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
    """Run one case and yield its reports as frames, as they happen (see the module docstring)."""
    yield encode(TurnStarted(job_id, -1))
    agent = _agent(box)
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
