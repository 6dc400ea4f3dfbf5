"""The Vertex-backed metrics, scored by the Vertex AI evaluation service as google-adk 2.13 scores them.

- `response_evaluation_score`: the coherence of each final response (1 to 5), per turn, case = mean.
- `safety_v1` (through `llm/safety.py`, which decides where it runs): the service's `safety_v1` spec on
  each turn's prompt and response (1 safe, 0 unsafe), case = mean.
- `multi_turn_task_success_v1`, `multi_turn_trajectory_quality_v1`, `multi_turn_tool_use_quality_v1`: the
  whole conversation is sent once; the last turn carries the score, the earlier turns are NOT_EVALUATED,
  and the case score is the last turn's.

The requests are what ADK's `_VertexAiEvalFacade` makes the SDK send (`vertexai/_genai/_evals_metric_handlers.py`
PredefinedMetricHandler and `evals.py` `_EvaluationInstance_to_vertex`, google-cloud-aiplatform 2.7), and
a score counts as ADK counts it: a reply with an error, no score or a NaN score is no score.

One difference: ADK's COHERENCE metric is a prompt template the SDK downloads from a Google Cloud Storage
bucket at run time; `response_evaluation_score` here uses the service's built-in coherence metric
(`coherence_input`), the same 1-5 scale, without that download.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from ..schema.details import RubricScore, VertexCaseDetails, VertexDetails, VertexRubricVerdict
from ..schema.model import Content, Invocation, InvocationEvents, content_text
from ..schema.results import EvalStatus, InvocationMetricResult, MetricResult, status_for
from .base import MetricInput, builtin

logger = logging.getLogger(__name__)

RESPONSE_EVALUATION_SCORE = "response_evaluation_score"
SAFETY_V1 = "safety_v1"
MULTI_TURN_TASK_SUCCESS_V1 = "multi_turn_task_success_v1"
MULTI_TURN_TRAJECTORY_QUALITY_V1 = "multi_turn_trajectory_quality_v1"
MULTI_TURN_TOOL_USE_QUALITY_V1 = "multi_turn_tool_use_quality_v1"

# tui-eval metric -> the service's metric spec (ADK: RubricMetric.MULTI_TURN_* pin version v1,
# SafetyEvaluatorV1 pins "v1").
SPEC_NAMES = {
    SAFETY_V1: "safety_v1",
    MULTI_TURN_TASK_SUCCESS_V1: "multi_turn_task_success_v1",
    MULTI_TURN_TRAJECTORY_QUALITY_V1: "multi_turn_trajectory_quality_v1",
    MULTI_TURN_TOOL_USE_QUALITY_V1: "multi_turn_tool_use_quality_v1",
}
COHERENCE = "coherence"
MULTI_TURN_EARLIER = "multi-turn metric: the whole conversation is scored on the last turn"


# -- requests -----------------------------------------------------------------------------------------

def _content(content: Content | None) -> dict[str, Any] | None:
    return content.to_dict() if content is not None else None


def _text_content(text: str) -> dict[str, Any]:
    # The SDK turns ADK's DataFrame strings into Content(parts=[Part(text=...)]) (no role).
    return {"parts": [{"text": text}]}


def _instance_data(content: dict[str, Any]) -> dict[str, Any]:
    return {"contents": {"contents": [content]}}


def _predefined(spec_name: str) -> list[dict[str, Any]]:
    return [{"predefined_metric_spec": {"metric_spec_name": spec_name, "metric_spec_parameters": None}}]


def single_turn_request(spec_name: str, prompt: str, response: str, reference: str | None) -> dict[str, Any]:
    """One turn as ADK's _SingleTurnVertexAiEvalFacade has the SDK send it (prompt, response, reference
    texts; the SDK adds a one-turn agent_eval_data)."""
    p, r = _text_content(prompt), _text_content(response)
    instance: dict[str, Any] = {"prompt": _instance_data(p), "response": _instance_data(r)}
    if reference:
        instance["reference"] = _instance_data(_text_content(reference))
    instance["agent_eval_data"] = {"turns": [{
        "turn_index": 0,
        "turn_id": "turn_0",
        "events": [{"author": "user", "content": p}, {"author": "model", "content": r}],
    }]}
    return {"metrics": _predefined(spec_name), "instance": instance}


def coherence_request(response: str) -> dict[str, Any]:
    """The service's built-in coherence metric on one response."""
    return {"coherence_input": {"metric_spec": {}, "instance": {"prediction": response}}}


