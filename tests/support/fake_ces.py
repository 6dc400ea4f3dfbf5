"""A local CES MCP server for tests: evaluations, runs and results in memory, over streamable HTTP.

Built on the official `mcp` SDK's low-level server and its streamable HTTP app, served by uvicorn on
127.0.0.1 in a thread. It checks the bearer token (a wrong one gets HTTP 401, as Google's front end
answers), pages `list_evaluations` (page size 2 by default), enforces etags on `update_evaluation`,
and runs evaluations over time: a run moves one evaluation forward per `get_evaluation_run` call. An
evaluation whose display name contains "fail" fails, one whose display name contains "error" ends in
ERROR with an errorInfo; an app whose id contains "broken" gets a failed operation from `run_evaluation`,
one whose id contains "flaky" a run that ends in state ERROR.

Errors carry their canonical status as Google's APIs do, `{"error": {"code", "message", "status"}}`: as a
tool result with `isError` and that object as structured content (the default), or, with
`state.error_style = "jsonrpc"`, as a JSON-RPC error whose `data` is that object. The text never names the
status. `state.faults` makes a tool fail with a given status; as the reference says, `run_evaluation`
wants evaluation ids (or a dataset), update masks name top-level fields, display names are unique in an
app (ALREADY_EXISTS), and `lastTenResults` is filled only when asked for.
"""

from __future__ import annotations

import copy
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

TOKEN = "test-token"
APP = "projects/p1/locations/us/apps/app1"


def golden_evaluation(app: str = APP, eval_id: str = "weather-golden") -> dict[str, Any]:
    """A golden with every kind of step the mapping must keep, and fields no schema knows yet."""
    tools = f"{app}/tools"
    return {
        "name": f"{app}/evaluations/{eval_id}",
        "displayName": "Weather in Paris",
        "description": "asks for the weather, then books",
        "tags": ["smoke", "weather"],
        "etag": "etag-1",
        "createTime": "2026-01-02T03:04:05.123456789Z",
        "updateTime": "2026-01-03T03:04:05Z",
        "evaluationRuns": [f"{app}/evaluationRuns/r0"],
        "futureTopLevelField": {"kept": True},
        "evaluationMetricsThresholdOverride": {
            "goldenEvaluationMetricsThresholds": {
                "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 2},
                "toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"},
            }
        },
        "golden": {
            "evaluationExpectations": [f"{app}/evaluationExpectations/polite"],
            "turns": [
                {
                    "steps": [
                        {"userInput": {"variables": {"customer_tier": "gold"}}},
                        {"userInput": {"text": "What's the weather in Paris?", "willContinue": False}},
                        {"expectation": {
                            "note": "Check_Weather_Tool_Called",
                            "toolCall": {"id": "c1", "tool": f"{tools}/get_weather", "args": {"city": "Paris"},
                                         "displayName": "Get weather"},
                        }},
                        {"expectation": {
                            "toolResponse": {"id": "c1", "tool": f"{tools}/get_weather",
                                             "response": {"output": {"temp_c": 21}}},
                        }},
                        {"expectation": {
                            "mockToolResponse": {"tool": f"{tools}/get_weather", "response": {"output": "sunny"}},
                            "note": "mocked",
                        }},
                        {"expectation": {"agentResponse": {
                            "role": "agent", "chunks": [{"text": "It is 21 degrees"}, {"text": " and sunny."}]}}},
                    ],
                    "rootSpan": {"name": "turn", "duration": "1.5s"},
                },
                {
                    "steps": [
                        {"userInput": {"text": "Book me a table"}},
                        {"agentTransfer": {"targetAgent": f"{app}/agents/booking"}},
                        {"expectation": {"toolCall": {
                            "toolsetTool": {"toolset": f"{app}/toolsets/restaurants", "toolId": "book_table"},
                            "args": {}}}},
                        {"expectation": {"agentTransfer": {"targetAgent": f"{app}/agents/booking"},
                                         "note": "transferred"}},
                        {"expectation": {"updatedVariables": {"booked": True}}},
                        {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                            {"text": "Booked."}, {"payload": {"card": "confirmation"}}, {"text": "Enjoy!"}]}}},
                        {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "Anything else?"}],
                                                           "futureMessageField": 1}}},
                    ]
                },
            ],
        },
        "lastCompletedResult": {
            "name": f"{app}/evaluations/{eval_id}/results/res1",
            "evaluationStatus": "PASS",
            "executionState": "COMPLETED",
            "goldenResult": {"turnReplayResults": [{
                "semanticSimilarityResult": {"score": 4, "label": "Fully consistent", "outcome": "PASS"},
                "hallucinationResult": {"score": 1, "label": "Justified"},
                "toolOrderedInvocationScore": 1.0,
                "turnLatency": "1.2s",
                "expectationOutcome": [{"outcome": "PASS", "expectation": {"note": "Check_Weather_Tool_Called"}}],
            }]},
        },
    }


