"""EvalConfig (`test_config.json`): which metrics run, their thresholds and options.

Unlike google-adk, which silently ignores what it does not know, every unknown metric name and key is
reported: a typo in a criterion name must not turn into a metric that never ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import orjson

from .errors import LoadError, SchemaError, syntax_error
from .load import _aliases, _camel, read_rubric
from .model import Rubric

CONFIG_FILE_NAME = "test_config.json"
DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"


class MatchType(Enum):
    """How an actual tool trajectory is compared with the expected one (ADK's numbering)."""

    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2

    @classmethod
    def parse(cls, value: Any) -> MatchType:
        if isinstance(value, MatchType):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            for member in cls:
                if member.value == value:
                    return member
        if isinstance(value, str):
            normal = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normal in cls.__members__:
                return cls[normal]
            if normal.isdigit():
                return cls.parse(int(normal))
        raise ValueError(f"unknown match_type {value!r}: use EXACT, IN_ORDER or ANY_ORDER")


_COMMON_KEYS = {"threshold", "include_intermediate_responses_in_final"}
_JUDGE = {"judge_model_options"}

# metric name -> the criterion keys it reads besides the common ones.
METRIC_KEYS: dict[str, set[str]] = {
    "tool_trajectory_avg_score": {"match_type", "ignore_args"},
    "response_match_score": set(),
    "final_response_match_v2": _JUDGE,
    "rubric_based_final_response_quality_v1": _JUDGE | {"rubrics"},
    "rubric_based_tool_use_quality_v1": _JUDGE | {"rubrics"},
    "hallucinations_v1": _JUDGE | {"evaluate_intermediate_nl_responses"},
    "safety_v1": _JUDGE,
    "per_turn_user_simulator_quality_v1": _JUDGE | {"stop_signal"},
}


@dataclass(slots=True)
class JudgeModelOptions:
    judge_model: str = DEFAULT_JUDGE_MODEL
    num_samples: int = 5
    judge_model_config: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge_model": self.judge_model, "num_samples": self.num_samples}
        if self.judge_model_config is not None:
            out["judge_model_config"] = self.judge_model_config
        return out


@dataclass(slots=True)
class Criterion:
    """One metric's criterion: its threshold and its own options, already checked."""

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

    def to_dict(self) -> dict[str, Any]:
        """The ADK BaseCriterion shape for results: threshold plus the keys the user gave."""
        out = {"threshold": self.threshold}
        out.update({k: v for k, v in self.raw.items() if k != "threshold"})
        return out


@dataclass(slots=True)
class UserSimulatorConfig:
    model: str = DEFAULT_JUDGE_MODEL
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    model_configuration: dict[str, Any] | None = None


@dataclass(slots=True)
class EvalConfig:
    """The metrics to run, plus problems found while reading the config (never silently dropped)."""

    criteria: dict[str, Criterion]
    user_simulator: UserSimulatorConfig = field(default_factory=UserSimulatorConfig)
    source: str | None = None
    warnings: list[str] = field(default_factory=list)
    unknown_metrics: list[str] = field(default_factory=list)

    @property
    def metric_names(self) -> list[str]:
        return list(self.criteria)


def _threshold(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(path, f"threshold must be a number, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise SchemaError(path, f"threshold {value!r} is outside [0, 1]")
    return float(value)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(path, f"expected true or false, got {value!r}")
    return value


_JUDGE_OPTS = _aliases("judge_model", "num_samples", "judge_model_config", "parallelism_limit")


def _judge_options(value: Any, path: str, warnings: list[str]) -> JudgeModelOptions:
    if not isinstance(value, dict):
        raise SchemaError(path, "judge_model_options must be an object")
    opts = JudgeModelOptions()
    for key, v in value.items():
        name = _JUDGE_OPTS.get(key)
        kpath = f"{path}.{key}"
        if name is None:
            warnings.append(f"{kpath}: unknown key {key!r} (ignored)")
        elif name == "judge_model":
            if not isinstance(v, str) or not v:
                raise SchemaError(kpath, "judge_model must be a model name")
            opts.judge_model = v
        elif name == "num_samples":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SchemaError(kpath, "num_samples must be a whole number >= 1")
            opts.num_samples = v
        elif name == "judge_model_config":
            if v is not None and not isinstance(v, dict):
                raise SchemaError(kpath, "judge_model_config must be an object")
            opts.judge_model_config = v
        # parallelism_limit is ADK's knob; ours is the judge service's --judge-concurrency.
    return opts


def read_criterion(name: str, value: Any, path: str, warnings: list[str]) -> Criterion:
    if not isinstance(value, dict):
        return Criterion(metric_name=name, threshold=_threshold(value, path), raw={"threshold": value})
    allowed = _COMMON_KEYS | METRIC_KEYS.get(name, set())
    aliases = {}
    for key in allowed:
        aliases[key] = key
        aliases[_camel(key)] = key
    if "threshold" not in value:
        raise SchemaError(path, "missing required key 'threshold'")
    crit = Criterion(metric_name=name, threshold=0.0)
    for key, v in value.items():
        kpath = f"{path}.{key}"
        field_name = aliases.get(key)
        if field_name is None:
            if name in METRIC_KEYS:
                warnings.append(f"{kpath}: {name} has no option {key!r} (ignored)")
            continue
        crit.raw[field_name] = v
        if field_name == "threshold":
            crit.threshold = _threshold(v, kpath)
        elif field_name == "match_type":
            try:
                crit.match_type = MatchType.parse(v)
            except ValueError as exc:
                raise SchemaError(kpath, str(exc)) from None
        elif field_name == "ignore_args":
            crit.ignore_args = _bool(v, kpath)
        elif field_name == "judge_model_options":
            crit.judge = _judge_options(v, kpath, warnings)
        elif field_name == "rubrics":
            if not isinstance(v, list):
                raise SchemaError(kpath, "rubrics must be an array")
            crit.rubrics = [read_rubric(r, f"{kpath}[{i}]") for i, r in enumerate(v)]
        elif field_name == "evaluate_intermediate_nl_responses":
            crit.evaluate_intermediate_nl_responses = _bool(v, kpath)
        elif field_name == "include_intermediate_responses_in_final":
            crit.include_intermediate_responses_in_final = _bool(v, kpath)
        elif field_name == "stop_signal":
            if not isinstance(v, str) or not v:
                raise SchemaError(kpath, "stop_signal must be a non-empty string")
            crit.stop_signal = v
    return crit


_SIM = _aliases("type", "model", "max_allowed_invocations", "custom_instructions", "model_configuration",
                "include_function_calls")


def _user_simulator(value: Any, path: str, warnings: list[str]) -> UserSimulatorConfig:
    if not isinstance(value, dict):
        raise SchemaError(path, "user_simulator_config must be an object")
    sim = UserSimulatorConfig()
    for key, v in value.items():
        name = _SIM.get(key)
        kpath = f"{path}.{key}"
        if name is None:
            warnings.append(f"{kpath}: unknown key {key!r} (ignored)")
        elif name == "model":
            if not isinstance(v, str) or not v:
                raise SchemaError(kpath, "model must be a model name")
            sim.model = v
        elif name == "max_allowed_invocations":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SchemaError(kpath, "max_allowed_invocations must be a whole number >= 1")
            sim.max_allowed_invocations = v
        elif name == "custom_instructions":
            if v is not None and not isinstance(v, str):
                raise SchemaError(kpath, "custom_instructions must be a string")
            sim.custom_instructions = v
        elif name == "model_configuration":
            sim.model_configuration = v
        elif name == "type" and v not in (None, "llm_backed"):
            raise SchemaError(kpath, f"user simulator type {v!r} is not supported (only 'llm_backed')")
    return sim


_CONFIG = _aliases("criteria", "user_simulator_config", "custom_metrics", "live_model_config")


def read_eval_config(data: Any, source: str | None = None) -> EvalConfig:
    """Check a parsed config object. Raises SchemaError on faults; collects warnings."""
    if not isinstance(data, dict):
        raise SchemaError("$", "the config must be a JSON object with a 'criteria' object")
    warnings: list[str] = []
    criteria: dict[str, Criterion] = {}
    unknown: list[str] = []
    sim = UserSimulatorConfig()
    for key, value in data.items():
        name = _CONFIG.get(key)
        if name is None:
            warnings.append(f"$.{key}: unknown key {key!r} (ignored)")
        elif name == "criteria":
            if not isinstance(value, dict):
                raise SchemaError("$.criteria", "criteria must be an object of metric name -> threshold")
            for metric, crit in value.items():
                path = f"$.criteria.{metric}"
                if metric not in METRIC_KEYS:
                    unknown.append(metric)
                    warnings.append(f"{path}: unknown metric {metric!r}; known: {', '.join(METRIC_KEYS)}")
                    continue
                criteria[metric] = read_criterion(metric, crit, path, warnings)
        elif name == "user_simulator_config":
            if value is not None:
                sim = _user_simulator(value, "$." + key, warnings)
        elif name == "custom_metrics" and value:
            warnings.append(f"$.{key}: custom metrics are not supported by tui-eval (ignored)")
    return EvalConfig(criteria=criteria, user_simulator=sim, source=source, warnings=warnings,
                      unknown_metrics=unknown)


def default_config() -> EvalConfig:
    return read_eval_config({"criteria": DEFAULT_CRITERIA}, source=None)


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read a config file. Raises LoadError naming the file and place."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LoadError(str(path), f"cannot read file: {exc.strerror or exc}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise syntax_error(path, exc) from None
    try:
        return read_eval_config(data, source=str(path))
    except SchemaError as exc:
        raise exc.at(path) from None


def config_for(eval_file: str | Path, override: str | Path | None = None) -> EvalConfig:
    """The config an eval file runs with: `--config`, else `test_config.json` beside it, else defaults."""
    if override is not None:
        return load_eval_config(override)
    beside = Path(eval_file).parent / CONFIG_FILE_NAME
    if beside.is_file():
        return load_eval_config(beside)
    return default_config()
