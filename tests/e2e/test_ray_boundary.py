"""Ray without leaks, and without silent waits: what reaches an agent's Ray tasks (the allowlisted
variables, its own folder's files), what stays behind (nothing: no Ray process, no unpacked copy), what
Ray's logs keep (no key), and the preflight that says in seconds, exit 2, why a cluster cannot be used
(a token it wants, RAY_AUTH_MODE, a stale address). Ray's infrastructure failing is an infrastructure
error (exit 3), not the agent's failure. The Ray tests run one at a time on the session's Ray worker."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.cli_run import run_cli, saved_cases
from tests.support.evalfiles import case, turn, write_set
from tests.support.ray_head import RayHead, free_port

ROOT = Path(__file__).resolve().parents[2]
# One pytest-xdist worker runs every Ray test, one at a time (each starts or joins a Ray instance).
pytestmark = pytest.mark.xdist_group("ray")

LOOKER = '''
import json
import os
import signal
import time
from pathlib import Path

from tui_eval.agents.native import NativeAgent

NAMES = ("GOOGLE_API_KEY", "TUI_EVAL_PROBE", "SECRET_TOKEN", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL")


def look(what: str) -> str:
    """Say what this process sees."""
    if what == "raylet":
        os.kill(os.getppid(), signal.SIGKILL)  # a Ray worker's parent is its raylet
        time.sleep(60)
    here = Path(__file__).parent
    facts = {"env": {k: os.environ.get(k) for k in NAMES}, "files": sorted(p.name for p in here.iterdir()),
             "folder": str(here)}
    with open(os.environ["FACTS"], "a") as f:
        f.write(json.dumps(facts) + "\\n")
    return "done"


def policy(turn):
    if not turn.results:
        return [("look", {"what": turn.user_text})]
    return "done"


root_agent = NativeAgent("looker", "Look around.", tools=[look], policy=policy)
'''

PLANTED = '''
from pathlib import Path
Path(__file__).with_name("PLANTED-CODE-RAN").write_text("yes")
Path("/tmp").joinpath("tui-eval-planted-" + str(__import__("os").getuid())).write_text("ran")
raise SystemExit("planted code ran")
'''


def _looker(tmp_path: Path, *whats: str) -> tuple[Path, Path, Path]:
    """The agent folder (with a link out of it, a link to /proc/self/environ and a .git folder), its eval set
    of one case per `what`, and the file its tool writes what it sees to."""
    folder = tmp_path / "looker"
    folder.mkdir()
    (folder / "agent.py").write_text(LOOKER)
    (folder / "__init__.py").write_text("from . import agent\n")
    facts = tmp_path / "facts.jsonl"
    (folder / ".env").write_text(f"FACTS={facts}\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("a file beside the agent, not of it")
    (folder / "outside_link.txt").symlink_to(outside)
    (folder / "environ_link").symlink_to("/proc/self/environ")
    (folder / "inside_link.py").symlink_to(folder / "__init__.py")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    cases = [case(w, turn(w, "done", [("look", {"what": w})])) for w in whats]
    return folder, write_set(folder / "looker.evalset.json", "looker", *cases), facts


def _ray_processes(tmp: Path) -> set[int]:
    """The processes of a Ray instance started with TMPDIR=`tmp` (its GCS, raylet, agents, workers): what
    an instance tui-eval started for a test runs (the session's own Ray instance has another TMPDIR)."""
    marker = f"TMPDIR={tmp}".encode() + b"\0"
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ and any(word in cmdline for word in (
                b"gcs_server", b"raylet", b"default_worker.py", b"ray::", b"dashboard/agent.py", b"runtime_env/agent",
                b"log_monitor.py", b"\0start\0--head")):
            found.add(int(entry.name))
    return found


@pytest.fixture
def own_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`--executor ray` with no cluster named: tui-eval starts its own. Its own HOME (Ray 2.60 turns token
    authentication on when ~/.ray/auth_token exists) and TMPDIR; returns the TMPDIR."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # as in a process started with that TMPDIR
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    return tmp


def test_an_agent_folder_too_large_for_ray_is_refused_before_anything_is_copied(own_ray: Path,
                                                                                tmp_path: Path) -> None:
    folder, evalset, _facts = _looker(tmp_path, "ok")
    with (folder / "big.bin").open("wb") as f:  # 1 GB that takes no disk (sparse)
        f.truncate(1 << 30)
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", "ray")
    assert code == 2, (out, err)
    assert "cannot send the agent folder to Ray" in err and "big.bin (1,073.7 MB)" in err, err
    assert "TUI_EVAL_RAY_MAX_FOLDER_MB" in err
    assert not list(own_ray.iterdir())  # nothing unpacked, nothing copied
    assert not _ray_processes(own_ray)  # and no Ray started for it


def test_a_ray_instance_tui_eval_starts_gets_only_the_allowlist_and_leaves_nothing_behind(
        own_ray: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "gk-" + secrets.token_hex(8)
    for name, value in (("SECRET_TOKEN", "st"), ("AWS_SECRET_ACCESS_KEY", "aws"), ("DATABASE_URL", "postgres://x"),
                        ("GOOGLE_API_KEY", key), ("TUI_EVAL_PROBE", "yes")):
        monkeypatch.setenv(name, value)
    folder, evalset, facts = _looker(tmp_path, "ok", "raylet", "after")
    # Code planted where earlier versions unpacked this very folder (its digest is computable) never runs.
    from tui_eval.executors.ray_task import pack_folder

    digest, _ = pack_folder(folder)
    for name in ("tui-eval-ray", f"tui-eval-ray-{os.getuid()}"):
        planted = own_ray / name / digest / "looker"
        planted.mkdir(parents=True)
        (planted / "__init__.py").write_text(PLANTED)
        (planted / "agent.py").write_text(PLANTED)
    out_json = tmp_path / "out.json"
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", "ray", "--concurrency", "1",
                             "--json", str(out_json))
    # No Ray process of the run outlives it.
    assert not _ray_processes(own_ray), _ray_processes(own_ray)
    assert facts.exists(), (code, out, err)
    seen = [json.loads(line) for line in facts.read_text().splitlines()]
    assert seen, (out, err)
    for fact in seen:
        # Only the allowlisted variables reached the agent; its own folder's files and links within it, no
        # link out of it, no .git.
        assert fact["env"] == {"GOOGLE_API_KEY": key, "TUI_EVAL_PROBE": "yes", "SECRET_TOKEN": None,
                               "AWS_SECRET_ACCESS_KEY": None, "DATABASE_URL": None}, fact
        assert fact["files"] == sorted([".env", "__init__.py", "agent.py", "inside_link.py", "looker.evalset.json",
                                        "__pycache__"]) or fact["files"] == sorted(
            [".env", "__init__.py", "agent.py", "inside_link.py", "looker.evalset.json"]), fact
        assert Path(fact["folder"]).is_relative_to(own_ray / f"tui-eval-ray-{os.getuid()}")
    assert not (Path("/tmp") / f"tui-eval-planted-{os.getuid()}").exists()
    # The per-user folder is private, and the run's unpacked copies are gone; the planted ones were never used.
    private = own_ray / f"tui-eval-ray-{os.getuid()}"
    assert private.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in private.iterdir()) == [digest]
    cases = saved_cases(folder)
    assert cases["ok"]["status"] == 1, cases["ok"]
    # The tool that killed its raylet took Ray down with it: an infrastructure error, not the agent's failure.
    assert cases["raylet"]["error"].startswith(("Ray node lost", "Ray cluster failed")), cases["raylet"]["error"]
    assert code == 3, (out, err)
    assert "infrastructure" in out, out
    assert "Executor: Ray (started by tui-eval)" in out, out
    (record,) = (folder / ".adk" / "eval_history").glob("*.tui-eval.json")
    assert json.loads(record.read_text())["executor"]["kind"] == "ray"


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A Ray head as Ray 2.60 leaves it by default once a token exists (its own HOME with
    ~/.ray/auth_token: token authentication on): (GCS address, Ray Client address, its token)."""
    home = tmp_path_factory.mktemp("ray-token-home")
    token = secrets.token_hex(32)
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(token)
    head = RayHead(home=home)
    try:
        address, client = head.wait()
        yield address, client, token
    finally:
        head.stop()


@pytest.fixture
def no_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This side: a HOME of its own (no ~/.ray/auth_token) and no Ray authentication settings."""
    home = tmp_path / "client-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)


