"""Run google-adk agents with ADK's own Runner and in-memory services, one ADK session per eval case.

Each turn's Runner events become the actual Invocation the way google-adk 2.13's EvaluationGenerator
builds it (invocation_events, final response = the last final-response event), plus what ADK does not
keep: per tool call latency, measured from the function_call event to its function_response event.
google-adk is an optional extra, imported only here and only when an ADK agent is loaded.

Base URL: google-adk 2.13's Gemini model builds its google-genai client with
`HttpOptions(base_url=self.base_url)`, which is None unless the agent sets `Gemini(base_url=...)`, and
google-genai then falls back to $GOOGLE_GEMINI_BASE_URL (Vertex: $GOOGLE_VERTEX_BASE_URL). So the
environment variable alone sends an ADK agent's model calls to a local Gemini-compatible server.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager

from ..schema.load import read_content
from ..schema.model import (
    AgentDetails,
    AppDetails,
    Content,
    EvalCase,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    NestedCall,
    ToolTiming,
)
from .base import Agent, AgentError, AgentSession, CaseContext
from .mocks import ToolMocks, UnexpectedToolCall

try:
    from google.adk.agents.run_config import RunConfig, ToolThreadPoolConfig
    from google.adk.apps.app import App
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.genai import types as genai_types
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra installed
    if (exc.name or "").startswith("google"):
        raise AgentError("this agent needs google-adk, which is not installed: pip install 'tui-eval[adk]'") from exc
    raise

_BusyCollector = Callable[[], ContextManager[Any]]
busy_collector: _BusyCollector | None
try:
    # How ADK's EvaluationGenerator splits a turn's time into model, tool and framework seconds (private
    # in google-adk 2.13): without it the turn keeps its total and the split is n/a.
    from google.adk.telemetry._instrumentation import collect_busy_intervals as busy_collector
except ImportError:  # pragma: no cover - another google-adk version
    busy_collector = None

_USER = "user"
#: What google-adk imports during an agent's first turn (most of a first case's time in google-adk 2.13;
#: the other cases of the worker waited behind it; bench/README.md). Each pulls in the rest of its package.
_FIRST_TURN_MODULES = (
    "google.adk.agents._agent_router",
    "google.adk.workflow",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.models.google_llm",
    "google.adk.auth.auth_preprocessor",
)
#: Threads for sync tools (ADK runs them on the event loop unless told otherwise, so one slow tool held
#: every case of the agent): enough that no case's tool call waits for another's.
TOOL_THREADS = 64


def _jsonable(value: Any) -> Any:
    """genai/ADK pydantic objects as plain JSON data (snake_case, no None fields)."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _instruction_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = getattr(value, "parts", None)
    if parts is not None:
        return "\n".join(p.text for p in parts if getattr(p, "text", None))
    if isinstance(value, list):
        return "\n".join(_instruction_text(v) for v in value)
    return str(value)


def _ours(content: Any, path: str) -> Content | None:
    """A genai Content as our Content (via its JSON shape, so unknown part kinds survive)."""
    if content is None:
        return None
    return read_content(_jsonable(content), path)


@dataclass(slots=True)
class _OpenCall:
    """A tool call the plugin saw start: where it runs and, for a nested one, what the turn will keep."""

    plugin: _AppDetailsPlugin
    call_id: str
    #: 0 for a call in the session's own invocation (ADK's trajectory); 1 inside a call that runs another
    #: runner (an AgentTool's agent has an invocation of its own), 2 inside that...
    depth: int
    started: float
    invocation_id: str = ""
    token: contextvars.Token[_OpenCall | None] | None = None
    #: Set for a call made inside another call (depth >= 1): who made it, and its enclosing call's id.
    agent: str = ""
    name: str = ""
    args: Any = None
    parent: str | None = None
    response: Any = None
    seconds: float | None = None

    def record(self) -> NestedCall:
        return NestedCall(name=self.name, args=self.args, response=self.response, call_id=self.call_id or None,
                          parent=self.parent, agent=self.agent, depth=self.depth, seconds=self.seconds)


#: The tool call the code running now is inside of. An AgentTool runs its agent with a runner of its own,
#: inside the tool call and with this runner's plugins (ADK passes them down), so the inner agent's
#: callbacks see the call that encloses them: nesting, not an id, links an inner call to its AgentTool call.
_ENCLOSING: contextvars.ContextVar[_OpenCall | None] = contextvars.ContextVar("tui_eval_enclosing_call",
                                                                               default=None)


