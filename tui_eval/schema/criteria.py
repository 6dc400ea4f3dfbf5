"""THE metric catalog: one row per built-in metric (name, criterion model, kind, what it needs, module).

As ADK's `metric_evaluator_registry.py` pairs each metric with its criterion and evaluator, each row here
pairs a name with the criterion model its config object is read with (mirroring ADK's `eval_metrics.py`:
BaseCriterion, LlmAsAJudgeCriterion, ...), how it is computed, what it needs before it can run, and the
module that implements it. This is the only list of metric names; `metrics/base.py` imports a row's
module when a run names the metric, and the metric modules take their flags from their row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, field_validator

from .base import EvalBaseModel
from .judge_model import parse_judge_model
from .model import Rubric

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"


class MetricKind(str, Enum):
    """How a metric is computed."""

    DETERMINISTIC = "deterministic"
    # Asks an LLM judge (through tui-eval's judge service: Gemini, or `openai:...`).
    JUDGE = "judge"
    # ADK computes it with the Vertex AI evaluation service.
    VERTEX = "vertex"
    # Reported for every eval, never passes or fails (ADK's efficiency metrics: status INFORMATIONAL).
    INFORMATIONAL = "informational"


class MatchType(Enum):
    """How an actual tool trajectory is compared with the expected one (ADK's numbering)."""

    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2

    @classmethod
    def parse(cls, value: Any) -> MatchType:
        """EXACT / IN_ORDER / ANY_ORDER in any case with '-' or ' ' for '_', or 0/1/2 (also as a string)."""
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


def _threshold_on(low: float, high: float, scale: str, kind: str = "a number") -> Callable[[Any], float]:
    """A threshold check for a score on [low, high]: ADK's lax float ("0.8" reads as 0.8); a boolean, a
    word or a value off the scale is a mistake."""

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"threshold must be {kind}, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"threshold must be {kind}, got {value!r}") from None
        if not low <= number <= high:
            raise ValueError(f"threshold {value!r} is outside {scale}")
        return number

    return check


_threshold = _threshold_on(0.0, 1.0, "[0, 1]")
Threshold = Annotated[float, BeforeValidator(_threshold)]


class JudgeModelOptions(EvalBaseModel):
    """Which model judges, how often it is sampled per invocation, and its generation config."""

    judge_model: str = Field(default=DEFAULT_JUDGE_MODEL, min_length=1)
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(default=5, ge=1)
    # ADK's knob; ours is the judge service's --judge-concurrency (read, not used).
    parallelism_limit: int = Field(default=1, ge=1)

    @field_validator("judge_model")
    @classmethod
    def _judge_model(cls, value: str) -> str:
        # `openai:MODEL[@URL]` is checked when the config loads, not when the first judge call fails.
        parse_judge_model(value)
        return value

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge_model": self.judge_model, "num_samples": self.num_samples}
        if self.judge_model_config is not None:
            out["judge_model_config"] = self.judge_model_config
        return out


class BaseCriterion(EvalBaseModel):
    """A threshold; as in ADK, keys a metric does not read are kept (`extra="allow"`; we warn)."""

    model_config = ConfigDict(extra="allow")

    threshold: Threshold
    include_intermediate_responses_in_final: bool = False


class LlmAsAJudgeCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    rubrics: list[Rubric] = Field(default_factory=list)


class HallucinationsCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    evaluate_intermediate_nl_responses: bool = False


class ToolTrajectoryCriterion(BaseCriterion):
    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _match_type(cls, value: Any) -> MatchType:
        return MatchType.parse(value)


class SessionStateCriterion(BaseCriterion):
    """final_session_state_v1: compare every key (`exact`) or only the keys the case names (`named_keys`)."""

    compare: Literal["exact", "named_keys"] = "exact"

    @field_validator("compare", mode="before")
    @classmethod
    def _compare(cls, value: Any) -> Any:
        return value.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else value


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    stop_signal: str = Field(default="</finished>", min_length=1)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One metric: its name, the criterion model its config object is read with, how it is computed, what
    it needs before it can run, and the module that registers its evaluate function."""

    name: str
    criterion: type[BaseCriterion]
    kind: MetricKind
    module: str
    # Compares with expected turns: NOT_EVALUATED on scenario cases and when turn counts differ.
    needs_reference: bool = False
    # Only meaningful on conversation_scenario cases (the user-simulator metric).
    scenario_only: bool = False
    # tui-eval's own metrics that read what ADK never hands a custom metric: the dotted path of a function
    # with ADK's custom-metric signature, so a config declaring the metric in `custom_metrics` with this
    # path loads in `adk eval` too (there it is NOT_EVALUATED, saying why); tui-eval runs it natively.
    adk_function: str | None = None

    @property
    def needs_judge(self) -> bool:
        """Asks an LLM judge: NOT_EVALUATED with the judge's reason when no judge is available. (A
        criterion may ask for the judge itself: `Criterion.judge_requested`, safety_v1's judge mode.)"""
        return self.kind is MetricKind.JUDGE


def _catalog(*infos: MetricInfo) -> dict[str, MetricInfo]:
    return {info.name: info for info in infos}


_D, _J, _V, _I = MetricKind.DETERMINISTIC, MetricKind.JUDGE, MetricKind.VERTEX, MetricKind.INFORMATIONAL
_M = "tui_eval.metrics."

# google-adk 2.13's PrebuiltMetrics, in its order. safety_v1 runs on Vertex AI as in ADK; a criterion
# that names judge options sends it to tui-eval's judge instead (`Criterion.judge_requested`).
CATALOG: dict[str, MetricInfo] = _catalog(
    MetricInfo("tool_trajectory_avg_score", ToolTrajectoryCriterion, _D, _M + "trajectory", needs_reference=True),
    # As ADK: expected invocations are required.
    MetricInfo("response_evaluation_score", BaseCriterion, _V, _M + "vertex", needs_reference=True),
    MetricInfo("response_match_score", BaseCriterion, _D, _M + "response_match", needs_reference=True),
    MetricInfo("safety_v1", LlmAsAJudgeCriterion, _V, _M + "llm"),
    MetricInfo("final_response_match_v2", LlmAsAJudgeCriterion, _J, _M + "llm", needs_reference=True),
    MetricInfo("rubric_based_final_response_quality_v1", RubricsBasedCriterion, _J, _M + "llm"),
    MetricInfo("hallucinations_v1", HallucinationsCriterion, _J, _M + "llm"),
    MetricInfo("rubric_based_tool_use_quality_v1", RubricsBasedCriterion, _J, _M + "llm"),
    MetricInfo("per_turn_user_simulator_quality_v1", LlmBackedUserSimulatorCriterion, _J,
               _M + "user_simulator_quality", scenario_only=True),
    MetricInfo("multi_turn_task_success_v1", BaseCriterion, _V, _M + "vertex"),
    MetricInfo("multi_turn_trajectory_quality_v1", BaseCriterion, _V, _M + "vertex"),
    MetricInfo("multi_turn_tool_use_quality_v1", BaseCriterion, _V, _M + "vertex"),
    MetricInfo("rubric_based_multi_turn_trajectory_quality_v1", RubricsBasedCriterion, _J,
               _M + "llm.multi_turn_trajectory"),
    MetricInfo("tool_call_count_v1", BaseCriterion, _I, _M + "efficiency"),
    MetricInfo("inference_call_count_v1", BaseCriterion, _I, _M + "efficiency"),
    MetricInfo("token_usage_v1", BaseCriterion, _I, _M + "efficiency"),
    MetricInfo("invocation_duration_v1", BaseCriterion, _I, _M + "efficiency"),
)

# tui-eval's own opt-in metrics: beyond what ADK scores (its scores are never changed by them).
#: The calls made inside tool calls (the turn view shows its verdict apart from ADK's trajectory).
DEEP_TRAJECTORY = "deep_tool_trajectory_v1"
CATALOG.update(_catalog(
    MetricInfo(DEEP_TRAJECTORY, ToolTrajectoryCriterion, _D, _M + "nested", needs_reference=True,
               adk_function=_M + "adk_functions.deep_tool_trajectory_v1"),
    MetricInfo("final_session_state_v1", SessionStateCriterion, _D, _M + "session_state",
               adk_function=_M + "adk_functions.final_session_state_v1"),
))
#: A custom metric declared with one of these paths is tui-eval's own metric of that name.
NATIVE_BY_ADK_FUNCTION: dict[str, str] = {i.adk_function: n for n, i in CATALOG.items() if i.adk_function}



# CES scores semantic similarity 0..4 and its success threshold is on that scale.
_ces_similarity_threshold = _threshold_on(0.0, 4.0, "CES's semantic similarity scale [0, 4]",
                                          "a number from 0 to 4")


class CesToolInvocationCriterion(BaseCriterion):
    """CES's overall tool invocation correctness threshold, and what an unexpected extra call does
    (None: the evaluation's toolMatchingSettings, else CES's default FAIL)."""

    extra_tool_call_behavior: Literal["FAIL", "ALLOW"] | None = None

    @field_validator("extra_tool_call_behavior", mode="before")
    @classmethod
    def _behavior(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class CesSemanticSimilarityCriterion(BaseCriterion):
    """Threshold on CES's 0..4 scale (CES's default 3); one judge sample by default, as CES asks once."""

    threshold: Annotated[float, BeforeValidator(_ces_similarity_threshold)]
    judge_model_options: JudgeModelOptions = Field(default_factory=lambda: JudgeModelOptions(num_samples=1))


class CesHallucinationCriterion(HallucinationsCriterion):
    """hallucinations_v1's options; one judge sample by default, as CES asks once."""

    judge_model_options: JudgeModelOptions = Field(default_factory=lambda: JudgeModelOptions(num_samples=1))


# CES (Customer Engagement Suite) metrics: scored on eval cases imported from CES (they carry a `ces`
# key); an eval set with such cases gets them added with CES's thresholds (tui_eval/metrics/ces.py).
CATALOG.update(_catalog(
    MetricInfo("ces_tool_invocation", CesToolInvocationCriterion, _D, _M + "ces", needs_reference=True),
    MetricInfo("ces_parameter_correctness", BaseCriterion, _D, _M + "ces", needs_reference=True),
    MetricInfo("ces_tool_ordered_invocation", BaseCriterion, _I, _M + "ces", needs_reference=True),
    MetricInfo("ces_semantic_similarity", CesSemanticSimilarityCriterion, _J, _M + "ces", needs_reference=True),
    MetricInfo("ces_hallucination", CesHallucinationCriterion, _J, _M + "ces"),
    MetricInfo("ces_latency", BaseCriterion, _I, _M + "ces"),
))

METRIC_NAMES: tuple[str, ...] = tuple(CATALOG)

# ADK appends these to every eval; they take no threshold (naming one in criteria is an error).
INFORMATIONAL_METRICS: tuple[str, ...] = tuple(n for n, i in CATALOG.items() if i.kind is MetricKind.INFORMATIONAL)
# ADK's efficiency metrics, in its order (eval_config._DEFAULT_EFFICIENCY_METRICS): informational, and a
# run's summary sums them up in one line rather than listing them under each case.
EFFICIENCY_METRICS: tuple[str, ...] = tuple(n for n, i in CATALOG.items() if i.module == _M + "efficiency")


class CodeConfig(EvalBaseModel):
    """Where a custom metric's function lives (ADK's `agents.common_configs.CodeConfig`)."""

    model_config = ConfigDict(alias_generator=None, extra="forbid")

    name: str = Field(min_length=1)


class CustomMetricConfig(EvalBaseModel):
    """A config's `custom_metrics.<name>`: declares a metric that is not built in."""

    model_config = ConfigDict(extra="ignore")

    code_config: CodeConfig
    metric_info: dict[str, Any] | None = None
    description: str = ""


class UserSimulatorConfig(EvalBaseModel):
    """ADK's LlmBackedUserSimulatorConfig: the model that plays the user in scenario cases."""

    model_config = ConfigDict(extra="allow")

    type: Literal["llm_backed"] | None = None
    model: str = Field(default=DEFAULT_JUDGE_MODEL, min_length=1)
    model_configuration: dict[str, Any] | None = None
    max_allowed_invocations: int = Field(default=20, ge=1)
    custom_instructions: str | None = None
    include_function_calls: bool | None = None

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        # The simulated user may be an OpenAI-compatible model too (`openai:MODEL[@URL]`), as judges.
        parse_judge_model(value)
        return value