def test_a_cluster_that_wants_a_token_is_one_clear_error_naming_ray_auth_mode(
        token_cluster: tuple[str, str, str], no_token: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    address, client, token = token_cluster
    folder, evalset, facts = _looker(tmp_path, "ok")
    # Ray Client (ray://) and the GCS address alike, with no token here: said at once, not after Ray's 20-30 s.
    for executor, env in ((client, {}), ("ray", {"RAY_ADDRESS": address})):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code, out, err = run_cli("run", str(folder), str(evalset), "--executor", executor)
        assert code == 2, (executor, out, err)
        assert "requires token authentication" in err and "RAY_AUTH_MODE" in err, (executor, err)
        assert "Traceback" not in err
    # A token that is not the cluster's.
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", client)
    assert code == 2, (out, err)
    assert "refused this side's token (RAY_AUTH_MODE=token)" in err, err
    # The cluster's own token: the case runs.
    monkeypatch.setenv("RAY_AUTH_TOKEN", token)
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", client)
    assert code == 0, (out, err)
    assert f"Executor: Ray cluster {client}" in out, out


def test_token_authentication_on_here_and_off_on_the_cluster_is_refused_before_any_case(
        ray_cluster: tuple[str, str], no_token: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's cluster has authentication off; this side would send a token, so its workers could not
    # report back to this driver (the run showed 0/N forever).
    monkeypatch.setenv("RAY_ADDRESS", ray_cluster[0])
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    folder, evalset, facts = _looker(tmp_path, "ok")
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", "ray")
    assert code == 2, (out, err)
    assert "has token authentication off, but this side has it on" in err and "RAY_AUTH_MODE=disabled" in err, err
    assert not facts.exists()


def test_the_agents_keys_reach_its_ray_tasks_but_never_rays_logs(
        ray_cluster: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    key = "gk-" + secrets.token_hex(12)
    monkeypatch.setenv("RAY_ADDRESS", ray_cluster[0])
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    monkeypatch.setenv("GOOGLE_API_KEY", key)
    monkeypatch.setenv("SECRET_TOKEN", "st")
    folder, evalset, facts = _looker(tmp_path, "ok")
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", "ray")
    assert code == 0, (out, err)
    (fact,) = [json.loads(line) for line in facts.read_text().splitlines()]
    assert fact["env"]["GOOGLE_API_KEY"] == key and fact["env"]["SECRET_TOKEN"] is None, fact
    head = request.getfixturevalue("_ray_head").head
    leaked = [str(p) for p in Path(head.temp).rglob("*") if p.is_file() and not p.is_symlink()
              and _holds(p, key.encode())]
    assert not leaked, leaked


def _holds(path: Path, needle: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return needle in f.read(64 << 20)
    except OSError:  # a socket, a file Ray is rotating
        return False


class _Silent:
    """A TCP port that accepts connections and never says a word: a stale cluster address (a hung
    process on the port, a host that went away behind a proxy)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_a_stale_cluster_address_is_said_in_seconds(no_token: None, tmp_path: Path) -> None:
    silent = _Silent()
    try:
        folder, evalset, _ = _looker(tmp_path, "ok")
        code, out, err = run_cli("run", str(folder), str(evalset), "--executor", f"ray://127.0.0.1:{silent.port}")
    finally:
        silent.close()
    assert code == 2, (out, err)
    assert f"the Ray cluster at ray://127.0.0.1:{silent.port} does not answer" in err, err


def test_sigterm_while_tui_eval_starts_its_ray_ends_the_run_and_its_ray(own_ray: Path, tmp_path: Path) -> None:
    folder, evalset, facts = _looker(tmp_path, "ok")
    proc = subprocess.Popen([sys.executable, "-m", "tui_eval.cli", "run", str(folder), str(evalset), "--executor", "ray"],
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # Once its Ray instance is on its way up (raylet and GCS started), SIGTERM: the run ends now, not when
    # the instance is up or a load timeout passes, and takes the instance with it.
    deadline = time.monotonic() + 120
    while not _ray_processes(own_ray):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode in (3, 130), (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert not facts.exists()
    assert not _ray_processes(own_ray), _ray_processes(own_ray)
    assert not [p for p in own_ray.iterdir() if any(p.iterdir())]


def test_the_agents_keys_crossing_to_another_machine_without_tls_are_warned_about(
        no_token: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    folder, evalset, _ = _looker(tmp_path, "ok")
    port = free_port()  # on another machine's address: nothing listens there either, so nothing is sent
    code, out, err = run_cli("run", str(folder), str(evalset), "--executor", f"ray://192.0.2.1:{port}")
    assert code == 2, (out, err)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("GOOGLE_API_KEY" in w and "unencrypted" in w and "RAY_USE_TLS" in w for w in warned), warned
    assert not any("'k'" in w or "=k" in w for w in warned)  # named, never shown


def test_the_summary_leaves_the_local_pool_unsaid(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    folder, evalset, _ = _looker(tmp_path, "ok")
    code, out, err = run_cli("run", str(folder), str(evalset))
    assert code == 0, (out, err)
    assert "Executor:" not in out
    (record,) = (folder / ".adk" / "eval_history").glob("*.tui-eval.json")
    assert json.loads(record.read_text())["executor"]["kind"] == "local"