class _AppDetailsPlugin(BasePlugin):
    """Records, per agent, the instructions and tool declarations the model was actually sent (ADK's
    evaluation intercepts model requests the same way), each tool call's own run time, and the tool calls
    made inside other tool calls (an AgentTool's agent), which ADK's trajectory never sees.

    Only the session's own runner's model calls count for app details: an AgentTool's inner agent is
    not listed (ADK lists only the agents of the app's own invocation)."""

    def __init__(self) -> None:
        super().__init__(name=f"tui_eval_app_details_{uuid.uuid4().hex[:8]}")
        self.agents: dict[str, AgentDetails] = {}
        #: Each top-level tool call's own run time, from just before the tool runs to just after (call id ->).
        self.tool_seconds: dict[str, float] = {}
        #: The turn's nested calls in the order they started (depth first: a call, then what ran inside it).
        self.nested: list[_OpenCall] = []
        self._open: dict[int, _OpenCall] = {}

    def _enclosing(self) -> _OpenCall | None:
        frame = _ENCLOSING.get()
        return frame if frame is not None and frame.plugin is self else None

    def _depth(self, parent: _OpenCall | None, invocation_id: str) -> int:
        """How deep code of `invocation_id` runs: as deep as the call enclosing it when it is part of the
        same invocation (a `single_turn` sub-agent runs inline: its events land in the parent's stream, so
        ADK's trajectory has its calls), one deeper when it is another runner's (an AgentTool's agent)."""
        if parent is None:
            return 0
        return parent.depth if invocation_id == parent.invocation_id else parent.depth + 1

    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Any:
        parent = self._enclosing()
        call_id = getattr(tool_context, "function_call_id", None) or ""
        invocation_id = getattr(tool_context, "invocation_id", None) or ""
        frame = _OpenCall(self, call_id, self._depth(parent, invocation_id), time.perf_counter(), invocation_id)
        if parent is not None and frame.depth > 0:
            frame.agent = getattr(tool_context, "agent_name", "") or "agent"
            frame.name = getattr(tool, "name", "") or ""
            frame.args = _jsonable(dict(tool_args or {}))
            frame.parent = parent.call_id or None
            self.nested.append(frame)
        frame.token = _ENCLOSING.set(frame)
        self._open[id(tool_context)] = frame
        return None

    def _end(self, tool_context: Any, response: Any) -> None:
        frame = self._open.pop(id(tool_context), None)
        if frame is None:
            return
        seconds = time.perf_counter() - frame.started
        if frame.token is not None:
            try:
                _ENCLOSING.reset(frame.token)
            except ValueError:  # ended in another context than it started: that context dies with its task
                pass
        if frame.depth == 0:
            self.tool_seconds[frame.call_id] = seconds
        else:
            frame.seconds = round(seconds, 6)
            frame.response = response if isinstance(response, dict) else {"result": response}

    async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any,
                                  result: Any) -> Any:
        self._end(tool_context, _jsonable(result))
        return None

    async def on_tool_error_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any,
                                     error: Exception) -> Any:
        self._end(tool_context, {"error": f"{type(error).__name__}: {error}"})
        if isinstance(error, MemoryError):
            raise AgentError(f"MemoryError in tool {getattr(tool, 'name', '?')}") from None
        return None

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
        if self._depth(self._enclosing(), getattr(callback_context, "invocation_id", None) or "") > 0:
            return None  # an AgentTool's agent's model call: another runner's invocation, not the app's
        name = getattr(callback_context, "agent_name", "") or "agent"
        config = getattr(llm_request, "config", None)
        if name not in self.agents and config is not None:
            self.agents[name] = AgentDetails(
                name=name,
                instructions=_instruction_text(getattr(config, "system_instruction", None)),
                tool_declarations=_jsonable(list(getattr(config, "tools", None) or [])),
            )
        return None


class _MockToolsPlugin(BasePlugin):
    """--mock-tools on ADK's Runner: each tool call is answered from the case's recorded responses before
    the tool runs (a before_tool_callback that returns the response), so the agent's code is unchanged."""

    def __init__(self, mocks: ToolMocks) -> None:
        super().__init__(name=f"tui_eval_mock_tools_{uuid.uuid4().hex[:8]}")
        self.mocks = mocks
        self.mocked_ids: set[str] = set()
        # Kept as well as raised: the turn fails with it even if ADK handles a callback's exception.
        self.unexpected: UnexpectedToolCall | None = None

    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Any:
        try:
            answer = self.mocks.answer(getattr(tool, "name", ""), dict(tool_args or {}))
        except UnexpectedToolCall as exc:
            self.unexpected = exc
            raise
        if answer is not None:
            self.mocked_ids.add(getattr(tool_context, "function_call_id", None) or "")
        return answer


