"""`tui-eval ces ...` end to end: files, and a local CES MCP server reached through the real mcp client."""

from __future__ import annotations

import copy
import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.fake_ces import APP, TOKEN, FakeCesState, golden_evaluation, scenario_evaluation, serve
from tui_eval.cli import main
from tui_eval.schema.load import load_eval_set


@pytest.fixture(scope="module")
def ces_server() -> Iterator[tuple[str, FakeCesState]]:
    state = FakeCesState()
    with serve(state) as url:
        yield url, state


@pytest.fixture
def ces(ces_server: tuple[str, FakeCesState], monkeypatch: pytest.MonkeyPatch) -> tuple[str, FakeCesState]:
    """A fresh app in the shared server: two goldens (one that fails when run) and a scenario."""
    url, state = ces_server
    with state.lock:
        state.evaluations.clear()
        state.runs.clear()
        state.results.clear()
        state.calls.clear()
        state.add(golden_evaluation())
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


def _tools_called(state: FakeCesState) -> list[str]:
    return [name for name, _ in state.calls]


# ---- files -----------------------------------------------------------------------------------------


def test_import_then_export_round_trips_every_input_shape(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(golden_evaluation()))
    many = tmp_path / "list.json"
    many.write_text(json.dumps([scenario_evaluation()]))
    page = tmp_path / "page.json"
    page.write_text(json.dumps({"evaluations": [golden_evaluation(eval_id="g2")], "nextPageToken": "t"}))
    dest = tmp_path / "ces.evalset.json"
    code, out, err = _cli("ces", "import", str(one), str(many), str(page), "-o", str(dest))
    assert (code, err) == (0, "")
    assert "3 evaluation(s), 2 golden, 1 scenario" in out
    eval_set = load_eval_set(dest)
    assert eval_set.eval_set_id == "ces"
    assert [c.eval_id for c in eval_set.eval_cases] == ["weather-golden", "refund-scenario", "g2"]

    back = tmp_path / "back.json"
    code, out, err = _cli("ces", "export", str(dest), "-o", str(back))
    assert (code, err) == (0, "")
    assert json.loads(back.read_text()) == {
        "evaluations": [golden_evaluation(), scenario_evaluation(), golden_evaluation(eval_id="g2")]
    }


def test_import_names_the_json_path_of_a_malformed_file(tmp_path: Path) -> None:
    bad = golden_evaluation()
    bad["scenario"] = {"task": "t", "maxTurns": "many"}
    del bad["golden"]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps([bad]))
    code, out, err = _cli("ces", "import", str(src), "-o", str(tmp_path / "x.evalset.json"), "--eval-set-id", "x")
    assert code == 2
    assert err.splitlines() == [err.strip()]
    assert f"{src} at $[0].scenario.maxTurns" in err
    assert "Traceback" not in err and not (tmp_path / "x.evalset.json").exists()


# ---- pull ------------------------------------------------------------------------------------------


