"""Loading agent folders: fresh after every edit, clear errors with file:line, dispatch by type."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tui_eval.agents import load_agent
from tui_eval.agents.base import Agent, AgentError
from tui_eval.agents.folder import ADK_EXTRA_HINT, load_agent_folder
from tui_eval.agents.native import NativeAgent

AGENT = '''
from tui_eval.agents.native import NativeAgent
from .helpers import ANSWER

root_agent = NativeAgent("probe", "say the answer", policy=lambda turn: ANSWER)
'''


def _write(folder: Path, answer: str = "one", init: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if init:
        (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(AGENT)
    (folder / "helpers.py").write_text(f"ANSWER = {answer!r}\n")
    return folder


def _answer(agent: Agent) -> str:
    assert isinstance(agent, NativeAgent) and agent.policy is not None
    answer = agent.policy(None)  # type: ignore[arg-type]  # these policies never read their turn
    assert isinstance(answer, str)
    return answer


def test_loads_native_agent_and_binds_folder(tmp_path: Path) -> None:
    folder = _write(tmp_path / "probe_agent")
    agent = load_agent(str(folder))
    assert isinstance(agent, NativeAgent)
    assert agent.name == "probe_agent" and agent.home == folder
    assert {p.name for p in agent.source_paths()} == {"__init__.py", "agent.py", "helpers.py"}
    assert _answer(agent) == "one"


def test_reload_sees_an_edit_made_in_the_same_second(tmp_path: Path) -> None:
    folder = _write(tmp_path / "fresh_agent", "one")
    assert _answer(load_agent_folder(folder)) == "one"
    # Same size, same second: a cached .pyc would be reused by a plain import.
    (folder / "helpers.py").write_text("ANSWER = 'two'\n")
    assert _answer(load_agent_folder(folder)) == "two"
    assert not (folder / "__pycache__").exists()


def test_agent_py_without_package_init_and_odd_folder_name(tmp_path: Path) -> None:
    folder = _write(tmp_path / "my-agent v2", init=False)
    agent = load_agent_folder(folder)
    assert isinstance(agent, NativeAgent) and agent.name == "my-agent v2"
    assert _answer(agent) == "one"


def test_same_folder_name_in_two_places_does_not_mix_them(tmp_path: Path) -> None:
    a = load_agent_folder(_write(tmp_path / "a" / "twin", "from a"))
    b = load_agent_folder(_write(tmp_path / "b" / "twin", "from b"))
    assert (_answer(a), _answer(b)) == ("from a", "from b")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    folder = _write(tmp_path / "broken_agent")
    (folder / "helpers.py").write_text("ANSWER = 'x'\n\ndef oops(:\n    pass\n")
    with pytest.raises(AgentError) as exc:
        load_agent_folder(folder)
    assert f"{folder / 'helpers.py'}:3" in str(exc.value)
    assert "SyntaxError" in str(exc.value)
    _write(folder, "fixed")
    assert _answer(load_agent_folder(folder)) == "fixed"


def test_import_time_error_names_the_line_in_the_agent(tmp_path: Path) -> None:
    folder = _write(tmp_path / "raising_agent")
    (folder / "helpers.py").write_text("ANSWER = 'x'\nVALUE = 1 / 0\n")
    with pytest.raises(AgentError, match=r"helpers\.py:2: cannot import the agent: ZeroDivisionError"):
        load_agent_folder(folder)


def test_missing_root_agent_and_wrong_type(tmp_path: Path) -> None:
    folder = tmp_path / "empty_agent"
    folder.mkdir()
    (folder / "agent.py").write_text("x = 1\n")
    with pytest.raises(AgentError, match="no root_agent found"):
        load_agent_folder(folder)
    (folder / "agent.py").write_text("root_agent = 42\n")
    with pytest.raises(AgentError, match="root_agent is a builtins.int, not an agent"):
        load_agent_folder(folder)


def test_adk_agent_without_google_adk_says_how_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "needs_adk"
    folder.mkdir()
    # What `from google.adk.agents import Agent` raises when the extra is not installed.
    (folder / "agent.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'google.adk'\", name='google.adk')\n"
    )
    with pytest.raises(AgentError) as exc:
        load_agent_folder(folder)
    assert ADK_EXTRA_HINT in str(exc.value)


def test_google_adk_is_not_imported_by_tui_eval_or_native_agents(tmp_path: Path) -> None:
    import subprocess

    folder = _write(tmp_path / "plain_agent")
    code = (
        "import sys, tui_eval, tui_eval.agents, tui_eval.engine.live, tui_eval.watch\n"
        f"from tui_eval.agents import load_agent; load_agent({str(folder)!r})\n"
        "bad = [m for m in sys.modules if m.startswith(('google.adk', 'textual', 'rich'))]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
