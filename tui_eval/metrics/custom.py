"""Custom metrics: a config's `custom_metrics.<name>.code_config.name`, a dotted path to a function.

Two signatures are accepted, told apart by how many positional parameters the function takes:

- ADK's (four): `fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)`
  returning google-adk's `EvaluationResult` (sync or async). It is called as ADK 2.13 calls it: with
  ADK's own models (ours converted with `model_validate(ours.to_dict())`) and an `EvalMetric` whose
  threshold is None and whose criterion is the config's. Needs google-adk installed.
- Native (three): `fn(actual: list[Invocation], expected: list[Invocation] | None, criterion: Criterion)`
  on tui-eval's own models (sync or async), returning a `float` (the case score; PASSED iff >= the
  threshold), a `list[float | None]` (one score per turn; the case score is their mean), None (not
  evaluated), or a full `MetricResult`.

A path that cannot be imported, or a function that raises, makes the metric NOT_EVALUATED with the
error: never a crashed run.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import Any, Callable

from ..schema.config import Criterion, EvalConfig
from ..schema.criteria import CustomMetricConfig
from ..schema.model import ConversationScenario, Invocation
from ..schema.results import InvocationMetricResult, MetricResult, status_for
from ..schema.status import EvalStatus
from .base import MetricInput, MetricSpec, get_metric

logger = logging.getLogger(__name__)

class CustomMetricError(Exception):
    """The custom metric's function could not be found, or answered with something unusable."""


def resolve(path: str) -> Callable[..., Any]:
    """The function a dotted path names (`package.module.function`). Raises CustomMetricError."""
    module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise CustomMetricError(f"cannot import custom metric {path!r}: not a dotted path to a function")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module itself raised while importing: shown to the user
        raise CustomMetricError(f"cannot import custom metric {path!r}: {type(exc).__name__}: {exc}") from exc
    fn: Callable[..., Any] | None = getattr(module, attr, None)
    if fn is None:
        raise CustomMetricError(f"cannot import custom metric {path!r}: module {module_name!r} has no {attr!r}")
    if not callable(fn):
        raise CustomMetricError(f"custom metric {path!r} is not callable")
    return fn


def is_adk_signature(fn: Callable[..., Any]) -> bool:
    """ADK's signature takes four positional parameters; the native one three."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 4 or any(p.kind is p.VAR_POSITIONAL for p in params)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


async def evaluate_custom(name: str, config: CustomMetricConfig, inp: MetricInput) -> MetricResult:
    """Run one custom metric on one case."""
    crit = inp.criterion
    criterion = crit.to_dict()
    path = config.code_config.name

    def skip(reason: str) -> MetricResult:
        return MetricResult.not_evaluated(name, crit.threshold, reason, criterion)

    try:
        fn = resolve(path)
    except CustomMetricError as exc:
        # Said once per case in the results; the log keeps it at info level to avoid a line per case.
        logger.info("%s", exc)
        return skip(str(exc))
    scenario = inp.case.conversation_scenario
    try:
        if is_adk_signature(fn):
            return await _run_adk(name, fn, path, crit, inp.actual, inp.expected, scenario)
        return _native_result(name, crit, await _call(fn, inp.actual, inp.expected, crit))
    except CustomMetricError as exc:
        return skip(str(exc))


def _native_result(name: str, crit: Criterion, value: Any) -> MetricResult:
    criterion = crit.to_dict()
    if isinstance(value, MetricResult):
        return value
    if value is None:
        return MetricResult.not_evaluated(name, crit.threshold, "the custom metric returned no score", criterion)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        score = float(value)
        return MetricResult(metric_name=name, threshold=crit.threshold, score=score,
                            status=status_for(score, crit.threshold), criterion=criterion)
    if isinstance(value, list) and all(v is None or isinstance(v, (int, float)) for v in value):
        turns = [InvocationMetricResult(score=None if v is None else float(v),
                                        status=status_for(None if v is None else float(v), crit.threshold),
                                        reason=None if v is not None else "the custom metric gave no score")
                 for v in value]
        return MetricResult.mean_of(name, crit.threshold, criterion, turns)
    raise CustomMetricError(
        f"custom metric {name!r} returned a {type(value).__name__}: expected a float, a list of floats "
        "or a MetricResult")


async def _run_adk(name: str, fn: Callable[..., Any], path: str, crit: Criterion, actual: list[Invocation],
                   expected: list[Invocation] | None, scenario: ConversationScenario | None) -> MetricResult:
    try:
        from google.adk.evaluation.eval_case import ConversationScenario as AdkScenario
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
        from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
        from google.adk.evaluation.eval_metrics import EvalMetric
    except ImportError as exc:
        raise CustomMetricError(f"custom metric {path!r} has ADK's signature and needs google-adk, which is "
                                f"not installed: pip install 'tui-eval[adk]' ({exc})") from exc
    criterion = crit.to_dict()
    # As ADK's _CustomMetricEvaluator: the function sees the criterion, not the deprecated threshold.
    eval_metric = EvalMetric(metric_name=name, threshold=None, criterion=AdkCriterion.model_validate(criterion),
                             custom_function_path=path)
    adk_actual = [AdkInvocation.model_validate(inv.to_dict()) for inv in actual]
    adk_expected = [AdkInvocation.model_validate(inv.to_dict()) for inv in expected] if expected is not None else None
    adk_scenario = AdkScenario.model_validate(scenario.to_dict()) if scenario is not None else None
    result = await _call(fn, eval_metric, adk_actual, adk_expected, adk_scenario)
    overall_status = getattr(result, "overall_eval_status", None)
    if overall_status is None:
        raise CustomMetricError(f"custom metric {path!r} returned a {type(result).__name__}, not ADK's "
                                "EvaluationResult")
    status = EvalStatus(int(overall_status.value))
    per_results = list(getattr(result, "per_invocation_results", None) or [])
    per_invocation: list[InvocationMetricResult] = []
    if per_results and len(per_results) != len(actual):
        if status not in (EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL):
            # ADK raises here: results it cannot attribute to turns would corrupt the verdict.
            raise CustomMetricError(f"custom metric {path!r} returned {len(per_results)} per-invocation results "
                                    f"for {len(actual)} invocations")
        per_results = []
    for r in per_results:
        per_invocation.append(InvocationMetricResult(score=r.score, status=EvalStatus(int(r.eval_status.value))))
    return MetricResult(metric_name=name, threshold=crit.threshold, score=result.overall_score, status=status,
                        criterion=criterion, per_invocation=per_invocation,
                        reason="the custom metric did not evaluate this case"
                        if status is EvalStatus.NOT_EVALUATED else None)


def custom_spec(name: str, config: CustomMetricConfig) -> MetricSpec:
    """A MetricSpec for a metric the config declares (`spec_for` below)."""

    async def evaluate(inp: MetricInput) -> MetricResult:
        return await evaluate_custom(name, config, inp)

    return MetricSpec(name, evaluate=evaluate, description=config.description or f"custom: {config.code_config.name}",
                      needs_reference=False)


def spec_for(name: str, config: EvalConfig) -> MetricSpec | None:
    """The metric a config's criterion names: its `custom_metrics` declaration first (as ADK, a declared
    function wins), else the built-in one."""
    custom = config.custom_metrics.get(name)
    if custom is not None:
        from ..schema.criteria import NATIVE_BY_ADK_FUNCTION

        native = NATIVE_BY_ADK_FUNCTION.get(custom.code_config.name)
        if native is not None:  # declared for `adk eval`'s sake: tui-eval runs its own metric
            return get_metric(native)
        return custom_spec(name, custom)
    return get_metric(name)
