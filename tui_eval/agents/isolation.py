"""Run agent code on its own event loop in a daemon thread, so nothing it does can take the run down.

The engine's loop only awaits a Future per call (`new_session`, `turn`, `close`, `aclose`), under the
engine's own timeout. What agent code may do, and what the engine sees instead:
- block its loop (ADK runs sync tools on the event loop; `time.sleep(60)` in a turn): the engine's timeout
  still fires, the case fails "timed out", and later sessions get a fresh loop (the stuck one is retired);
- raise `SystemExit`, `KeyboardInterrupt` or any BaseException: the case fails with the reason and the
  traceback (`AgentCrash`); the run continues;
- raise `asyncio.CancelledError` on its own: a failure of the case, never taken for the user's cancel;
- return something that is not an Invocation (None, a dict) or not a session: the case fails saying so.

A worker thread, not a worker process. Measured with bench/isolation_overhead.py on the hello_world demo
agent (offline policy, real tools; 3,000 turns, a 2-core machine under load): direct 1.66 ms/turn, agent
loop thread +0.98 to +1.09 ms, worker process +0.96 to +1.55 ms (fork start-up 34-56 ms). Per turn the
two cost about the same (two thread wake-ups either way); the process also pickles or JSON-encodes every
case and turn both ways (growing with the turn's size), cannot run agents handed over as objects (tests,
the dashboard's loaded agents, ADK objects holding clients), and must re-import the agent per worker.
What only a process could stop (os._exit, a segfault, C code holding the GIL) stays out of scope; leaked
non-daemon threads are handled by the CLI's exit.
One loop per agent, not per session: google-genai and ADK clients bind connections to the loop that made
them, and agents share one model client across sessions, as on ADK's single loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import traceback
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Coroutine, TypeVar

import orjson

from ..schema.model import AppDetails, Content, EvalCase, Invocation
from .base import Agent, AgentCrash, AgentError, AgentSession, CaseContext

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How long a loop may take to answer a ping after one of its calls was cancelled before it counts as
# stuck (a sync tool blocking it) and new sessions move to a fresh loop.
PING_TIMEOUT = 0.5
# Closing a session or the agent never holds up the run longer than this.
CLOSE_TIMEOUT = 5.0


@dataclass(slots=True)
class _Failed:
    """What agent code raised, described on the worker loop (the exception object stays there)."""

    message: str
    details: str


class AgentLoop:
    """A daemon thread running an event loop that only agent code uses."""

    _count = 0

    def __init__(self, label: str) -> None:
        AgentLoop._count += 1
        self.name = f"agent-loop-{AgentLoop._count}-{label}"
        self.loop = asyncio.new_event_loop()
        self.suspect = False  # a call was cancelled: the loop may be blocked by agent code
        self.stuck = False
        self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.set_task_factory(_contained_task)
        while True:
            try:
                self.loop.run_forever()
                break
            except BaseException:  # noqa: BLE001 - a callback agent code scheduled raised SystemExit & co.
                # Handle._run re-raises SystemExit/KeyboardInterrupt out of run_forever; the loop is
                # still sound, and every call of ours is guarded, so serve on.
                logger.warning("agent code on %s raised out of its event loop", self.name, exc_info=True)
        try:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        except BaseException:  # noqa: BLE001 - best effort on the way out
            logger.debug("shutting down async generators on %s failed", self.name, exc_info=True)
        self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop was closed
            coro.close()
            raise AgentError("the agent's event loop has stopped") from None

    async def responsive(self, within: float = PING_TIMEOUT) -> bool:
        """Whether the loop runs a callback within `within` seconds (False: agent code blocks it)."""
        here = asyncio.get_running_loop()
        pong: asyncio.Future[None] = here.create_future()

        def answer() -> None:
            if not pong.done():
                pong.set_result(None)

        def relay() -> None:
            try:
                here.call_soon_threadsafe(answer)
            except RuntimeError:  # the asking loop closed while this one was blocked: nobody waits
                pass

        try:
            self.loop.call_soon_threadsafe(relay)
        except RuntimeError:
            return False
        try:
            await asyncio.wait_for(pong, within)
        except (TimeoutError, asyncio.TimeoutError):
            return False
        except RuntimeError:  # the engine's loop is closing
            return False
        return True

    def stop(self) -> None:
        """Stop the loop (a loop blocked by agent code stops when the code returns, or never: the
        thread is a daemon, so it never holds up the process)."""
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:
            pass


class ContainedExit(Exception):
    """A task of agent code raised SystemExit or KeyboardInterrupt; it ends with this instead."""


async def _contain(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return await coro
    except (SystemExit, KeyboardInterrupt) as exc:
        raise ContainedExit(f"{type(exc).__name__}: {exc}") from exc


def _contained_task(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
    """Every task on an agent loop: CPython 3.11's C task step re-raises SystemExit out of the loop,
    and doing so corrupts interpreter state (a later `compile` in any thread fails with "AST constructor
    recursion depth mismatch"); as an ordinary exception it just ends the task."""
    return asyncio.Task(_contain(coro), loop=loop, **kwargs)


def _describe(exc: BaseException) -> _Failed:
    kind = type(exc).__name__
    text = str(exc)
    if isinstance(exc, SystemExit):
        message = f"the agent called sys.exit({exc.code!r}) (SystemExit)"
    elif isinstance(exc, asyncio.CancelledError):
        message = "the agent raised asyncio.CancelledError (not a cancel of the run)"
    else:
        message = f"{kind}: {text}" if text else kind
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _Failed(message, details)


async def _guarded(coro: Coroutine[Any, Any, T]) -> T | _Failed:
    """Runs on the agent loop: whatever agent code raises comes back as a value. Only our own cancel
    (the engine timed out or the user stopped the run) cancels the task."""
    try:
        return await coro
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # our cancel
        return _describe(exc)
    except AgentError as exc:
        # An agent's own error message is meant for the user; keep its cause's traceback if any.
        cause = exc.__cause__
        details = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)) if cause else ""
        return _Failed(str(exc), details)
    except ContainedExit as exc:  # raised in a task the agent awaited
        return _describe(exc.__cause__ or exc)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: the case fails, not the run
        return _describe(exc)


