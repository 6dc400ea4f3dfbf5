"""EvalConfig (`test_config.json`): which metrics run, their thresholds and options.

Each criterion is validated with its metric's criterion model from `criteria.CATALOG` (as ADK's
evaluators do). What ADK rejects is an error; what ADK ignores silently (unknown keys) loads with a
warning; a metric name that is neither built in nor declared in `custom_metrics` is reported with a
did-you-mean (a typo in a criterion name must not turn into a metric that never ran).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_snake

from .criteria import (
    CATALOG,
    DEFAULT_JUDGE_MODEL,
    INFORMATIONAL_METRICS,
    BaseCriterion,
    CustomMetricConfig,
    JudgeModelOptions,
    MatchType,
    UserSimulatorConfig,
)
from .errors import Issue, LoadError, SchemaError, did_you_mean, issues_of, schema_error
from .load import read_json_file
from .model import Rubric

logger = logging.getLogger(__name__)

CONFIG_FILE_NAME = "test_config.json"
DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}

__all__ = [
    "CONFIG_FILE_NAME",
    "DEFAULT_CRITERIA",
    "DEFAULT_JUDGE_MODEL",
    "Criterion",
    "EvalConfig",
    "JudgeModelOptions",
    "MatchType",
    "UserSimulatorConfig",
    "config_for",
    "default_config",
    "load_eval_config",
    "read_eval_config",
]


@dataclass(slots=True)
class Criterion:
    """One metric's criterion, flattened for the metrics: its threshold and its own options, checked.

    `typed` is the criterion model it was read with (`criteria.CATALOG[name].criterion`).
    """

    metric_name: str
    threshold: float
    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False
    judge: JudgeModelOptions = field(default_factory=JudgeModelOptions)
    rubrics: list[Rubric] = field(default_factory=list)
    evaluate_intermediate_nl_responses: bool = False
    include_intermediate_responses_in_final: bool = False
    stop_signal: str = "</finished>"
    # The criterion as written (snake_case keys); echoed into results as ADK does.
    raw: dict[str, Any] = field(default_factory=dict)
    typed: BaseCriterion | None = None

    @classmethod
    def of(cls, name: str, typed: BaseCriterion, raw: dict[str, Any]) -> Criterion:
        get = typed.__dict__.get
        return cls(
            metric_name=name,
            threshold=typed.threshold,
            match_type=get("match_type", MatchType.EXACT),
            ignore_args=get("ignore_args", False),
            judge=get("judge_model_options") or JudgeModelOptions(),
            rubrics=get("rubrics", []),
            evaluate_intermediate_nl_responses=get("evaluate_intermediate_nl_responses", False),
            include_intermediate_responses_in_final=typed.include_intermediate_responses_in_final,
            stop_signal=get("stop_signal", "</finished>"),
            raw=raw,
            typed=typed,
        )

    @property
    def judge_requested(self) -> bool:
        """The criterion names judge_model_options: a metric computed elsewhere by default (safety_v1 runs
        on Vertex AI, as in ADK) is scored by tui-eval's LLM judge instead. Metrics whose catalog kind is
        `judge` ask the judge whatever their criterion says (`MetricInfo.needs_judge`)."""
        return "judge_model_options" in self.raw

    def to_dict(self) -> dict[str, Any]:
        """The ADK BaseCriterion shape for results: threshold plus the keys the user gave."""
        out: dict[str, Any] = {"threshold": self.threshold}
        out.update({k: v for k, v in self.raw.items() if k != "threshold"})
        return out


@dataclass(slots=True)
class EvalConfig:
    """The metrics to run, plus problems found while reading the config (never silently dropped)."""

    criteria: dict[str, Criterion]
    user_simulator: UserSimulatorConfig = field(default_factory=UserSimulatorConfig)
    source: str | None = None
    warnings: list[str] = field(default_factory=list)
    unknown_metrics: list[str] = field(default_factory=list)
    custom_metrics: dict[str, CustomMetricConfig] = field(default_factory=dict)

    @property
    def metric_names(self) -> list[str]:
        return list(self.criteria)

    def to_dict(self) -> dict[str, Any]:
        """The config as a file would say it (`read_eval_config` reads it back to an equal config)."""
        out: dict[str, Any] = {"criteria": {name: c.to_dict() for name, c in self.criteria.items()},
                               "user_simulator_config": self.user_simulator.model_dump(mode="json")}
        if self.custom_metrics:
            out["custom_metrics"] = {k: v.model_dump(mode="json") for k, v in self.custom_metrics.items()}
        return out


class EvalConfigFile(BaseModel):
    """The top level of ADK's EvalConfig (a plain model: unknown keys ignored; we warn)."""

    model_config = ConfigDict(populate_by_name=True)

    criteria: dict[str, Any] = {}
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: UserSimulatorConfig | None = None
    live_model_config: dict[str, Any] | None = None
    # tui-eval's own price table overrides (USD per million tokens), read by engine/pricing.py.
    prices: dict[str, Any] | None = None


