"""The README and docs/ stay true: keys, flags, links, the pytest example and the Quick-start commands."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

# How a Textual key name is written in docs/keys.md.
_SHOWN = {"question_mark": "?", "slash": "/", "right": "→", "left": "←", "plus": "+", "equals_sign": "=",
          "right_square_bracket": "]", "minus": "-", "left_square_bracket": "["}


def _keys_table() -> list[str]:
    return [line for line in (DOCS / "keys.md").read_text().splitlines() if line.startswith("| ")]


def test_every_binding_is_in_the_key_table_with_its_default_key() -> None:
    from textual.binding import Binding

    from tui_eval.tui.screens.help import binding_sections

    rows = _keys_table()
    missing = []
    for _title, bindings in binding_sections():
        for b in bindings:
            if not isinstance(b, Binding) or not b.id:
                continue
            id_rows = [r for r in rows if f"`{b.id}`" in r]
            if not id_rows:
                missing.append(f"{b.id}: no row")
                continue
            for key in b.key.split(","):
                shown = _SHOWN.get(key.strip(), key.strip())
                if not any(f"`{shown}`" in row for row in id_rows):
                    missing.append(f"{b.id}: key {shown!r} not in {id_rows!r}")
    assert not missing, "\n".join(missing)


def test_the_key_table_names_no_binding_that_does_not_exist() -> None:
    from textual.binding import Binding

    from tui_eval.tui.screens.help import binding_sections

    from tui_eval.tui.screens.ces_history import CesHistoryScreen

    sections = [*(bs for _t, bs in binding_sections()), CesHistoryScreen.BINDINGS]
    ids = {b.id for bs in sections for b in bs if isinstance(b, Binding) and b.id}
    named = {m for row in _keys_table() for m in re.findall(r"`([a-z_]+\.[a-z_]+)`", row.split("|")[4])}
    assert named, "the id column was not found"
    assert not named - ids, named - ids


def test_no_two_bindings_share_an_id() -> None:
    # A keymap entry names one id: two bindings with the same id would both be remapped by it.
    from collections import Counter

    from textual.binding import Binding

    from tui_eval.tui.screens.ces_history import CesHistoryScreen
    from tui_eval.tui.screens.help import binding_sections

    sections = [*(bs for _t, bs in binding_sections()), CesHistoryScreen.BINDINGS]
    seen = {id(b): b for bs in sections for b in bs if isinstance(b, Binding) and b.id}
    counts = Counter(b.id for b in seen.values())
    assert not [i for i, n in counts.items() if n > 1], counts.most_common(3)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_flag_the_run_table_lists_exists() -> None:
    from tui_eval.cli import build_parser

    run = _subparsers(build_parser())["run"]
    known = {opt for action in run._actions for opt in action.option_strings}
    text = (DOCS / "cli.md").read_text()
    table = text[text.index("| argument | meaning |"):text.index("More runnable examples")]
    listed = set(re.findall(r"`(--[a-z][a-z-]*)", table))
    assert len(listed) > 15
    assert not listed - known, listed - known
    # and every flag of `run` is documented somewhere in cli.md
    undocumented = {o for o in known if o.startswith("--") and o not in text and o != "--help"}
    assert not undocumented, undocumented


@pytest.mark.parametrize(("command", "page"), [("watch", "cli.md"), ("open", "keys.md"), ("report", "cli.md"),
                                               ("migrate", "cli.md"), ("ces", "ces.md"),
                                               ("import-session", "cli.md")])
def test_every_flag_of_a_command_is_on_its_page(command: str, page: str) -> None:
    from tui_eval.cli import build_parser

    parser = _subparsers(build_parser())[command]
    parsers = [parser, *_subparsers(parser).values()]
    known = {opt for p in parsers for action in p._actions for opt in action.option_strings}
    text = (DOCS / page).read_text()
    undocumented = {o for o in known if o.startswith("--") and o not in text and o not in ("--help", "--log_level")}
    assert not undocumented, undocumented


def _anchors(page: Path) -> set[str]:
    text = page.read_text()
    found = set(re.findall(r'<a id="([^"]+)">', text))
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+://", target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, broken


def test_the_python_page_shows_the_example_that_runs() -> None:
    example = (DOCS / "examples" / "test_demo_agents.py").read_text()
    body = example.split('"""', 2)[2].strip()
    page = (DOCS / "python.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, flags=re.S)
    assert block is not None
    assert block.group(1).strip() == body


def test_quick_start_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert 'pip install -e . && tui-eval demo_agents' in readme
    assert 'pip install -e ".[dev]" && pytest' in readme
    assert '\npip install -e ".[dev]" && pytest\n' in (ROOT / ".ci" / "run").read_text()
