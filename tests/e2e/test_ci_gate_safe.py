"""A gate that fails safe, and a baseline CI can keep (issue 33, item 2): with no baseline found,
`--fail-on-regression` fails on any failure and says so (`--require-baseline`: exit 2); a run that failed
its gate never becomes `latest`; `tui-eval baseline save` writes a file a fresh checkout compares with;
the gate's outcome is in --json and JUnit, and the run id is printed."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.cli_run import copy_demo, run_cli

from tui_eval.engine.store import list_history

@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")  # the demo agents' offline policy: 4 passed, 5 failed


def test_no_baseline_fails_on_any_failure_and_a_failed_gate_never_becomes_latest(tmp_path: Path) -> None:
    demo, evalset = copy_demo(tmp_path)
    gate = ("run", str(demo), str(evalset), "--baseline", "latest", "--fail-on-regression")
    # A fresh checkout: no saved run. Five cases fail: the gate fails, and says why.
    code, out, err = run_cli(*gate)
    assert code == 1, out + err
    assert ("Result: exit 1 (failed): 5 cases failed with no baseline to compare with (--fail-on-regression "
            "fails on any failure then: hello_world: no saved run of this eval set)") in out
    [failed] = list_history(demo / ".adk" / "eval_history")
    assert failed.gate is not None and failed.gate.code == 1 and failed.gate_failed
    # The failed gated run was saved; it is not `latest` for the next gate, which fails again.
    code, out, err = run_cli(*gate)
    assert code == 1, out + err
    assert "every saved run of the same kind failed its gate" in out
    # --require-baseline refuses to run without one.
    code, out, err = run_cli(*gate, "--require-baseline")
    assert code == 2 and out == "", out + err
    assert ("error: --require-baseline: no baseline for hello_world "
            f"({evalset}): every saved run of the same kind failed its gate") in err
    assert run_cli("run", str(demo), str(evalset), "--require-baseline")[0] == 2


def test_baseline_save_gives_a_fresh_checkout_a_baseline_and_the_gate_is_in_json_and_junit(tmp_path: Path) -> None:
    demo, evalset = copy_demo(tmp_path)
    code, out, err = run_cli("run", str(demo), str(evalset))
    assert code == 1, out + err
    [saved] = list_history(demo / ".adk" / "eval_history")
    assert f"Run id: {saved.run_id}" in out
    baseline = tmp_path / "hello.baseline.json"
    code, out, err = run_cli("baseline", "save", "latest", str(baseline), "--history", str(tmp_path))
    assert code == 0, out + err
    assert f"saved run {saved.run_id} (1 record) as the baseline {baseline}" in out
    # A fresh CI checkout elsewhere: the eval history is gone, the committed baseline file is there.
    checkout = tmp_path / "ci"
    checkout.mkdir()
    shutil.copytree(demo, checkout / "hello_world", ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    shutil.copy(baseline, checkout / baseline.name)
    agent, file = checkout / "hello_world", checkout / "hello_world" / "hello_world.evalset.json"
    js, xml = tmp_path / "out.json", tmp_path / "out.xml"
    code, out, err = run_cli("run", str(agent), str(file), "--baseline", str(checkout / baseline.name),
                             "--fail-on-regression", "--json", str(js), "--junit", str(xml))
    assert code == 0, out + err
    assert f"Baseline run {saved.run_id}: 0 regressions, 0 fixes, 5 still failing, 0 not run" in out
    assert "Result: exit 0 (passed): 5 cases failed, none of them a regression (--fail-on-regression)" in out
    [result] = json.loads(js.read_text())
    run_id = next(line for line in out.splitlines() if line.startswith("Run id: ")).removeprefix("Run id: ")
    assert result["gate"]["run_id"] == run_id and result["gate"]["exit_code"] == 0
    assert result["gate"]["baseline_run"] == saved.run_id and result["gate"]["regressions"] == []
    assert len(result["gate"]["still_failing"]) == 5
    by_id = {c["eval_id"]: c for c in result["eval_case_results"]}
    assert by_id["greeting"]["gate"] == {"change": "unchanged", "reason": ""}
    failing = by_id[result["gate"]["still_failing"][0]]
    assert failing["gate"]["change"] == "still failing" and failing["not_evaluated"] == {}
    # ADK still reads the file.
    from google.adk.evaluation.eval_result import EvalSetResult

    EvalSetResult.model_validate(result)
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iterfind("properties/property")}
    assert props["tui_eval.exit_code"] == "0" and props["tui_eval.run_id"] == run_id
    assert props["tui_eval.baseline_run"] == saved.run_id and props["tui_eval.regressions"] == ""
    assert sorted(str(props["tui_eval.still_failing"]).split(",")) == sorted(result["gate"]["still_failing"])
    # A regression against the committed baseline fails the gate.
    data = json.loads((checkout / baseline.name).read_text())
    for case in data["records"][0]["cases"]:
        case["status"] = 1  # every case passed there
    (checkout / baseline.name).write_text(json.dumps(data))
    code, out, err = run_cli("run", str(agent), str(file), "--no-save", "--baseline", str(checkout / baseline.name),
                             "--fail-on-regression")
    assert code == 1 and "Result: exit 1 (failed): 5 regressions against the baseline" in out, out + err


def test_baseline_save_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    code, out, err = run_cli("baseline", "save", "latest", str(tmp_path / "b.json"), "--history", str(tmp_path))
    assert code == 2 and "no run records" in err
    code, out, err = run_cli("baseline", "save", "20990101-nope", str(tmp_path / "b.json"), "--history", str(tmp_path))
    assert code == 2 and "20990101-nope: no such run record, folder, or run id" in err
    assert not (tmp_path / "b.json").exists()
