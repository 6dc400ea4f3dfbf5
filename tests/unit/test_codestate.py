"""Code state of a run: a test agent in a temporary git repository."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tui_eval.engine.codestate import DIFF_CAP_BYTES, CodeState, capture_code_state, diff_code_states


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false",
           *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    agent = root / "my_agent"
    (agent / "__pycache__").mkdir(parents=True)
    (agent / "agent.py").write_text("def root_agent():\n    return 'hi'\n")
    (agent / "tools.py").write_text("X = 1\n")
    (agent / "__pycache__" / "agent.cpython-311.pyc").write_bytes(b"\x00junk")
    (root / "evals").mkdir()
    (root / "evals" / "a.test.json").write_text('{"eval_set_id": "a"}')
    (root / "evals" / "test_config.json").write_text('{"criteria": {}}')
    (root / ".gitignore").write_text("__pycache__/\n*.log\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


def state(root: Path) -> CodeState:
    return capture_code_state(root / "my_agent", [root / "evals" / "a.test.json"],
                              [root / "evals" / "test_config.json"])


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_clean_repo_records_commit_and_hashes(repo: Path) -> None:
    s = state(repo)
    assert s.commit == git(repo, "rev-parse", "HEAD")
    assert len(s.commit) == 40
    assert s.dirty is False
    assert s.diff_sha256 is None and s.diff is None
    assert Path(s.repo_root or "").resolve() == repo.resolve()
    # __pycache__ is ignored (and excluded anyway); only the source files are hashed.
    assert sorted(s.agent_files) == ["agent.py", "tools.py"]
    assert s.agent_files["tools.py"] == sha(b"X = 1\n")
    assert [f.sha256 for f in s.eval_files] == [sha(b'{"eval_set_id": "a"}')]
    assert [f.sha256 for f in s.config_files] == [sha(b'{"criteria": {}}')]
    # Folder hash: sha256 over sorted "path NUL file-sha256 LF" lines, recomputed here by hand.
    lines = b"".join(p.encode() + b"\0" + s.agent_files[p].encode() + b"\n" for p in ["agent.py", "tools.py"])
    assert s.agent_sha256 == sha(lines)


def test_dirty_tree_and_diff_hash(repo: Path) -> None:
    before = state(repo)
    (repo / "my_agent" / "agent.py").write_text("def root_agent():\n    return 'bye'\n")
    after = state(repo)
    assert after.dirty is True
    assert after.commit == before.commit
    assert after.agent_sha256 != before.agent_sha256
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=repo, capture_output=True, check=True).stdout
    assert after.diff_sha256 == sha(diff)
    assert after.diff is not None and "+    return 'bye'" in after.diff
    assert after.diff_truncated is False
    assert after.for_record().diff is None and after.for_record().diff_sha256 == after.diff_sha256

    change = diff_code_states(before, after)
    assert change.agent_changed_uncommitted is True
    assert change.agent_files_changed == ["agent.py"]
    assert change.commit_changed is False
    assert change.dirty_diff_changed is True
    assert "agent files changed (not committed)" in change.lines()


def test_untracked_file_makes_dirty_and_changes_agent_hash_but_ignored_does_not(repo: Path) -> None:
    before = state(repo)
    (repo / "my_agent" / "run.log").write_text("noise")  # ignored by .gitignore
    (repo / "my_agent" / ".adk").mkdir()
    (repo / "my_agent" / ".adk" / "session.db").write_text("x")  # excluded folder
    assert state(repo).agent_sha256 == before.agent_sha256
    (repo / "my_agent" / "prompts.txt").write_text("be nice")
    after = state(repo)
    assert after.dirty is True
    assert after.diff_sha256 is None  # untracked only: `git diff HEAD` is empty
    assert diff_code_states(before, after).agent_files_changed == ["prompts.txt"]


def test_commit_range_names_changed_files(repo: Path) -> None:
    before = state(repo)
    (repo / "my_agent" / "tools.py").write_text("X = 2\n")
    (repo / "evals" / "a.test.json").write_text('{"eval_set_id": "b"}')
    git(repo, "commit", "-qam", "second")
    after = state(repo)
    assert after.dirty is False and after.commit != before.commit
    change = diff_code_states(before, after)
    assert change.commit_changed is True
    assert change.committed_files == ["evals/a.test.json", "my_agent/tools.py"]
    assert change.agent_changed_uncommitted is False
    assert change.agent_files_changed == ["tools.py"]
    assert change.eval_files_changed == [str(repo / "evals" / "a.test.json")]
    assert change.config_files_changed == []
    assert before.commit and after.commit
    assert change.lines()[0] == f"commits {before.commit[:8]}..{after.commit[:8]}"


def test_unknown_commit_reports_why(repo: Path) -> None:
    before = state(repo).model_copy(update={"commit": "0" * 40})
    change = diff_code_states(before, state(repo))
    assert change.committed_files is None
    assert change.committed_files_error


def test_no_git_repository_still_hashes(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / ".venv").mkdir(parents=True)
    (agent / "agent.py").write_text("A")
    (agent / ".venv" / "lib.py").write_text("B")
    s = capture_code_state(agent, [], [tmp_path / "missing.json"])
    assert s.commit is None and s.dirty is None and s.repo_root is None
    assert s.agent_files == {"agent.py": sha(b"A")}
    assert s.config_files[0].sha256 is None
    assert diff_code_states(s, s).anything is False


def test_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "agent.py").write_text("A")
    s = capture_code_state(tmp_path, [], [])
    assert s.commit is None
    assert s.dirty is True
    assert s.agent_files == {"agent.py": sha(b"A")}


def test_eval_file_anchors_when_no_agent_dir(repo: Path) -> None:
    s = capture_code_state(None, [repo / "evals" / "a.test.json"], [])
    assert s.commit == git(repo, "rev-parse", "HEAD")
    assert s.agent_sha256 is None and s.agent_files == {}


def test_large_diff_is_capped(repo: Path) -> None:
    big = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(6000))  # ~400 KiB of added lines
    (repo / "my_agent" / "tools.py").write_text(big)
    s = state(repo)
    assert s.diff_truncated is True
    assert s.diff is not None and len(s.diff.encode()) <= DIFF_CAP_BYTES
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=repo, capture_output=True, check=True).stdout
    assert s.diff_sha256 == sha(diff)  # the hash covers the whole diff, not the kept part


def test_eval_sets_and_config_beside_the_agent_are_not_agent_code(repo: Path) -> None:
    before = state(repo)
    (repo / "my_agent" / "my_agent.evalset.json").write_text("{}")
    (repo / "my_agent" / "test_config.json").write_text("{}")
    (repo / "my_agent" / "old.test.json").write_text("{}")
    after = state(repo)
    assert after.agent_sha256 == before.agent_sha256
    assert sorted(after.agent_files) == ["agent.py", "tools.py"]


def test_same_files_named_relatively_and_absolutely_are_no_change(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19 item 4: one run given `evals/a.test.json`, the other the absolute path, same bytes."""
    monkeypatch.chdir(repo)
    relative = capture_code_state(Path("my_agent"), [Path("evals/a.test.json")], [Path("evals/test_config.json")])
    absolute = state(repo)
    change = diff_code_states(relative, absolute)
    assert change.eval_files_changed == [] and change.config_files_changed == []
    assert not any("changed" in line for line in change.lines()), change.lines()
    # Records written before paths were made absolute kept them as given: still paired by content.
    old = relative.model_copy(update={
        "eval_files": [f.model_copy(update={"path": "evals/a.test.json"}) for f in relative.eval_files],
        "config_files": [f.model_copy(update={"path": "evals/test_config.json"}) for f in relative.config_files]})
    change = diff_code_states(old, absolute)
    assert change.eval_files_changed == [] and change.config_files_changed == []
    # A real edit is still a change, whichever way the path was written.
    (repo / "evals" / "a.test.json").write_text('{"eval_set_id": "a", "name": "edited"}')
    change = diff_code_states(old, state(repo))
    assert change.eval_files_changed == [str((repo / "evals" / "a.test.json").resolve())]


def test_a_run_without_an_agent_folder_reports_no_agent_file_changes(repo: Path) -> None:
    """A replay hashes no agent files: comparing it with an agent run is no "agent files changed"."""
    agent_run = state(repo)
    replay_run = capture_code_state(None, [repo / "evals" / "a.test.json"], [repo / "evals" / "test_config.json"])
    for before, after in ((agent_run, replay_run), (replay_run, agent_run)):
        change = diff_code_states(before, after)
        assert change.agent_files_changed == [] and change.agent_changed_uncommitted is False
        assert not any("agent files changed" in line for line in change.lines()), change.lines()
