"""The Ray driver of `--executor ray`: a process of its own that connects to Ray and runs each case as a Ray task.

Started by `executors/ray.py` (`python -m tui_eval.executors.ray_driver --fd N`); it speaks the protocol a
pool worker speaks (`protocol.py`). Each Ray task yields its reports as frames; the driver checks every one
(a frame of the protocol, about the case it was given) before it passes it on, byte for byte.

Why a process of its own: a Ray driver brings a dozen threads, C++ signal handlers (SIGTERM among them)
and prints of its own on stdout (`(raylet) A worker died...`). None of that may reach the run's output,
its Ctrl-C or the dashboard's GIL; here it reaches the engine's log.

Each case is a Ray streaming generator task (`executors/ray_task.py`), so turns arrive as they finish. The
agent folder travels as a zip in Ray's object store; each code version gets Ray worker processes of its
own (its digest is in the task's runtime environment), so an edited agent is imported fresh, never
reloaded in place. A turn's own timer runs in the Ray worker; a worker whose loop stops answering (C code
holding the GIL) is force-cancelled here once its turn is past the deadline. Over Ray Client
(`ray://HOST:PORT`), which has no streaming generators, a case is one plain task and its turns arrive
when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..protocol import (AgentLoaded, CancelCase, CaseEnded, CaseOutcome, CaseSpec, LoadAgent, ProtocolError,
                        ReloadAgent, RunCase, Stop, TurnFinished, TurnStarted, check_body, check_head, decode_report,
                        encode, read_command)
from .child import TurnClock, deadline_after
from .runtime import close_writer, die_with_parent, start_child

log = logging.getLogger(__name__)

#: CPUs one case asks Ray for (each case runs in a Ray worker process of its own). One, Ray's default:
#: Ray keeps about one idle worker per CPU warm, so with less it starts and kills workers all the time
#: (bench/ray_overhead.py; its figures are in bench/README.md).
#: TUI_EVAL_RAY_CASE_CPUS=0.25 suits agents that mostly wait for their model on a cluster with CPUs
#: to spare.
CASE_CPUS = float(os.environ.get("TUI_EVAL_RAY_CASE_CPUS") or 1)
#: Seconds a cancelled case may take to end on its own before its Ray worker is killed.
CANCEL_GRACE = 2.0
#: Seconds to reach a cluster's address (and have it answer one call) before saying it cannot be reached.
CONNECT_TIMEOUT = 5.0
#: Seconds a Ray instance tui-eval starts may take to come up.
HEAD_TIMEOUT = 120.0
#: Seconds a Ray worker may take to start and import the agent, over Ray Client (where the case's own
#: clock cannot start when its task does).
WORKER_START = 60.0
#: Seconds each step of closing (removing unpacked copies, disconnecting, stopping a started instance) may take.
CLOSE_STEP = 5.0
#: Seconds after a Ray worker died before saying it was the agent's doing: long enough for Ray to notice a
#: node or raylet that died with it.
CRASH_SETTLE = 1.0
INSTALL_HINT = "pip install 'tui-eval[ray]'"
#: Variables of the engine's environment that reach the agent on Ray (its model's keys and endpoints,
#: tui-eval's own settings). They travel with each task (`ray_task.AgentBox`), never in Ray's runtime
#: environment, which Ray writes to its logs; anything else an agent needs goes in its folder's .env.
ALLOWED_PREFIXES = ("GOOGLE_", "GEMINI_", "OPENAI_", "TUI_EVAL_")
#: What the Ray driver and a Ray instance tui-eval starts keep of the environment besides the allowlist
#: and Ray's own settings (RAY_*): enough to run Python and find files, nothing secret.
BASE_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
                  "PYTHONPATH", "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR")
#: Words that start the error of a case Ray's infrastructure stopped (`engine.causes` counts them as an
#: infrastructure error: the run is incomplete, exit 3, not failed).
NODE_LOST = "Ray node lost"
CLUSTER_FAILED = "Ray cluster failed"


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of an environment that reach the agent on Ray (`ALLOWED_PREFIXES`)."""
    return {k: v for k, v in environ.items() if k.startswith(ALLOWED_PREFIXES)}


