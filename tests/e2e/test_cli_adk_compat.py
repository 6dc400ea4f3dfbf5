"""A pasted `adk eval` line runs with only the program name changed, and scores as the canonical form does."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from tui_eval.cli import build_parser, main

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
HELLO = DEMO / "hello_world"
HELLO_FAILED = {"roll_and_check_prime", "roll_twelve_in_words", "check_then_roll", "prime_of_my_own_roll",
                "ten_sided_wording"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the demo's offline policy


def run_json(args: list[str], tmp_path: Path, name: str) -> tuple[int, str, list[dict]]:
    out, err = io.StringIO(), io.StringIO()
    json_out = tmp_path / f"{name}.json"
    code = main(["run", *args, "--json", str(json_out), "--no-save"], out, err)
    assert err.getvalue() == "", err.getvalue()
    return code, out.getvalue(), json.loads(json_out.read_text())


def verdicts(results: list[dict]) -> dict[tuple[str, str], tuple[int, dict[str, tuple[float, int]]]]:
    """(eval_set_id, eval_id) -> (final status, {metric: (score, status)})."""
    return {
        (r["eval_set_id"], c["eval_id"]): (
            c["final_eval_status"],
            # wall-clock seconds differ from run to run; every other value must not
            {m["metric_name"]: (m["score"], m["eval_status"]) for m in c["overall_eval_metric_results"]
             if m["metric_name"] != "invocation_duration_v1"},
        )
        for r in results
        for c in r["eval_case_results"]
    }


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`tui-eval run AGENT EVAL_FILE`: the form every other one must equal."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TUI_EVAL_AGENT_MODE", "auto")
    try:
        code, _out, results = run_json([str(HELLO), str(HELLO / "hello_world.evalset.json")],
                                       tmp_path_factory.mktemp("canonical"), "canonical")
    finally:
        mp.undo()
    assert code == 1
    found = verdicts(results)
    assert {eid for (_s, eid), (status, _m) in found.items() if status == 2} == HELLO_FAILED
    return found


def test_pasted_adk_eval_line_with_init_py_eval_set_id_and_adk_options(
    canonical: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # adk eval demo_agents/hello_world/__init__.py hello_world --config_file_path ... --print_detailed_results
    monkeypatch.chdir(DEMO)
    code, out, results = run_json(
        ["hello_world/__init__.py", "hello_world", "--config_file_path", "hello_world/test_config.json",
         "--print_detailed_results", "--log_level", "INFO"],
        tmp_path, "pasted",
    )
    assert code == 1
    assert verdicts(results) == canonical
    assert "=== hello_world / check_then_roll: FAILED" in out  # the detailed results were printed
    assert "expected tools:" in out and "actual tools:" in out


def test_eval_set_id_with_case_selection(canonical: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HELLO)
    code, _out, results = run_json([".", "hello_world:greeting,check_then_roll"], tmp_path, "ids")
    assert code == 1
    wanted = {("hello_world", "greeting"), ("hello_world", "check_then_roll")}
    assert verdicts(results) == {k: v for k, v in canonical.items() if k in wanted}


def test_agent_py_path_and_absolute_file_with_selection(canonical: dict, tmp_path: Path) -> None:
    code, _out, results = run_json(
        [str(HELLO / "agent.py"), f"{HELLO / 'hello_world.evalset.json'}:greeting"], tmp_path, "agent_py")
    assert code == 0
    assert verdicts(results) == {("hello_world", "greeting"): canonical[("hello_world", "greeting")]}


def test_agent_option_accepts_init_py(canonical: dict, tmp_path: Path) -> None:
    code, _out, results = run_json(
        ["--agent", str(HELLO / "__init__.py"), str(HELLO / "hello_world.evalset.json")], tmp_path, "agent_opt")
    assert code == 1
    assert verdicts(results) == canonical


def test_folder_target_runs_every_eval_file_below_it_once(canonical: dict, tmp_path: Path) -> None:
    agent = tmp_path / "dice_agent"
    shutil.copytree(HELLO, agent, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    nested = agent / "more" / "deeper"
    nested.mkdir(parents=True)
    data = json.loads((HELLO / "hello_world.evalset.json").read_text())
    data["eval_set_id"] = "more"
    (nested / "more.evalset.json").write_text(json.dumps(data))
    shutil.copy(HELLO / "test_config.json", nested / "test_config.json")
    # Never eval targets: history and hidden folders.
    (agent / ".adk" / "eval_history").mkdir(parents=True)
    (agent / ".adk" / "eval_history" / "old.evalset.json").write_text("not json")
    (agent / ".hidden").mkdir()
    (agent / ".hidden" / "x.test.json").write_text("not json")

    # The folder twice and one of its files on its own: each file still runs once.
    code, _out, results = run_json(
        [str(agent), str(agent), str(agent / "hello_world.evalset.json"), str(agent)], tmp_path, "folder")
    assert code == 1
    assert sorted(r["eval_set_id"] for r in results) == ["hello_world", "more"]
    found = verdicts(results)
    assert {k: v for k, v in found.items() if k[0] == "hello_world"} == canonical
    assert {("hello_world", k[1]): v for k, v in found.items() if k[0] == "more"} == canonical


def test_unknown_eval_set_id_names_where_it_was_looked_for(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(HELLO), "no_such_set", "--no-save"], out, err)
    assert code == 2
    assert "no_such_set" in err.getvalue()
    assert str(HELLO / "no_such_set.evalset.json") in err.getvalue()


def test_case_selection_on_a_folder_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "evals"
    shutil.copytree(HELLO, folder)
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(HELLO), f"{folder}:greeting", "--no-save"], out, err)
    assert code == 2 and "needs one eval file" in err.getvalue()


def test_a_folder_without_eval_files_is_an_error(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(HELLO), str(tmp_path), "--no-save"], out, err)
    assert code == 2 and "no eval files" in err.getvalue()


def test_adk_option_spellings_parse_to_the_canonical_options() -> None:
    args = build_parser().parse_args(
        ["run", "a", "b", "--config_file_path", "c.json", "--print_detailed_results", "--log_level", "debug"])
    assert args.config == "c.json"
    assert args.print_detailed_results is True
    assert args.log_level == "DEBUG"


def test_eval_storage_uri_is_refused_with_a_reason() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(HELLO), "hello_world", "--eval_storage_uri", "gs://bucket", "--no-save"], out, err)
    assert code == 2 and "--eval_storage_uri" in err.getvalue() and "not supported" in err.getvalue()