_TOP = {name: name for name in EvalConfigFile.model_fields} | {
    "userSimulatorConfig": "user_simulator_config",
    "customMetrics": "custom_metrics",
    "liveModelConfig": "live_model_config",
}


def _unknown_keys(model: BaseModel, path: str, what: str, warnings: list[str]) -> None:
    """Warn about the keys an `extra="allow"` model kept (ADK accepts and ignores them)."""
    for key in model.model_extra or {}:
        hint = did_you_mean(to_snake(key), list(type(model).model_fields))
        warnings.append(f"{path}.{key}: {what} has no option {key!r} (ignored){hint}")


def _raw(model: type[BaseModel], value: dict[str, Any]) -> dict[str, Any]:
    """The known keys of a criterion as written, under their snake_case names."""
    names = {info.alias or n: n for n, info in model.model_fields.items()} | {n: n for n in model.model_fields}
    return {names[k]: v for k, v in value.items() if k in names}


def read_criterion(name: str, value: Any, path: str, warnings: list[str]) -> Criterion:
    info = CATALOG.get(name)
    model = info.criterion if info is not None else BaseCriterion
    if not isinstance(value, dict):
        try:
            typed = model.model_validate({"threshold": value})
        except ValidationError as exc:
            raise schema_error([Issue(path, i.message) for i in issues_of(exc, model, path)]) from None
        return Criterion.of(name, typed, {"threshold": value})
    try:
        typed = model.model_validate(value)
    except ValidationError as exc:
        raise schema_error(issues_of(exc, model, path)) from None
    if info is not None:
        _unknown_keys(typed, path, name, warnings)
    return Criterion.of(name, typed, _raw(model, value))


def read_eval_config(data: Any, source: str | None = None) -> EvalConfig:
    """Check a parsed config object. Raises SchemaError with every fault; collects warnings."""
    if not isinstance(data, dict):
        raise SchemaError("$", "the config must be a JSON object with a 'criteria' object")
    warnings: list[str] = []
    issues: list[Issue] = []
    known: dict[str, Any] = {}
    for key, value in data.items():
        name = _TOP.get(key)
        if name is None:
            warnings.append(f"$.{key}: unknown key {key!r} (ignored){did_you_mean(key, list(_TOP))}")
        else:
            known[name] = value
    criteria_doc = known.pop("criteria", {})
    if not isinstance(criteria_doc, dict):
        raise SchemaError("$.criteria", "criteria must be an object of metric name -> threshold")
    try:
        top = EvalConfigFile.model_validate(known)
    except ValidationError as exc:
        raise schema_error(issues_of(exc, EvalConfigFile)) from None
    custom = top.custom_metrics or {}
    criteria: dict[str, Criterion] = {}
    unknown: list[str] = []
    for metric, value in criteria_doc.items():
        path = f"$.criteria.{metric}"
        if metric in INFORMATIONAL_METRICS and metric not in custom:
            issues.append(Issue(path, f"{metric} is informational: ADK reports it for every eval and it "
                                      "takes no threshold; remove it from criteria"))
            continue
        if metric not in CATALOG and metric not in custom:
            unknown.append(metric)
            hint = did_you_mean(metric, list(CATALOG) + list(custom))
            warnings.append(f"{path}: unknown metric {metric!r}{hint}; neither built in nor in custom_metrics")
            continue
        try:
            criteria[metric] = read_criterion(metric, value, path, warnings)
        except SchemaError as exc:
            issues.extend(exc.issues)
    if issues:
        raise schema_error(issues)
    sim = top.user_simulator_config or UserSimulatorConfig()
    if top.user_simulator_config is not None:
        _unknown_keys(sim, "$.user_simulator_config", "user_simulator_config", warnings)
    for warning in warnings:
        logger.info("%s: %s", source or "config", warning)
    return EvalConfig(criteria=criteria, user_simulator=sim, source=source, warnings=warnings,
                      unknown_metrics=unknown, custom_metrics=dict(custom))


def default_config() -> EvalConfig:
    return read_eval_config({"criteria": DEFAULT_CRITERIA}, source=None)


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read a config file. Raises LoadError naming the file and the place of every fault."""
    path = Path(path)
    data = read_json_file(path)
    try:
        return read_eval_config(data, source=str(path))
    except SchemaError as exc:
        raise exc.at(path) from None


def config_for(eval_file: str | Path, override: str | Path | None = None) -> EvalConfig:
    """The config an eval file runs with: `--config`, else `test_config.json` beside it, else defaults."""
    if override is not None:
        return load_eval_config(override)
    beside = Path(eval_file).parent / CONFIG_FILE_NAME
    # Anything of that name is meant as the config: a folder, a FIFO or a broken link is an error that
    # says so (read_regular_file), never silently the default criteria.
    if os.path.lexists(beside):
        return load_eval_config(beside)
    return default_config()