def scenario_evaluation(app: str = APP, eval_id: str = "refund-scenario") -> dict[str, Any]:
    return {
        "name": f"{app}/evaluations/{eval_id}",
        "displayName": "Refund a late order",
        "etag": "etag-9",
        "tags": ["scenario"],
        "scenario": {
            "task": "You want a refund for order 123, which arrived late.",
            "userFacts": [{"name": "Order number", "value": "123"}, {"name": "Email", "value": "a@b.c"}],
            "maxTurns": 8,
            "rubrics": ["The agent confirms the order number.", "The agent is polite."],
            "scenarioExpectations": [{"toolExpectation": {
                "expectedToolCall": {"tool": f"{app}/tools/refund", "args": {"order": "123"}},
                "mockToolResponse": {"tool": f"{app}/tools/refund", "response": {"output": "ok"}},
            }}],
            "variableOverrides": {"channel": "chat"},
            "userGoalBehavior": "USER_GOAL_SATISFIED",
            "futureScenarioField": ["x"],
        },
    }


# ---- the server --------------------------------------------------------------------------------------


@dataclass
class _Run:
    name: str
    app: str
    evaluations: list[str]
    results: list[str] = field(default_factory=list)
    polls: int = 0
    app_version: str | None = None


@dataclass
class FakeCesState:
    """What the server holds; tests read and change it directly."""

    evaluations: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, _Run] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    page_size: int = 2
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    quota_projects: set[str] = field(default_factory=set)  # x-goog-user-project values seen
    #: "tool": errors are tool results with isError; "jsonrpc": JSON-RPC error responses.
    error_style: str = "tool"
    #: tool name -> (canonical status, message): every call of that tool fails so.
    faults: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: "name": list_evaluations by resource name; "recent": the most recently updated first.
    list_order: str = "name"
    #: (canonical status, message): every MCP request is refused at the HTTP level, Google's error as the body.
    http_fault: tuple[str, str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, evaluation: dict[str, Any]) -> None:
        self.evaluations[evaluation["name"]] = copy.deepcopy(evaluation)

    def new_etag(self) -> str:
        return f"etag-{next(self._ids) + 100}"


# The HTTP code Google's APIs pair with each canonical status.
HTTP_CODES = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403,
              "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409, "RESOURCE_EXHAUSTED": 429, "INTERNAL": 500}
# The fields of an Evaluation an update mask may name.
MASKABLE = frozenset({"displayName", "description", "tags", "golden", "scenario",
                      "evaluationMetricsThresholdOverride", "evaluationMetricsConfigOverride"})


class _ToolError(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def error_object(self) -> dict[str, Any]:
        return {"error": {"code": HTTP_CODES.get(self.status, 500), "message": self.message, "status": self.status}}


def _ok(value: dict[str, Any]) -> types.CallToolResult:
    # Like the real server: the JSON as text, and as structured content.
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value))], structured_content=value
    )


def _page(items: list[dict[str, Any]], key: str, args: dict[str, Any], default_size: int) -> dict[str, Any]:
    start = int(args.get("pageToken") or 0)
    size = int(args.get("pageSize") or default_size)
    out: dict[str, Any] = {key: items[start:start + size]}
    if start + size < len(items):
        out["nextPageToken"] = str(start + size)
    return out


def _apply_mask(stored: dict[str, Any], update: dict[str, Any], mask: list[str]) -> None:
    """Replace each named top-level field by the update's (absent there: removed)."""
    for path in mask:
        if path in update:
            stored[path] = copy.deepcopy(update[path])
        else:
            stored.pop(path, None)