def test_pull_saves_every_page_with_last_results(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, state = ces
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert (code, err) == (0, "")
    dest = tmp_path / "app1.evalset.json"
    assert f"wrote {dest}: 3 evaluation(s)" in out
    # Three evaluations at two per page: two list calls, the second with the page token.
    lists = [args for name, args in state.calls if name == "list_evaluations"]
    assert [a.get("pageToken") for a in lists] == [None, "2"]
    assert all(a["parent"] == APP and a["lastTenResults"] is True for a in lists)
    data = orjson.loads(dest.read_bytes())
    ids = [c["eval_id"] for c in data["eval_cases"]]
    assert sorted(ids) == ["fail-golden", "refund-scenario", "weather-golden"]
    weather = data["eval_cases"][ids.index("weather-golden")]
    assert weather["ces"]["evaluation"]["lastCompletedResult"]["evaluationStatus"] == "PASS"
    assert len(load_eval_set(dest).eval_cases) == 3


# ---- run -------------------------------------------------------------------------------------------


def test_run_streams_progress_and_fails_when_an_evaluation_fails(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01")
    assert code == 1
    progress = err.splitlines()
    # One line per change, from nothing done to all three, ending COMPLETED.
    assert progress[0].endswith("RUNNING 0/3 (passed 0, failed 0, errors 0)")
    assert [line.split()[2] for line in progress] == ["0/3", "1/3", "2/3", "3/3"]
    assert progress[-1].split()[1] == "COMPLETED"
    assert "FAIL  Will fail" in out and "PASS  Weather in Paris" in out
    assert "2 passed, 1 failed, 0 errors of 3" in out
    # The whole app: the ids CES lists for it, since the reference leaves a call naming none undefined
    # (and this server, like a strict one, refuses it).
    (run_args,) = [a for n, a in state.calls if n == "run_evaluation"]
    assert run_args == {"app": APP, "evaluations": ["fail-golden", "refund-scenario", "weather-golden"]}


def test_text_from_ces_is_printed_with_its_control_characters_escaped(ces: tuple[str, FakeCesState]) -> None:
    # A display name is CES's text, not ours: an escape sequence in it must not reach the terminal, and a
    # newline must not forge a result line of its own.
    url, state = ces
    hostile = golden_evaluation(eval_id="hostile-golden")
    hostile["displayName"] = "Will fail\x1b]0;owned\x07\u202e\nPASS  forged"
    with state.lock:
        state.add(hostile)
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01",
                          "--evaluations", "hostile-golden")
    assert code == 1, err
    assert "FAIL  Will fail\\x1b]0;owned\\x07\\u202e\\nPASS  forged" in out.splitlines()
    assert not any(line.startswith("PASS") for line in out.splitlines())
    assert not any(c in out + err for c in "\x1b\x07\u202e")


def test_run_of_chosen_evaluations_that_pass_exits_0(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    code, out, err = _cli("ces", "run", APP, "--endpoint", url, "--poll-interval", "0.01",
                          "--evaluations", "weather-golden,refund-scenario")
    assert code == 0, err
    assert "2 passed, 0 failed, 0 errors of 2" in out
    (run_args,) = [a for n, a in state.calls if n == "run_evaluation"]
    assert run_args["evaluations"] == ["weather-golden", "refund-scenario"]


def test_a_failed_operation_is_one_error_line(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    broken = "projects/p1/locations/us/apps/broken"
    state.add(golden_evaluation(app=broken, eval_id="g1"))
    code, out, err = _cli("ces", "run", broken, "--endpoint", url)
    assert code == 3  # the run could not start: incomplete, as a run that ends in ERROR
    assert err.startswith(f"error: run_evaluation for {broken} failed: "
                          "FAILED_PRECONDITION: the app has no deployed version (code 9 FAILED_PRECONDITION")
    assert len(err.splitlines()) == 1


# ---- push ------------------------------------------------------------------------------------------


def _pull(url: str, tmp_path: Path) -> Path:
    code, _, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert code == 0, err
    return tmp_path / "app1.evalset.json"


def _edit_weather_question(path: Path, text: str) -> None:
    data = orjson.loads(path.read_bytes())
    (case,) = [c for c in data["eval_cases"] if c["eval_id"] == "weather-golden"]
    case["conversation"][0]["user_content"]["parts"][0]["text"] = text
    path.write_bytes(orjson.dumps(data))


def test_push_sends_only_what_changed_with_the_pulled_etag(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, state = ces
    path = _pull(url, tmp_path)
    _edit_weather_question(path, "And in Rome?")
    state.calls.clear()
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert (code, err) == (0, "")
    assert f"updated {APP}/evaluations/weather-golden (golden)" in out
    assert "1 updated, 2 unchanged, 0 skipped" in out
    (update,) = [a for n, a in state.calls if n == "update_evaluation"]
    assert update["updateMask"] == "golden"  # whole: no sub-path the reference does not document
    assert update["evaluation"]["etag"] == "etag-1"
    stored = state.evaluations[f"{APP}/evaluations/weather-golden"]
    assert stored["golden"]["turns"][0]["steps"][1]["userInput"]["text"] == "And in Rome?"
    assert stored["tags"] == ["smoke", "weather"] and stored["etag"] != "etag-1"
    # The file now holds the new etag: pushing again finds nothing to do, and no conflict.
    saved = orjson.loads(path.read_bytes())
    (case,) = [c for c in saved["eval_cases"] if c["eval_id"] == "weather-golden"]
    assert case["ces"]["evaluation"]["etag"] == stored["etag"]
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert (code, err) == (0, "") and "0 updated, 3 unchanged" in out


def test_push_with_a_stale_etag_overwrites_nothing(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, state = ces
    path = _pull(url, tmp_path)
    _edit_weather_question(path, "And in Rome?")
    name = f"{APP}/evaluations/weather-golden"
    with state.lock:  # someone else edits it in CES meanwhile
        state.evaluations[name]["description"] = "edited in the console"
        state.evaluations[name]["etag"] = "etag-console"
    before = copy.deepcopy(state.evaluations)
    code, out, err = _cli("ces", "push", str(path), "--endpoint", url)
    assert code == 1
    assert f"conflict: {name} was changed in CES since it was pulled (pulled etag 'etag-1', now 'etag-console')" in err
    assert "nothing was overwritten" in err
    assert "update_evaluation" not in _tools_called(state)
    assert state.evaluations == before


def test_server_side_etag_check_is_reported_as_a_conflict(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    """The etag changes between our read and our write: the server refuses, we say so."""
    import asyncio

    from tui_eval.ces.client import CesConflictError, with_client

    url, state = ces
    name = f"{APP}/evaluations/weather-golden"

    async def work(client):
        evaluation = (await client.get_evaluation(name)).to_json_dict()
        evaluation["etag"] = "etag-stale"
        evaluation["description"] = "mine"
        await client.update_evaluation(evaluation, ["description"])

    with pytest.raises(CesConflictError, match="changed in CES since it was read .* pull again"):
        asyncio.run(with_client(url, work))
    assert state.evaluations[name]["description"] == "asks for the weather, then books"


# ---- credentials and network -------------------------------------------------------------------------


def test_a_refused_token_names_the_endpoint_and_the_fix(ces: tuple[str, FakeCesState],
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url, _ = ces
    monkeypatch.setenv("CES_ACCESS_TOKEN", "wrong")
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert code == 4  # UNAUTHENTICATED
    assert err == (f"error: {url} refused the credentials (HTTP 401): run `gcloud auth application-default login` "
                   "(or set CES_ACCESS_TOKEN); also check that the account may use CES in this project\n")


def test_no_credentials_at_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CES_ACCESS_TOKEN", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    code, out, err = _cli("ces", "run", APP, "--location", "eu")
    assert code == 4  # UNAUTHENTICATED
    assert err.startswith("error: no Google credentials found for https://ces.eu.rep.googleapis.com/mcp: "
                          "run `gcloud auth application-default login`")
    assert len(err.splitlines()) == 1


def test_an_unreachable_endpoint_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CES_ACCESS_TOKEN", TOKEN)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    code, out, err = _cli("ces", "push", str(Path(__file__).parent / "nope.evalset.json"), "--endpoint", url)
    assert code == 2 and "cannot read file" in err  # bad input is found before any network
    code, out, err = _cli("ces", "pull", APP, "--endpoint", url)
    assert code == 2
    assert err.startswith(f"error: cannot reach the CES MCP server at {url} (ConnectError")
    assert err.rstrip().endswith("check the network, or pass --endpoint / --location")
    assert len(err.splitlines()) == 1


def test_default_endpoints_agree() -> None:
    from tui_eval import ces_cli
    from tui_eval.ces import address

    assert ces_cli.DEFAULT_ENDPOINT == address.DEFAULT_ENDPOINT == "https://ces.googleapis.com/mcp"
    assert address.regional_endpoint("us") == "https://ces.us.rep.googleapis.com/mcp"


def test_every_client_tool_against_the_server(ces: tuple[str, FakeCesState]) -> None:
    """create, list (paged), run, runs and results, delete: the typed client over the real mcp SDK."""
    import asyncio

    from tui_eval.ces.client import CesClient, CesToolError, with_client
    from tui_eval.ces.remote import run

    url, state = ces
    seen: list[str] = []

    async def work(client: CesClient) -> None:
        created = await client.create_evaluation(APP, {"displayName": "New one", "golden": {"turns": []}}, "new-one")
        assert created.name == f"{APP}/evaluations/new-one" and created.etag
        names = [e.name for e in await client.list_evaluations(APP, page_size=1)]
        assert len(names) == 4 and created.name in names
        outcome = await run(client, APP, ["new-one"], on_progress=lambda r: seen.append(r.state or ""),
                            poll_interval=0.0)
        assert outcome.run.state == "COMPLETED" and not outcome.failed
        runs = await client.list_evaluation_runs(APP)
        assert [r.name for r in runs] == [outcome.run.name]
        results = await client.list_evaluation_results(created.name or "")
        assert [r.evaluation_status for r in results] == ["PASS"]
        assert (await client.get_evaluation_result(results[0].name or "")).evaluation_run == outcome.run.name
        assert (await client.get_evaluation(created.name or "")).last_completed_result is not None
        await client.delete_evaluation(created.name or "")
        try:
            await client.get_evaluation(created.name or "")
        except CesToolError as exc:
            assert exc.tool == "get_evaluation" and exc.status == "NOT_FOUND"
        else:
            raise AssertionError("a deleted evaluation was still found")

    asyncio.run(with_client(url, work))
    assert seen == ["RUNNING", "COMPLETED"]
    assert f"{APP}/evaluations/new-one" not in state.evaluations
    list_calls = [a for n, a in state.calls if n == "list_evaluations"]
    assert [a.get("pageToken") for a in list_calls] == [None, "1", "2", "3"]


def test_a_run_that_ends_in_error_exits_3(ces: tuple[str, FakeCesState]) -> None:
    url, state = ces
    app = "projects/p1/locations/us/apps/flaky"
    state.add(golden_evaluation(app=app, eval_id="g1"))
    code, out, err = _cli("ces", "run", app, "--endpoint", url, "--poll-interval", "0.01")
    assert code == 3  # incomplete, as `tui-eval run` says an infrastructure error
    lines = err.splitlines()
    assert lines[0].endswith("RUNNING 0/1 (passed 0, failed 0, errors 0)")
    assert lines[-1].startswith(f"error: {app}/evaluationRuns/run")
    assert lines[-1].endswith("ended in ERROR: INTERNAL: the simulator crashed")


def test_application_default_credentials_are_used(ces: tuple[str, FakeCesState], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A service-account ADC file whose token endpoint is the fake server: google-auth mints the token."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    url, state = ces
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({
        "type": "service_account", "project_id": "p1", "private_key_id": "k1", "private_key": pem,
        "client_email": "ci@p1.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": url.replace("/mcp", "/token"),
    }))
    monkeypatch.delenv("CES_ACCESS_TOKEN")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "billing-project")
    state.quota_projects.clear()
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert (code, err) == (0, "")
    assert state.quota_projects == {"billing-project"}


def test_pull_keeps_a_file_with_unpushed_edits(ces: tuple[str, FakeCesState], tmp_path: Path) -> None:
    url, _ = ces
    path = _pull(url, tmp_path)
    _edit_weather_question(path, "And in Lyon?")
    edited = path.read_bytes()
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url)
    assert (code, out) == (1, "")
    assert err == (f"error: kept {path}: it has unpushed edits (weather-golden); push them "
                   f"(`tui-eval ces push {path}`), or pull with --force to drop them\n")
    assert path.read_bytes() == edited
    code, out, err = _cli("ces", "pull", APP, "-o", str(tmp_path), "--endpoint", url, "--force")
    assert code == 0 and out.startswith(f"wrote {path}: 3 evaluation(s)")
    assert b"And in Lyon?" not in path.read_bytes()
