"""What a metric is: a named function from a case's invocations to a MetricResult, and the registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Protocol, Union

from ..schema.config import Criterion, EvalConfig
from ..schema.model import EvalCase, Invocation
from ..schema.results import MetricResult

class Judge(Protocol):
    """The part of the judge service the engine relies on (the rest is the LLM metrics' business)."""

    @property
    def available(self) -> bool: ...

    @property
    def unavailable_reason(self) -> str | None: ...


def judge_unavailable(judge: Any, model: str) -> str | None:
    """Why `model` (a judge_model value: Gemini, or `openai:...`) cannot judge here, or None when it can.
    Each provider has its own credentials, so this is asked per model, not of the service as a whole."""
    if judge is None:
        return "no judge credentials"
    per_model = getattr(judge, "unavailable_for", None)
    if per_model is not None:
        reason: str | None = per_model(model)
        return reason
    if not judge.available:
        return judge.unavailable_reason or "no judge credentials"
    return None


@dataclass(slots=True)
class MetricInput:
    """Everything a metric may read to score one case."""

    criterion: Criterion
    case: EvalCase
    actual: list[Invocation]
    # The reference turns; None for scenario cases (they have no reference).
    expected: list[Invocation] | None
    config: EvalConfig
    judge: Any = None
    # Call with an invocation index as soon as that invocation is scored (drives progress bars).
    progress: Callable[[int], None] = field(default=lambda _i: None)


MetricFn = Callable[[MetricInput], Union[MetricResult, Awaitable[MetricResult]]]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A registered metric and what it needs before it can run; faces read these flags rather than
    listing metric names."""

    name: str
    evaluate: MetricFn
    description: str = ""
    # "deterministic": computed from the turns; "judge": an LLM decides; "informational": ADK's
    # counters (never pass or fail); "vertex": the Vertex AI evaluation service decides.
    kind: Literal["deterministic", "judge", "informational", "vertex"] = "deterministic"
    # Asks an LLM: NOT_EVALUATED with the judge's reason when no judge is available.
    needs_judge: bool = False
    # Compares with expected turns: NOT_EVALUATED on scenario cases and when turn counts differ.
    needs_reference: bool = True
    # Only meaningful on conversation_scenario cases (the user-simulator metric).
    scenario_only: bool = False


_REGISTRY: dict[str, MetricSpec] = {}

# Which module registers which metric: a run imports only the metrics its config names, so a
# deterministic-only run never pays for the judge stack (pydantic models, google-genai).
_MODULES: dict[str, str] = {
    "tool_trajectory_avg_score": "tui_eval.metrics.trajectory",
    "response_match_score": "tui_eval.metrics.response_match",
    "final_response_match_v2": "tui_eval.metrics.llm",
    "rubric_based_final_response_quality_v1": "tui_eval.metrics.llm",
    "rubric_based_tool_use_quality_v1": "tui_eval.metrics.llm",
    "hallucinations_v1": "tui_eval.metrics.llm",
    "safety_v1": "tui_eval.metrics.llm",
    "per_turn_user_simulator_quality_v1": "tui_eval.metrics.user_simulator_quality",
    "tool_call_count_v1": "tui_eval.metrics.efficiency",
    "inference_call_count_v1": "tui_eval.metrics.efficiency",
    "token_usage_v1": "tui_eval.metrics.efficiency",
    "invocation_duration_v1": "tui_eval.metrics.efficiency",
    "ces_tool_invocation": "tui_eval.metrics.ces",
    "ces_parameter_correctness": "tui_eval.metrics.ces",
    "ces_tool_ordered_invocation": "tui_eval.metrics.ces",
    "ces_semantic_similarity": "tui_eval.metrics.ces",
    "ces_hallucination": "tui_eval.metrics.ces",
    "ces_latency": "tui_eval.metrics.ces",
    "response_evaluation_score": "tui_eval.metrics.vertex",
    "multi_turn_task_success_v1": "tui_eval.metrics.vertex",
    "multi_turn_trajectory_quality_v1": "tui_eval.metrics.vertex",
    "multi_turn_tool_use_quality_v1": "tui_eval.metrics.vertex",
    "rubric_based_multi_turn_trajectory_quality_v1": "tui_eval.metrics.llm.multi_turn_trajectory",
}


def metric_names() -> list[str]:
    """Every built-in metric name, without importing any metric module (cheap: for completion and
    did-you-mean). The catalog of names is `_MODULES` until schema/criteria.py provides it."""
    return list(_MODULES)


def spec_for(name: str, config: EvalConfig) -> MetricSpec | None:
    """The metric a config's criterion names: its `custom_metrics` declaration first (as ADK, a declared
    function wins), else the built-in one."""
    custom = config.custom_metrics.get(name)
    if custom is not None:
        from .custom import custom_spec

        return custom_spec(name, custom)
    return get_metric(name)


def register(spec: MetricSpec) -> MetricSpec:
    _REGISTRY[spec.name] = spec
    return spec


def get_metric(name: str) -> MetricSpec | None:
    spec = _REGISTRY.get(name)
    if spec is None and name in _MODULES:
        _import(_MODULES[name])
        spec = _REGISTRY.get(name)
    return spec


def registered_metrics() -> dict[str, MetricSpec]:
    for module in dict.fromkeys(_MODULES.values()):
        _import(module)
    return dict(_REGISTRY)


def _import(module: str) -> None:
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # A metric module not written yet is simply absent from the registry; an import
        # error inside an existing module is a bug and must surface.
        if exc.name != module:
            raise
