"""The project's own standing checks, run with the suite: layer contracts and the type checker."""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    # The venv's own script, next to the interpreter running the suite.
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else (shutil.which(name) or name)


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_import_layers_hold() -> None:
    """cli/tui on top, schema at the bottom; the core never imports textual, rich or the tui."""
    proc = _run(_tool("lint-imports"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout, proc.stdout[-4000:]


def test_every_module_of_the_package_is_in_the_layer_contract() -> None:
    """A module left out of the layers is checked by nothing: lint-imports stays green whatever it imports."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    modules = {f"tui_eval.{m.name}" for m in pkgutil.iter_modules([str(ROOT / "tui_eval")])}
    assert modules - named == set(), f"not in the layer contract: {sorted(modules - named)}"
    assert named - modules == set(), f"named in the layer contract but not in the package: {sorted(named - modules)}"


def test_mypy_is_clean() -> None:
    """mypy with the pyproject configuration (the whole package strict, the tests checked) reports no error."""
    proc = _run(_tool("mypy"))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout


def test_every_style_rule_is_in_a_tcss_file() -> None:
    """No widget or screen carries CSS in Python (DEFAULT_CSS or CSS): the rules live in tui/*.tcss,
    and each CSS_PATH names a sheet that exists."""
    import ast

    inline, missing = [], []
    for path in sorted((ROOT / "tui_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                where = f"{path.relative_to(ROOT)}:{stmt.lineno} {node.name}"
                if "DEFAULT_CSS" in names or "CSS" in names:
                    inline.append(where)
                value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
                if "CSS_PATH" in names and isinstance(value, ast.Constant):
                    if not (path.parent / str(value.value)).is_file():
                        missing.append(f"{where}: {value.value!s}")
    assert inline == [] and missing == []
