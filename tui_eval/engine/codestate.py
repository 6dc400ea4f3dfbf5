"""The code state behind a run (git commit, dirty diff, agent/eval/config hashes) and what changed between two."""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..agents.version import HASH_CAP_BYTES as HASH_CAP_BYTES, sha256_file as sha256_file
from ..schema.config import CONFIG_FILE_NAME
from ..schema.load import EVAL_FILE_SUFFIXES

log = logging.getLogger(__name__)

# The dirty diff kept in the state (for the caller to save beside the record) stops here.
DIFF_CAP_BYTES = 256 * 1024
GIT_TIMEOUT_SECONDS = 5.0
# Directories that hold caches, sessions or environments rather than the agent's source.
EXCLUDED_DIRS = frozenset({"__pycache__", ".adk", ".venv", ".git", ".mypy_cache", ".pytest_cache"})


def _is_eval_or_config(rel: str) -> bool:
    """Eval sets and criteria beside the agent are hashed as eval/config files, not as agent code:
    editing a case must not read as "agent files changed"."""
    name = rel.rsplit("/", 1)[-1]
    return name == CONFIG_FILE_NAME or name.endswith(EVAL_FILE_SUFFIXES)


class FileHash(BaseModel):
    """One eval or config file: its path as given and the sha256 of its bytes (None when unreadable)."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str | None


class CodeState(BaseModel):
    """What code a run ran: repository commit and dirtiness, agent folder hash, eval and config file hashes.

    `commit`/`dirty` are None outside a git repository (or without git). `diff_sha256` hashes the
    whole repository's `git diff HEAD --binary` (tracked changes; untracked files only make it dirty),
    None when clean. `diff` is that diff as text, cut at DIFF_CAP_BYTES (`diff_truncated` then True):
    the caller may save it to a side file and store `for_record()` instead.
    """

    model_config = ConfigDict(frozen=True)

    repo_root: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    diff_sha256: str | None = None
    diff: str | None = None
    diff_truncated: bool = False
    agent_dir: str | None = None
    agent_sha256: str | None = None
    # Relative posix path -> sha256 of the content, so a change can be named without git.
    agent_files: dict[str, str] = {}
    eval_files: list[FileHash] = []
    config_files: list[FileHash] = []

    def for_record(self) -> CodeState:
        """The state without the diff text (kept in a side file, not in every run record)."""
        return self.model_copy(update={"diff": None})


class CodeChange(BaseModel):
    """What changed between two code states, for history compare beside the regressions."""

    model_config = ConfigDict(frozen=True)

    commit_before: str | None
    commit_after: str | None
    # Files changed between the two commits (`git diff --name-only A B`); None when unknown.
    committed_files: list[str] | None = None
    # Why the commit range could not be listed (a commit gone, no git), for the UI to say so.
    committed_files_error: str | None = None
    # Agent folder content differs while the commit is the same: edits not committed.
    agent_changed_uncommitted: bool = False
    # Agent files added, removed or modified (from the per-file hashes), whatever the commits.
    agent_files_changed: list[str] = []
    dirty_diff_changed: bool = False
    eval_files_changed: list[str] = []
    config_files_changed: list[str] = []

    @property
    def commit_changed(self) -> bool:
        return self.commit_before != self.commit_after

    @property
    def anything(self) -> bool:
        return bool(self.commit_changed or self.agent_files_changed or self.dirty_diff_changed
                     or self.eval_files_changed or self.config_files_changed)

    def lines(self) -> list[str]:
        """Plain-text lines for a summary (no markup; paths are the caller's to escape)."""
        out: list[str] = []
        if self.commit_changed:
            out.append(f"commits {_short(self.commit_before)}..{_short(self.commit_after)}")
            if self.committed_files is not None:
                out.extend(f"  {p}" for p in self.committed_files)
            elif self.committed_files_error:
                out.append(f"  (files unknown: {self.committed_files_error})")
        if self.agent_changed_uncommitted:
            out.append("agent files changed (not committed)")
            out.extend(f"  {p}" for p in self.agent_files_changed)
        elif self.dirty_diff_changed and not self.commit_changed:
            out.append("uncommitted changes differ")
        if self.eval_files_changed:
            out.append("eval files changed: " + ", ".join(self.eval_files_changed))
        if self.config_files_changed:
            out.append("config files changed: " + ", ".join(self.config_files_changed))
        return out


def _short(commit: str | None) -> str:
    return commit[:8] if commit else "(none)"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """Run git; None when git is missing or hangs (a run must never fail over its code state)."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_SECONDS,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git %s in %s unavailable: %s", args[0], cwd, exc)
        return None


def _walk_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        base = Path(dirpath).relative_to(root)
        out.extend((base / name).as_posix() for name in filenames)
    return out


def _git_parallel(commands: list[tuple[Path, list[str]]]) -> list[subprocess.CompletedProcess[bytes] | None]:
    """Run independent git commands at once (run start waits on the slowest, not on their sum)."""
    procs: list[subprocess.Popen[bytes] | None] = []
    for cwd, args in commands:
        try:
            procs.append(subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE))
        except OSError as exc:
            log.info("git %s in %s unavailable: %s", args[0], cwd, exc)
            procs.append(None)
    out: list[subprocess.CompletedProcess[bytes] | None] = []
    for (cwd, args), proc in zip(commands, procs):
        if proc is None:
            out.append(None)
            continue
        try:
            stdout, stderr = proc.communicate(timeout=GIT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            log.info("git %s in %s timed out", args[0], cwd)
            out.append(None)
            continue
        out.append(subprocess.CompletedProcess(["git", *args], proc.returncode, stdout, stderr))
    return out


def _listed_files(proc: subprocess.CompletedProcess[bytes] | None) -> list[str] | None:
    """Names from `git ls-files -z`, minus cache/environment folders; None when git failed."""
    if proc is None or proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [n for n in dict.fromkeys(names) if not EXCLUDED_DIRS.intersection(n.split("/")[:-1])]


# The --exclude patterns keep git from walking an un-ignored .venv (thousands of files) at all.
_LS_FILES = ["ls-files", "-z", "--cached", "--others", "--exclude-standard",
             *(f"--exclude={d}/" for d in sorted(EXCLUDED_DIRS)), "--", "."]


def hash_agent_dir(agent_dir: Path, names: list[str] | None = None) -> tuple[str, dict[str, str]]:
    """Folder hash (sha256 over sorted `path NUL file-sha256 LF`) and the per-file hashes.

    `names` are the relative paths to hash (from git: tracked plus untracked-not-ignored); None walks
    every file outside the excluded folders. Eval set and test_config.json files are left out.
    """
    files: dict[str, str] = {}
    for rel in sorted(names if names is not None else _walk_files(agent_dir)):
        if _is_eval_or_config(rel):
            continue
        digest = sha256_file(agent_dir / rel)
        if digest is not None:  # a tracked file deleted in the work tree is simply absent
            files[rel] = digest
    h = hashlib.sha256()
    for rel, digest in files.items():
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + digest.encode() + b"\n")
    return h.hexdigest(), files


def _repo_state(where: Path, agent_dir: Path | None
                ) -> tuple[Path | None, str | None, bool | None, bytes | None, list[str] | None]:
    """(repo root, HEAD sha, dirty, `git diff HEAD` bytes, agent files per git) of `where`'s repository."""
    # One call for both: in a repository without commits it prints the top level and fails on HEAD.
    proc = _git(where, "rev-parse", "--show-toplevel", "HEAD")
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines() if proc is not None else []
    if not lines or not Path(lines[0]).is_absolute():
        return None, None, None, None, None
    root = Path(lines[0])
    commit = lines[1] if proc is not None and proc.returncode == 0 and len(lines) > 1 else None
    # All at once; the diff runs even when the tree turns out clean (then it is empty): cheaper than
    # waiting on status first.
    commands = [(root, ["status", "--porcelain", "-z", "--untracked-files=normal"])]
    if agent_dir is not None:
        commands.append((agent_dir, _LS_FILES))
    if commit is not None:
        commands.append((root, ["diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"]))
    results = _git_parallel(commands)
    status = results[0]
    dirty = bool(status.stdout) if status is not None and status.returncode == 0 else None
    listed = _listed_files(results[1]) if agent_dir is not None else None
    diffed = results[-1] if commit is not None else None
    diff = diffed.stdout if diffed is not None and diffed.returncode == 0 else None
    return root, commit, dirty, diff, listed


def capture_code_state(agent_dir: Path | None, eval_files: list[Path], config_files: list[Path]) -> CodeState:
    """The code state at run start: git state of the repository holding the agent (or first eval file)."""
    anchor: Path | None = None
    if agent_dir is not None and agent_dir.is_dir():
        anchor = agent_dir
    elif eval_files:
        anchor = eval_files[0].resolve().parent
    root = commit = dirty = diff = listed = None
    if anchor is not None:
        root, commit, dirty, diff, listed = _repo_state(anchor, agent_dir if anchor is agent_dir else None)
    diff_sha = diff_text = None
    truncated = False
    if diff:
        diff_sha = hashlib.sha256(diff).hexdigest()
        truncated = len(diff) > DIFF_CAP_BYTES
        diff_text = diff[:DIFF_CAP_BYTES].decode("utf-8", "replace")
    agent_sha: str | None = None
    agent_files: dict[str, str] = {}
    if agent_dir is not None and agent_dir.is_dir():
        agent_sha, agent_files = hash_agent_dir(agent_dir, listed)
    return CodeState(
        repo_root=str(root) if root is not None else None,
        commit=commit,
        dirty=dirty,
        diff_sha256=diff_sha,
        diff=diff_text,
        diff_truncated=truncated,
        agent_dir=str(agent_dir) if agent_dir is not None else None,
        agent_sha256=agent_sha,
        agent_files=agent_files,
        # Absolute paths: a run given relative paths and one given absolute ones name the same files alike.
        eval_files=[FileHash(path=_abs(p), sha256=sha256_file(p)) for p in eval_files],
        config_files=[FileHash(path=_abs(p), sha256=sha256_file(p)) for p in config_files],
    )


def _abs(path: Path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)


def _norm(path: str) -> str:
    return os.path.normpath(path).replace("\\", "/")


def _changed_files(before: list[FileHash], after: list[FileHash]) -> list[str]:
    """Files whose contents differ (or that only one run had). Paths are compared normalised; a file
    one run named relatively and the other absolutely (records before paths were made absolute) is
    paired by its name when that name is unique on both sides, so identical bytes never read as a change."""
    old = {_norm(f.path): f.sha256 for f in before}
    new = {_norm(f.path): f.sha256 for f in after}
    changed = {p for p in old.keys() & new.keys() if old[p] != new[p]}
    only_old = [p for p in old if p not in new]
    only_new = [p for p in new if p not in old]

    def by_name(paths: list[str]) -> dict[str, str]:
        names: dict[str, list[str]] = {}
        for p in paths:
            names.setdefault(p.rsplit("/", 1)[-1], []).append(p)
        return {n: ps[0] for n, ps in names.items() if len(ps) == 1}

    old_names, new_names = by_name(only_old), by_name(only_new)
    paired_old: set[str] = set()
    paired_new: set[str] = set()
    for name in old_names.keys() & new_names.keys():
        a, b = old_names[name], new_names[name]
        if os.path.isabs(a) != os.path.isabs(b):
            paired_old.add(a)
            paired_new.add(b)
            if old[a] != new[b]:
                changed.add(b)
    changed.update(p for p in only_old if p not in paired_old)
    changed.update(p for p in only_new if p not in paired_new)
    return sorted(changed)


def _committed_files(repo_root: str | None, a: str, b: str) -> tuple[list[str] | None, str | None]:
    if repo_root is None:
        return None, "not a git repository"
    proc = _git(Path(repo_root), "diff", "--name-only", "-z", a, b)
    if proc is None:
        return None, "git unavailable"
    if proc.returncode != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, first[0] if first else f"git diff exited {proc.returncode}"
    return sorted(n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n), None


def diff_code_states(before: CodeState, after: CodeState) -> CodeChange:
    """What changed from `before` to `after` (runs `git diff --name-only` when the commits differ)."""
    committed: list[str] | None = None
    error: str | None = None
    if before.commit and after.commit and before.commit != after.commit:
        committed, error = _committed_files(after.repo_root or before.repo_root, before.commit, after.commit)
    elif before.commit != after.commit:
        error = "one run has no commit"
    old, new = before.agent_files, after.agent_files
    # A run with no agent folder (a replay) hashed no agent files: nothing to compare them with.
    both = before.agent_sha256 is not None and after.agent_sha256 is not None
    agent_changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p)) if both else []
    same_commit = before.commit == after.commit
    return CodeChange(
        commit_before=before.commit,
        commit_after=after.commit,
        committed_files=committed,
        committed_files_error=error,
        agent_changed_uncommitted=same_commit and both and before.agent_sha256 != after.agent_sha256,
        agent_files_changed=agent_changed,
        dirty_diff_changed=before.diff_sha256 != after.diff_sha256,
        eval_files_changed=_changed_files(before.eval_files, after.eval_files),
        config_files_changed=_changed_files(before.config_files, after.config_files),
    )
