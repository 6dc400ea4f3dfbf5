"""Pydantic models of the CES (Customer Engagement Suite) Evaluation resource, as its MCP server speaks it.

Field names are snake_case in Python and camelCase on the wire, as the API. Every model keeps fields it
does not know (`extra="allow"`), so a newer API's additions survive a read and a write unchanged; and
dumping with `to_json_dict` writes back only what was read (`exclude_unset`), so a round trip is exact.
Timestamps, durations and enums stay strings: parsing them would lose the original spelling, and an enum
value this version has never heard of must still load.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

JsonObject = dict[str, JsonValue]


class CesModel(BaseModel):
    """Base: camelCase aliases, unknown fields kept, only what was set is written back."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


# ---- the conversation pieces ------------------------------------------------------------------


class ToolsetTool(CesModel):
    toolset: str | None = None
    tool_id: str | None = None


class ToolCall(CesModel):
    id: str | None = None
    display_name: str | None = None
    args: JsonObject | None = None
    tool: str | None = None
    toolset_tool: ToolsetTool | None = None


class ToolResponse(CesModel):
    id: str | None = None
    display_name: str | None = None
    response: JsonObject | None = None
    tool: str | None = None
    toolset_tool: ToolsetTool | None = None


class ToolResponses(CesModel):
    tool_responses: list[ToolResponse] | None = None


class AgentTransfer(CesModel):
    target_agent: str | None = None
    display_name: str | None = None


class Chunk(CesModel):
    """One piece of a message: exactly one of text, transcript, blob, payload, image, toolCall, ..."""

    text: str | None = None
    transcript: str | None = None
    blob: JsonObject | None = None
    payload: JsonObject | None = None
    image: JsonObject | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None
    agent_transfer: AgentTransfer | None = None
    updated_variables: JsonObject | None = None
    default_variables: JsonObject | None = None


class Message(CesModel):
    role: str | None = None
    chunks: list[Chunk] | None = None
    event_time: str | None = None


class SessionInput(CesModel):
    """The user's input of one step: exactly one of text, dtmf, audio, toolResponses, ... ."""

    will_continue: bool | None = None
    text: str | None = None
    dtmf: str | None = None
    audio: str | None = None
    tool_responses: ToolResponses | None = None
    image: JsonObject | None = None
    blob: JsonObject | None = None
    variables: JsonObject | None = None
    event: JsonObject | None = None


class GoldenExpectation(CesModel):
    """One check of a golden turn; exactly one condition besides the optional note."""

    note: str | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None
    agent_response: Message | None = None
    agent_transfer: AgentTransfer | None = None
    updated_variables: JsonObject | None = None
    mock_tool_response: ToolResponse | None = None


class Step(CesModel):
    user_input: SessionInput | None = None
    agent_transfer: AgentTransfer | None = None
    expectation: GoldenExpectation | None = None


class GoldenTurn(CesModel):
    steps: list[Step] = Field(default_factory=list)
    root_span: JsonObject | None = None


class Golden(CesModel):
    turns: list[GoldenTurn] = Field(default_factory=list)
    evaluation_expectations: list[str] | None = None


class UserFact(CesModel):
    name: str = ""
    value: str = ""


class ToolExpectation(CesModel):
    expected_tool_call: ToolCall | None = None
    mock_tool_response: ToolResponse | None = None


class ScenarioExpectation(CesModel):
    tool_expectation: ToolExpectation | None = None
    agent_response: Message | None = None


class Scenario(CesModel):
    task: str = ""
    user_facts: list[UserFact] | None = None
    max_turns: int | None = None
    rubrics: list[str] | None = None
    scenario_expectations: list[ScenarioExpectation] | None = None
    variable_overrides: JsonObject | None = None
    task_completion_behavior: str | None = None
    user_goal_behavior: str | None = None
    evaluation_expectations: list[str] | None = None


# ---- thresholds ---------------------------------------------------------------------------------


class TurnLevelMetricsThresholds(CesModel):
    semantic_similarity_channel: str | None = None
    semantic_similarity_success_threshold: int | None = None
    overall_tool_invocation_correctness_threshold: float | None = None


class ExpectationLevelMetricsThresholds(CesModel):
    tool_invocation_parameter_correctness_threshold: float | None = None


class ToolMatchingSettings(CesModel):
    extra_tool_call_behavior: str | None = None


class GoldenEvaluationMetricsThresholds(CesModel):
    turn_level_metrics_thresholds: TurnLevelMetricsThresholds | None = None
    expectation_level_metrics_thresholds: ExpectationLevelMetricsThresholds | None = None
    tool_matching_settings: ToolMatchingSettings | None = None


