"""User keymaps: a TOML file remaps bindings by id; a bad file or an unknown id is reported, never fatal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import settle
from tui_eval.tui.keymap import keymap_path, load_keymap
from tui_eval.tui.screens.help import HelpScreen


def notifications(app) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def test_keymap_path_prefers_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("TUI_EVAL_KEYMAP", raising=False)
    assert keymap_path() == tmp_path / "cfg" / "tui-eval" / "keymap.toml"
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(tmp_path / "mine.toml"))
    assert keymap_path() == tmp_path / "mine.toml"


def test_load_keymap_reads_dotted_ids_tables_and_key_lists(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text('# my keys\nrun.all = "g"\n"run.failed" = ["ctrl+f", "G"]\n\n[turn]\nmatch_type = "t"\n',
                    encoding="utf-8")
    keymap = load_keymap(path)
    assert keymap.bindings == {"run.all": "g", "run.failed": "ctrl+f,G", "turn.match_type": "t"}
    assert keymap.problems == ()


def test_load_keymap_reports_a_broken_file_and_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    path.write_text('run.all = "g\n', encoding="utf-8")
    broken = load_keymap(path)
    assert broken.bindings == {} and len(broken.problems) == 1 and str(path) in broken.problems[0]
    path.write_text('run.all = 3\nrun.failed = "G"\n', encoding="utf-8")
    mixed = load_keymap(path)
    assert mixed.bindings == {"run.failed": "G"}
    assert len(mixed.problems) == 1 and "run.all" in mixed.problems[0]


def test_a_missing_default_keymap_is_no_keymap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_keymap(tmp_path / "nowhere.toml").bindings == {}
    assert load_keymap(tmp_path / "nowhere.toml").problems == ()
    # A file the user named must exist.
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(tmp_path / "named.toml"))
    named = load_keymap()
    assert named.bindings == {} and len(named.problems) == 1 and "named.toml" in named.problems[0]


async def test_remapped_key_starts_a_run_and_the_help_shows_it(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text('run.all = "g"\n', encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # the default key no longer runs everything
        await settle(pilot)
        assert app.run_state is None
        await pilot.press("g")
        await settle(pilot)
        state = app.run_state
        assert state is not None and state.label == "Run all" and state.phase == "finished"
        assert state.cases_total == 8
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = str(app.screen.query_one("#help-body Static").render()).splitlines()
        run_all = [row for row in rows if row.rstrip().endswith("Run all  run.all")]  # keys, what, id
        assert [row.split()[0] for row in run_all] == ["g"]
        assert not any(row.split()[:1] == ["R"] for row in rows)
        assert not any("Keymap" in n for n in notifications(app))


async def test_broken_keymap_is_reported_and_the_defaults_work(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text("run.all = [\n", encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert any(n.startswith("Keymap:") and str(keymap) in n for n in notifications(app))
        await pilot.press("R")
        await settle(pilot)
        assert app.run_state is not None and app.run_state.label == "Run all"


async def test_unknown_binding_id_is_reported(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text('run.everything = "g"\nrun.failed = "G"\n', encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        found = [n for n in notifications(app) if "unknown binding ids" in n]
        assert len(found) == 1 and "run.everything" in found[0] and "run.failed" not in found[0]


async def test_a_clash_keeps_the_defaults_and_says_so(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`filter.failed = "r"` would take r from run.selection: the entry is left out, both keep their keys."""
    keymap = tmp_path / "keys.toml"
    keymap.write_text('filter.failed = "r"\nrun.all = "g"\n', encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        clashes = [n for n in notifications(app) if n.startswith("Keymap clash")]
        assert clashes == ["Keymap clash: 'r' would be run.selection and filter.failed: "
                           "filter.failed keeps 'f' (the default)"], clashes
        await pilot.press("f")  # still the failed-only filter
        await pilot.pause()
        assert app.listing.filter.failed_only
        await pilot.press("escape", "down", "down")  # travel
        await pilot.press("r")  # still runs the highlighted file
        await settle(pilot)
        assert app.run_state is not None and app.run_state.label == "Run travel.evalset.json"
        # The entry that did not clash is in effect; the help lists each key once, as it works.
        await pilot.press("question_mark")
        rows = str(app.screen.query_one("#help-body Static").render()).splitlines()
        assert [row.split()[0] for row in rows if row.rstrip().endswith("filter.failed")] == ["f"]
        assert [row.split()[0] for row in rows if row.rstrip().endswith("run.selection")] == ["r"]
        assert [row.split()[0] for row in rows if row.rstrip().endswith("run.all")] == ["g"]


async def test_a_remapped_key_shows_in_the_run_panel_and_the_hints(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text('run.all = "g"\nrun.selection = "ctrl+r"\nfilter.search = "ctrl+f"\n', encoding="utf-8")
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        status = str(app.main.query_one("#run-status").render())
        assert status == "No run yet. ^r runs the selection, g everything, F the failures.", status
        await pilot.press("down", "down")  # travel
        from tests.app.test_app_browse import summary_text

        assert "^r runs this file · enter expands · ^f searches" in summary_text(app)


async def test_a_huge_keymap_of_bad_entries_is_summarised(
        workspace: Path, make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """50,000 bad entries under the 1 MiB cap: three named, the rest counted, one notice."""
    keymap = tmp_path / "keys.toml"
    keymap.write_text("".join(f'k{i} = "x{i}"\n' for i in range(50_000)), encoding="utf-8")
    assert keymap.stat().st_size < 1024 * 1024
    monkeypatch.setenv("TUI_EVAL_KEYMAP", str(keymap))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = [n for n in notifications(app) if n.startswith("Keymap:")]
        assert len(said) == 4, said
        assert said[-1] == "Keymap: … and 49,997 more (the log lists them all)"