def driver_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The Ray driver's environment: `BASE_VARIABLES`, Ray's settings and the allowlisted variables."""
    return {k: v for k, v in environ.items() if k in BASE_VARIABLES or k.startswith(("RAY_", *ALLOWED_PREFIXES))}


def is_loopback(address: str | None) -> bool:
    """Whether a Ray address is on this machine (None: a local instance is started or joined)."""
    if not address:
        return True
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def uses_tls(environ: Mapping[str, str]) -> bool:
    """Whether Ray's connections are encrypted (`RAY_USE_TLS`)."""
    return environ.get("RAY_USE_TLS", "").lower() in ("1", "true")


def probe_address(address: str) -> str | None:
    """Why a cluster address cannot be reached (a TCP connection to it), or None."""
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return f"not a Ray address: {address!r} (HOST:PORT, or ray://HOST:PORT)"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        return f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
    return None


def auth_token(environ: Mapping[str, str]) -> str | None:
    """The Ray token this side sends, as Ray finds it, or None when this side has token authentication
    off (`RAY_AUTH_MODE=disabled`, or unset with no token found); "" when it is on without a token."""
    mode = environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled":
        return None
    token = environ.get("RAY_AUTH_TOKEN", "").strip()
    if not token:
        for path in (environ.get("RAY_AUTH_TOKEN_PATH"), str(Path(environ.get("HOME") or "~").expanduser()
                                                              / ".ray" / "auth_token")):
            try:
                token = Path(path).read_text().strip() if path else ""
            except OSError:
                token = ""
            if token:
                break
    if mode == "token":
        return token
    return token or None