class EvaluationMetricsThresholds(CesModel):
    golden_evaluation_metrics_thresholds: GoldenEvaluationMetricsThresholds | None = None
    hallucination_metric_behavior: str | None = None
    golden_hallucination_metric_behavior: str | None = None
    scenario_hallucination_metric_behavior: str | None = None


# ---- results --------------------------------------------------------------------------------------


class SemanticSimilarityResult(CesModel):
    score: int | None = None  # 0..4
    label: str | None = None
    explanation: str | None = None
    outcome: str | None = None


class HallucinationResult(CesModel):
    score: int | None = None  # -1, 0 or 1
    label: str | None = None
    explanation: str | None = None


class ToolInvocationResult(CesModel):
    parameter_correctness_score: float | None = None
    outcome: str | None = None
    explanation: str | None = None


class OverallToolInvocationResult(CesModel):
    tool_invocation_score: float | None = None
    outcome: str | None = None


class ToolCallLatency(CesModel):
    tool: str | None = None
    display_name: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    execution_latency: str | None = None


class EvaluationErrorInfo(CesModel):
    error_type: str | None = None
    error_message: str | None = None
    session_id: str | None = None


class GoldenExpectationOutcome(CesModel):
    expectation: GoldenExpectation | None = None
    outcome: str | None = None
    semantic_similarity_result: SemanticSimilarityResult | None = None
    tool_invocation_result: ToolInvocationResult | None = None
    observed_tool_call: ToolCall | None = None
    observed_tool_response: ToolResponse | None = None
    observed_agent_response: Message | None = None
    observed_agent_transfer: AgentTransfer | None = None


class TurnReplayResult(CesModel):
    conversation: str | None = None
    expectation_outcome: list[GoldenExpectationOutcome] | None = None
    hallucination_result: HallucinationResult | None = None
    tool_invocation_score: float | None = None
    turn_latency: str | None = None
    tool_call_latencies: list[ToolCallLatency] | None = None
    semantic_similarity_result: SemanticSimilarityResult | None = None
    overall_tool_invocation_result: OverallToolInvocationResult | None = None
    error_info: EvaluationErrorInfo | None = None
    span_latencies: list[JsonObject] | None = None
    tool_ordered_invocation_score: float | None = None


class EvaluationExpectationResult(CesModel):
    evaluation_expectation: str | None = None
    prompt: str | None = None
    outcome: str | None = None
    explanation: str | None = None


class GoldenResult(CesModel):
    turn_replay_results: list[TurnReplayResult] | None = None
    evaluation_expectation_results: list[EvaluationExpectationResult] | None = None


class ObservedToolCall(CesModel):
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None


class ScenarioExpectationOutcome(CesModel):
    expectation: ScenarioExpectation | None = None
    outcome: str | None = None
    observed_tool_call: ObservedToolCall | None = None
    observed_agent_response: Message | None = None


class ScenarioRubricOutcome(CesModel):
    rubric: str | None = None
    score: float | None = None
    score_explanation: str | None = None


class LabelledScore(CesModel):
    """Task completion and user-goal satisfaction: a score of -1, 0 or 1 with its label."""

    score: int | None = None
    label: str | None = None
    explanation: str | None = None


class ScenarioResult(CesModel):
    conversation: str | None = None
    task: str | None = None
    user_facts: list[UserFact] | None = None
    expectation_outcomes: list[ScenarioExpectationOutcome] | None = None
    rubric_outcomes: list[ScenarioRubricOutcome] | None = None
    hallucination_result: list[HallucinationResult] | None = None
    task_completion_result: LabelledScore | None = None
    tool_call_latencies: list[ToolCallLatency] | None = None
    user_goal_satisfaction_result: LabelledScore | None = None
    span_latencies: list[JsonObject] | None = None
    evaluation_expectation_results: list[EvaluationExpectationResult] | None = None
    all_expectations_satisfied: bool | None = None
    task_completed: bool | None = None


class EvaluationResult(CesModel):
    name: str | None = None
    display_name: str | None = None
    create_time: str | None = None
    evaluation_status: str | None = None  # PASS | FAIL
    evaluation_run: str | None = None
    persona: JsonObject | None = None
    error_info: EvaluationErrorInfo | None = None
    error: JsonObject | None = None
    initiated_by: str | None = None
    app_version: str | None = None
    app_version_display_name: str | None = None
    changelog: str | None = None
    changelog_create_time: str | None = None
    execution_state: str | None = None  # RUNNING | COMPLETED | ERROR
    evaluation_metrics_thresholds: EvaluationMetricsThresholds | None = None
    config: JsonObject | None = None
    golden_run_method: str | None = None
    golden_result: GoldenResult | None = None
    scenario_result: ScenarioResult | None = None


