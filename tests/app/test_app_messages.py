"""Events flow up as Messages, data flows down: screens never call the app's business methods, and an
exception in a message handler or in the pull loop is logged and shown, not fatal and not swallowed."""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.message import Message

from tests.app.conftest import settle
from tui_eval.tui import app as app_module
from tui_eval.tui.app import EvalApp, _reported

TUI = Path(app_module.__file__).parent
BUSINESS = {"start_run", "cancel_run", "accept_turn", "accept_case", "delete_turn", "delete_case", "open_turn",
            "open_history", "set_live", "set_agent_reruns", "jump_to", "metric_names", "engine", "loader",
            "reload_file", "edits", "jobs", "pump", "notices", "sync_status", "reload_rewritten"}


def test_screens_widgets_and_commands_never_call_the_app_business_methods() -> None:
    offenders = []
    for path in [*TUI.glob("screens/*.py"), *TUI.glob("widgets/*.py"), TUI / "commands.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in BUSINESS and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "app":
                offenders.append(f"{path.name}:{node.lineno} app.{node.attr}")
    assert offenders == []


@dataclass
class Boom(Message):
    """A message whose handler fails."""

    text: str


class FaultyApp(EvalApp):
    """The dashboard plus one faulty message handler and a pull loop that fails the first two times."""

    CSS_PATH = str(TUI / "app.tcss")
    fold_failures = 2

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        pull = self.model.pull

        def failing_pull(budget=None):
            if self.fold_failures:
                self.fold_failures -= 1
                raise ValueError("state could not be folded")
            return pull(budget)

        self.model.pull = failing_pull  # type: ignore[method-assign]  # the fault injected

    @_reported
    def on_boom(self, message: Boom) -> None:
        raise RuntimeError(message.text)


def errors(app) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications if n.severity == "error"]


async def test_a_failing_handler_is_logged_and_shown(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = FaultyApp(workspace, watch=False, theme="tui-eval")
    with caplog.at_level(logging.ERROR, logger="tui_eval.tui.app"):
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            app.main.post_message(Boom("the handler broke"))
            await pilot.pause()
            assert any("Could not handle Boom" in e and "RuntimeError: the handler broke" in e for e in errors(app))
            assert app.is_running
    assert any("Could not handle Boom" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_a_failing_pull_is_shown_once_and_the_loop_goes_on(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = FaultyApp(workspace, watch=False, theme="tui-eval")
    with caplog.at_level(logging.ERROR, logger="tui_eval.tui.app"):
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            app.pull()
            app.pull()
            shown = [e for e in errors(app) if "state could not be folded" in e]
            assert len(shown) == 1 and shown[0].startswith("Could not update the screen")
            # Once the fault is gone the loop folds again: the folder's files reach the top bar.
            assert "eval files" in str(app.main.query_one("#topbar").render())
    assert sum("Could not update the screen" in r.getMessage() for r in caplog.records) == 1
