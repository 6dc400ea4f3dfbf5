"""Running `tui-eval` in the test's own process, and reading the run it saved."""

from __future__ import annotations

import io
import json
from pathlib import Path


def run_cli(*args: str) -> tuple[int, str, str]:
    """`tui-eval ARGS` in this process: exit code, stdout, stderr."""
    from tui_eval.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def saved_cases(folder: Path) -> dict[str, dict]:
    """The cases of the one run saved beside the folder's eval set, by eval id."""
    (path,) = (folder / ".adk" / "eval_history").glob("*.tui-eval.json")
    return {c["eval_id"]: c for c in json.loads(path.read_text())["cases"]}
