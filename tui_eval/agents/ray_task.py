"""What a Ray worker runs for `--executor ray`: one case of an agent folder, every turn streamed back.

The engine's Ray driver (`engine/ray_driver.py`) submits `stream_case` (a Ray streaming generator) or, over
Ray Client, `whole_case`, with the agent folder as a zip in Ray's object store and a `CaseJob`. A Ray worker
process unpacks the folder once per code version under its original name (the folder is imported as a
package named after itself, as `adk web` does), imports it once, and keeps it, with one event loop on a
thread of its own, for every later case of that version it is given. Items yielded: `("started", pid)`,
`("turn_start", i)`, `("turn", i, Invocation)`, then `("done", Inference, judge_stats)`; the turns are not
repeated in the Inference.

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

from .conversation import CaseJob, Inference, run_conversation

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeStats
    from ..judge.service import JudgeService
    from .base import Agent

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
_judge: JudgeService | None = None
_reported: JudgeStats | None = None
_home: tuple[str, dict[str, str]] | None = None


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
    global _home
    digest = box[1]
    with _lock:
        found = _agents.get(digest)
        if found is not None:
            return found
        from .worker import _warm_up, import_agent

        if not _agents:
            _warm_up()  # the models' validators, built once per worker rather than on its first cases
        agent = import_agent(_unpacked(box))
        _agents[digest] = agent
        # The agent's .env, as loaded, is part of its environment; what a tool changes later is not.
        _home = (os.getcwd(), dict(os.environ))
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


def _restore() -> None:
    """Put back the working folder and environment a tool changed (the next case in this worker shares them)."""
    if _home is None:
        return
    cwd, environ = _home
    try:
        if os.getcwd() != cwd:
            os.chdir(cwd)
    except OSError:
        os.chdir(cwd)
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)


def _judge_for(job: CaseJob) -> JudgeService:
    """The user simulator's judge service (scenario cases only), one per worker."""
    global _judge
    if _judge is None:
        from ..judge import JudgeOptions, create_judge_service

        options = JudgeOptions()
        for key, value in job.judge.items():
            setattr(options, key, value)
        _judge = create_judge_service(options)
    return _judge


def _judge_delta() -> JudgeStats | None:
    """The judge's counters since the last report (the engine adds them to the run's); None without one."""
    global _reported
    if _judge is None:
        return None
    now = _judge.stats.copy()
    delta = now.since(_reported) if _reported is not None else now.copy()
    _reported = now
    return delta


def probe(box: AgentBox) -> tuple[str, str | None]:
    """Load the agent in this worker: its name, or why it cannot be loaded."""
    agent = _agent(box)
    if isinstance(agent, str):
        return "", agent
    return agent.name, None


def case_items(box: AgentBox, job: CaseJob) -> Iterator[tuple[Any, ...]]:
    """Run one case and yield what happens, as it happens (see the module docstring)."""
    yield ("started", os.getpid())
    agent = _agent(box)
    if isinstance(agent, str):
        yield ("done", Inference(error=f"agent could not start a session: {agent}"), {})
        return
    loop = _event_loop()
    items: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()

    def on_turn(i: int, inv: Any) -> None:
        _restore()
        items.put(("turn", i, inv))

    async def conversation() -> None:
        judge = _judge_for(job) if job.case.is_scenario else None
        try:
            inference = await run_conversation(agent, job, judge=judge, on_turn=on_turn,
                                               on_turn_start=lambda i: items.put(("turn_start", i)))
        finally:
            _restore()
        inference.actual = []  # every turn went back as it finished
        items.put(("done", inference, _judge_delta()))

    future = asyncio.run_coroutine_threadsafe(conversation(), loop)
    try:
        while True:
            try:
                # A timeout, so that Ray's cancel (an exception raised in this thread) gets its chance.
                item = items.get(timeout=0.1)
            except queue.Empty:
                if not future.done():
                    continue
                future.result()  # the conversation itself failed (a bug of ours): Ray reports it
                try:
                    item = items.get_nowait()  # put just before the conversation ended
                except queue.Empty:
                    raise RuntimeError("the case ended without a result") from None
            yield item
            if item[0] == "done":
                return
    finally:
        if not future.done():
            future.cancel()
            try:
                future.result(CANCEL_WAIT)
            except BaseException as exc:  # noqa: BLE001 - cancelled, or failed while cancelling: it is over
                log.debug("case %s ended on its cancel: %r", job.eval_id, exc)


def stream_case(box: AgentBox, job: CaseJob) -> Iterator[tuple[Any, ...]]:
    """The Ray streaming generator task: each item reaches the driver as soon as it is yielded."""
    yield from case_items(box, job)


def whole_case(box: AgentBox, job: CaseJob) -> list[tuple[Any, ...]]:
    """The same as one plain task (Ray Client has no streaming generators): the items come back together."""
    return list(case_items(box, job))
