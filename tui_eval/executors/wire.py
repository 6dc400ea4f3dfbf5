"""A case and its turns as they cross to and from an agent process: `CaseJob` <-> `CaseSpec`, a turn as
JSON, an `Inference`'s outcome. Both sides of every executor use these and nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ..agents.base import AgentError
from ..agents.conversation import CaseJob, Inference
from ..protocol import MAX_FRAME, CaseOutcome, CaseSpec, ProtocolError, TurnFinished, encode

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.model import Invocation


class CaseNotSent(Exception):
    """A case that cannot cross to an agent process (too deep or too large for the wire): it fails alone."""


def spec_of(job: CaseJob) -> CaseSpec:
    """What an agent process needs of a job. Raises CaseNotSent with the reason."""
    try:
        case = orjson.dumps(job.case.to_dict(), option=orjson.OPT_NON_STR_KEYS)
        config = None if job.config is None else orjson.dumps(job.config.to_dict(), option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise CaseNotSent(f"the case cannot be sent to the agent process: {exc}") from None
    if len(case) + len(config or b"") > MAX_FRAME:
        raise CaseNotSent(f"the case is {len(case) / 1e6:.1f} MB as JSON, over the {MAX_FRAME / 1e6:.0f} MB "
                          "bound of one message to the agent process")
    scenario = job.case.is_scenario
    return CaseSpec(job.eval_file, job.eval_id, case, job.turn_timeout, scenario,
                    0 if scenario else len(job.case.conversation or []), config, job.judge, job.mock_tools)


def job_of(spec: CaseSpec) -> CaseJob:
    """The job an agent process runs for a spec (the engine sent it: its JSON is ours)."""
    from ..schema.config import read_eval_config
    from ..schema.load import read_eval_case

    case = read_eval_case(orjson.loads(spec.case))
    config = None if spec.config is None else read_eval_config(orjson.loads(spec.config))
    return CaseJob(spec.eval_file, spec.eval_id, case, spec.turn_timeout, config=config, judge=spec.judge,
                   mock_tools=spec.mock_tools)


def turn_frame(job: int, index: int, inv: Invocation) -> bytes:
    """A finished turn as a frame. Raises AgentError (the case fails, with why) when the turn holds data
    that is not JSON (a tool returned an object of the agent's own class) or is over the bound."""
    try:
        body = orjson.dumps(inv.to_wire(), option=orjson.OPT_NON_STR_KEYS)
        return encode(TurnFinished(job, index, body))
    except (TypeError, orjson.JSONEncodeError, ProtocolError) as exc:
        raise AgentError(f"turn {index + 1}'s result cannot be sent back: {exc}") from None


def read_turn(report: TurnFinished) -> Invocation:
    """The turn an agent process sent, validated as the schema's Invocation. Raises ProtocolError."""
    from ..schema.errors import SchemaError
    from ..schema.load import read_invocation

    try:
        return read_invocation(orjson.loads(report.invocation), ours=True)
    except (orjson.JSONDecodeError, SchemaError, RecursionError) as exc:
        raise ProtocolError(f"turn {report.index + 1} is not a valid turn: {str(exc)[:300]}") from None


def outcome_of(inference: Inference) -> CaseOutcome:
    """How a case ended, for the engine (its turns went back one by one). A session state that is not
    JSON is left out with a note in the log, never the case's result."""
    state: bytes | None = None
    if inference.final_session_state is not None:
        try:
            state = orjson.dumps(inference.final_session_state, option=orjson.OPT_NON_STR_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            state = orjson.dumps({"(not JSON)": repr(inference.final_session_state)[:2000]})
    return CaseOutcome(inference.error, inference.session_id, inference.simulator_failed, inference.seconds,
                       state, inference.agent_version, inference.agent_outside)


def inference_of(outcome: CaseOutcome, actual: list[Invocation]) -> Inference:
    """The engine's Inference of a case from its outcome and the turns it received."""
    state: dict[str, Any] | None = None
    if outcome.final_session_state is not None:
        try:
            loaded = orjson.loads(outcome.final_session_state)
        except orjson.JSONDecodeError:
            loaded = None
        state = loaded if isinstance(loaded, dict) else None
    return Inference(actual=actual, error=outcome.error, session_id=outcome.session_id,
                     simulator_failed=outcome.simulator_failed, seconds=outcome.seconds,
                     final_session_state=state, agent_version=outcome.agent_version,
                     agent_outside=outcome.agent_outside)