def _static_app_details(root: Any) -> AppDetails:
    """Instructions of every agent in the tree when no model was called in a turn (tools unknown then)."""
    details: dict[str, AgentDetails] = {}
    stack = [root]
    while stack:
        agent = stack.pop()
        name = getattr(agent, "name", None)
        if not name or name in details:
            continue
        instruction = getattr(agent, "instruction", "")
        details[name] = AgentDetails(name=name, instructions=instruction if isinstance(instruction, str) else "")
        stack.extend(getattr(agent, "sub_agents", None) or [])
    return AppDetails(agent_details=details)


class AdkAgent(Agent):
    """A google.adk agent (or App) loaded from an agent folder."""

    def __init__(self, root_agent: Any = None, *, app: Any = None, factory: Any = None, folder: Path | None = None,
                 sources: list[Path] | None = None) -> None:
        self.root_agent = root_agent if root_agent is not None else getattr(app, "root_agent", None)
        self.app = app
        self._factory = factory  # get_agent_async, awaited on the first session
        self._exit_stack: Any = None
        self.home = folder
        self.name = folder.name if folder is not None else getattr(self.root_agent, "name", "agent")
        self._sources = sources or []

    @classmethod
    def from_entry(cls, kind: str, value: Any, *, folder: Path, sources: list[Path]) -> AdkAgent:
        if kind == "get_agent_async":
            if not callable(value):
                raise AgentError(f"{folder}: get_agent_async must be an async function")
            return cls(factory=value, folder=folder, sources=sources)
        if isinstance(value, App):
            return cls(app=value, folder=folder, sources=sources)
        return cls(value, folder=folder, sources=sources)

    def source_paths(self) -> list[Path]:
        return list(self._sources)

    def warm_up(self) -> None:
        import importlib
        import logging

        for name in _FIRST_TURN_MODULES:
            try:
                importlib.import_module(name)
            except ImportError as exc:  # another google-adk version: its first turn imports it instead
                logging.getLogger(__name__).debug("no %s to import ahead: %s", name, exc)

    def app_details(self) -> AppDetails | None:
        return _static_app_details(self.root_agent) if self.root_agent is not None else None

    async def _root(self) -> Any:
        if self.root_agent is None and self._factory is not None:
            made = await self._factory()
            # The older ADK convention returns (agent, exit_stack) so tool connections can be closed.
            if isinstance(made, tuple):
                made, self._exit_stack = made[0], (made[1] if len(made) > 1 else None)
            self.root_agent = made
        if self.root_agent is None:
            raise AgentError(f"{self.home}: the agent module exposes no root agent")
        return self.root_agent

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        root = await self._root()
        si = case.session_input
        app_name = si.app_name if si is not None and si.app_name else self.name
        user_id = si.user_id if si is not None and si.user_id else "test_user_id"
        plugin = _AppDetailsPlugin()
        mocks = ToolMocks.for_case(case, ctx.mock_tools)
        mock_plugin = _MockToolsPlugin(mocks) if mocks is not None else None
        ours: list[Any] = [plugin] + ([mock_plugin] if mock_plugin is not None else [])
        if self.app is not None:
            app = self.app.model_copy(update={"plugins": list(self.app.plugins) + ours, "root_agent": root})
        else:
            # model_construct, as ADK's Runner does for a bare agent: no strict app-name validation.
            app = App.model_construct(name=app_name, root_agent=root, plugins=ours)
        session_service = InMemorySessionService()
        runner = Runner(
            app=app,
            app_name=app_name,
            session_service=session_service,
            artifact_service=InMemoryArtifactService(),
            memory_service=InMemoryMemoryService(),
        )
        session = await session_service.create_session(
            app_name=app_name,
            user_id=user_id,
            state=dict(si.state) if si is not None else {},
            session_id=(si.session_id if si is not None else None) or f"tui-eval-{uuid.uuid4().hex[:12]}",
        )
        return AdkSession(runner, session.id, user_id, plugin, root, mock_plugin, app_name=app_name)

    async def aclose(self) -> None:
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None and hasattr(stack, "aclose"):
            await stack.aclose()