def _drop_none(value: Any) -> Any:
    # The SDK dumps genai models with exclude_none.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def agent_data(actual: list[Invocation]) -> dict[str, Any]:
    """ADK's `_MultiTurnVertexiAiEvalFacade._get_agent_data`: every agent's config (first seen wins) and
    one turn per invocation (user, the turn's events with content, then the final response as "agent")."""
    agents: dict[str, Any] = {}
    for inv in actual:
        if inv.app_details is not None and inv.app_details.agent_details:
            for name, details in inv.app_details.agent_details.items():
                if name not in agents:
                    agents[name] = _drop_none({"agent_id": details.name, "instruction": details.instructions,
                                               "tools": details.tool_declarations})
    turns = []
    for index, inv in enumerate(actual):
        events: list[dict[str, Any]] = [{"author": "user", "content": _content(inv.user_content)}]
        if isinstance(inv.intermediate_data, InvocationEvents):
            for event in inv.intermediate_data.invocation_events:
                if event.content is not None:
                    events.append({"author": event.author, "content": _content(event.content)})
        events.append({"author": "agent", "content": _content(inv.final_response)})
        turns.append({"turn_index": index, "events": [_drop_none(e) for e in events],
                      "turn_id": inv.invocation_id})
    return {"agents": agents, "turns": turns}


def multi_turn_request(spec_name: str, actual: list[Invocation]) -> dict[str, Any]:
    """The conversation as ADK's _MultiTurnVertexiAiEvalFacade has the SDK send it: no prompt of its own
    (an empty prompt contents for multi_turn_* specs) and the agent data."""
    return {"metrics": _predefined(spec_name),
            "instance": {"prompt": {"contents": {"contents": []}}, "agent_eval_data": agent_data(actual)}}


# -- replies ------------------------------------------------------------------------------------------

def _get(obj: Any, snake: str, camel: str) -> Any:
    if not isinstance(obj, dict):
        return None
    return obj.get(camel, obj.get(snake))


