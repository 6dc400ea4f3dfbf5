"""`--log-level` on every command: run and watch log to stderr, the dashboard to a file; output is escaped."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from tests.support.evalfiles import dice_pair
from tui_eval.cli import main
from tui_eval.logging_setup import configure_logging, default_log_file, reset_logging


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("flag", [["--log-level", "debug"], ["--log_level", "DEBUG"], ["--log-level=Debug"]])
def test_run_logs_to_stderr_at_the_level_asked(tmp_path: Path, flag: list[str]) -> None:
    golden, recorded = dice_pair(tmp_path)
    code, out, err = run_cli("run", *flag, "--no-save", f"replay:{recorded}", str(golden))
    assert code == 1 and "Total: 1 passed, 3 failed" in out
    # asyncio says which selector it uses at DEBUG: proof that records reach stderr at that level.
    assert "DEBUG asyncio: Using selector" in err


def test_the_option_may_come_before_the_command_and_defaults_to_warning(tmp_path: Path) -> None:
    golden, recorded = dice_pair(tmp_path)
    code, _, err = run_cli("--log-level", "debug", "run", "--no-save", f"replay:{recorded}", str(golden))
    assert code == 1 and "DEBUG asyncio" in err
    code, _, err = run_cli("run", "--no-save", f"replay:{recorded}", str(golden))
    assert code == 1 and "DEBUG" not in err


def test_every_command_takes_it_and_a_bad_level_is_a_usage_error(tmp_path: Path, capsys) -> None:
    for command in ("run", "watch", "migrate", "open", "ces"):
        code = main([command, "--help"])
        assert code == 0 and "--log-level" in capsys.readouterr().out
    code = main(["run", "--log-level", "loud", "replay:x.json", "y.evalset.json"])
    assert code == 2 and "unknown log level 'loud'" in capsys.readouterr().err


def test_the_dashboard_logs_to_a_file_not_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys) -> None:
    from tui_eval.tui import app as app_module

    log_file = tmp_path / "logs" / "dash.log"
    monkeypatch.setenv("TUI_EVAL_LOG_FILE", str(log_file))

    def fake_run(self: object, **kwargs: object) -> None:
        logging.getLogger("tui_eval.tui.test").info("painted \x1b[31mred\x1b[0m")

    monkeypatch.setattr(app_module.EvalApp, "run", fake_run)
    assert main([str(tmp_path), "--log-level", "info"]) == 0
    text = log_file.read_text()
    assert "INFO tui_eval.tui.test: painted \\x1b[31mred\\x1b[0m" in text and "\x1b" not in text
    captured = capsys.readouterr()
    assert "painted" not in captured.out + captured.err
    # Handlers are removed when the command ends: a later record goes nowhere near the file.
    logging.getLogger("tui_eval.tui.test").warning("after")
    assert "after" not in log_file.read_text()


def test_default_log_file_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUI_EVAL_LOG_FILE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_log_file() == tmp_path / "state" / "tui-eval" / "tui-eval.log"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_log_file() == tmp_path / "home" / ".local" / "state" / "tui-eval" / "tui-eval.log"


def test_the_log_file_is_created_only_when_something_is_logged(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "x.log"
    try:
        configure_logging("warning", path)
        logging.getLogger("tui_eval.x").info("below the level")
        assert not path.parent.exists()
        logging.getLogger("tui_eval.x").warning("now")
        assert "WARNING tui_eval.x: now" in path.read_text()
    finally:
        reset_logging()
