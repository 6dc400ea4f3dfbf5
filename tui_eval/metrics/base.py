"""What a metric is: a named function from a case's invocations to a MetricResult, and the registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Union

from ..schema.config import Criterion, EvalConfig
from ..schema.criteria import CATALOG, MetricKind
from ..schema.model import EvalCase, Invocation
from ..schema.results import MetricResult

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeClient


def judge_unavailable(judge: JudgeClient | None, model: str) -> str | None:
    """Why `model` (a judge_model value: Gemini, or `openai:...`) cannot judge here, or None when it can.
    Each provider has its own credentials, so this is asked per model, not of the service as a whole."""
    if judge is None:
        return "no judge credentials"
    return judge.unavailable_for(model)


@dataclass(slots=True)
class MetricInput:
    """Everything a metric may read to score one case."""

    criterion: Criterion
    case: EvalCase
    actual: list[Invocation]
    # The reference turns; None for scenario cases (they have no reference).
    expected: list[Invocation] | None
    config: EvalConfig
    judge: JudgeClient | None = None
    # Call with an invocation index as soon as that invocation is scored (drives progress bars).
    progress: Callable[[int], None] = field(default=lambda _i: None)
    # The agent's session state after the last turn (JSON data); None when it keeps none or it is unknown
    # (a re-score of turns stored without it).
    final_session_state: dict[str, Any] | None = None


MetricFn = Callable[[MetricInput], Union[MetricResult, Awaitable[MetricResult]]]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A metric's evaluate function with what it needs before it can run; faces read these flags rather
    than listing metric names. A built-in metric's flags are its row of `schema.criteria.CATALOG`
    (`builtin`); a declared custom metric's are set by `metrics.custom`."""

    name: str
    evaluate: MetricFn
    description: str = ""
    kind: MetricKind = MetricKind.DETERMINISTIC
    # Asks an LLM: NOT_EVALUATED with the judge's reason when no judge is available.
    needs_judge: bool = False
    # Compares with expected turns: NOT_EVALUATED on scenario cases and when turn counts differ.
    needs_reference: bool = True
    # Only meaningful on conversation_scenario cases (the user-simulator metric).
    scenario_only: bool = False


_REGISTRY: dict[str, MetricSpec] = {}


def builtin(name: str, evaluate: MetricFn, description: str) -> MetricSpec:
    """Register a built-in metric's evaluate function; its kind and needs come from its catalog row.
    A run imports only the modules of the metrics its config names (`CATALOG[name].module`), so a
    deterministic-only run never pays for the judge stack (pydantic models, google-genai)."""
    info = CATALOG[name]
    return register(MetricSpec(name, evaluate, description, kind=info.kind, needs_judge=info.needs_judge,
                               needs_reference=info.needs_reference, scenario_only=info.scenario_only))


def register(spec: MetricSpec) -> MetricSpec:
    _REGISTRY[spec.name] = spec
    return spec


def get_metric(name: str) -> MetricSpec | None:
    spec = _REGISTRY.get(name)
    info = CATALOG.get(name)
    if spec is None and info is not None:
        _import(info.module)
        spec = _REGISTRY.get(name)
    return spec


def registered_metrics() -> dict[str, MetricSpec]:
    for module in dict.fromkeys(info.module for info in CATALOG.values()):
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
