"""Saving a pull without losing unpushed edits, the cache folder, and the dashboard's ces:// argument."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.fake_ces import APP, golden_evaluation, scenario_evaluation
from tui_eval.ces.address import parse_app_url
from tui_eval.ces.cache import cache_dir_for, cache_root, save_pull, snapshot_file_for, unpushed_edits
from tui_eval.schema.ces.model import Evaluation
from tui_eval.tui.ces_jobs import ces_target_of


def remote(*items: dict) -> list[Evaluation]:
    return [Evaluation.model_validate(copy.deepcopy(i)) for i in items]


def _edit_question(path: Path, text: str) -> None:
    data = orjson.loads(path.read_bytes())
    data["eval_cases"][0]["conversation"][0]["user_content"]["parts"][0]["text"] = text
    path.write_bytes(orjson.dumps(data))


def test_first_pull_writes_the_file_and_its_snapshot(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    saved = save_pull(dest, APP, remote(golden_evaluation(), scenario_evaluation()))
    assert saved.written and (saved.evaluations, saved.with_results) == (2, 1)
    assert saved.line(APP) == f"wrote {dest}: 2 evaluation(s) of {APP}, 1 with a last result"
    ids = [c["eval_id"] for c in orjson.loads(dest.read_bytes())["eval_cases"]]
    assert ids == ["refund-scenario", "weather-golden"]  # a first pull is sorted by display name
    assert len(orjson.loads(snapshot_file_for(dest).read_bytes())["evaluations"]) == 2


def test_a_local_edit_is_kept_and_named(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    save_pull(dest, APP, remote(golden_evaluation()))
    _edit_question(dest, "And in Lyon?")
    before = dest.read_bytes()
    newer = golden_evaluation()
    newer["lastCompletedResult"]["evaluationStatus"] = "FAIL"  # only results changed in CES
    saved = save_pull(dest, APP, remote(newer))
    assert not saved.written and saved.kept_for == ["weather-golden"]
    assert dest.read_bytes() == before
    assert "unpushed edits (weather-golden)" in saved.line(APP) and "--force" in saved.line(APP)
    # --force overwrites.
    assert save_pull(dest, APP, remote(newer), force=True).written
    assert b"And in Lyon?" not in dest.read_bytes()


def test_a_change_made_in_ces_is_pulled_over_an_untouched_copy(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    save_pull(dest, APP, remote(golden_evaluation()))
    changed = golden_evaluation()
    changed["golden"]["turns"][0]["steps"][1]["userInput"]["text"] = "Weather in Rome?"
    changed["etag"] = "etag-2"
    assert save_pull(dest, APP, remote(changed)).written
    assert b"Weather in Rome?" in dest.read_bytes()


def test_pushed_edits_are_not_edits_any_more(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    save_pull(dest, APP, remote(golden_evaluation()))
    _edit_question(dest, "And in Lyon?")
    pushed = golden_evaluation()  # what CES holds after the push
    pushed["golden"]["turns"][0]["steps"][1]["userInput"]["text"] = "And in Lyon?"
    assert unpushed_edits(dest, remote(pushed)) == []


def test_without_a_snapshot_any_difference_from_ces_is_kept(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    save_pull(dest, APP, remote(golden_evaluation()))
    snapshot_file_for(dest).unlink()  # a file pulled before snapshots existed
    assert unpushed_edits(dest, remote(golden_evaluation())) == []
    _edit_question(dest, "And in Lyon?")
    assert unpushed_edits(dest, remote(golden_evaluation())) == ["weather-golden"]


def test_a_case_added_by_hand_counts_as_an_edit(tmp_path: Path) -> None:
    dest = tmp_path / "app1.evalset.json"
    save_pull(dest, APP, remote(golden_evaluation()))
    data = orjson.loads(dest.read_bytes())
    data["eval_cases"].append({"eval_id": "mine", "conversation": []})
    dest.write_bytes(orjson.dumps(data))
    assert unpushed_edits(dest, remote(golden_evaluation())) == ["mine"]


def test_cache_folder_per_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TUI_EVAL_CES_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir_for(APP) == tmp_path / "xdg" / "tui-eval" / "ces" / "p1" / "us" / "app1"
    monkeypatch.setenv("TUI_EVAL_CES_CACHE", str(tmp_path / "mine"))
    assert cache_dir_for(APP) == tmp_path / "mine" / "p1" / "us" / "app1"


def test_the_dashboards_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TUI_EVAL_CES_CACHE", str(tmp_path / "cache"))
    folder, target = ces_target_of([f"ces://{APP}"], None)
    assert folder == tmp_path / "cache" / "p1" / "us" / "app1" and folder.is_dir()
    assert target is not None and target.app == APP and target.endpoint == "https://ces.googleapis.com/mcp"
    assert target.eval_file == folder / "app1.evalset.json"
    folder, target = ces_target_of(["evals", f"ces://{APP}/"], "http://127.0.0.1:1/mcp")
    assert folder == Path("evals") and target is not None and target.endpoint == "http://127.0.0.1:1/mcp"
    assert ces_target_of(["."], None) == (Path("."), None)
    with pytest.raises(ValueError, match="expected ces://projects/PROJECT/locations/LOCATION/apps/APP"):
        parse_app_url("ces://projects/p1/apps/a")
    with pytest.raises(ValueError, match="one folder or eval file at a time"):
        ces_target_of(["a", "b"], None)


def test_the_case_key_is_spelt_the_same_everywhere() -> None:
    from tui_eval.schema.ces import caseview, mapping
    from tui_eval.tui.widgets import ces_panel

    assert caseview.CES_KEY == mapping.CES_KEY == ces_panel.CES_KEY == "ces"


def test_opening_a_plain_folder_loads_no_ces_models_or_pydantic() -> None:
    # `tui-eval PATH` asks ces_target_of before its first paint: only a ces:// app needs the CES models.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tui_eval.tui.ces_jobs import ces_target_of\n"
        "assert ces_target_of(['evals'], None) == (Path('evals'), None)\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('pydantic', 'tui_eval.schema.ces.model')))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_the_dashboards_light_constants_equal_the_ces_modules_own() -> None:
    from tui_eval.ces import address
    from tui_eval.tui import ces_jobs

    assert ces_jobs.SCHEME == address.SCHEME == "ces://"
    assert ces_jobs.DEFAULT_ENDPOINT == address.DEFAULT_ENDPOINT == "https://ces.googleapis.com/mcp"


def test_every_per_user_path_follows_one_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The judge cache, the CES cache, the keymap and the dashboard's log: an explicit variable, else
    # the XDG folder (a `~` in it expanded), else XDG's default below the home folder.
    from tui_eval.judge.options import default_cache_dir
    from tui_eval.logging_setup import default_log_file
    from tui_eval.tui.keymap import keymap_path

    for name in ("TUI_EVAL_CES_CACHE", "TUI_EVAL_CACHE_DIR", "TUI_EVAL_LOG_FILE", "TUI_EVAL_KEYMAP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert cache_root() == tmp_path / ".cache" / "tui-eval" / "ces"
    assert default_cache_dir() == tmp_path / ".cache" / "tui-eval" / "judge"
    assert keymap_path() == tmp_path / ".config" / "tui-eval" / "keymap.toml"
    assert default_log_file() == tmp_path / ".local" / "state" / "tui-eval" / "tui-eval.log"
    monkeypatch.setenv("XDG_CACHE_HOME", "~/xc")
    monkeypatch.setenv("XDG_CONFIG_HOME", "~/xg")
    monkeypatch.setenv("XDG_STATE_HOME", "~/xs")
    assert cache_root() == tmp_path / "xc" / "tui-eval" / "ces"
    assert default_cache_dir() == tmp_path / "xc" / "tui-eval" / "judge"
    assert keymap_path() == tmp_path / "xg" / "tui-eval" / "keymap.toml"
    assert default_log_file() == tmp_path / "xs" / "tui-eval" / "tui-eval.log"
    monkeypatch.setenv("TUI_EVAL_CES_CACHE", "~/mine")
    assert cache_root() == tmp_path / "mine"


def test_a_cases_results_are_validated_once_per_loaded_case(monkeypatch: pytest.MonkeyPatch) -> None:
    # The turn view asks on every redraw; a reloaded case (a new model_extra) is read afresh.
    from tui_eval.schema.ces import caseview
    from tui_eval.schema.ces.model import EvaluationResult

    calls: list[int] = []
    validate = EvaluationResult.model_validate

    def counted(cls: type[EvaluationResult], raw: object, **kw: Any) -> EvaluationResult:
        calls.append(1)
        return validate(raw, **kw)

    monkeypatch.setattr(EvaluationResult, "model_validate", classmethod(counted))
    extra = {"ces": {"evaluation": golden_evaluation()}}
    first = caseview.results_of(extra)
    assert first is not None and first.last is not None and calls
    n = len(calls)
    assert caseview.results_of(extra) is first and len(calls) == n
    reloaded = {"ces": {"evaluation": golden_evaluation()}}
    again = caseview.results_of(reloaded)
    assert again is not first and again is not None and again.last == first.last and len(calls) == 2 * n
