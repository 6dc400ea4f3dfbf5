"""The run record `tui-eval.run/3` (issue 33): each record names its state, kind, versions, journal, gate
and executor, each case its versions, repetition, nested calls, final session state, human verdicts and
re-runs after a crash; records of format /2 still read; one resolver finds `latest`, run ids and record
files for `--baseline` and `report`, and `latest` is never a run of another kind nor one from the future."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_run import copy_demo, run_cli
from tests.support.evalfiles import case, turn, write_set
from tui_eval.engine.store import list_history, load_record

@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "offline")  # the demo agents' offline policy


def _replay_suite(folder: Path) -> tuple[Path, Path]:
    golden = write_set(folder / "gate.evalset.json", "gate", case("ok", turn("ask ok", "the answer is ok")),
                       case("bad", turn("ask bad", "the answer is bad")))
    recorded = write_set(folder / "recorded.json", "gate", case("ok", turn("ask ok", "the answer is ok")),
                         case("bad", turn("ask bad", "something else entirely")))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    return golden, recorded


def _raw(path: Path) -> dict:
    return json.loads(path.read_text())


def test_a_record_names_its_state_kind_versions_gate_and_executor_and_each_case_its_places(tmp_path: Path) -> None:
    golden, recorded = _replay_suite(tmp_path)
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--num-runs", "2")
    assert code == 1, out + err
    history = tmp_path / ".adk" / "eval_history"
    records = sorted(list_history(history), key=lambda e: e.repetition)
    assert [e.repetition for e in records] == [1, 2]
    data = _raw(records[1].path)
    assert data["format"] == "tui-eval.run/3"
    assert data["state"] == "finished"
    kind = data["kind"]
    assert {k: v for k, v in kind.items() if k != "criteria"} == {
        "agent": "replay", "tools": "live", "judge": None, "selection": "all", "rescore_of": None, "strict": False}
    assert len(kind["criteria"]) == 64 and int(kind["criteria"], 16) >= 0
    assert data["versions"] == {"agent": None, "criteria": None, "judge": None}
    assert data["executor"] == {"kind": "inline", "address": None, "workers": None}
    assert data["gate"]["code"] == 1 and data["gate"]["reasons"] == ["2 case runs failed"]
    assert "journal" in data
    places = {c["eval_id"]: {k: c[k] for k in ("versions", "repetition", "nested_calls", "final_session_state",
                                                "human_verdicts", "reruns_after_crash")} for c in data["cases"]}
    versions = places["ok"].pop("versions")
    assert places["ok"] == {"repetition": 2, "nested_calls": {}, "final_session_state": None,
                            "human_verdicts": [], "reruns_after_crash": 0}
    # A replay runs no agent code; the case as run and its criteria are content hashes.
    assert versions["agent"] is None and versions["tools"] == "live" and versions["judge"] is None
    assert all(len(versions[k]) == 16 and int(versions[k], 16) >= 0 for k in ("case", "criteria"))
    # The typed places load back on the results.
    meta, result = load_record(records[1].path)
    assert meta["kind"]["agent"] == "replay"
    assert {c.eval_id: c.repetition for c in result.case_results} == {"ok": 2, "bad": 2}


def test_records_of_format_2_still_read(tmp_path: Path) -> None:
    golden, recorded = _replay_suite(tmp_path)
    assert run_cli("run", f"replay:{recorded}", str(golden))[0] == 1
    [entry] = list_history(tmp_path / ".adk" / "eval_history")
    data = _raw(entry.path)
    for key in ("state", "kind", "versions", "journal", "gate", "executor"):
        del data[key]
    for c in data["cases"]:
        for key in ("versions", "repetition", "nested_calls", "final_session_state", "human_verdicts",
                    "reruns_after_crash"):
            del c[key]
    data["format"] = "tui-eval.run/2"
    entry.path.write_text(json.dumps(data))
    [old] = list_history(tmp_path / ".adk" / "eval_history")
    assert (old.state, old.kind, old.gate) == ("finished", None, None)
    meta, result = load_record(old.path)
    assert [c.repetition for c in result.case_results] == [1, 1]
    code, out, err = run_cli("report", str(old.path))
    assert code == 0 and "gate" in out, err
    # An older record still serves as a baseline of a run of the same agent or replay.
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", "latest")
    assert f"Baseline run {old.run_id}: 0 regressions" in out, out + err


def test_mocked_and_live_tool_runs_never_share_latest_and_another_kind_is_refused(tmp_path: Path) -> None:
    demo, evalset = copy_demo(tmp_path)
    history = demo / ".adk" / "eval_history"
    assert run_cli("run", str(demo), str(evalset))[0] == 1  # live tools: 4 passed, 5 failed
    [live] = list_history(history)
    assert run_cli("run", str(demo), str(evalset), "--mock-tools=fallback")[0] == 1
    mocked = next(e for e in list_history(history) if e.run_id != live.run_id)
    assert mocked.kind is not None and mocked.kind.tools == "mock-fallback"
    # `latest` for a live run is the live run, although the mocked one is newer.
    code, out, err = run_cli("run", str(demo), str(evalset), "--no-save", "--baseline", "latest")
    assert f"Baseline run {live.run_id}: 0 regressions, 0 fixes, 5 still failing, 0 not run" in out, out + err
    # A mocked run id named as a live run's baseline is refused, naming the difference.
    code, out, err = run_cli("run", str(demo), str(evalset), "--no-save", "--baseline", mocked.run_id)
    assert code == 2 and out == ""
    assert f"--baseline {mocked.run_id}: run {mocked.run_id} is of another kind than this run: " \
           "tools: live here, mock-fallback there" in err


def test_a_replay_run_named_as_an_agent_runs_baseline_is_refused(tmp_path: Path) -> None:
    demo, evalset = copy_demo(tmp_path)
    assert run_cli("run", f"replay:{evalset}", str(evalset), "--json", str(tmp_path / "r.json"))[0] == 0
    [replay] = list_history(demo / ".adk" / "eval_history")
    code, out, err = run_cli("run", str(demo), str(evalset), "--no-save", "--baseline", replay.run_id)
    assert code == 2 and "agent or replay: agent here, replay there" in err, out + err


def test_a_record_dated_in_the_future_is_never_latest(tmp_path: Path) -> None:
    golden, recorded = _replay_suite(tmp_path)
    history = tmp_path / ".adk" / "eval_history"
    assert run_cli("run", f"replay:{recorded}", str(golden))[0] == 1
    [first] = list_history(history)
    # Another run, its record then dated in the year 9999 and its failing case passing there.
    assert run_cli("run", f"replay:{recorded}", str(golden))[0] == 1
    future = next(e for e in list_history(history) if e.run_id != first.run_id)
    data = _raw(future.path)
    data["creation_timestamp"] = 253402300000.0
    for c in data["cases"]:
        c["status"] = 1
    future.path.write_text(json.dumps(data))
    code, out, err = run_cli("run", f"replay:{recorded}", str(golden), "--no-save", "--baseline", "latest",
                             "--fail-on-regression")
    assert f"Baseline run {first.run_id}:" in out, out + err
    assert "1 still failing" in out


def test_the_dashboards_latest_result_of_a_case_is_the_agents_live_run_not_a_newer_mocked_one(
        tmp_path: Path) -> None:
    from tui_eval.engine.saved import latest_saved_results
    from tui_eval.engine.workspace import Workspace

    demo, evalset = copy_demo(tmp_path)
    history = demo / ".adk" / "eval_history"
    assert run_cli("run", str(demo), str(evalset))[0] == 1
    [live] = list_history(history)
    assert run_cli("run", str(demo), str(evalset), "--mock-tools=strict")[0] == 1
    workspace = Workspace(demo)
    workspace.scan()
    found = {key.eval_id: when for key, _result, when, _replay in latest_saved_results(workspace)}
    assert len(found) == 9 and set(found.values()) == {live.creation_timestamp}
