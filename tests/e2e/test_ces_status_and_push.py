"""`tui-eval ces` against the local CES MCP server: errors read by their canonical status (in both error
styles), a push that fails halfway, what a push keeps, stable case order, app versions and ERROR results."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.fake_ces import APP, TOKEN, FakeCesState, golden_evaluation, scenario_evaluation, serve
from tui_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ces_server() -> Iterator[tuple[str, FakeCesState]]:
    state = FakeCesState()
    with serve(state) as url:
        yield url, state


@pytest.fixture
def ces(ces_server: tuple[str, FakeCesState], monkeypatch: pytest.MonkeyPatch) -> tuple[str, FakeCesState]:
    url, state = ces_server
    with state.lock:
        state.evaluations.clear()
        state.runs.clear()
        state.results.clear()
        state.calls.clear()
        state.faults.clear()
        state.http_fault = None
        state.error_style = "tool"
        state.list_order = "name"
        weather = golden_evaluation()
        weather["lastTenResults"] = [weather["lastCompletedResult"]]
        state.add(weather)
        failing = golden_evaluation(eval_id="fail-golden")
        failing["displayName"] = "Will fail"
        state.add(failing)
        state.add(scenario_evaluation())
    monkeypatch.setenv("CES_ACCESS_TOKEN", TOKEN)
    return url, state


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _pull(url: str, folder: Path) -> Path:
    code, _, err = _cli("ces", "pull", APP, "-o", str(folder), "--endpoint", url)
    assert code == 0, err
    return folder / "app1.evalset.json"


Change = Callable[[dict[str, Any]], None]


def _edit(path: Path, eval_id: str, change: Change) -> None:
    data = orjson.loads(path.read_bytes())
    (case,) = [c for c in data["eval_cases"] if c["eval_id"] == eval_id]
    change(case)
    path.write_bytes(orjson.dumps(data))


def _ask_weather_in(city: str) -> Change:
    def change(case: dict[str, Any]) -> None:
        case["conversation"][0]["user_content"]["parts"][0]["text"] = f"And in {city}?"
    return change


def _rename(title: str) -> Change:
    def change(case: dict[str, Any]) -> None:
        case["ces"]["evaluation"]["displayName"] = title
    return change


def _ids(path: Path) -> list[str]:
    return [c["eval_id"] for c in orjson.loads(path.read_bytes())["eval_cases"]]


# ---- errors by status ----------------------------------------------------------------------------------

# (status, the tool that fails, its message (never naming the status), the exit code, what the line says)
CASES = [
    ("ABORTED", "update_evaluation", "The resource was modified concurrently.", 1,
     "changed in CES since it was read"),
    ("FAILED_PRECONDITION", "update_evaluation", "The precondition of the request was not met.", 1,
     "changed in CES since it was read"),
    ("PERMISSION_DENIED", "list_evaluations", "The caller does not have permission", 5,
     "permission denied (The caller does not have permission): the account needs a CES role"),
    ("UNAUTHENTICATED", "list_evaluations", "Request had invalid authentication credentials.", 4,
     "the credentials were refused"),
    ("NOT_FOUND", "list_evaluations", "Requested entity was not found.", 6, "check the resource name"),
    ("RESOURCE_EXHAUSTED", "get_evaluation_run", "Quota exceeded for quota metric 'Requests'.", 7,
     "quota exhausted"),
    ("INVALID_ARGUMENT", "run_evaluation", "Request contains an invalid argument.", 2,
     "CES refused the request as invalid"),
]


def _command(tool: str, url: str, folder: Path) -> list[str]:
    if tool == "update_evaluation":
        path = _pull(url, folder)
        _edit(path, "weather-golden", _ask_weather_in("Rome"))
        return ["ces", "push", str(path), "--endpoint", url]
    if tool == "list_evaluations":
        return ["ces", "pull", APP, "-o", str(folder), "--endpoint", url]
    return ["ces", "run", APP, "--evaluations", "weather-golden", "--endpoint", url, "--poll-interval", "0.01"]


@pytest.mark.parametrize("style", ["tool", "jsonrpc"])
@pytest.mark.parametrize(("status", "tool", "message", "exit_code", "says"), CASES, ids=[c[0] for c in CASES])
def test_each_status_has_its_message_and_exit_code(ces: tuple[str, FakeCesState], tmp_path: Path, style: str,
                                                   status: str, tool: str, message: str, exit_code: int,
                                                   says: str) -> None:
    url, state = ces
    argv = _command(tool, url, tmp_path)
    state.error_style = style  # a tool result with isError, or a JSON-RPC error: the status is in both
    state.faults[tool] = (status, message)
    code, out, err = _cli(*argv)
    assert code == exit_code, err
    line = err.strip().splitlines()[-1] if tool != "update_evaluation" else err
    assert says in line and message in line, err
    assert url in err  # the endpoint is named
    assert "Traceback" not in err and "MCP error" not in err


@pytest.mark.parametrize(("status", "message", "exit_code", "says"), [
    ("PERMISSION_DENIED", "The caller does not have permission", 5, "refused the credentials (HTTP 403)"),
    ("NOT_FOUND", "Requested entity was not found.", 6, "answered HTTP 404: not found"),
    ("RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Requests'.", 7, "answered HTTP 429: quota exhausted"),
])
def test_an_http_error_is_read_by_the_status_in_its_body(ces: tuple[str, FakeCesState], tmp_path: Path,
                                                         status: str, message: str, exit_code: int,
                                                         says: str) -> None:
    url, state = ces
    state.http_fault = (status, message)
    try:
        code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    finally:
        state.http_fault = None
    assert code == exit_code, err
    assert err.startswith(f"error: {url} ") and says in err and len(err.splitlines()) == 1


def test_a_conflict_from_the_server_says_pull_again_in_both_styles(ces: tuple[str, FakeCesState],
                                                                   tmp_path: Path) -> None:
    """Issue 22: a JSON-RPC ABORTED became a generic `MCP error`, exit 2, with no advice."""
    url, state = ces
    for style in ("tool", "jsonrpc"):
        folder = tmp_path / style
        path = _pull(url, folder)
        _edit(path, "weather-golden", _ask_weather_in("Rome"))
        state.error_style = style
        state.faults["update_evaluation"] = ("ABORTED", "The resource was modified concurrently.")
        code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
        assert code == 1, (style, err)
        assert "pull again (`tui-eval ces pull`), re-apply your edits, then push" in err


def test_permission_denied_as_a_tool_error_names_the_endpoint_and_the_remedy(ces: tuple[str, FakeCesState],
                                                                           tmp_path: Path) -> None:
    url, state = ces
    state.faults["list_evaluations"] = ("PERMISSION_DENIED", "The caller does not have permission")
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert code == 5
    assert err == (f"error: list_evaluations at {url}: permission denied (The caller does not have permission): "
                   "the account needs a CES role in this project (and roles/mcp.toolUser to call MCP tools); "
                   "to use another account, run `gcloud auth application-default login` (or set CES_ACCESS_TOKEN)\n")


def test_the_ces_reference_lists_the_exit_codes_the_code_uses() -> None:
    from tui_eval.ces_cli import EXIT_BY_STATUS, EXIT_INCOMPLETE

    readme = (ROOT / "docs" / "ces.md").read_text()
    for status, code in EXIT_BY_STATUS.items():
        assert f"{code} `{status}`" in readme or f"`{status}` {code}" in readme or (
            code in (1, 2) and f"`{status}`" in readme), status
    assert f"{EXIT_INCOMPLETE} when the run is incomplete" in readme


# ---- a push that fails halfway ---------------------------------------------------------------------------


def test_a_push_that_fails_halfway_keeps_what_was_pushed(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, state = ces
    zebra = golden_evaluation(eval_id="zebra-golden")
    zebra["displayName"] = "Zebra"
    state.add(zebra)
    path = _pull(url, tmp_path)
    assert _ids(path) == ["refund-scenario", "weather-golden", "fail-golden", "zebra-golden"]  # by display name
    _edit(path, "weather-golden", _ask_weather_in("Rome"))
    _edit(path, "fail-golden", _rename("Weather in Paris"))  # weather-golden's name: CES refuses it
    _edit(path, "zebra-golden", _ask_weather_in("Oslo"))
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert code == 2  # ALREADY_EXISTS: a refusal of the input
    weather, failing, zebra_name = (f"{APP}/evaluations/{i}" for i in ("weather-golden", "fail-golden", "zebra-golden"))
    assert f"updated {weather} (golden)" in out
    lines = err.splitlines()
    assert lines[0].startswith(f"failed {failing}: update_evaluation at {url}: ALREADY_EXISTS: ")
    assert lines[1] == f"not tried {zebra_name}"
    assert lines[2] == (f"error: push stopped: 1 pushed ({path} has their new etags), 1 failed, 1 not tried; "
                        "fix the failed one, then push again")
    # The accepted update's new etag is in the file, the others' edits are still there.
    saved = {c["eval_id"]: c for c in orjson.loads(path.read_bytes())["eval_cases"]}
    assert saved["weather-golden"]["ces"]["evaluation"]["etag"] == state.evaluations[weather]["etag"] != "etag-1"
    assert state.evaluations[zebra_name]["golden"]["turns"][0]["steps"][1]["userInput"]["text"] != "And in Oslo?"
    # Fix the name and push again: no false conflict for the update CES already took.
    _edit(path, "fail-golden", _rename("Will fail, renamed"))
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert (code, err) == (0, ""), err
    assert "2 updated, 2 unchanged, 0 skipped" in out
    assert state.evaluations[failing]["displayName"] == "Will fail, renamed"
    assert state.evaluations[zebra_name]["golden"]["turns"][0]["steps"][1]["userInput"]["text"] == "And in Oslo?"


def test_a_pushed_case_keeps_its_last_ten_results(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, _ = ces
    path = _pull(url, tmp_path)
    _edit(path, "weather-golden", _ask_weather_in("Rome"))
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert code == 0, err
    code, out, err = _cli("ces", "show", f"{path}:weather-golden", "--history")
    assert code == 0, err
    assert "history (1 result(s)):" in out  # update_evaluation's answer has no lastTenResults
    assert "PASS" in out.split("history")[1]


# ---- stable order ------------------------------------------------------------------------------------------


def test_push_and_pull_keep_the_case_order(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, state = ces
    state.list_order = "recent"  # CES lists the most recently updated first
    path = _pull(url, tmp_path)
    before = _ids(path)
    assert before == ["refund-scenario", "weather-golden", "fail-golden"]  # by display name
    _edit(path, "fail-golden", _ask_weather_in("Rome"))
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert code == 0, err
    assert _ids(path) == before
    _pull(url, tmp_path)
    assert _ids(path) == before
    # A new evaluation comes after the ones already pulled, whatever its name.
    new = golden_evaluation(eval_id="aardvark")
    new["displayName"] = "Aardvark"
    new["updateTime"] = "2027-01-01T00:00:00Z"
    state.add(new)
    _pull(url, tmp_path)
    assert _ids(path) == [*before, "aardvark"]


# ---- run ---------------------------------------------------------------------------------------------------


def test_run_sends_the_app_version_and_full_names_as_ids(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01", "--app-version",
                          f"{APP}/versions/v7", "--evaluations", f"{APP}/evaluations/weather-golden")
    assert code == 0, err
    (args,) = [a for n, a in state.calls if n == "run_evaluation"]
    assert args == {"app": APP, "evaluations": ["weather-golden"], "appVersion": f"{APP}/versions/v7"}
    (result,) = state.results.values()
    assert result["appVersion"] == f"{APP}/versions/v7"


def test_an_evaluation_of_another_app_is_refused_before_the_run(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    other = "projects/p1/locations/us/apps/other/evaluations/x"
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--evaluations", other)
    assert code == 2 and err == f"error: {other} is not an evaluation of {APP}\n"
    assert "run_evaluation" not in [n for n, _ in state.calls]


def test_an_error_result_prints_its_error_info_and_exits_3(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    broken = golden_evaluation(eval_id="raises")
    broken["displayName"] = "Raises an error"
    state.add(broken)
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01",
                          "--evaluations", "raises,weather-golden")
    assert "ERROR Raises an error: RUNTIME_ERROR the agent raised ValueError" in out.splitlines()
    assert "1 passed, 0 failed, 1 errors of 2" in out
    assert code == 3  # nothing failed, but not everything was judged
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01")
    assert code == 1  # a failure (fail-golden) outranks an error


def test_a_run_not_followed_to_its_end_exits_3(ces: tuple[str, FakeCesState]) -> None:
    url, _ = ces
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--evaluations", "weather-golden",
                          "--poll-interval", "0.01", "--timeout", "0")
    assert code == 3
    assert err.splitlines()[-1].endswith("still RUNNING after 0s; it goes on in CES (pull later for its results)")
