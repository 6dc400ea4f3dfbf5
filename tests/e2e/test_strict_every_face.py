"""Strict is one rule: the same strict run gives the same recorded statuses and the same verdict whether it
ran through `tui-eval run --strict`, `tui_eval.evaluate(strict=True)` or `pytest --tui-eval-strict`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import tui_eval
from tests.support.evalfiles import case, turn, write_set
from tui_eval.cli import main
from tui_eval.engine.runner import RunRecord

AGENT = '''
"""Answers every prompt with its own text; the prompt `down` meets its model API's outage (a 503)."""
from tui_eval.agents.base import Agent, AgentSession
from tui_eval.schema.model import Content, Invocation, Part


class Session(AgentSession):
    async def turn(self, user_content, index):
        if user_content.text == "down":
            raise RuntimeError("503 UNAVAILABLE. The model is overloaded. Please try again later.")
        return Invocation(user_content=user_content, invocation_id=f"e-{index + 1}",
                          final_response=Content(role="model", parts=[Part(text=user_content.text)]))


class Echo(Agent):
    name = "echo"

    async def new_session(self, case, ctx):
        return Session()


root_agent = Echo()
'''


def _agent(tmp_path: Path, config: dict[str, object]) -> tuple[Path, Path]:
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(AGENT)
    (folder / "test_config.json").write_text(json.dumps({"criteria": config}))
    evalset = write_set(folder / "echo.evalset.json", "echo",
                        case("answered", turn("hello there", "hello there")),
                        case("down", turn("down", "up")))
    return folder, evalset


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _statuses_of_json(path: Path) -> dict[str, tuple[int, list[int]]]:
    (result,) = json.loads(path.read_text())
    # Informational metrics (status 4, ADK appends them to every eval) never pass or fail: left out.
    return {c["eval_id"]: (c["final_eval_status"],
                           [m["eval_status"] for m in c["overall_eval_metric_results"] if m["eval_status"] != 4])
            for c in result["eval_case_results"]}


def _statuses_of_record(record: RunRecord) -> dict[str, tuple[int, list[int]]]:
    return {c.eval_id: (int(c.status), [int(m.status) for m in c.metrics if int(m.status) != 4])
            for r in record.results for c in r.case_results}


@pytest.fixture(autouse=True)
def _no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)


def test_a_strict_run_records_the_same_statuses_through_the_cli_and_the_api(tmp_path: Path) -> None:
    # A judged metric with no judge credentials: not evaluated, so `answered` passes leniently and fails
    # strictly; `down` is failed by an outage.
    folder, evalset = _agent(tmp_path, {"response_match_score": 0.8, "final_response_match_v2": 0.5})
    out = tmp_path / "cli.json"
    code, stdout, stderr = _cli("run", str(folder), str(evalset), "--no-save", "--strict", "--json", str(out))
    from_cli = _statuses_of_json(out)
    record = tui_eval.evaluate(folder, evalset, strict=True, raise_on_failure=False)
    # PASSED 1, FAILED 2, NOT_EVALUATED 3, as SPEC 6 numbers them.
    assert from_cli == {"answered": (2, [1, 3]), "down": (2, [3, 3])}, stdout + stderr
    assert _statuses_of_record(record) == from_cli
    assert code == tui_eval.api.outcome(record).code == 1
    # The same files run leniently: `answered` passes on the metric that ran, on both faces.
    lenient = tui_eval.evaluate(folder, evalset, raise_on_failure=False)
    assert _statuses_of_record(lenient)["answered"] == (1, [1, 3])
    assert _cli("run", str(folder), str(evalset), "--no-save", "--json", str(out))[0] == tui_eval.api.outcome(lenient).code == 3


def test_a_strict_run_stopped_only_by_an_outage_fails_on_every_face(tmp_path: Path) -> None:
    # Every metric ran; the only case without a verdict was stopped by its model API's outage: the run is
    # incomplete (exit 3), and strict counts an incomplete run as failed (exit 1), whoever asks.
    folder, evalset = _agent(tmp_path, {"response_match_score": 0.8})
    code, stdout, stderr = _cli("run", str(folder), str(evalset), "--no-save", "--strict")
    assert code == 1, stdout + stderr
    assert "--strict counts an incomplete run as failed" in stdout
    record = tui_eval.evaluate(folder, evalset, strict=True, raise_on_failure=False)
    verdict = tui_eval.api.outcome(record)
    assert verdict.code == 1, verdict.text()  # the run was strict: its record says so, not each caller
    assert "--strict counts an incomplete run as failed" in verdict.text()
    assert record.strict
    # Without strict, both faces say incomplete.
    assert _cli("run", str(folder), str(evalset), "--no-save")[0] == 3
    assert tui_eval.api.outcome(tui_eval.evaluate(folder, evalset, raise_on_failure=False)).code == 3
