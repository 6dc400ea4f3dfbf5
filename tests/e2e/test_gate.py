"""The CI gate (issue 21, part 3): exit codes 0/1/2/3 from runs that produce them, said in the summary,
JUnit and Markdown; `--baseline` on saved runs lists regressions, fixes, still failing and not run, and
`--fail-on-regression` fails only on regressions."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import tui_eval
from tests.support.evalfiles import case, turn, write_set
from tui_eval import cli
from tui_eval.cli import main
from tui_eval.engine import gate
from tui_eval.engine.store import list_history
from tui_eval.schema.results import EvalStatus

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
HELLO = DEMO / "hello_world"
HELLO_FILE = HELLO / "hello_world.evalset.json"
RETURN_CASE = f"{DEMO / 'support' / 'support.evalset.json'}:return_used_item"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the demo agents' offline policy


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_every_face_gives_the_exit_codes_the_spec_names() -> None:
    from tui_eval import ces_cli
    from tui_eval.engine import exitcodes

    assert (exitcodes.EXIT_OK, exitcodes.EXIT_FAILED, exitcodes.EXIT_BAD_INPUT, exitcodes.EXIT_INCOMPLETE) == (0, 1, 2, 3)
    assert exitcodes.EXIT_WRITE_FAILED == 2  # SPEC 6: results that could not be written exit 2
    # The faces read the one definition.
    assert (cli.EXIT_OK, cli.EXIT_BAD_INPUT, cli.EXIT_WRITE_FAILED) == (0, 2, 2)
    assert (ces_cli.EXIT_OK, ces_cli.EXIT_FAILED, ces_cli.EXIT_BAD_INPUT, ces_cli.EXIT_INCOMPLETE) == (0, 1, 2, 3)
    assert gate.run_outcome([]).code == 0


def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for line in ("0  every case passed", "1  a case failed", "2  bad arguments", "3  nothing failed, but the run is incomplete"):
        assert line in text
    assert "--baseline RUN|latest" in text and "--fail-on-regression" in text


def test_exit_0_when_every_case_passed_and_every_metric_ran(tmp_path: Path) -> None:
    code, out, err = run_cli("run", str(HELLO), f"{HELLO_FILE}:greeting,roll_six_sided", "--no-save")
    assert code == 0, out + err
    assert out.rstrip().endswith("Result: exit 0 (passed): every case passed")


def test_exit_1_when_a_case_failed_and_the_reports_say_so(tmp_path: Path) -> None:
    xml, md = tmp_path / "out.xml", tmp_path / "out.md"
    code, out, err = run_cli("run", str(HELLO), str(HELLO_FILE), "--no-save", "--junit", str(xml), "--md", str(md))
    assert code == 1, out + err
    assert "Result: exit 1 (failed): 5 cases failed" in out
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    assert props["tui_eval.exit_code"] == "1" and props["tui_eval.outcome"] == "exit 1 (failed): 5 cases failed"
    assert "**Exit 1 (failed)**: 5 cases failed" in md.read_text()


def test_exit_3_when_a_metric_was_not_evaluated_and_strict_makes_it_1(tmp_path: Path) -> None:
    xml, md = tmp_path / "out.xml", tmp_path / "out.md"
    code, out, err = run_cli("run", str(DEMO / "support"), RETURN_CASE, "--no-save", "--junit", str(xml), "--md", str(md))
    assert code == 3, out + err
    why = "nothing failed, but 3 metrics not evaluated: no judge credentials"
    assert f"Result: exit 3 (incomplete): {why}" in out
    found = ET.parse(xml).getroot().find("testsuite/properties")
    assert found is not None
    props = {p.get("name"): p.get("value") for p in found}
    run_id = props.pop("tui_eval.run_id")
    assert f"Run id: {run_id}" in out
    assert props == {"tui_eval.exit_code": "3", "tui_eval.outcome": f"exit 3 (incomplete): {why}"}
    assert f"**Exit 3 (incomplete)**: {why}" in md.read_text()
    code, out, err = run_cli("run", str(DEMO / "support"), RETURN_CASE, "--no-save", "--strict")
    assert code == 1, out + err
    assert "Result: exit 1 (failed): 1 case failed" in out


def test_exit_3_when_cases_were_not_evaluated_at_all(tmp_path: Path) -> None:
    # Offline, the scenario cases cannot be simulated: no verdict, no failure.
    scenarios = DEMO / "support" / "scenarios" / "support_scenarios.evalset.json"
    code, out, err = run_cli("run", str(DEMO / "support"), str(scenarios), "--no-save")
    assert code == 3, out + err
    assert "Result: exit 3 (incomplete): nothing failed, but 2 cases not evaluated;" in out


def test_exit_2_for_unreadable_input_and_for_results_not_written(tmp_path: Path) -> None:
    code, out, err = run_cli("run", str(HELLO), str(tmp_path / "missing.evalset.json"), "--no-save")
    assert code == 2 and "error:" in err
    # The verdicts passed, but the JUnit file could not be written: 2 wins, and the summary says why.
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    code, out, err = run_cli("run", str(HELLO), f"{HELLO_FILE}:greeting", "--no-save",
                             "--junit", str(blocker / "out.xml"))
    assert code == 2, out + err
    assert "could not write --junit" in err
    assert "Result: exit 2 (error): results could not be written" in out


def test_fail_on_regression_needs_a_baseline() -> None:
    code, out, err = run_cli("run", str(HELLO), str(HELLO_FILE), "--no-save", "--fail-on-regression")
    assert code == 2 and "--fail-on-regression needs --baseline" in err


# ---- --baseline ---------------------------------------------------------------------------------


def _suite(folder: Path, answers: dict[str, str], ids: list[str]) -> tuple[Path, Path]:
    """A golden set (the cases `ids`, expecting "the answer is <id>") and a recording answering `answers`."""
    golden = write_set(folder / "gate.evalset.json", "gate", *(case(i, turn(f"ask {i}", f"the answer is {i}"))
                                                             for i in ids))
    recorded = write_set(folder / "recorded.json", "gate", *(case(i, turn(f"ask {i}", text))
                                                            for i, text in answers.items()))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    return golden, recorded


def test_baseline_lists_regressions_fixes_still_failing_and_not_run(tmp_path: Path) -> None:
    right = {i: f"the answer is {i}" for i in ("keeps", "breaks", "heals", "stuck", "new")}
    wrong = "something else entirely"
    # Run 1: keeps and breaks pass, heals and stuck fail; `new` is not in the eval set yet.
    golden, recorded = _suite(tmp_path, {**right, "heals": wrong, "stuck": wrong}, ["keeps", "breaks", "heals", "stuck"])
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden))
    assert code == 1, out + err
    [first] = list_history(tmp_path / ".adk" / "eval_history")
    # Run 2: breaks fails now, heals passes, stuck still fails, new was added.
    golden, recorded = _suite(tmp_path, {**right, "breaks": wrong, "stuck": wrong},
                              ["keeps", "breaks", "heals", "stuck", "new"])
    md = tmp_path / "report.md"
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--baseline", "latest", "--md", str(md))
    assert code == 1, out + err
    assert f"Baseline run {first.run_id}: 1 regression, 1 fix, 1 still failing, 1 not run" in out
    lines = out.splitlines()
    at = lines.index("  regressions:")
    assert lines[at + 1].startswith("    gate / breaks (passed → failed): response below 0.8")
    assert lines[lines.index("  fixes:") + 1].startswith("    gate / heals (failed → passed): failed there: response below 0.8")
    assert lines[lines.index("  still failing:") + 1].startswith("    gate / stuck (failed → failed): response below 0.8")
    assert lines[lines.index("  not run:") + 1] == "    gate / new (- → passed): not in the baseline run"
    report = md.read_text()
    assert f"### Baseline run {first.run_id}" in report
    assert "| gate / breaks | passed | failed | response below 0.8 |" in report
    assert "**still failing** (1)" in report and "| gate / new | - | passed | not in the baseline run |" in report

    # The same baseline named by run id, and by its record file; with --fail-on-regression the known
    # failure (stuck) alone does not fail the job, the regression does.
    second = list_history(tmp_path / ".adk" / "eval_history")[0]
    for spec in (first.run_id, str(first.path)):
        code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", spec,
                                 "--fail-on-regression")
        assert code == 1 and "Result: exit 1 (failed): 1 regression against the baseline" in out, out + err
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", second.run_id,
                             "--fail-on-regression")
    assert code == 0, out + err  # against run 2, nothing regressed; stuck and breaks still fail
    assert "0 regressions, 0 fixes, 2 still failing, 0 not run" in out
    assert "Result: exit 0 (passed): 2 cases failed, none of them a regression (--fail-on-regression)" in out
    # Without the flag the same run fails on any failing case.
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", second.run_id)
    assert code == 1, out + err


def test_a_judge_outage_is_not_a_regression(tmp_path: Path, gemini_env) -> None:
    """A case that passed and now has no verdict is listed as not evaluated, with the reason, and exits 3."""
    from tests.support.fake_gemini import error_reply, judge_responder

    golden, recorded = _suite(tmp_path, {"a": "the answer is a"}, ["a"])
    config = tmp_path / "judged.json"
    config.write_text(json.dumps({"criteria": {"final_response_match_v2": 0.5}}))
    # The baseline: the same judge (same criteria, same endpoint) answered and the case passed.
    gemini_env.responder = judge_responder()
    assert run_cli("run", f"replay:{recorded}", str(golden), "--config", str(config))[0] == 0
    # Now the judge refuses every call: the case has no verdict, which is never a regression.
    gemini_env.responder = None
    gemini_env.default = error_reply(400, "API key not valid")
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--config", str(config), "--no-save",
                             "--no-judge-cache", "--baseline", "latest", "--fail-on-regression")
    assert code == 3, out + err
    assert "0 regressions, 0 fixes, 0 still failing, 0 not run, 1 not evaluated" in out
    assert ("gate / a (passed → not evaluated): not evaluated now: not evaluated: judge failed: "
            "400 INVALID_ARGUMENT: API key not valid") in out


def test_baseline_errors(tmp_path: Path) -> None:
    golden, recorded = _suite(tmp_path, {"a": "the answer is a"}, ["a"])
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", "20990101-nope")
    assert code == 2 and "--baseline 20990101-nope: no saved run with this id" in err
    assert out == ""  # stopped before the run
    # `latest` with no history yet: a warning, every case counts as not run there, the run's own verdict stands.
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", "latest",
                             "--fail-on-regression")
    assert code == 0, out + err
    assert "warning: --baseline latest: no baseline for gate" in err and "no saved run of this eval set" in err
    assert "Baseline: no saved run of these eval sets to compare with" in out


# ---- the Python API and the pytest plugin --------------------------------------------------------


def test_api_strict_goes_into_the_run_and_outcome_gives_the_cli_code() -> None:
    record = tui_eval.evaluate(DEMO / "support", RETURN_CASE, raise_on_failure=False)
    assert [c.status for r in record.results for c in r.case_results] == [EvalStatus.PASSED]
    assert tui_eval.api.outcome(record).code == 3
    assert tui_eval.api.outcome(record, strict=True).code == 1
    strict = tui_eval.evaluate(DEMO / "support", RETURN_CASE, raise_on_failure=False, strict=True)
    # The record itself says FAILED, as `tui-eval run --strict` records it.
    assert [c.status for r in strict.results for c in r.case_results] == [EvalStatus.FAILED]
    assert tui_eval.api.outcome(strict).code == 1


# ---- an outage of the agent's own model API is not a failure of the agent ------------------------


def test_the_agents_model_api_down_is_an_outage_not_a_regression(tmp_path: Path, gemini_env,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.fake_gemini import error_reply

    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # with a key, the demo agent calls its model (the fake)
    import shutil

    agent = tmp_path / "hello_world"
    shutil.copytree(HELLO, agent, ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    target = f"{agent / 'hello_world.evalset.json'}:greeting"
    # A baseline where the case passed (the offline policy), saved.
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    assert run_cli("run", str(agent), target)[0] == 0
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")
    gemini_env.default = error_reply(503)
    xml = tmp_path / "out.xml"
    code, out, err = run_cli("run", str(agent), target, "--no-save", "--baseline", "latest", "--fail-on-regression",
                             "--print-detailed-results", "--junit", str(xml))
    assert code == 3, out + err
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("0", "1")
    error = suite.find("testcase/error")
    assert error is not None and error.get("message") == "infrastructure error: 503 UNAVAILABLE"
    assert "Result: exit 3 (incomplete): nothing failed, but 1 case stopped by an infrastructure error: 503 UNAVAILABLE" in out
    assert "0 regressions, 0 fixes, 0 still failing, 0 not run, 1 not evaluated" in out
    assert "   1  infrastructure error: 503 UNAVAILABLE: greeting" in out
    assert run_cli("run", str(agent), target, "--no-save", "--strict")[0] == 1
    # A request the model API refuses (400) is the agent's own fault: a failure, and a regression.
    gemini_env.default = error_reply(400, "bad request")
    code, out, err = run_cli("run", str(agent), target, "--no-save", "--baseline", "latest", "--fail-on-regression")
    assert code == 1, out + err
    assert "1 regression against the baseline" in out


@pytest.mark.parametrize(("error", "outage"), [
    ("model call failed: ServerError: 503 UNAVAILABLE. {'error': ...}", "503 UNAVAILABLE"),
    ("model call failed: ClientError: 429 RESOURCE_EXHAUSTED. quota", "429 RESOURCE_EXHAUSTED"),
    ("model call failed: ConnectError: [Errno 111] Connection refused", "ConnectError"),
    ("model call failed: ClientError: 400 INVALID_ARGUMENT. bad", None),
    ("ValueError: 503 is not a valid dice size", None),
    (None, None),
])
def test_what_counts_as_an_outage(error: str | None, outage: str | None) -> None:
    from tui_eval.engine.causes import infrastructure_error

    assert infrastructure_error(error) == outage


def test_baseline_latest_pairs_an_agent_run_with_an_agent_run_not_a_newer_replay(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")
    demo = tmp_path / "hello_world"
    shutil.copytree(Path(__file__).resolve().parents[2] / "demo_agents" / "hello_world", demo,
                    ignore=shutil.ignore_patterns(".adk", "__pycache__"))
    evalset = demo / "hello_world.evalset.json"
    history = demo / ".adk" / "eval_history"
    assert run_cli("run", str(demo), str(evalset))[0] == 1  # the agent: 4 passed, 5 failed
    [agent_run] = list_history(history)
    # A replay of the expected turns passes every case and is saved beside the agent's run, newer.
    assert run_cli("run", f"replay:{evalset}", str(evalset), "--json", str(tmp_path / "r.json"))[0] == 0
    code, out, err = run_cli("run", str(demo), str(evalset), "--no-save", "--baseline", "latest")
    assert f"Baseline run {agent_run.run_id}:" in out, out + err
    assert "0 regressions" in out  # against the replay's 9/9, five cases would read as regressions