class FakeCes:
    """The tool handlers over a FakeCesState."""

    def __init__(self, state: FakeCesState) -> None:
        self.state = state

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        st = self.state
        with st.lock:
            st.calls.append((name, copy.deepcopy(args)))
            if name in st.faults:
                raise _ToolError(*st.faults[name])
            handler = getattr(self, "_" + name, None)
            if handler is None:
                raise _ToolError("NOT_FOUND", f"unknown tool {name}")
            result: dict[str, Any] = handler(args)
            return result

    def _need(self, args: dict[str, Any], key: str) -> Any:
        if key not in args:
            raise _ToolError("INVALID_ARGUMENT", f"missing {key}")
        return args[key]

    def _get(self, name: str) -> dict[str, Any]:
        if name not in self.state.evaluations:
            raise _ToolError("NOT_FOUND", f"evaluation {name} not found")
        return self.state.evaluations[name]

    def _list_evaluations(self, args: dict[str, Any]) -> dict[str, Any]:
        parent = self._need(args, "parent")
        items = [copy.deepcopy(e) for n, e in sorted(self.state.evaluations.items()) if n.startswith(parent + "/")]
        if self.state.list_order == "recent":
            items.sort(key=lambda e: str(e.get("updateTime", "")), reverse=True)
        if not args.get("lastTenResults"):
            for item in items:
                item.pop("lastTenResults", None)
        return _page(items, "evaluations", args, self.state.page_size)

    def _get_evaluation(self, args: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(self._get(self._need(args, "name")))
        if not args.get("lastTenResults"):
            out.pop("lastTenResults", None)
        return out

    def _create_evaluation(self, args: dict[str, Any]) -> dict[str, Any]:
        parent = self._need(args, "parent")
        evaluation = copy.deepcopy(self._need(args, "evaluation"))
        eval_id = args.get("evaluationId") or f"e{next(self.state._ids)}"
        evaluation["name"] = f"{parent}/evaluations/{eval_id}"
        evaluation["etag"] = self.state.new_etag()
        self.state.add(evaluation)
        return copy.deepcopy(evaluation)

    def _update_evaluation(self, args: dict[str, Any]) -> dict[str, Any]:
        update = self._need(args, "evaluation")
        stored = self._get(update.get("name", ""))
        if update.get("etag") and update["etag"] != stored.get("etag"):
            raise _ToolError("ABORTED", f"{stored['name']} was modified concurrently; read it again")
        mask = [p.strip() for p in str(self._need(args, "updateMask")).split(",") if p.strip()]
        for path in mask:
            if path not in MASKABLE:
                raise _ToolError("INVALID_ARGUMENT", f"update_mask path {path!r} is not an updatable field")
        if "displayName" in mask:
            app = stored["name"].split("/evaluations/", 1)[0]
            for other in self.state.evaluations.values():
                if (other["name"] != stored["name"] and other["name"].startswith(app + "/")
                        and other.get("displayName") == update.get("displayName")):
                    raise _ToolError("ALREADY_EXISTS", f"display name {update.get('displayName')!r} is taken")
        _apply_mask(stored, update, mask)
        stored["etag"] = self.state.new_etag()
        stored["updateTime"] = f"2026-02-01T00:00:{next(self.state._ids) % 60:02d}Z"
        out = copy.deepcopy(stored)
        out.pop("lastTenResults", None)  # filled only when asked for, and update cannot ask
        return out

    def _delete_evaluation(self, args: dict[str, Any]) -> dict[str, Any]:
        self._get(self._need(args, "name"))
        del self.state.evaluations[args["name"]]
        return {}

    def _run_evaluation(self, args: dict[str, Any]) -> dict[str, Any]:
        app = self._need(args, "app")
        n = next(self.state._ids)
        if "broken" in app:
            return {"name": f"{app}/operations/op{n}", "done": True,
                    "error": {"code": 9, "message": "FAILED_PRECONDITION: the app has no deployed version"}}
        wanted = args.get("evaluations") or []
        if not wanted and not args.get("evaluationDataset"):
            raise _ToolError("INVALID_ARGUMENT", "one of evaluations or evaluation_dataset is required")
        for eval_id in wanted:
            if "/" in eval_id:
                raise _ToolError("INVALID_ARGUMENT", f"{eval_id!r} is not an evaluation id")
            if f"{app}/evaluations/{eval_id}" not in self.state.evaluations:
                raise _ToolError("NOT_FOUND", f"evaluation {eval_id} not found in {app}")
        names = [f"{app}/evaluations/{eval_id}" for eval_id in wanted]
        run = _Run(name=f"{app}/evaluationRuns/run{n}", app=app, evaluations=names,
                   app_version=args.get("appVersion"))
        self.state.runs[run.name] = run
        return {"name": f"{app}/operations/op{n}", "done": False,
                "metadata": {"evaluationRun": run.name, "evaluations": names}}

    def _run_view(self, run: _Run) -> dict[str, Any]:
        done = len(run.results)
        passed = sum(1 for r in run.results if self.state.results[r].get("evaluationStatus") == "PASS")
        errors = sum(1 for r in run.results if self.state.results[r].get("executionState") == "ERROR")
        out: dict[str, Any] = {
            "name": run.name, "evaluations": run.evaluations, "evaluationResults": list(run.results),
            "state": "COMPLETED" if done == len(run.evaluations) else "RUNNING",
            "progress": {"totalCount": len(run.evaluations), "completedCount": done,
                         "passedCount": passed, "failedCount": done - passed - errors, "errorCount": errors},
        }
        if run.app_version:
            out["appVersion"] = run.app_version
        return out

    def _get_evaluation_run(self, args: dict[str, Any]) -> dict[str, Any]:
        name = self._need(args, "name")
        run = self.state.runs.get(name)
        if run is None:
            raise _ToolError("NOT_FOUND", f"evaluation run {name} not found")
        run.polls += 1
        if "flaky" in run.app:
            view = self._run_view(run)
            view["state"] = "RUNNING" if run.polls == 1 else "ERROR"
            if run.polls > 1:
                view["error"] = {"code": 13, "message": "INTERNAL: the simulator crashed"}
            return view
        if run.polls > 1 and len(run.results) < len(run.evaluations):  # one more finished per poll
            evaluation = self.state.evaluations[run.evaluations[len(run.results)]]
            title = str(evaluation.get("displayName", "")).lower()
            status = "FAIL" if "fail" in title else "PASS"
            result_name = f"{evaluation['name']}/results/{run.name.rsplit('/', 1)[-1]}"
            result = {"name": result_name, "displayName": evaluation.get("displayName", ""),
                      "evaluationStatus": status, "executionState": "COMPLETED", "evaluationRun": run.name}
            result["createTime"] = f"2026-03-01T00:00:{len(self.state.results):02d}Z"
            if run.app_version:
                result["appVersion"] = run.app_version
            if "error" in title:  # the replay itself broke: no verdict, the reason in errorInfo
                del result["evaluationStatus"]
                result["executionState"] = "ERROR"
                result["errorInfo"] = {"errorType": "RUNTIME_ERROR", "errorMessage": "the agent raised ValueError"}
            elif "golden" in evaluation:  # a replay result with a score, as CES gives one per golden turn
                score = 1 if status == "FAIL" else 4
                result["goldenResult"] = {"turnReplayResults": [{
                    "semanticSimilarityResult": {"score": score, "outcome": status,
                                                 "explanation": f"similarity {score} in {run.name}"}}]}
            self.state.results[result_name] = result
            run.results.append(result_name)
            evaluation["lastCompletedResult"] = copy.deepcopy(result)
            # Newest first, at most ten: what `lastTenResults` lists.
            evaluation["lastTenResults"] = [copy.deepcopy(result), *evaluation.get("lastTenResults", [])][:10]
        return self._run_view(run)

    def _list_evaluation_runs(self, args: dict[str, Any]) -> dict[str, Any]:
        parent = self._need(args, "parent")
        items = [self._run_view(r) for n, r in sorted(self.state.runs.items()) if n.startswith(parent + "/")]
        return _page(items, "evaluationRuns", args, self.state.page_size)

    def _list_evaluation_results(self, args: dict[str, Any]) -> dict[str, Any]:
        parent = self._need(args, "parent")
        items = [copy.deepcopy(r) for n, r in sorted(self.state.results.items()) if n.startswith(parent + "/")]
        return _page(items, "evaluationResults", args, self.state.page_size)

    def _get_evaluation_result(self, args: dict[str, Any]) -> dict[str, Any]:
        name = self._need(args, "name")
        if name not in self.state.results:
            raise _ToolError("NOT_FOUND", f"evaluation result {name} not found")
        return copy.deepcopy(self.state.results[name])


TOOL_NAMES = (
    "list_evaluations", "get_evaluation", "create_evaluation", "update_evaluation", "delete_evaluation",
    "run_evaluation", "get_evaluation_run", "list_evaluation_runs", "list_evaluation_results",
    "get_evaluation_result",
)


def build_app(state: FakeCesState, token: str = TOKEN) -> Any:
    """The ASGI app: a bearer-token check in front of the SDK's streamable HTTP app."""
    fake = FakeCes(state)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"}) for n in TOOL_NAMES])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return _ok(fake.call(params.name, dict(params.arguments or {})))
        except _ToolError as exc:
            if state.error_style == "jsonrpc":
                raise MCPError(-32000, exc.message, exc.error_object()) from None
            return types.CallToolResult(content=[types.TextContent(type="text", text=exc.message)],
                                        structured_content=exc.error_object(), is_error=True)

    server = Server("fake-ces", on_list_tools=list_tools, on_call_tool=call_tool)
    inner = server.streamable_http_app(stateless_http=True, json_response=True)
    expected = f"Bearer {token}".encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/token":  # an OAuth token endpoint for ADC tests
            body = json.dumps({"access_token": token, "expires_in": 3600, "token_type": "Bearer"}).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http":
            state.quota_projects.add(dict(scope["headers"]).get(b"x-goog-user-project", b"").decode())
        if scope["type"] == "http" and state.http_fault is not None and scope["method"] == "POST":
            error = _ToolError(*state.http_fault)
            await send({"type": "http.response.start", "status": HTTP_CODES.get(error.status, 500),
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": json.dumps(error.error_object()).encode()})
            return
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            body = json.dumps({"error": {"code": 401, "status": "UNAUTHENTICATED",
                                         "message": "Request had invalid authentication credentials."}}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await inner(scope, receive, send)

    return app


@contextmanager
def serve(state: FakeCesState, token: str = TOKEN) -> Iterator[str]:
    """Serve on a free port of 127.0.0.1 in a thread; yields the MCP endpoint URL; stops on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(build_app(state, token), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="fake-ces", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the fake CES server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def detailed_golden_result(app: str = APP, eval_id: str = "weather-golden", run: str = "r1",
                           status: str = "FAIL", when: str = "2026-02-01T10:00:00Z") -> dict[str, Any]:
    """A golden EvaluationResult with every detail the dashboard shows (and markup in CES's texts)."""
    tools = f"{app}/tools"
    return {
        "name": f"{app}/evaluations/{eval_id}/results/{run}",
        "createTime": when,
        "evaluationStatus": status,
        "executionState": "COMPLETED",
        "appVersionDisplayName": "v7",
        "evaluationMetricsThresholds": {"goldenEvaluationMetricsThresholds": {
            "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 3}}},
        "goldenResult": {"turnReplayResults": [
            {
                "semanticSimilarityResult": {"score": 2, "label": "Partially consistent", "outcome": "FAIL",
                                             "explanation": "Says [bold]rain[/bold] where 21 degrees was expected."},
                "hallucinationResult": {"score": 0, "label": "Not justified",
                                        "explanation": "The forecast is not in the tool output."},
                "overallToolInvocationResult": {"toolInvocationScore": 0.5, "outcome": "FAIL"},
                "toolOrderedInvocationScore": 1.0,
                "turnLatency": "2.5s",
                "toolCallLatencies": [{"tool": f"{tools}/get_weather", "executionLatency": "0.4s"}],
                "expectationOutcome": [
                    {"outcome": "FAIL",
                     "expectation": {"note": "Check_Weather_Tool_Called",
                                     "toolCall": {"tool": f"{tools}/get_weather", "args": {"city": "Paris"}}},
                     "observedToolCall": {"tool": f"{tools}/get_weather", "args": {"city": "Lyon"}},
                     "toolInvocationResult": {"parameterCorrectnessScore": 0.0, "outcome": "FAIL",
                                              "explanation": "city differs"}},
                    {"outcome": "PASS",
                     "expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "It is 21 degrees"}]}},
                     "observedAgentResponse": {"role": "agent", "chunks": [{"text": "It will [red]rain[/red]"}]}},
                ],
            },
            {"errorInfo": {"errorType": "TIMEOUT", "errorMessage": "the agent did not answer in 30s"}},
        ]},
    }


def detailed_scenario_result(app: str = APP, eval_id: str = "refund-scenario") -> dict[str, Any]:
    return {
        "name": f"{app}/evaluations/{eval_id}/results/s1",
        "createTime": "2026-02-02T10:00:00Z",
        "evaluationStatus": "PASS",
        "scenarioResult": {
            "taskCompletionResult": {"score": 1, "label": "Completed", "explanation": "The refund was issued."},
            "userGoalSatisfactionResult": {"score": 1, "label": "Satisfied"},
            "rubricOutcomes": [{"rubric": "The agent confirms the order number.", "score": 1.0,
                                "scoreExplanation": "It repeated 123."}],
            "expectationOutcomes": [{"outcome": "PASS", "expectation": {"toolExpectation": {
                "expectedToolCall": {"tool": f"{app}/tools/refund", "args": {"order": "123"}}}}}],
        },
    }