def probe_auth(address: str, environ: Mapping[str, str]) -> str | None:
    """One call to the cluster (to its GCS, or over `ray://` to its Ray Client server), with the token Ray
    would send: None when it answers, else why Ray could not work with it, naming RAY_AUTH_MODE. Ray itself
    retries such a cluster for 20-30 s and then says nothing of authentication, or (token on here, off
    there) connects and never runs a case."""
    if uses_tls(environ):
        return None  # the call would need the cluster's certificates: Ray's own connection says what is wrong
    import grpc  # type: ignore[import-untyped]

    client = address.startswith("ray://")
    target = address.removeprefix("ray://")
    method = "/ray.rpc.RayletDriver/ClusterInfo" if client else "/ray.rpc.NodeInfoGcsService/GetClusterId"
    token = auth_token(environ)
    if token == "":
        return ("RAY_AUTH_MODE=token, but no Ray token is set here: set RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH "
                "(or write it to ~/.ray/auth_token), or RAY_AUTH_MODE=disabled for a cluster without authentication")

    def call(with_token: bool) -> Any:
        metadata = (("authorization", f"Bearer {token}"),) if with_token and token else ()
        with grpc.insecure_channel(target) as channel:
            stub = channel.unary_unary(method)
            try:
                stub(b"", timeout=CONNECT_TIMEOUT, metadata=metadata)
            except grpc.RpcError as exc:
                return exc.code()
        return grpc.StatusCode.OK

    code = call(True)
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
        return (f"the Ray cluster at {address} does not answer (no reply within {CONNECT_TIMEOUT:g} s): a stale "
                "address, or not a Ray cluster")
    if code == grpc.StatusCode.UNAUTHENTICATED:
        if token is None:
            return (f"the Ray cluster at {address} requires token authentication, and this side has none "
                    "(RAY_AUTH_MODE is not token and no token was found): set RAY_AUTH_MODE=token and "
                    "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's token")
        return (f"the Ray cluster at {address} refused this side's token (RAY_AUTH_MODE=token): set "
                "RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH to the cluster's token")
    if token is not None and not client and call(False) != grpc.StatusCode.UNAUTHENTICATED:
        return (f"the Ray cluster at {address} has token authentication off, but this side has it on "
                "(RAY_AUTH_MODE=token, or a token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): "
                "its workers could not report to this driver. Set RAY_AUTH_MODE=disabled to join it")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalHead:
    """A Ray instance on 127.0.0.1 for one run: `ray start --head --block` as a child process with only
    `BASE_VARIABLES` of the environment (nothing else of the engine's reaches its workers), token
    authentication with a token of its own (no other user of this machine can join it), its files in a
    private temporary folder. `stop` ends its whole process group and removes the folder; it also ends
    when the driver does, however the driver ends."""

    def __init__(self) -> None:
        # Ray's socket paths must stay short: under /tmp, whatever TMPDIR says.
        self.temp = Path(tempfile.mkdtemp(prefix="tui-eval-ray-head-", dir="/tmp"))
        self.token = secrets.token_hex(32)
        self.port = _free_port()
        self.log = self.temp / "head.log"
        ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray") or "ray"
        env = {k: v for k, v in os.environ.items() if k in BASE_VARIABLES}
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.token, RAY_USAGE_STATS_ENABLED="0",
                   RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [ray_cli, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(self.port),
                 "--ray-client-server-port", str(_free_port()), "--dashboard-agent-listen-port", str(_free_port()),
                 "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(self.temp)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                preexec_fn=lambda: die_with_parent(signal.SIGTERM))  # `ray start --block` stops what it started

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait(self, deadline: float) -> str | None:
        """Block until the instance is up: None, or why it did not come up."""
        while True:
            try:
                text = self.log.read_bytes()
            except OSError:
                text = b""
            if b"Ray runtime started" in text:
                return None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                last = [line for line in text.decode(errors="replace").splitlines() if line.strip()][-1:]
                why = "it ended" if self.proc.poll() is not None else f"it took over {HEAD_TIMEOUT:g} s"
                return f"could not start a Ray instance on 127.0.0.1 ({why}){': ' + last[0][:300] if last else ''}"
            time.sleep(0.2)

    def stop(self) -> None:
        """End the instance (Ray's own stop first, then its process group) and remove its files."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(2 * CLOSE_STEP)
            except subprocess.TimeoutExpired:
                log.warning("the Ray instance did not stop within %g s; it was killed", 2 * CLOSE_STEP)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of it is left
        except OSError:
            pass
        self.proc.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


@dataclass(slots=True, eq=False)
class _Job:
    spec: CaseSpec
    clock: TurnClock
    handle: Any = None
    task: asyncio.Task[None] | None = None
    timed_out: bool = False
    cancelled: bool = False


class _Driver:
    def __init__(self, writer: asyncio.StreamWriter, run_token: str) -> None:
        self.writer = writer
        self.folder: Path | None = None
        self.address: str | None = None
        self.client = False
        self.head: LocalHead | None = None
        self.connected = False
        #: Names the run's unpacked copies on every node (the engine removes this machine's too).
        self.run_token = run_token
        self.box: Any = None
        self.digest = ""
        self.dead_nodes = 0
        self.jobs: dict[int, _Job] = {}
        self._remote: dict[str, Any] = {}
        self._watchdog: asyncio.Task[None] | None = None

    def send(self, frame: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(frame)

    # ---- connecting and loading --------------------------------------------------------------

    def connect(self, target: str | None) -> str | None:
        """ray.init (blocking): None, or why Ray cannot be reached. With no target, the instance this
        driver started (`self.head`)."""
        if self.connected:
            return None
        if self.head is not None:
            error = self.head.wait(time.monotonic() + HEAD_TIMEOUT)
            if error is not None:
                return error
            # This driver speaks to the instance it started with that instance's token, whatever the
            # user's Ray settings say (set before Ray is imported: it reads them once).
            os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.head.token)
            os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
            target = self.head.address
        elif target and target not in ("auto", "local"):
            unreachable = probe_address(target) or probe_auth(target, os.environ)
            if unreachable is not None:
                return unreachable
        try:
            import ray
        except ImportError:
            return f"Ray is not installed: {INSTALL_HINT}"
        self.client = bool(target and target.startswith("ray://"))
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if not self.client:
            kwargs["include_dashboard"] = False
        # tui-eval's own code travels with the job, so a cluster runs the engine's version of it (the
        # cluster's nodes need its dependencies: pip install 'tui-eval[ray]' there too).
        package = Path(__file__).resolve().parents[1]
        kwargs["runtime_env"] = {"py_modules": [str(package)], "excludes": ["__pycache__", "*.pyc"]}
        try:
            ray.init(address=target, **kwargs)
        except Exception as exc:  # ConnectionError, RuntimeError, auth errors: said in one line
            where = f"the Ray cluster at {target}" if target else "a local Ray instance"
            text = str(exc).strip().split("\n", 1)[0] or type(exc).__name__
            return f"cannot connect to {where}: {text}"
        self.connected = True
        self.dead_nodes = self._count_dead_nodes()
        return None

    @staticmethod
    def _count_dead_nodes() -> int:
        import ray

        nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        return sum(1 for node in nodes if not node.get("Alive", True))

    def remote(self, name: str) -> Any:
        """The Ray remote function `name` of executors/ray_task.py."""
        found = self._remote.get(name)
        if found is None:
            import ray

            from . import ray_task

            if name == "stream":
                found = ray.remote(num_returns="streaming", max_retries=0, num_cpus=CASE_CPUS)(
                    ray_task.stream_case)
            elif name == "whole":
                found = ray.remote(max_retries=0, num_cpus=CASE_CPUS)(ray_task.whole_case)
            elif name == "remove":
                found = ray.remote(max_retries=0, num_cpus=0)(ray_task.remove_run)
            else:
                found = ray.remote(max_retries=0, num_cpus=CASE_CPUS)(ray_task.probe)
            self._remote[name] = found
        return found

    def options(self, name: str) -> Any:
        """The remote function with this code version's runtime environment (made once per version)."""
        key = f"{name}@{self.digest}"
        found = self._remote.get(key)
        if found is None:
            # The run and the digest in the environment give each code version of a run Ray worker
            # processes of its own. Nothing else goes there: Ray logs a runtime environment.
            env = {"TUI_EVAL_AGENT_CODE": f"{self.run_token}.{self.digest}"}
            found = self._remote[key] = self.remote(name).options(runtime_env={"env_vars": env})
        return found

    async def load(self, folder: str | None, address: str | None) -> None:
        from .ray_task import AgentBox, pack_folder

        if folder is not None:
            self.folder = Path(folder)
            self.address = address
        assert self.folder is not None
        try:  # before any Ray: a folder that cannot be sent is said at once
            digest, data = await asyncio.to_thread(pack_folder, self.folder)
        except OSError as exc:
            self.send(encode(AgentLoaded("", f"cannot send the agent folder to Ray: {exc}")))
            return
        target = self.address or os.environ.get("RAY_ADDRESS") or None
        if target is None and self.head is None and not self.connected:
            try:  # in this (the main) thread: it dies with this process
                self.head = LocalHead()
            except OSError as exc:
                self.send(encode(AgentLoaded("", f"cannot start a Ray instance: {exc}")))
                return
        error = await asyncio.to_thread(self.connect, target)
        if error is not None:
            self.send(encode(AgentLoaded("", error)))
            return
        import ray

        self.digest = digest
        self.box = AgentBox(self.folder.name, digest, [ray.put(data)], self.run_token, agent_environment(os.environ))
        try:
            answer = self.checked(await self.options("probe").remote(self.box), None)
            loaded = answer if isinstance(answer, AgentLoaded) else AgentLoaded("", "the agent's Ray task did not say")
        except ProtocolError as exc:
            loaded = AgentLoaded("", f"the agent's Ray task answered with something that is not a message: {exc}")
        except Exception as exc:  # a Ray failure while loading: said in one line
            loaded = AgentLoaded("", f"the agent could not be loaded on Ray: {await self.failure(exc, None)}")
        self.send(encode(loaded))

    # ---- cases -------------------------------------------------------------------------------

    @staticmethod
    def checked(item: object, job_id: int | None) -> object:
        """A report a Ray task sent, checked: a frame of the protocol (anything else is refused before it
        is decoded as more than bytes), about the case it was given."""
        if type(item) is not bytes or len(item) < 10:
            raise ProtocolError(f"a Ray task sent {type(item).__name__}, not a message")
        size, crc = check_head(item[:10])
        report = decode_report(check_body(item[10:], crc))
        if size != len(item) - 10:
            raise ProtocolError("a message whose length does not match its head")
        if job_id is not None and getattr(report, "job", job_id) != job_id:
            raise ProtocolError(f"a message about another case ({getattr(report, 'job', None)})")
        return report

    def on_item(self, job_id: int, state: _Job, item: object) -> bool:
        """Check and forward one report of a case; True when it was the last."""
        report = self.checked(item, job_id)
        assert isinstance(item, bytes)
        if isinstance(report, TurnStarted):
            state.clock.started(report.index)
        elif isinstance(report, TurnFinished):
            state.clock.finished(report.index)
        self.send(item)
        return isinstance(report, CaseEnded)

    def fail(self, job_id: int, reason: str) -> None:
        self.send(encode(CaseEnded(job_id, CaseOutcome(error=reason))))

    async def run(self, job_id: int, state: _Job) -> None:
        try:
            if self.client:
                await self._run_whole(job_id, state)
            else:
                handle = state.handle = self.options("stream").remote(self.box, job_id, state.spec)
                async for ref in handle:
                    if self.on_item(job_id, state, await ref):
                        break
        except asyncio.CancelledError:
            return
        except ProtocolError as exc:
            self.cancel(job_id, force=True)
            self.fail(job_id, f"the agent's Ray task sent something that is not a message: {exc}")
        except Exception as exc:  # Ray's errors: the worker died, the task was cancelled, the node left
            if not state.cancelled:
                self.fail(job_id, await self.failure(exc, state))
        finally:
            self.jobs.pop(job_id, None)

    async def _run_whole(self, job_id: int, state: _Job) -> None:
        spec = state.spec
        turns = spec.turns if not spec.scenario else 20
        # No turn reaches us before the case ends: the whole case gets the deadline of all its turns, and
        # the time a Ray worker takes to start and import the agent.
        state.clock.deadline = (time.monotonic() + WORKER_START
                                + (turns + 1) * (deadline_after(spec.turn_timeout) - time.monotonic()))
        handle = state.handle = self.options("whole").remote(self.box, job_id, spec)
        for item in await handle:
            if self.on_item(job_id, state, item):
                break

    async def failure(self, exc: BaseException, state: _Job | None) -> str:
        """A Ray error as the case's error, in words. Ray's own failures (a node, a raylet, the object
        store) start with NODE_LOST or CLUSTER_FAILED: they are no verdict on the agent."""
        from ray import exceptions as rx

        turn = -1 if state is None else state.clock.current
        # A Ray task's last words (its turn_start) may be lost with it: with no turn heard of, say so.
        where = "before any of its turns was heard of" if turn < 0 else f"during turn {turn + 1}"
        if self.client and state is not None:
            where = "during the case"  # over Ray Client no turn is heard of before the case ends
        first = (str(exc).strip().split("\n", 1)[0] or type(exc).__name__)[:300]
        if state is not None and state.timed_out:
            timeout = state.spec.turn_timeout
            if self.client:
                return (f"the case timed out: no answer within {timeout:g} s per turn (the agent process did "
                        "not respond; it was killed)")
            return (f"turn {max(turn, 0) + 1} timed out after {timeout:g} s (the agent process did not "
                    f"respond for {timeout:g} s after a turn's timeout; it was killed)")
        if isinstance(exc, rx.NodeDiedError):
            return f"{NODE_LOST}: the Ray node running the case died {where}"
        if isinstance(exc, (rx.LocalRayletDiedError, rx.RaySystemError, rx.OwnerDiedError, rx.ObjectLostError,
                            rx.RuntimeEnvSetupError, rx.TaskUnschedulableError, rx.ObjectStoreFullError,
                            rx.OutOfDiskError)):
            return f"{CLUSTER_FAILED} {where}: {type(exc).__name__}: {first}"
        if isinstance(exc, rx.OutOfMemoryError):
            return f"the agent process was killed by Ray's memory monitor (out of memory) {where}"
        if isinstance(exc, rx.WorkerCrashedError):
            # Its worker died: the agent's doing, unless its node or raylet died with it (Ray says so a
            # moment later: a node counted dead, or no answer at all).
            await asyncio.sleep(CRASH_SETTLE)
            try:
                dead = await asyncio.wait_for(asyncio.to_thread(self._count_dead_nodes), CONNECT_TIMEOUT)
            except Exception as check:  # the cluster does not answer
                return f"{CLUSTER_FAILED} {where}: the Ray worker died and the cluster does not answer ({check!r})"
            if dead > self.dead_nodes:
                self.dead_nodes = dead
                return f"{NODE_LOST}: a Ray node died {where} (the case's worker with it)"
            return (f"the agent process died {where}: it exited or was killed (an exit call, a signal or "
                    "the out-of-memory killer; its Ray worker log says which)")
        if isinstance(exc, rx.RayTaskError):
            return f"the Ray task of the case failed {where}: {first}"
        return f"Ray failed the case {where}: {type(exc).__name__}: {first}"

    def start_job(self, job_id: int, spec: CaseSpec) -> None:
        state = _Job(spec, TurnClock(spec.turn_timeout, spec.scenario))
        # Its clock starts when its Ray task says it started: waiting for a CPU of the cluster, a worker
        # process and the agent's import in it are no turn of the case.
        state.clock.deadline = None
        self.jobs[job_id] = state
        state.task = asyncio.create_task(self.run(job_id, state))
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.create_task(self.watch())

    def cancel(self, job_id: int, *, force: bool = False) -> None:
        state = self.jobs.get(job_id)
        if state is None or state.handle is None:
            if state is not None and state.task is not None:
                state.task.cancel()
            return
        import ray

        state.cancelled = True
        try:
            ray.cancel(state.handle, force=force)
        except Exception as exc:  # the task already ended
            log.debug("cancelling case %s: %s", state.spec.eval_id, exc)
        if not force:
            asyncio.get_running_loop().call_later(CANCEL_GRACE, self._force, job_id, state)

    def _force(self, job_id: int, state: _Job) -> None:
        if self.jobs.get(job_id) is state:
            self.cancel(job_id, force=True)

    async def watch(self) -> None:
        """Kill the Ray worker of a case past its turn's deadline that has not said so itself: its event
        loop does not run (C code holding the GIL, a sync call on the loop)."""
        import ray

        while self.jobs:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for state in list(self.jobs.values()):
                if state.clock.late(now) and not state.timed_out and state.handle is not None:
                    state.timed_out = True
                    try:
                        ray.cancel(state.handle, force=True)
                    except Exception as exc:  # the task ended meanwhile
                        log.debug("killing case %s: %s", state.spec.eval_id, exc)

    async def close(self) -> None:
        """Cancel what runs, remove the run's unpacked copies on every node, disconnect, stop the instance
        this driver started: each step bounded (`CLOSE_STEP`)."""
        for job_id in list(self.jobs):
            self.cancel(job_id, force=True)
        tasks = [s.task for s in self.jobs.values() if s.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_GRACE)
        if self.connected and self.head is None:  # (an instance of its own: removed with it, below)
            try:
                await asyncio.wait_for(self._remove_copies(), CLOSE_STEP)
            except Exception as exc:  # a node that does not answer keeps its copy until TMPDIR is cleaned
                log.warning("could not remove the agent's unpacked copies on every Ray node: %r", exc)
            try:
                import ray

                await asyncio.wait_for(asyncio.to_thread(ray.shutdown), CLOSE_STEP)
            except Exception as exc:  # on the way out
                log.warning("disconnecting from Ray: %r", exc)
        if self.head is not None:
            await asyncio.to_thread(self.head.stop)
        from .ray_task import remove_run

        remove_run(self.run_token)  # this machine's, whoever unpacked them

    async def _remove_copies(self) -> None:
        """One task per live node, pinned to it, removes the run's unpacked copies there."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remove = self.options("remove")
        refs = [remove.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
                .remote(self.run_token) for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
        if refs:
            await asyncio.gather(*refs)


async def serve(sock: socket.socket, run_token: str) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    driver = _Driver(writer, run_token)
    loading: asyncio.Task[None] | None = None
    while True:
        command = await read_command(reader)
        if command is None or isinstance(command, Stop):
            break
        if isinstance(command, RunCase):
            if loading is not None:
                await loading
            driver.start_job(command.job, command.spec)
        elif isinstance(command, CancelCase):
            driver.cancel(command.job)
        elif isinstance(command, LoadAgent):
            loading = asyncio.create_task(driver.load(command.folder, command.address))
        elif isinstance(command, ReloadAgent):
            if loading is not None:
                await loading
            loading = asyncio.create_task(driver.load(None, None))
        await writer.drain()
    await driver.close()
    await close_writer(writer)
    # Now, not when asyncio.run ends: that waits for every thread, and one may still be in ray.init.
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="tui_eval.executors.ray_driver")
    parser.add_argument("--run", required=True, help="the run's token (its unpacked copies' folder)")
    args, sock = start_child(parser, argv)
    try:
        asyncio.run(serve(sock, args.run))
    finally:
        os._exit(0)


if __name__ == "__main__":  # pragma: no cover - the Ray executor starts it
    main()
