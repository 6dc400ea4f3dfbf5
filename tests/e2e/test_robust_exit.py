"""Results that could not be written change the exit code: history, --json or --junit → exit 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.support.evalfiles import case, turn, write_set
from tui_eval.cli import main


def _deep(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels):
        value = {"k": value}
    return value


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _pair(folder: Path, eval_set_id: str = "golden", args: dict | None = None) -> tuple[Path, Path]:
    calls = [("deep", args)] if args is not None else []
    golden = write_set(folder / "golden.evalset.json", eval_set_id, case("c1", turn("hi", "hello", calls)))
    recorded = write_set(folder / "recorded.evalset.json", "rec", case("c1", turn("hi", "hello", calls)))
    return golden, recorded


def test_deep_tool_args_that_cannot_be_saved_exit_2_with_the_reason(tmp_path: Path) -> None:
    golden, recorded = _pair(tmp_path, args=_deep(300))
    out_json = tmp_path / "out.json"
    code, out, err = _run("run", f"replay:{recorded}", str(golden), "--json", str(out_json))
    assert code == 2, (out, err)
    assert "could not save" in err and "history" in err
    assert "--json" in err
    # The summary still prints: the case passed, only writing failed.
    assert "Total: 1 passed, 0 failed, 0 not evaluated" in out


def test_a_240_character_eval_set_id_exits_2(tmp_path: Path) -> None:
    golden, recorded = _pair(tmp_path, eval_set_id="x" * 240)
    code, out, err = _run("run", f"replay:{recorded}", str(golden))
    assert code == 2, (out, err)
    assert "could not save" in err
    assert "Total: 1 passed" in out


def test_an_unwritable_junit_or_json_exits_2_and_the_other_reports_are_still_written(tmp_path: Path) -> None:
    golden, recorded = _pair(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    out_json = tmp_path / "ok.json"
    code, out, err = _run("run", f"replay:{recorded}", str(golden), "--no-save",
                          "--junit", str(blocker / "x.xml"), "--json", str(out_json))
    assert code == 2, (out, err)
    assert "--junit" in err and str(blocker / "x.xml") in err
    assert json.loads(out_json.read_text())[0]["eval_set_id"] == "golden"


def test_a_clean_run_still_exits_0(tmp_path: Path) -> None:
    golden, recorded = _pair(tmp_path)
    code, out, err = _run("run", f"replay:{recorded}", str(golden), "--json", str(tmp_path / "o.json"))
    assert code == 0, (out, err)
    assert err == ""