# ---- aggregated metrics ----------------------------------------------------------------------------


class ToolMetrics(CesModel):
    tool: str | None = None
    pass_count: int | None = None
    fail_count: int | None = None


class ScoreMetric(CesModel):
    score: float | None = None


class LatencyMetric(CesModel):
    tool: str | None = None
    average_latency: str | None = None


class MetricsByTurn(CesModel):
    turn_index: int | None = None
    tool_metrics: list[ToolMetrics] | None = None
    semantic_similarity_metrics: list[ScoreMetric] | None = None
    hallucination_metrics: list[ScoreMetric] | None = None
    tool_call_latency_metrics: list[LatencyMetric] | None = None
    turn_latency_metrics: list[LatencyMetric] | None = None


class MetricsByAppVersion(MetricsByTurn):
    app_version_id: str | None = None
    pass_count: int | None = None
    fail_count: int | None = None
    metrics_by_turn: list[MetricsByTurn] | None = None


class AggregatedMetrics(CesModel):
    metrics_by_app_version: list[MetricsByAppVersion] | None = None


# ---- the resource ------------------------------------------------------------------------------------


class Evaluation(CesModel):
    """A CES Evaluation: a golden (turns to replay) or a scenario (a task for a simulated user)."""

    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    tags: list[str] | None = None
    evaluation_datasets: list[str] | None = None
    create_time: str | None = None
    created_by: str | None = None
    update_time: str | None = None
    last_updated_by: str | None = None
    evaluation_runs: list[str] | None = None
    etag: str | None = None
    aggregated_metrics: AggregatedMetrics | None = None
    last_completed_result: EvaluationResult | None = None
    invalid: bool | None = None
    last_ten_results: list[EvaluationResult] | None = None
    evaluation_metrics_threshold_override: EvaluationMetricsThresholds | None = None
    evaluation_metrics_config_override: JsonObject | None = None
    golden: Golden | None = None
    scenario: Scenario | None = None


# Written by the server only: never part of an update mask, never sent as a change.
OUTPUT_ONLY_FIELDS = frozenset(
    {
        "name",
        "etag",
        "evaluationDatasets",
        "createTime",
        "createdBy",
        "updateTime",
        "lastUpdatedBy",
        "evaluationRuns",
        "aggregatedMetrics",
        "lastCompletedResult",
        "invalid",
        "lastTenResults",
    }
)


# ---- runs and operations -----------------------------------------------------------------------------


class Progress(CesModel):
    total_count: int | None = None
    failed_count: int | None = None
    error_count: int | None = None
    completed_count: int | None = None
    passed_count: int | None = None


class Status(CesModel):
    code: int | None = None
    message: str | None = None
    details: list[JsonObject] | None = None


class EvaluationRun(CesModel):
    name: str | None = None
    display_name: str | None = None
    evaluation_results: list[str] | None = None
    create_time: str | None = None
    evaluations: list[str] | None = None
    state: str | None = None  # RUNNING | COMPLETED | ERROR
    progress: Progress | None = None
    error: Status | None = None
    error_info: EvaluationErrorInfo | None = None

    @property
    def error_reason(self) -> str:
        """Why the run ended in ERROR, as CES says it (its status message, else its error info)."""
        return (self.error.message if self.error else None) or (
            self.error_info.error_message if self.error_info else None) or "no reason given"


class Operation(CesModel):
    """A long-running operation; CES's run_evaluation names its EvaluationRun in the metadata or response."""

    name: str | None = None
    metadata: JsonObject | None = None
    done: bool | None = None
    error: Status | None = None
    response: JsonObject | None = None

    def evaluation_run(self) -> str | None:
        for holder in (self.metadata, self.response):
            if holder:
                run = holder.get("evaluationRun")
                if isinstance(run, str) and run:
                    return run
        return None


class EvaluationPage(CesModel):
    evaluations: list[Evaluation] = Field(default_factory=list)
    next_page_token: str | None = None


class EvaluationRunPage(CesModel):
    evaluation_runs: list[EvaluationRun] = Field(default_factory=list)
    next_page_token: str | None = None


class EvaluationResultPage(CesModel):
    evaluation_results: list[EvaluationResult] = Field(default_factory=list)
    next_page_token: str | None = None
