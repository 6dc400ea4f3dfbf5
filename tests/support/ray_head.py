"""A Ray head on 127.0.0.1 for the executor tests: started once per session, in the background as soon as the
first end-to-end test runs (it takes tens of seconds; the tests before the Ray ones run meanwhile)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RayHead:
    """`ray start --head --block` on 127.0.0.1; `wait()` gives (its GCS address, its Ray Client address)."""

    def __init__(self, home: Path | None = None) -> None:
        """`home`: Ray's HOME, with token authentication as Ray 2.60 leaves it by default (on when
        HOME/.ray/auth_token exists); else authentication off."""
        self.port, self.client_port = free_port(), free_port()
        self.temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must stay short
        self.log = Path(self.temp) / "head.log"
        # A Ray Client connection waits for a server process of its own; on a loaded 2-core machine that can
        # take longer than Ray's default 30 s.
        env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
                   RAY_USAGE_STATS_ENABLED="0", RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S="120")
        if home is not None:
            env["HOME"] = str(home)
            for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
                env.pop(name, None)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
                 "--node-ip-address", "127.0.0.1", "--port", str(self.port),
                 "--ray-client-server-port", str(self.client_port),
                 "--num-cpus", "4", "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", self.temp],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait(self, timeout: float = 180) -> tuple[str, str]:
        """Block until the head has started (an AssertionError with its log if it ends or takes too long)."""
        deadline = time.monotonic() + timeout
        while b"Ray runtime started" not in self.log.read_bytes():
            assert self.proc.poll() is None, self.log.read_text(errors="replace")
            assert time.monotonic() < deadline, self.log.read_text(errors="replace")
            time.sleep(0.2)
        # The Ray Client server comes up after the runtime says it started: wait until it answers.
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.client_port), timeout=1).close()
                break
            except OSError:
                assert self.proc.poll() is None, self.log.read_text(errors="replace")
                assert time.monotonic() < deadline, self.log.read_text(errors="replace")
                time.sleep(0.2)
        return f"127.0.0.1:{self.port}", f"ray://127.0.0.1:{self.client_port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)  # `ray start --block` stops what it started
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.temp, ignore_errors=True)
