"""The light native agent interface: Python functions as tools, Gemini or a deterministic offline policy.

A `NativeAgent` answers each user message the way a function-calling model does: ask the model (or, offline,
the `policy` standing in for it) what to do, execute the tool calls it asks for, send the results back,
until it answers in text. Every step is recorded on the actual Invocation: tool calls with args and ids,
tool responses, intermediate texts, the final response, the turn's wall time and each tool's latency.

    def roll_die(sides: int, tool_context: ToolContext) -> int:
        '''Roll a die with the given number of sides.'''
        return tool_context.rng.randint(1, sides)

    root_agent = NativeAgent("dice", "You roll dice.", tools=[roll_die], policy=my_policy)

Mode: `TUI_EVAL_AGENT_MODE=offline` always runs the policy, `gemini` always calls the model, and the
default `auto` calls Gemini when GOOGLE_API_KEY / GEMINI_API_KEY (or Vertex settings) exist and the
policy otherwise. The Gemini client honours GOOGLE_GEMINI_BASE_URL.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import os
import random
import threading
import time
import typing
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

from ..schema.model import (
    AgentDetails,
    AppDetails,
    Content,
    EvalCase,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
    ToolTiming,
)
from ..schema.load import read_content
from .base import Agent, AgentError, AgentSession, CaseContext
from .mocks import ToolMocks

DEFAULT_MODEL = "gemini-2.5-flash"
MODE_ENV = "TUI_EVAL_AGENT_MODE"
# A model (or policy) that keeps asking for tools forever must not hang the turn.
MAX_STEPS = 12


# ---- what a policy sees and returns -----------------------------------------------------------


@dataclass(slots=True)
class ToolContext:
    """Per-session state a tool may ask for by declaring a `tool_context` parameter (as in ADK)."""

    state: dict[str, Any]
    # Seeded from the case, so "random" tools (dice) give the same answers on every run.
    rng: random.Random
    agent_name: str = ""


@dataclass(slots=True)
class ToolResult:
    """A tool call made earlier in this turn and what the tool answered."""

    name: str
    args: dict[str, Any]
    response: dict[str, Any]


@dataclass(slots=True)
class PolicyTurn:
    """What the offline policy is shown at each step of a turn."""

    user_text: str
    # Texts of the earlier user messages and final answers in this session: ("user"|"agent", text).
    history: list[tuple[str, str]]
    # Tool calls already made in this turn, in order, with their responses.
    results: list[ToolResult]
    state: dict[str, Any]
    index: int

    def last(self, name: str) -> ToolResult | None:
        """The latest result of the named tool in this turn."""
        for r in reversed(self.results):
            if r.name == name:
                return r
        return None


@dataclass(slots=True)
class Step:
    """One model step: tool calls to make (with an optional text said alongside), or the final answer."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str | None = None


PolicyResult = Union[Step, str, list[tuple[str, dict[str, Any]]]]
Policy = Callable[[PolicyTurn], PolicyResult]


# ---- tool declarations from Python functions ----------------------------------------------------

_TYPES: dict[Any, str] = {str: "STRING", int: "INTEGER", float: "NUMBER", bool: "BOOLEAN", list: "ARRAY",
                          dict: "OBJECT"}


