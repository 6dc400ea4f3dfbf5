"""A CES golden imported with `tui-eval ces import` and run against a demo agent: the run reports CES's view."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tui_eval.cli import main

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
APP = "projects/p/locations/l/apps/dice"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the demo agent's offline policy


def _golden(eval_id: str, sides: int) -> dict:
    return {
        "name": f"{APP}/evaluations/{eval_id}",
        "displayName": eval_id,
        "golden": {"turns": [{"steps": [
            {"userInput": {"text": "Roll a 6-sided die."}},
            {"expectation": {"toolCall": {"tool": f"{APP}/tools/roll_die", "args": {"sides": sides}}}},
            {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "I rolled a 6-sided die."}]}}},
        ]}]},
    }


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_run_of_an_imported_golden_reports_ces_metrics(tmp_path: Path) -> None:
    source = tmp_path / "evaluations.json"
    source.write_text(json.dumps({"evaluations": [_golden("six", 6), _golden("twenty", 20)]}))
    eval_file = tmp_path / "dice.evalset.json"
    code, _out, err = _cli("ces", "import", str(source), "-o", str(eval_file))
    assert code == 0, err
    json_out = tmp_path / "results.json"
    code, out, err = _cli("run", str(DEMO / "hello_world"), str(eval_file), "--json", str(json_out), "--no-save")
    # Offline, the two judged CES metrics are announced once as not evaluated; nothing else is said.
    assert err == "note: 2 metrics will not be evaluated: no judge credentials\n"
    results = json.loads(json_out.read_text())
    cases = {c["eval_id"]: {m["metric_name"]: m for m in c["overall_eval_metric_results"]}
             for r in results for c in r["eval_case_results"]}
    six, twenty = cases["six"], cases["twenty"]
    # The agent calls roll_die(sides=6): both goldens see their tool invoked; only "six" has its parameters.
    assert (six["ces_tool_invocation"]["score"], six["ces_tool_invocation"]["eval_status"]) == (1.0, 1)
    assert (twenty["ces_tool_invocation"]["score"], twenty["ces_tool_invocation"]["eval_status"]) == (1.0, 1)
    assert (six["ces_parameter_correctness"]["score"], six["ces_parameter_correctness"]["eval_status"]) == (1.0, 1)
    assert (twenty["ces_parameter_correctness"]["score"],
            twenty["ces_parameter_correctness"]["eval_status"]) == (0.0, 2)
    assert six["ces_tool_ordered_invocation"]["eval_status"] == 4  # informational
    assert six["ces_latency"]["eval_status"] == 4 and six["ces_latency"]["score"] >= 0.0
    # Offline, the judged ones are not evaluated, with the reason.
    assert six["ces_semantic_similarity"]["eval_status"] == 3
    assert six["ces_hallucination"]["eval_status"] == 3
    assert code == 1
    # The summary says why a CES metric failed, and shows informational ones without a threshold.
    assert "ces_parameter_correctness: 0.000 < 1 FAILED (turn 1: roll_die parameters 0.00 < 1)" in out
    assert "ces_tool_ordered_invocation: 1.000 (informational)" in out
