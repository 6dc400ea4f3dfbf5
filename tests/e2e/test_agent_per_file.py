"""The agent of each eval file (issue 33, item 1): an eval file runs with the agent folder that contains
it unless an agent is named; mixed folders each run their own agent in one command (one summary, one exit
code); `run demo_agents` finds each agent's files; `AGENT FILE… AGENT FILE…` pairs; a file with no agent
is exit 2; `--dry-run` says which agent runs which file, the kind and the baseline, and runs nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli_run import run_cli

from tui_eval.engine.store import list_history

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    copy = tmp_path / "demo_agents"
    shutil.copytree(DEMO, copy, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return copy


def _line(out: str, eval_set: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{eval_set} ("))


def test_mixed_folders_each_run_their_own_agent_in_one_command(demo: Path) -> None:
    files = [demo / name / f"{name}.evalset.json" for name in ("hello_world", "home_automation", "support")]
    js = demo.parent / "out.json"
    code, out, err = run_cli("run", *map(str, files), "--json", str(js))
    assert code == 1, out + err
    # Each set answered by its own agent: the offline figures of each demo agent alone.
    assert _line(out, "hello_world").endswith("4 passed, 5 failed, 0 not evaluated")
    assert _line(out, "home_automation").endswith("4 passed (4 with metrics not evaluated), 3 failed, 0 not evaluated")
    assert _line(out, "support").endswith("5 passed (5 with metrics not evaluated), 2 failed, 0 not evaluated")
    assert "Total: 13 passed (9 with metrics not evaluated), 10 failed, 0 not evaluated" in out
    assert out.count("Result: ") == 1 and out.count("Run id: ") == 1
    # One run id; each agent's history in its own folder.
    run_ids = {e.run_id for name in ("hello_world", "home_automation", "support")
               for e in list_history(demo / name / ".adk" / "eval_history")}
    assert len(run_ids) == 1
    assert {r["eval_set_id"] for r in json.loads(js.read_text())} == {"hello_world", "home_automation", "support"}


def test_a_folder_of_agents_finds_each_agents_files(demo: Path) -> None:
    code, out, err = run_cli("run", str(demo), "--no-save", "-q")
    assert code == 1, out + err
    assert _line(out, "hello_world").endswith("4 passed, 5 failed, 0 not evaluated")
    assert _line(out, "support_scenarios").startswith("support_scenarios (")  # the support agent's scenarios


def test_agent_file_pairs_work_as_the_usage_line_says(demo: Path) -> None:
    hello, home = demo / "hello_world", demo / "home_automation"
    code, out, err = run_cli("run", str(hello), str(hello / "hello_world.evalset.json"),
                             str(home), str(home / "home_automation.evalset.json"), "--no-save", "-q")
    assert code == 1, out + err
    assert _line(out, "hello_world").endswith("4 passed, 5 failed, 0 not evaluated")
    assert _line(out, "home_automation").endswith("4 passed (4 with metrics not evaluated), 3 failed, 0 not evaluated")
    # A named agent runs every file after it: the dice agent answering home_automation's cases.
    code, out, err = run_cli("run", str(hello), str(home / "home_automation.evalset.json"), "--no-save", "-q")
    assert _line(out, "home_automation").endswith("0 passed, 7 failed, 0 not evaluated"), out + err


def test_a_file_with_no_agent_is_exit_2_and_dry_run_runs_nothing(demo: Path, tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    shutil.copy(demo / "hello_world" / "hello_world.evalset.json", loose / "orphan.evalset.json")
    code, out, err = run_cli("run", str(demo / "hello_world" / "hello_world.evalset.json"),
                             str(loose / "orphan.evalset.json"))
    assert code == 2 and out == ""
    assert (f"error: {loose / 'orphan.evalset.json'}: no agent: this eval file is not inside an agent folder; "
            "name the agent before it (`run AGENT FILE`) or pass --agent") in err
    code, out, err = run_cli("run", str(demo), "--dry-run", "--mock-tools", "--baseline", "latest")
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0] == "Dry run: nothing is run."
    assert f"agent {demo / 'hello_world'} (local pool)" in lines
    assert f"  runs {demo / 'hello_world' / 'hello_world.evalset.json'}: 9 cases" in lines
    assert "    kind: agent, mocked tools (strict), no judge" in lines
    assert "    baseline: none: no saved run of this eval set" in lines
    assert not list(demo.glob("*/.adk/eval_history/*"))  # nothing ran, nothing saved
