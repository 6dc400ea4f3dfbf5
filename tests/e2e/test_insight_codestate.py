"""Every run record stores the code state at run start; comparing two runs says what changed in the code."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import orjson

from tui_eval.cli import main
from tui_eval.engine.store import code_change, load_record

AGENT = '''
from tui_eval.agents.native import NativeAgent


def policy(turn):
    return {answer!r}


root_agent = NativeAgent("bot", "answers", tools=[], policy=policy)
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    bot = repo / "bot"
    bot.mkdir(parents=True)
    (bot / "agent.py").write_text(AGENT.format(answer="hello there"))
    eval_file = bot / "bot.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": "bot", "eval_cases": [{"eval_id": "greet", "conversation": [{
        "invocation_id": "", "user_content": {"role": "user", "parts": [{"text": "hi"}]},
        "final_response": {"role": "model", "parts": [{"text": "hello there"}]}}],
        "session_input": {"app_name": "bot", "user_id": "u", "state": {}}}]}))
    (bot / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    (repo / ".gitignore").write_text(".adk/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "bot")
    return bot, eval_file


def _run(bot: Path, eval_file: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(bot), str(eval_file)], out, err)
    return code, out.getvalue() + err.getvalue()


def _newest(bot: Path) -> Path:
    records = sorted((bot / ".adk" / "eval_history").glob("*.tui-eval.json"),
                     key=lambda p: orjson.loads(p.read_bytes())["creation_timestamp"])
    return records[-1]


def test_records_commit_dirty_flag_and_what_changed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    bot, eval_file = _repo(tmp_path)
    head = _git(bot.parent, "rev-parse", "HEAD")
    code, text = _run(bot, eval_file)
    assert code == 0, text
    assert f"Code: commit {head[:12]}" in text and "uncommitted" not in text
    first = _newest(bot)
    meta1, _ = load_record(first, with_turns=False)
    assert meta1["code_state"]["commit"] == head
    assert meta1["code_state"]["dirty"] is False
    assert meta1.get("code_diff_file") is None  # a clean tree has no diff to keep

    # The agent is edited (not committed) between two runs.
    (bot / "agent.py").write_text(AGENT.format(answer="goodbye"))
    code, text = _run(bot, eval_file)
    assert code == 1, text
    assert f"Code: commit {head[:12]} + uncommitted changes" in text
    second = _newest(bot)
    assert second != first
    meta2, _ = load_record(second, with_turns=False)
    assert meta2["code_state"]["commit"] == head and meta2["code_state"]["dirty"] is True
    assert meta2["code_state"]["diff"] is None  # the diff lives beside the record, not in it
    diff = (second.parent / meta2["code_diff_file"]).read_text()
    assert "-    return 'hello there'" in diff and "+    return 'goodbye'" in diff

    change = code_change(meta1, meta2)
    assert change is not None and not change.commit_changed
    assert change.agent_changed_uncommitted and change.agent_files_changed == ["agent.py"]
    assert "agent files changed (not committed)" in change.lines()

    # Committed, the next run names the commit range and its files.
    _git(bot.parent, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "bye")
    _run(bot, eval_file)
    meta3, _ = load_record(_newest(bot), with_turns=False)
    later = code_change(meta1, meta3)
    assert later is not None and later.commit_changed and later.committed_files == ["bot/agent.py"]
    assert later.lines()[0] == f"commits {head[:8]}..{meta3['code_state']['commit'][:8]}"
