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


DEMO = Path(__file__).resolve().parents[2] / "demo_agents"


def copy_demo(tmp_path: Path, name: str = "hello_world") -> tuple[Path, Path]:
    """A copy of one demo agent (without its history) and its eval file `<name>.evalset.json`."""
    import shutil

    folder = tmp_path / name
    shutil.copytree(DEMO / name, folder, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    return folder, folder / f"{name}.evalset.json"
