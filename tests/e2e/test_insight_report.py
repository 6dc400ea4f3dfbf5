"""`tui-eval run --md` and `tui-eval report`: the shareable Markdown report, checked against a golden file
written by hand, and the HTML page with agent text escaped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from tui_eval.cli import main

GOLDEN = Path(__file__).parent / "golden" / "share_report.md"
# Every recorded turn reports this usage, as ADK events carry it (1,000 prompt of which 200 cached).
USAGE = {"prompt_token_count": 1000, "candidates_token_count": 100, "cached_content_token_count": 200,
         "total_token_count": 1100}


def _turn(prompt: str, answer: str, x: int, *, usage: bool) -> dict[str, Any]:
    call: dict[str, Any] = {"author": "calc_agent", "content": {"role": "model", "parts": [
        {"function_call": {"id": "c1", "name": "calc", "args": {"x": x}}}]}}
    if usage:
        call["usage_metadata"] = USAGE
        call["model_version"] = "gemini-2.5-flash"
    return {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"invocation_events": [call]},
        "creation_timestamp": 1700000000.0,
    }


def _case(eval_id: str, turn: dict[str, Any]) -> dict[str, Any]:
    return {"eval_id": eval_id, "conversation": [turn],
            "session_input": {"app_name": "calc", "user_id": "u", "state": {}}}


def _write(tmp_path: Path) -> tuple[Path, Path]:
    expected = tmp_path / "share.evalset.json"
    recorded = tmp_path / "recorded.evalset.json"
    expected.write_text(json.dumps({"eval_set_id": "share", "eval_cases": [
        _case("c_ok", _turn("what is 2 plus 2", "It is 4.", 2, usage=False)),
        _case("c_bad", _turn("what is 6 times 7", "The answer is 42.", 6, usage=False))]}))
    recorded.write_text(json.dumps({"eval_set_id": "share", "eval_cases": [
        _case("c_ok", _turn("what is 2 plus 2", "It is 4.", 2, usage=True)),
        _case("c_bad", _turn("what is 6 times 7", "Nope | `x` <b>", 7, usage=True))]}))
    (tmp_path / "test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}))
    return expected, recorded


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_run_md_matches_the_golden_file_and_report_rebuilds_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TUI_EVAL_PRICES", raising=False)
    expected, recorded = _write(tmp_path)
    md = tmp_path / "report.md"
    code, out, err = run_cli("run", "--agent", f"replay:{recorded}", str(expected), "--md", str(md))
    assert code == 1, out + err
    assert md.read_text() == GOLDEN.read_text()
    # The CLI summary says the same tokens and cost, compactly.
    assert "Tokens agent gemini-2.5-flash: 2,000 prompt (400 cached), 200 output" in out
    assert "Est. cost $0.0010 (estimate)" in out
    # From eval history: the record file, or its folder (newest run), gives the same report.
    history = tmp_path / ".adk" / "eval_history"
    [record] = history.glob("*.tui-eval.json")
    code, out, err = run_cli("report", str(record))
    assert code == 0, err
    assert out == GOLDEN.read_text()
    again = tmp_path / "again.md"
    code, out, err = run_cli("report", str(tmp_path), "--md", str(again))
    assert code == 0 and out == "", err
    assert again.read_text() == GOLDEN.read_text()


def test_html_report_escapes_agent_text(tmp_path: Path) -> None:
    expected, recorded = _write(tmp_path)
    code, _, err = run_cli("run", "--agent", f"replay:{recorded}", str(expected), "-q")
    assert code == 1, err
    page = tmp_path / "report.html"
    code, out, err = run_cli("report", str(tmp_path), "--html", str(page))
    assert code == 0, err
    text = page.read_text()
    assert "Nope | `x` &lt;b&gt;" in text and "<b>" not in text
    assert "<script" not in text


def test_report_of_nothing_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run_cli("report", str(tmp_path))
    assert code == 2 and "no run records" in err
    code, out, err = run_cli("report", str(tmp_path / "x.json"))
    assert code == 2 and "not a run record" in err