async def call_on(agent_loop: AgentLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the agent loop and await it from the engine's loop. Cancelling the awaiting task
    (a timeout) cancels the agent's task and returns at once, even when agent code blocks its loop."""
    future = agent_loop.submit(_guarded(coro))
    try:
        outcome = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and not me.cancelling():
            # Nobody cancelled us: agent code cancelled its own task. A failure, not a cancel of the run.
            raise AgentCrash("the agent cancelled its own task (not a cancel of the run)") from None
        future.cancel()
        agent_loop.suspect = True
        raise
    if isinstance(outcome, _Failed):
        raise AgentCrash(outcome.message, outcome.details)
    return outcome


def checked_invocation(value: object) -> Invocation:
    """`value` if it is an Invocation that can be saved, else AgentError saying what is wrong: one
    agent turn with a set in its tool args (or a str for a Content) must fail its own case, not the
    saving of every case of the run."""
    if not isinstance(value, Invocation):
        raise AgentError(f"the agent's turn returned {type(value).__name__}, not an Invocation")
    try:
        orjson.dumps(value.to_dict(), option=orjson.OPT_NON_STR_KEYS)
    except Exception as exc:  # noqa: BLE001 - any fault of the agent's data (AttributeError, TypeError...)
        text = str(exc)
        raise AgentError(
            f"the agent's turn returned an Invocation that cannot be saved: {type(exc).__name__}"
            + (f": {text}" if text else "")
        ) from exc
    return value


class IsolatedSession(AgentSession):
    """An agent session whose every call runs on the agent's loop; what comes back is checked."""

    def __init__(self, inner: AgentSession, agent_loop: AgentLoop) -> None:
        self.inner = inner
        self.agent_loop = agent_loop
        self.session_id = str(getattr(inner, "session_id", "") or "")

    async def turn(self, user_content: Content, index: int) -> Invocation:
        value: object = await call_on(self.agent_loop, self.inner.turn(user_content, index))
        return checked_invocation(value)

    async def close(self) -> None:
        loop = self.agent_loop
        if loop.stuck or (loop.suspect and not await loop.responsive()):
            loop.stuck = True
            return  # agent code blocks that loop: closing would wait for it
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await call_on(loop, self.inner.close())
        except TimeoutError:
            logger.warning("closing an agent session took more than %g s; left behind", CLOSE_TIMEOUT)
        except AgentError as exc:
            logger.warning("closing an agent session failed: %s", exc)


class IsolatedAgent(Agent):
    """An agent whose code runs on its own loop thread (see the module docstring). One per agent object:
    `isolated(agent)` returns the same wrapper each time, so the agent's loop-bound clients live on."""

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.name = inner.name
        self.home = inner.home
        self._label = type(inner).__name__
        # The list is shared with the finalizer, which must not hold the agent.
        self._loops: list[AgentLoop] = []
        self._current: AgentLoop | None = None
        weakref.finalize(self, _stop_all, self._loops)

    def app_details(self) -> AppDetails | None:
        return self.inner.app_details()

    def source_paths(self) -> list[Path]:
        return self.inner.source_paths()

    async def _loop(self) -> AgentLoop:
        current = self._current
        if current is not None and current.suspect and not current.stuck:
            if await current.responsive():
                current.suspect = False
            else:
                current.stuck = True
                logger.warning("agent code blocks %s (a sync tool that does not return?); "
                               "new sessions run on a fresh loop", current.name)
        # Re-read after the ping: sessions started meanwhile may have replaced the loop already.
        current = self._current
        if current is None or current.stuck:
            current = AgentLoop(self._label)
            self._loops.append(current)
            self._current = current
        return current

    async def new_session(self, case: EvalCase, ctx: CaseContext) -> AgentSession:
        agent_loop = await self._loop()
        value: object = await call_on(agent_loop, self.inner.new_session(case, ctx))
        if not isinstance(value, AgentSession):
            raise AgentError(f"the agent's new_session returned {type(value).__name__}, not an AgentSession")
        return IsolatedSession(value, agent_loop)

    async def aclose(self) -> None:
        """Close the agent on its loop (its clients belong there), then stop its loops."""
        current = self._current
        try:
            if current is not None and not current.stuck and (not current.suspect or await current.responsive()):
                try:
                    async with asyncio.timeout(CLOSE_TIMEOUT):
                        await call_on(current, self.inner.aclose())
                except TimeoutError:
                    logger.warning("closing agent %s took more than %g s; left behind", self.name, CLOSE_TIMEOUT)
                except AgentError as exc:
                    logger.warning("closing agent %s failed: %s", self.name, exc)
        finally:
            _stop_all(self._loops)
            self._loops.clear()
            self._current = None


def _stop_all(loops: list[AgentLoop]) -> None:
    for agent_loop in loops:
        agent_loop.stop()


_ATTR = "_tui_eval_isolated"


def isolated(agent: Agent) -> Agent:
    """The agent as the engine should call it: our own agents (replay) as they are, any other agent
    wrapped once in an IsolatedAgent kept on the agent object."""
    if isinstance(agent, IsolatedAgent) or not agent.needs_isolation:
        return agent
    wrapper = agent.__dict__.get(_ATTR) if hasattr(agent, "__dict__") else None
    if not isinstance(wrapper, IsolatedAgent):
        wrapper = IsolatedAgent(agent)
        try:
            setattr(agent, _ATTR, wrapper)
        except AttributeError:  # a slotted agent class: one wrapper per caller then
            logger.debug("cannot keep the isolation wrapper on %r", agent)
    return wrapper


async def close_agent(agent: Agent) -> None:
    """Close an agent the way it runs: on its own loop when it was isolated, else where we are."""
    wrapper = agent.__dict__.get(_ATTR) if hasattr(agent, "__dict__") else None
    if isinstance(wrapper, IsolatedAgent):
        await wrapper.aclose()
        return
    await agent.aclose()