class AdkSession(AgentSession):
    def __init__(self, runner: Any, session_id: str, user_id: str, plugin: _AppDetailsPlugin, root: Any,
                 mock_plugin: _MockToolsPlugin | None = None, *, app_name: str = "") -> None:
        self.runner = runner
        self.app_name = app_name
        self.mock_plugin = mock_plugin
        self.session_id = session_id
        self.user_id = user_id
        self.plugin = plugin
        self.root = root

    async def turn(self, user_content: Content, index: int) -> Invocation:
        message = genai_types.Content.model_validate(user_content.to_dict() | {"role": user_content.role or _USER})
        created = time.time()
        self.plugin.agents = {}
        self.plugin.nested = []
        events: list[Any] = []
        started: dict[str, tuple[str, float]] = {}
        timings: list[ToolTiming] = []
        busy_block: ContextManager[Any] = busy_collector() if busy_collector is not None else contextlib.nullcontext()
        # time.monotonic, as ADK: the busy intervals are read off that clock.
        t0 = time.monotonic()
        if self.mock_plugin is not None:
            self.mock_plugin.mocks.turn_index = index
        with busy_block as busy:
            await self._run(message, events, started, timings)
        if self.mock_plugin is not None and self.mock_plugin.unexpected is not None:
            raise self.mock_plugin.unexpected
        # Rounded to milliseconds, as ADK's EvaluationGenerator does.
        duration = round(time.monotonic() - t0, 3)
        model_seconds = round(busy.model_seconds(), 3) if busy is not None else None
        tool_seconds = round(busy.tool_seconds(), 3) if busy is not None else None
        return self._invocation(user_content, events, index, created, duration, timings, model_seconds, tool_seconds)

    async def _run(self, message: Any, events: list[Any], started: dict[str, tuple[str, float]],
                   timings: list[ToolTiming]) -> None:
        run_config = RunConfig(tool_thread_pool_config=ToolThreadPoolConfig(max_workers=TOOL_THREADS))
        async for event in self.runner.run_async(user_id=self.user_id, session_id=self.session_id,
                                                 new_message=message, run_config=run_config):
            now = time.perf_counter()
            events.append(event)
            for call in event.get_function_calls():
                started[call.id or f"{call.name}#{len(started)}"] = (call.name or "", now)
            for response in event.get_function_responses():
                key = response.id if response.id in started else None
                if key is None:  # no id: pair with the oldest open call of that name
                    key = next((k for k, (n, _) in started.items() if n == response.name), None)
                if key is not None:
                    name, t_call = started.pop(key)
                    # The tool's own run time where the plugin saw it run, else from call to response.
                    own = self.plugin.tool_seconds.pop(response.id or "", None)
                    seconds = own if own is not None else now - t_call
                    mocked = self.mock_plugin is not None and (response.id or "") in self.mock_plugin.mocked_ids
                    timings.append(ToolTiming(name=name, seconds=round(seconds, 6), call_id=response.id,
                                              mocked=mocked))

    def _invocation(self, user_content: Content, events: list[Any], index: int, created: float, duration: float,
                    timings: list[ToolTiming], model_seconds: float | None = None,
                    tool_seconds: float | None = None) -> Invocation:
        final_event: Any = None
        kept: list[Any] = []
        for event in events:
            if (event.author or "").lower() == _USER:
                continue
            content = event.content
            parts = list(content.parts or []) if content is not None else []
            grounded = getattr(event, "grounding_metadata", None) is not None
            if not parts:
                # As ADK: an event with grounding metadata and no parts is kept for its grounding.
                if grounded:
                    kept.append(event)
                continue
            if event.is_final_response():
                final_event = event
            if grounded or any(p.function_call or p.function_response or p.text or p.inline_data for p in parts):
                kept.append(event)
        invocation_events = []
        for n, event in enumerate(kept):
            # As ADK: the final response's text lives on final_response, not again among the events.
            content = None if event is final_event and not event.get_function_calls() else event.content
            usage = getattr(event, "usage_metadata", None)
            grounding = getattr(event, "grounding_metadata", None)
            invocation_events.append(
                InvocationEvent(author=event.author or "agent",
                                content=_ours(content, f"$.events[{n}].content"),
                                grounding_metadata=_jsonable(grounding) if grounding is not None else None,
                                # What the efficiency metrics count: one per model call, as ADK keeps it.
                                usage_metadata=_jsonable(usage) if usage is not None else None,
                                model_version=getattr(event, "model_version", None))
            )
        app_details = (AppDetails(agent_details=dict(self.plugin.agents)) if self.plugin.agents
                       else _static_app_details(self.root))
        invocation_id = events[0].invocation_id if events else f"e-{index + 1}"
        return Invocation(
            user_content=user_content,
            invocation_id=invocation_id or f"e-{index + 1}",
            final_response=_ours(final_event.content, "$.final_response") if final_event is not None else None,
            intermediate_data=InvocationEvents(invocation_events=invocation_events),
            creation_timestamp=created,
            duration=duration,
            model_duration=model_seconds,
            tool_duration=tool_seconds,
            app_details=app_details,
            tool_timings=timings,
            nested_calls=[frame.record() for frame in self.plugin.nested],
        )

    async def final_state(self) -> dict[str, Any] | None:
        session = await self.runner.session_service.get_session(app_name=self.app_name, user_id=self.user_id,
                                                                session_id=self.session_id)
        return dict(session.state) if session is not None else None

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.runner.close(), 10)
        except (asyncio.TimeoutError, TimeoutError):
            pass