def _score(value: Any) -> float | None:
    """A usable score, as ADK's `_get_score` reads it: a number that is not NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def _rubric_verdicts(raw: Any) -> list[VertexRubricVerdict]:
    out = []
    for index, verdict in enumerate(raw if isinstance(raw, list) else []):
        rubric = _get(verdict, "evaluated_rubric", "evaluatedRubric")
        description = _get(_get(_get(rubric, "content", "content"), "property", "property"), "description",
                           "description")
        rubric_id = description or _get(rubric, "rubric_id", "rubricId") or f"rubric_{index}"
        reasoning = _get(verdict, "reasoning", "reasoning")
        out.append(VertexRubricVerdict(rubric_id=str(rubric_id), description=description,
                                       verdict=bool(_get(verdict, "verdict", "verdict")),
                                       reasoning=str(reasoning) if reasoning else None))
    return out


def read_reply(spec_name: str, body: dict[str, Any]) -> VertexDetails:
    """The service's answer as the SDK reads it: the first metric result's score, explanation, rubric
    verdicts and error (a result with an error has no score)."""
    if spec_name == COHERENCE:
        result = _get(body, "coherence_result", "coherenceResult")
        if not isinstance(result, dict):
            return VertexDetails(metric_spec=spec_name, error="Metric results missing in API response.")
        explanation = result.get("explanation")
        return VertexDetails(metric_spec=spec_name, score=_score(result.get("score")),
                             explanation=str(explanation) if explanation else None)
    results = _get(body, "metric_results", "metricResults")
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        return VertexDetails(metric_spec=spec_name, error="Metric results missing in API response.")
    result = results[0]
    error = result.get("error")
    error_text = None
    if isinstance(error, dict) and error.get("code"):
        # The SDK's text: "Error in metric result: " + str(GoogleRpcStatus).
        error_text = (f"Error in metric result: code={error.get('code')} details={error.get('details')!r} "
                      f"message={error.get('message')!r}")
    explanation = result.get("explanation")
    return VertexDetails(
        metric_spec=spec_name,
        score=None if error_text else _score(result.get("score")),
        explanation=str(explanation) if explanation else None,
        rubric_verdicts=_rubric_verdicts(_get(result, "rubric_verdicts", "rubricVerdicts")),
        error=error_text,
    )


async def _call(client: Any, spec_name: str, request: dict[str, Any]) -> VertexDetails:
    from ..judge.vertex import VertexError

    try:
        reply = await client.evaluate_instances(request)
    except VertexError as exc:
        logger.info("Vertex AI could not score %s: %s", spec_name, exc.reason)
        return VertexDetails(metric_spec=spec_name, error=exc.reason, attempts=exc.attempts)
    return read_reply(spec_name, reply.body).model_copy(
        update={"attempts": reply.attempts, "latency": round(reply.latency, 4)})


def _turn_result(details: VertexDetails, threshold: float) -> InvocationMetricResult:
    reason = None
    if details.score is None:
        reason = details.error or "Vertex AI returned no score"
    return InvocationMetricResult(score=details.score, status=status_for(details.score, threshold), reason=reason,
                                  details=details)


# -- the metrics --------------------------------------------------------------------------------------

def _client_or_reason() -> tuple[Any, str | None]:
    from ..judge.vertex import NO_SETTINGS, vertex_client

    client = vertex_client()
    return client, (NO_SETTINGS if client is None else None)


def _case_details(client: Any, spec_name: str, per_invocation: list[InvocationMetricResult],
                  rubric_scores: list[RubricScore] | None = None) -> VertexCaseDetails:
    return VertexCaseDetails(metric_spec=spec_name, project=client.settings.project,
                             location=client.settings.location,
                             evaluated_invocations=sum(1 for r in per_invocation if r.score is not None),
                             rubric_scores=rubric_scores or [])


async def _single_turn(inp: MetricInput, spec_name: str) -> MetricResult:
    crit = inp.criterion
    client, reason = _client_or_reason()
    if client is None:
        return MetricResult.not_evaluated(crit.metric_name, crit.threshold, reason or "", crit.to_dict())
    expected = inp.expected

    async def one(i: int) -> InvocationMetricResult:
        actual = inp.actual[i]
        prompt = content_text(actual.user_content)
        response = content_text(actual.final_response)
        if not response:
            # The SDK refuses a case without a response ("Response is required but missing").
            result = InvocationMetricResult.not_evaluated("no final response to rate")
        elif spec_name != COHERENCE and not prompt:
            result = InvocationMetricResult.not_evaluated("no user prompt (Vertex AI requires one)")
        else:
            if spec_name == COHERENCE:
                request = coherence_request(response)
            else:
                ref = expected[i] if expected is not None and i < len(expected) else None
                reference = content_text(ref.final_response) if ref is not None else None
                request = single_turn_request(spec_name, prompt, response, reference)
            result = _turn_result(await _call(client, spec_name, request), crit.threshold)
        inp.progress(i)
        return result

    per_invocation = list(await asyncio.gather(*(one(i) for i in range(len(inp.actual)))))
    details = _case_details(client, spec_name, per_invocation)
    scores = [r.score for r in per_invocation if r.score is not None]
    if not scores:
        # ADK: the overall score is None when no invocation has one.
        reasons = [r.reason for r in per_invocation if r.reason]
        why = reasons[0] if reasons else "no invocation could be evaluated"
        if len(per_invocation) > 1:
            why = f"no invocation was evaluated: {why}"
        return MetricResult(metric_name=crit.metric_name, threshold=crit.threshold, status=EvalStatus.NOT_EVALUATED,
                            criterion=crit.to_dict(), per_invocation=per_invocation, reason=why, details=details)
    total = 0.0
    for s in scores:  # summed in turn order, then divided, as ADK does
        total += s
    score = total / len(scores)
    return MetricResult(metric_name=crit.metric_name, threshold=crit.threshold, score=score,
                        status=status_for(score, crit.threshold), criterion=crit.to_dict(),
                        per_invocation=per_invocation, details=details)


async def _multi_turn(inp: MetricInput, spec_name: str) -> MetricResult:
    crit = inp.criterion
    client, reason = _client_or_reason()
    if client is None:
        return MetricResult.not_evaluated(crit.metric_name, crit.threshold, reason or "", crit.to_dict())
    earlier = [InvocationMetricResult.not_evaluated(MULTI_TURN_EARLIER) for _ in inp.actual[:-1]]
    for i in range(len(earlier)):
        inp.progress(i)
    details = await _call(client, spec_name, multi_turn_request(spec_name, inp.actual))
    last = _turn_result(details, crit.threshold)
    inp.progress(len(inp.actual) - 1)
    per_invocation = [*earlier, last]
    # ADK: the verdicts on the last turn are the overall ones, kept even without a score.
    case_details = _case_details(client, spec_name, per_invocation, details.rubric_scores)
    return MetricResult(metric_name=crit.metric_name, threshold=crit.threshold, score=last.score,
                        status=status_for(last.score, crit.threshold), criterion=crit.to_dict(),
                        per_invocation=per_invocation, reason=last.reason, details=case_details)


async def evaluate_response_evaluation_score(inp: MetricInput) -> MetricResult:
    return await _single_turn(inp, COHERENCE)


async def evaluate_safety(inp: MetricInput) -> MetricResult:
    return await _single_turn(inp, SPEC_NAMES[SAFETY_V1])


async def evaluate_task_success(inp: MetricInput) -> MetricResult:
    return await _multi_turn(inp, SPEC_NAMES[MULTI_TURN_TASK_SUCCESS_V1])


async def evaluate_trajectory_quality(inp: MetricInput) -> MetricResult:
    return await _multi_turn(inp, SPEC_NAMES[MULTI_TURN_TRAJECTORY_QUALITY_V1])


async def evaluate_tool_use_quality(inp: MetricInput) -> MetricResult:
    return await _multi_turn(inp, SPEC_NAMES[MULTI_TURN_TOOL_USE_QUALITY_V1])


RESPONSE_EVALUATION_SCORE_SPEC = builtin(
    RESPONSE_EVALUATION_SCORE, evaluate_response_evaluation_score,
    "Coherence of each final response, 1 to 5, scored by the Vertex AI evaluation service")
MULTI_TURN_TASK_SUCCESS_SPEC = builtin(
    MULTI_TURN_TASK_SUCCESS_V1, evaluate_task_success,
    "Did the agent achieve the user's goal over the conversation? (Vertex AI, 0 to 1)")
MULTI_TURN_TRAJECTORY_QUALITY_SPEC = builtin(
    MULTI_TURN_TRAJECTORY_QUALITY_V1, evaluate_trajectory_quality,
    "Quality of the path the agent took over the conversation (Vertex AI, 0 to 1)")
MULTI_TURN_TOOL_USE_QUALITY_SPEC = builtin(
    MULTI_TURN_TOOL_USE_QUALITY_V1, evaluate_tool_use_quality,
    "Quality of the agent's tool use over the conversation (Vertex AI, 0 to 1)")
