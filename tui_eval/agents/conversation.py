"""One case's conversation with an agent: open a session, play its turns (or its simulated user), close.

The same function runs wherever the agent runs: in a worker process of the local pool, in a Ray task, or
in the engine's own process for tui-eval's own agents (replay). What it needs travels in a `CaseJob`, and
what it produced comes back as an `Inference`: every turn as it finishes, then the outcome.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from .base import Agent, AgentCrash, AgentError, AgentSession, CaseContext

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient
    from ..judge.options import JudgeOptions
    from ..schema.config import EvalConfig
    from ..schema.model import EvalCase, EvalSet, Invocation

T = TypeVar("T")
#: Seconds closing a session may take before it is left behind.
CLOSE_TIMEOUT = 5.0


@dataclass(slots=True)
class CaseJob:
    """Everything an agent needs to answer one case (it crosses to an agent process as a
    `protocol.CaseSpec`: `executors/wire.py`)."""

    eval_file: str
    eval_id: str
    case: EvalCase
    #: Seconds one turn may take before the case fails ("turn N timed out after S s").
    turn_timeout: float
    #: For scenario cases: the config whose user simulator settings and stop signal apply.
    config: EvalConfig | None = None
    #: How an agent process builds its judge service for the user simulator (scenario cases only).
    judge: JudgeOptions | None = None
    #: The eval set, for agents in this process that read more of it (replay); never sent to workers.
    eval_set: EvalSet | None = None
    #: --mock-tools: None, "strict" or "fallback".
    mock_tools: str | None = None

    def context(self) -> CaseContext:
        return CaseContext(self.eval_set, Path(self.eval_file), mock_tools=self.mock_tools)


@dataclass(slots=True)
class Inference:
    """What the agent did with a case: its turns, and why it stopped early if it did."""

    actual: list[Invocation] = field(default_factory=list)
    #: The reason on the first line, details (a traceback) below it; None when every turn answered.
    error: str | None = None
    session_id: str = ""
    #: The user simulator failed (not the agent): the case is not evaluated rather than failed.
    simulator_failed: bool = False
    #: Seconds the conversation took where the agent ran (no time spent waiting for a worker).
    seconds: float = 0.0
    #: The session's state after the last turn, as JSON data (`json_state`); None when the agent keeps none
    #: or the session could not be read.
    final_session_state: dict[str, Any] | None = None
    #: The version of the agent code that answered (`agents.version.loaded_version` in the process that
    #: loaded it); "" when the executor does not say (the engine then uses the version it loaded).
    agent_version: str = ""
    #: The files outside the agent's folder that `agent_version` covers (absolute paths).
    agent_outside: tuple[str, ...] = ()
    #: Times the case ran again because the agent process it ran in died (its tools ran again too).
    reruns_after_crash: int = 0


def json_state(state: dict[str, Any]) -> dict[str, Any]:
    """A session state as plain JSON data (what crosses from a worker and goes in the record): models as
    their JSON dump, anything else JSON cannot hold as its `str`, keys as strings."""
    import orjson

    def default(value: Any) -> Any:
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json", exclude_none=True)
        if isinstance(value, (set, frozenset, tuple)):
            return list(value)
        return str(value)

    loaded = orjson.loads(orjson.dumps(state, default=default, option=orjson.OPT_NON_STR_KEYS))
    return loaded if isinstance(loaded, dict) else {}


def error_text(exc: BaseException) -> str:
    """An exception as one line: `Type: message` (an agent's own AgentError as its message)."""
    if isinstance(exc, AgentCrash) and exc.details:
        return f"{exc}\n{exc.details.rstrip()}"
    if isinstance(exc, AgentError):
        return str(exc)
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    if isinstance(exc, SystemExit):
        return f"the agent called sys.exit({exc.code!r}) (SystemExit)"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def crash_text(exc: BaseException) -> str:
    """What agent code raised, as a case's error: the reason on the first line (summaries show it), the
    traceback below it (the turn view shows it)."""
    head = error_text(exc)
    if isinstance(exc, AgentError) and not isinstance(exc, AgentCrash):
        cause = exc.__cause__
        if cause is None:
            return head
        exc = cause
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return f"{head}\n{details}" if details else head


async def within(timeout: float | None, awaitable: Awaitable[T]) -> T:
    """Await in this task, failing with TimeoutError after `timeout` seconds (None: no timer).

    asyncio.timeout, unlike wait_for, runs the awaitable in the calling task: no Task per turn."""
    if timeout is None:
        return await awaitable
    async with asyncio.timeout(timeout):
        return await awaitable


async def run_conversation(
    agent: Agent,
    job: CaseJob,
    *,
    judge: JudgeClient | None = None,
    on_turn: Callable[[int, Invocation], None] | None = None,
    on_turn_start: Callable[[int], None] | None = None,
    own: bool = False,
) -> Inference:
    """Play one case against the agent. Never raises for the agent's faults (they come back as the
    Inference's error); only a cancel of the run propagates. `own=True` is for tui-eval's own agents
    (replay), which run no user code and never wait: no turn timer (two loop timers per turn were a
    noticeable share of a replay run's CPU) and no check of what they return."""
    from .simulator import SimulatorError, simulate_conversation

    t0 = time.perf_counter()
    out = Inference()
    case = job.case
    timeout = job.turn_timeout
    timer = None if own else timeout

    def turn_done(i: int, inv: Invocation) -> None:
        out.actual.append(inv)
        if on_turn is not None:
            on_turn(i, inv)

    try:
        session = await within(timer, agent.new_session(case, job.context()))
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        out.error = f"agent could not start a session: timed out after {timeout:g} s"
        out.seconds = time.perf_counter() - t0
        return out
    except BaseException as exc:  # noqa: BLE001 - SystemExit & co. from agent code fail the case only
        if isinstance(exc, KeyboardInterrupt | GeneratorExit):
            raise
        out.error = f"agent could not start a session: {crash_text(exc)}"
        out.seconds = time.perf_counter() - t0
        return out
    out.session_id = str(getattr(session, "session_id", "") or "")
    try:
        if case.is_scenario:
            if job.config is None:
                raise AgentError(f"case {case.eval_id!r} is a scenario but no config came with it")
            await simulate_conversation(case, session, job.config, judge, on_turn=turn_done,
                                        on_turn_start=on_turn_start, turn_timeout=timeout)
        else:
            for i, expected in enumerate(case.conversation or []):
                if on_turn_start is not None:
                    on_turn_start(i)
                try:
                    inv = await within(timer, session.turn(expected.user_content, i))
                except TimeoutError:
                    raise AgentError(f"turn {i + 1} timed out after {timeout:g} s") from None
                turn_done(i, inv if own else checked_invocation(inv))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # our cancel (the run's, or the worker's on the engine's word)
        out.error = "the agent raised asyncio.CancelledError (not a cancel of the run)"
    except SimulatorError as exc:
        out.error = str(exc)
        out.simulator_failed = True
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: the case fails, not the run
        if isinstance(exc, GeneratorExit):
            raise
        out.error = crash_text(exc)
    finally:
        if not own:
            out.final_session_state = await _final_state(session, case.eval_id)
        try:
            await within(None if own else CLOSE_TIMEOUT, session.close())
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a session that cannot close must not sink the case
            import logging

            logging.getLogger(__name__).warning("closing the session of %s failed: %s", case.eval_id,
                                                error_text(exc).split("\n", 1)[0])
    out.seconds = time.perf_counter() - t0
    return out


async def _final_state(session: AgentSession, eval_id: str) -> dict[str, Any] | None:
    """The session's final state as JSON data; None (and a warning) when agent code fails to give it."""
    import logging

    try:
        state = await within(CLOSE_TIMEOUT, session.final_state())
        return json_state(state) if state is not None else None
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - agent code: the case keeps its turns, the state is unknown
        logging.getLogger(__name__).warning("reading the session state of %s failed: %s", eval_id,
                                            error_text(exc).split("\n", 1)[0])
        return None


def checked_invocation(value: object) -> Invocation:
    """`value` if it is an Invocation that can be saved, else AgentError saying what is wrong: one
    agent turn with a set in its tool args (or a str for a Content) must fail its own case, not the
    saving of every case of the run."""
    import orjson

    from ..schema.model import Invocation

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