def _schema(annotation: Any) -> dict[str, Any]:
    """A genai Schema dict for a parameter annotation (unknown types become STRING, as a model sees them)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        rest = [a for a in args if a is not type(None)]
        out: dict[str, Any] = _schema(rest[0]) if rest else {"type": "STRING"}
        if len(rest) < len(args):
            out["nullable"] = True
        return out
    if origin in (list, tuple, set):
        return {"type": "ARRAY", "items": _schema(args[0]) if args else {"type": "STRING"}}
    if origin is dict:
        return {"type": "OBJECT"}
    if origin is typing.Literal:
        return {"type": "STRING", "enum": [str(a) for a in args]}
    return {"type": _TYPES.get(annotation, "STRING")}


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's description and its `Args:` section as name -> description (Google style)."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    current = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and " " not in stripped:  # the next section (Returns:)
                in_args = False
                continue
            name, sep, rest = stripped.partition(":")
            head = name.split("(")[0].strip()
            if sep and head.isidentifier() and line.startswith((" ", "\t")) and not line.startswith(" " * 8):
                current = head
                params[current] = rest.strip()
            elif current and stripped:
                params[current] += " " + stripped
            continue
        desc.append(line)
    return "\n".join(desc).strip(), params


def declaration_for(fn: Callable[..., Any]) -> dict[str, Any]:
    """A FunctionDeclaration dict (genai's snake_case shape) from a function's signature and docstring.
    A `tool_context` parameter is the framework's, not the model's, and is left out."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    description, param_docs = _doc_parts(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if name == "tool_context" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, param.annotation)
        schema = _schema(annotation) if annotation is not inspect.Parameter.empty else {"type": "STRING"}
        if name in param_docs:
            schema["description"] = param_docs[name]
        properties[name] = schema
        if param.default is inspect.Parameter.empty:
            required.append(name)
    decl: dict[str, Any] = {"name": fn.__name__, "description": description}
    if properties:
        decl["parameters"] = {"type": "OBJECT", "properties": properties, "required": required}
    return decl


# ---- running tools ------------------------------------------------------------------------------


async def run_blocking(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run blocking tool code off the event loop so the per-turn timeout can fire.

    Unlike asyncio.to_thread, a daemon thread is used: a tool that hangs for ever is abandoned when the
    turn times out, and neither the run nor interpreter exit waits for it (the default executor would).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            result = ctx.run(fn, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting coroutine
            ok, value = False, exc
        else:
            ok, value = True, result
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop closed while the tool ran: nobody is waiting any more
            pass

    threading.Thread(target=work, name=f"tool-{getattr(fn, '__name__', 'fn')}", daemon=True).start()
    return await future


def _as_response(value: Any) -> dict[str, Any]:
    """Tool results travel as a JSON object; anything else is wrapped as ADK does ({"result": value})."""
    if isinstance(value, dict):
        return value
    return {"result": value}


def stable_seed(*parts: Any) -> int:
    """A seed that is the same in every process (unlike hash(), which is salted per process)."""
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode())


def credentials_available() -> bool:
    """Whether model credentials exist, by the judge service's own reading of the environment."""
    from ..judge import JudgeOptions, create_judge_service

    return create_judge_service(JudgeOptions(use_cache=False, cache_dir=None)).available


def agent_mode() -> str:
    """"offline" or "gemini", from TUI_EVAL_AGENT_MODE (auto: Gemini when credentials exist)."""
    mode = os.environ.get(MODE_ENV, "auto").strip().lower()
    if mode in ("offline", "policy"):
        return "offline"
    if mode in ("gemini", "online", "model"):
        return "gemini"
    return "gemini" if credentials_available() else "offline"


# ---- the agent ----------------------------------------------------------------------------------


class NativeAgent(Agent):
    """An agent made of an instruction, Python tools and either Gemini or an offline policy."""

    def __init__(
        self,
        name: str,
        instruction: str,
        tools: list[Callable[..., Any]] | None = None,
        *,
        policy: Policy | None = None,
        model: str = DEFAULT_MODEL,
        description: str = "",
        initial_state: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.agent_name = name
        self.instruction = instruction
        self.description = description
        self.model = model
        self.policy = policy
        self.initial_state = dict(initial_state or {})
        self.tools: dict[str, Callable[..., Any]] = {}
        for fn in tools or []:
            if fn.__name__ in self.tools:
                raise AgentError(f"agent {name!r}: two tools are named {fn.__name__!r}")
            self.tools[fn.__name__] = fn
        self.declarations = [declaration_for(fn) for fn in self.tools.values()]
        self.home: Path | None = None
        self._sources: list[Path] = []
        # The Gemini client and the event loop its async transport is bound to.
        self._gemini: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def app_details(self) -> AppDetails:
        tools = [{"function_declarations": self.declarations}] if self.declarations else []
        details = AgentDetails(name=self.agent_name, instructions=self.instruction, tool_declarations=tools)
        return AppDetails(agent_details={self.agent_name: details})

    def source_paths(self) -> list[Path]:
        return list(self._sources)

    def bind_folder(self, folder: Path, sources: list[Path]) -> None:
        """Called by the folder loader: the app is named after its folder and its history lives there."""
        self.name = folder.name
        self.home = folder
        self._sources = sources

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        mode = agent_mode()
        if mode == "offline" and self.policy is None:
            raise AgentError(
                f"agent {self.agent_name!r} has no offline policy and no model credentials "
                "(set GOOGLE_API_KEY or GEMINI_API_KEY)"
            )
        si = case.session_input
        state = dict(self.initial_state)
        if si is not None:
            state.update(si.state)
        seed = stable_seed(self.agent_name, case.eval_id, si.user_id if si else "", (si.session_id if si else None) or "")
        tool_ctx = ToolContext(state=state, rng=random.Random(seed), agent_name=self.agent_name)
        return NativeSession(self, tool_ctx, mode, mocks=ToolMocks.for_case(case, ctx.mock_tools))

    async def aclose(self) -> None:
        """Close the Gemini client, on the loop it was made on (the run that opened the agent closes it
        there). A failure to close is the caller's to see: it is raised, not hidden."""
        gemini, self._gemini = self._gemini, None
        if gemini is None:
            return
        loop, client = gemini
        if loop is not asyncio.get_running_loop():
            # Its transport belongs to another loop (one that has ended): closing it from here cannot work.
            logging.getLogger(__name__).debug("agent %s: its Gemini client's loop is not this one; not closed here",
                                              self.agent_name)
            return
        await client.aio.aclose()

    def _client(self) -> Any:
        """The Gemini client of the running event loop (its async transport is bound to the loop)."""
        loop = asyncio.get_running_loop()
        if self._gemini is not None and self._gemini[0] is loop:
            return self._gemini[1]
        from google import genai
        from google.genai import types

        base_url = os.environ.get("GOOGLE_GEMINI_BASE_URL")
        http = types.HttpOptions(base_url=base_url) if base_url else None
        client = genai.Client(http_options=http)
        self._gemini = (loop, client)
        return client


class NativeSession(AgentSession):
    """One conversation with a NativeAgent; the history of both modes lives here."""

    def __init__(self, agent: NativeAgent, tool_ctx: ToolContext, mode: str, mocks: ToolMocks | None = None) -> None:
        self.agent = agent
        # --mock-tools: the case's recorded tool answers, given instead of running the tools.
        self.mocks = mocks
        self.tool_ctx = tool_ctx
        self.mode = mode
        self.session_id = f"native-{uuid.uuid4().hex[:12]}"
        self._texts: list[tuple[str, str]] = []
        self._contents: list[Any] = []  # genai Contents, Gemini mode only

    async def final_state(self) -> dict[str, Any] | None:
        return dict(self.tool_ctx.state)

    async def turn(self, user_content: Content, index: int) -> Invocation:
        t0 = time.perf_counter()
        created = time.time()
        record = _TurnRecord(self.agent.agent_name)
        if self.mocks is not None:
            self.mocks.turn_index = index
        if self.mode == "gemini":
            final = await self._gemini_turn(user_content, index, record)
        else:
            final = await self._policy_turn(user_content, index, record)
        self._texts.append(("user", user_content.text))
        self._texts.append(("agent", final))
        return Invocation(
            user_content=user_content,
            invocation_id=f"e-{index + 1}",
            final_response=Content(parts=[Part(text=final)], role="model"),
            # Gemini mode records the model's events as ADK does (each with its usage metadata and model
            # version: what the efficiency metrics count); the offline policy calls no model.
            intermediate_data=(InvocationEvents(invocation_events=record.events) if self.mode == "gemini"
                               else IntermediateData(tool_uses=record.calls, tool_responses=record.responses,
                                                     intermediate_responses=record.texts)),
            creation_timestamp=created,
            duration=round(time.perf_counter() - t0, 6),
            model_duration=round(record.model_seconds, 6),
            tool_duration=round(sum(t.seconds for t in record.timings), 6),
            app_details=self.agent.app_details(),
            tool_timings=record.timings,
        )

    async def _call_tool(self, name: str, args: dict[str, Any], call_id: str, record: _TurnRecord) -> dict[str, Any]:
        """Execute one tool call and record it. Tool errors go back to the model, as a real agent's would."""
        record.calls.append(FunctionCall(name=name, args=args, id=call_id))
        fn = self.agent.tools.get(name)
        t0 = time.perf_counter()
        # --mock-tools: the recorded answer instead of the tool (strict raises for an unrecorded call).
        mocked = self.mocks.answer(name, args) if self.mocks is not None else None
        if mocked is not None:
            response: dict[str, Any] = mocked
        elif fn is None:
            response = {"error": f"unknown tool {name!r}"}
        else:
            kwargs = dict(args)
            if "tool_context" in inspect.signature(fn).parameters:
                kwargs["tool_context"] = self.tool_ctx
            try:
                if inspect.iscoroutinefunction(fn):
                    value = await fn(**kwargs)
                else:
                    value = await run_blocking(fn, **kwargs)
                response = _as_response(value)
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except MemoryError:
                # Not the model's to handle: the process ran out of memory (--agent-memory-limit).
                raise AgentError(f"MemoryError in tool {name}") from None
            except Exception as exc:
                response = {"error": f"{type(exc).__name__}: {exc}"}
        record.timings.append(ToolTiming(name=name, seconds=round(time.perf_counter() - t0, 6), call_id=call_id,
                                         mocked=mocked is not None))
        record.responses.append(FunctionResponse(name=name, response=response, id=call_id))
        return response

    async def _policy_turn(self, user_content: Content, index: int, record: _TurnRecord) -> str:
        policy = self.agent.policy
        assert policy is not None
        results: list[ToolResult] = []
        for step_no in range(MAX_STEPS):
            view = PolicyTurn(user_content.text, list(self._texts), list(results), self.tool_ctx.state, index)
            t0 = time.perf_counter()
            try:
                # In a thread like the tools: a policy that hangs must not block the per-turn timeout.
                answer = await run_blocking(policy, view)
            except Exception as exc:
                raise AgentError(f"agent {self.agent.agent_name!r} policy failed: {type(exc).__name__}: {exc}") from exc
            record.model_seconds += time.perf_counter() - t0
            if isinstance(answer, str):
                return answer
            step = answer if isinstance(answer, Step) else Step(calls=list(answer))
            if not step.calls:
                return step.text or ""
            if step.text:
                record.texts.append((self.agent.agent_name, [Part(text=step.text)]))
            for k, (name, args) in enumerate(step.calls):
                call_id = f"call-{index + 1}-{step_no + 1}-{k + 1}"
                response = await self._call_tool(name, dict(args), call_id, record)
                results.append(ToolResult(name, dict(args), response))
        raise AgentError(f"agent {self.agent.agent_name!r} made more than {MAX_STEPS} steps in one turn")

    async def _gemini_turn(self, user_content: Content, index: int, record: _TurnRecord) -> str:
        from google.genai import types

        client = self.agent._client()
        config = types.GenerateContentConfig(
            system_instruction=self.agent.instruction or None,
            tools=[types.Tool(function_declarations=self.agent.declarations)] if self.agent.declarations else None,
            # We run the tools ourselves, to time and record each call.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        self._contents.append(types.Content(role="user", parts=[types.Part(text=user_content.text)]))
        for step_no in range(MAX_STEPS):
            t0 = time.perf_counter()
            try:
                response = await client.aio.models.generate_content(
                    model=self.agent.model, contents=self._contents, config=config
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise AgentError(f"model call failed: {type(exc).__name__}: {exc}") from exc
            record.model_seconds += time.perf_counter() - t0
            candidate = (response.candidates or [None])[0]
            content = candidate.content if candidate is not None else None
            parts = list(content.parts or []) if content is not None else []
            if content is None or not parts:
                reason = getattr(candidate, "finish_reason", None) if candidate is not None else None
                raise AgentError(f"the model returned no content (finish reason: {reason})")
            # The model's own content goes back verbatim: it may carry thought signatures.
            self._contents.append(content)
            calls = [p.function_call for p in parts if p.function_call is not None]
            text = "".join(p.text for p in parts if p.text and not p.thought)
            # As ADK's EvaluationGenerator: the final answer's text lives on final_response only.
            record.events.append(InvocationEvent(
                author=self.agent.agent_name,
                content=_with_call_ids(read_content(content.model_dump(mode="json", exclude_none=True)),
                                       index, step_no) if calls else None,
                usage_metadata=(response.usage_metadata.model_dump(mode="json", exclude_none=True)
                                if response.usage_metadata is not None else None),
                model_version=response.model_version,
            ))
            if not calls:
                return text
            if text:
                record.texts.append((self.agent.agent_name, [Part(text=text)]))
            reply_parts = []
            for k, call in enumerate(calls):
                call_id = call.id or f"call-{index + 1}-{step_no + 1}-{k + 1}"
                args = dict(call.args or {})
                result = await self._call_tool(call.name or "", args, call_id, record)
                reply_parts.append(
                    types.Part(function_response=types.FunctionResponse(id=call.id, name=call.name, response=result))
                )
            self._contents.append(types.Content(role="user", parts=reply_parts))
            record.events.append(InvocationEvent(author=self.agent.agent_name, content=Content(
                role="user", parts=[Part(function_response=r) for r in record.responses[-len(calls):]])))
        raise AgentError(f"the model asked for tools more than {MAX_STEPS} times in one turn")


def _with_call_ids(content: Content, index: int, step_no: int) -> Content:
    """The model's content with the call ids this turn's tool responses use (the model may send none)."""
    k = 0
    for part in content.parts or []:
        if part.function_call is not None:
            if part.function_call.id is None:
                part.function_call.id = f"call-{index + 1}-{step_no + 1}-{k + 1}"
            k += 1
    return content


@dataclass(slots=True)
class _TurnRecord:
    author: str
    calls: list[FunctionCall] = field(default_factory=list)
    responses: list[FunctionResponse] = field(default_factory=list)
    texts: list[tuple[str, list[Part]]] = field(default_factory=list)
    timings: list[ToolTiming] = field(default_factory=list)
    model_seconds: float = 0.0
    # Gemini mode: the turn's events as ADK records them (model calls with their usage metadata).
    events: list[InvocationEvent] = field(default_factory=list)
