"""True words (issue 33, item 5): case runs vs cases under --num-runs (and a JUnit testcase name per
repetition), judge counters that count parse failures, the record's judge credentials from the judge that
ran (an `openai:` one), one consistent result line, and the summary saying what kind of run it was."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.support.cli_run import run_cli
from tests.support.evalfiles import case, turn, write_set
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tui_eval.engine.store import list_history


def _suite(folder: Path, criteria: dict[str, object]) -> tuple[Path, Path]:
    golden = write_set(folder / "gate.evalset.json", "gate",
                       *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(3)))
    recorded = write_set(folder / "recorded.json", "gate", case("c0", turn("ask 0", "something else entirely")),
                         *(case(f"c{i}", turn(f"ask {i}", f"the answer is {i}")) for i in range(1, 3)))
    (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    return golden, recorded


def test_num_runs_counts_case_runs_and_junit_names_each_repetition(tmp_path: Path) -> None:
    golden, recorded = _suite(tmp_path, {"response_match_score": 0.8})
    xml = tmp_path / "out.xml"
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--num-runs", "3", "--no-save",
                             "--junit", str(xml))
    assert code == 1, out + err
    assert "Result: exit 1 (failed): 3 case runs failed" in out  # one case, three runs: not "3 cases"
    names = [tc.get("name") for tc in ET.parse(xml).getroot().iter("testcase")]
    assert len(names) == 9 and len(set(names)) == 9
    assert {"c0 (run 1)", "c0 (run 2)", "c0 (run 3)"} <= set(names)


def test_the_summary_says_what_kind_of_run_it_was(tmp_path: Path) -> None:
    golden, recorded = _suite(tmp_path, {"response_match_score": 0.8})
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save")
    assert "Kind: replay, no judge; executor: in process" in out, out + err


def test_an_openai_judge_that_answered_is_recorded_with_its_credentials(tmp_path: Path,
                                                                        openai_env: FakeOpenAI) -> None:
    from tests.support.fake_openai import judge_responder

    openai_env.responder = judge_responder()
    golden, recorded = _suite(tmp_path, {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": "openai:gpt-4o-mini", "num_samples": 1}}})
    md = tmp_path / "report.md"
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--md", str(md), "--no-judge-cache")
    assert code == 0, out + err
    assert openai_env.calls > 0
    [entry] = list_history(tmp_path / ".adk" / "eval_history")
    data = json.loads(entry.path.read_text())
    assert data["source"]["judge_credentials"] is True
    assert data["kind"]["judge"] == {"provider": "openai", "model": "gpt-4o-mini",
                                     "endpoint": openai_env.base_url.rstrip("/")}
    report = md.read_text()
    assert "no judge credentials" not in report and "(credentials present)" in report
    assert f"judge openai:gpt-4o-mini at {openai_env.base_url.rstrip('/')}" in out


def test_judge_answers_that_cannot_be_parsed_count_as_failed(tmp_path: Path, gemini_env: FakeGemini) -> None:
    from tests.support.fake_gemini import text_reply

    gemini_env.default = text_reply("this is not JSON at all")
    golden, recorded = _suite(tmp_path, {"final_response_match_v2": 0.5})
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--no-judge-cache")
    assert code == 3, out + err
    judge = next(line for line in out.splitlines() if line.startswith("Judge: "))
    answers = int(judge.split()[1])
    assert answers > 0 and f" {answers} failed ({answers} unparseable)" in judge, judge


def test_one_consistent_result_line(tmp_path: Path) -> None:
    # c0 fails on its response; the judged metric has no credentials: not evaluated in every case.
    golden, recorded = _suite(tmp_path, {"response_match_score": 0.8, "final_response_match_v2": 0.5})
    assert run_cli("run", f"replay:{recorded}", str(golden))[0] == 1  # the baseline: c0 fails there too
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", "latest",
                             "--fail-on-regression")
    assert code == 3, out + err
    assert ("Result: exit 3 (incomplete): 1 case failed, none of them a regression (--fail-on-regression); "
            "and the run is incomplete: 3 metrics not evaluated: no judge credentials") in out
