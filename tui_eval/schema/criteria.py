"""THE catalog of metric names: for each of google-adk 2.13's built-in metrics, its criterion model and kind.

The criterion models mirror ADK's `eval_metrics.py` (BaseCriterion, LlmAsAJudgeCriterion, ...). This is
the only list of metric names; which of them tui-eval can run is the metrics package's business.
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
    # Asks a Gemini judge (through tui-eval's judge service).
    GEMINI_JUDGE = "gemini_judge"
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


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    stop_signal: str = Field(default="</finished>", min_length=1)


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """A metric's name, the criterion model its config object is read with, and how it is computed."""

    name: str
    criterion: type[BaseCriterion]
    kind: MetricKind


def _catalog(*infos: MetricInfo) -> dict[str, MetricInfo]:
    return {info.name: info for info in infos}


_D, _J, _V, _I = MetricKind.DETERMINISTIC, MetricKind.GEMINI_JUDGE, MetricKind.VERTEX, MetricKind.INFORMATIONAL

# google-adk 2.13's PrebuiltMetrics, in its order. safety_v1 runs on Vertex AI as in ADK; its criterion
# still reads judge options, which send it to tui-eval's Gemini judge instead.
CATALOG: dict[str, MetricInfo] = _catalog(
    MetricInfo("tool_trajectory_avg_score", ToolTrajectoryCriterion, _D),
    MetricInfo("response_evaluation_score", BaseCriterion, _V),
    MetricInfo("response_match_score", BaseCriterion, _D),
    MetricInfo("safety_v1", LlmAsAJudgeCriterion, _V),
    MetricInfo("final_response_match_v2", LlmAsAJudgeCriterion, _J),
    MetricInfo("rubric_based_final_response_quality_v1", RubricsBasedCriterion, _J),
    MetricInfo("hallucinations_v1", HallucinationsCriterion, _J),
    MetricInfo("rubric_based_tool_use_quality_v1", RubricsBasedCriterion, _J),
    MetricInfo("per_turn_user_simulator_quality_v1", LlmBackedUserSimulatorCriterion, _J),
    MetricInfo("multi_turn_task_success_v1", BaseCriterion, _V),
    MetricInfo("multi_turn_trajectory_quality_v1", BaseCriterion, _V),
    MetricInfo("multi_turn_tool_use_quality_v1", BaseCriterion, _V),
    MetricInfo("rubric_based_multi_turn_trajectory_quality_v1", RubricsBasedCriterion, _J),
    MetricInfo("tool_call_count_v1", BaseCriterion, _I),
    MetricInfo("inference_call_count_v1", BaseCriterion, _I),
    MetricInfo("token_usage_v1", BaseCriterion, _I),
    MetricInfo("invocation_duration_v1", BaseCriterion, _I),
)



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
    MetricInfo("ces_tool_invocation", CesToolInvocationCriterion, _D),
    MetricInfo("ces_parameter_correctness", BaseCriterion, _D),
    MetricInfo("ces_tool_ordered_invocation", BaseCriterion, _I),
    MetricInfo("ces_semantic_similarity", CesSemanticSimilarityCriterion, _J),
    MetricInfo("ces_hallucination", CesHallucinationCriterion, _J),
    MetricInfo("ces_latency", BaseCriterion, _I),
))

METRIC_NAMES: tuple[str, ...] = tuple(CATALOG)

# ADK appends these to every eval; they take no threshold (naming one in criteria is an error).
INFORMATIONAL_METRICS: tuple[str, ...] = tuple(n for n, i in CATALOG.items() if i.kind is MetricKind.INFORMATIONAL)


def criterion_keys(name: str) -> frozenset[str]:
    """The option keys a metric's criterion reads (snake_case), threshold included."""
    info = CATALOG.get(name)
    model = info.criterion if info is not None else BaseCriterion
    return frozenset(model.model_fields)


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
