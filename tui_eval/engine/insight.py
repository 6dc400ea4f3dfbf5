"""What a run adds up to across cases: repeats (k/N, pass@k), token usage and estimated cost, tool latency.

Built once from a finished run's results (never on the per-case hot path) and stored in each run record.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..metrics.base import get_metric
from ..schema.config import EvalConfig
from ..schema.model import Invocation, InvocationEvents
from ..schema.results import EvalSetResult
from ..schema.usage import TokenUsage
from .latency import DurationStats, ToolCallTiming, ToolLatency, tool_latencies, turn_wall_times
from .pricing import CostEstimate, PriceTable, UsageBook, estimate_cost
from .repeats import CaseRepeats, summarize_case

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.client import JudgeStats

log = logging.getLogger(__name__)

# The model named when an agent's usage metadata says none (ADK events carry model_version).
UNKNOWN_MODEL = "unknown model"


class RunInsight(BaseModel):
    """The run-wide aggregates a summary, a record and a shared report show."""

    model_config = ConfigDict(frozen=True)

    num_runs: int = 1
    # Eval file -> its cases over the repetitions, in case order (runs with N > 1 only).
    repeats: dict[str, list[CaseRepeats]] = {}
    cost: CostEstimate | None = None
    tool_latency: list[ToolLatency] = []
    turn_wall: DurationStats | None = None
    wall_seconds: float = 0.0

    @property
    def all_repeats(self) -> list[CaseRepeats]:
        return [r for cases in self.repeats.values() for r in cases]


def _count(meta: object, name: str) -> int | None:
    """One count of a usage metadata, as a dict (snake or camel case) or an object (google-genai's)."""
    if isinstance(meta, Mapping):
        camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
        value = meta.get(name, meta.get(camel))
    else:
        value = getattr(meta, name, None)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_from_metadata(meta: object) -> TokenUsage | None:
    """TokenUsage of Gemini usage metadata (ADK's `usage_metadata` on an event); None when absent."""
    if meta is None:
        return None
    counts = {n: _count(meta, n) for n in ("prompt_token_count", "candidates_token_count",
                                          "cached_content_token_count", "thoughts_token_count",
                                          "total_token_count")}
    if all(v is None for v in counts.values()):
        return None
    return TokenUsage.from_gemini(**counts)


def invocation_usage(inv: Invocation) -> list[tuple[str, TokenUsage]]:
    """(model, usage) of every model call recorded in a turn's events (ADK's invocation_events shape)."""
    data = inv.intermediate_data
    if not isinstance(data, InvocationEvents):
        return []
    out: list[tuple[str, TokenUsage]] = []
    for event in data.invocation_events:
        usage = usage_from_metadata(event.usage_metadata)
        if usage is not None:
            out.append((event.model_version or UNKNOWN_MODEL, usage))
    return out


def _tool_ok(inv: Invocation) -> dict[str, bool]:
    """call id -> whether the tool answered without an `error` key (how ADK tools report failures)."""
    out: dict[str, bool] = {}
    for r in inv.tool_responses:
        if r.id is not None:
            out[r.id] = not (isinstance(r.response, dict) and "error" in r.response)
    return out


def invocation_tool_timings(inv: Invocation) -> list[ToolCallTiming]:
    """A turn's timed tool calls; a call failed when its response has an `error` key."""
    if not inv.tool_timings:
        return []
    ok = _tool_ok(inv)
    # A mocked call (--mock-tools) ran no tool: its time says nothing about the tool's latency.
    return [ToolCallTiming(name=t.name, seconds=t.seconds, ok=ok.get(t.call_id, True) if t.call_id else True)
            for t in inv.tool_timings if not t.mocked]


def tool_call_timings(results: Iterable[EvalSetResult]) -> list[ToolCallTiming]:
    return [timing for result in results for case in result.case_results for inv in case.actual
            for timing in invocation_tool_timings(inv)]


def judge_models(configs: Iterable[EvalConfig]) -> list[str]:
    """The judge models a run's configs name: the judged criteria's, else the user simulator's."""
    names: list[str] = []
    simulators: list[str] = []
    for config in configs:
        for name, crit in config.criteria.items():
            spec = get_metric(name)
            if spec is not None and spec.needs_judge:
                names.append(crit.judge.judge_model)
        simulators.append(config.user_simulator.model)
    return list(dict.fromkeys(names or simulators))


def usage_book(results: Sequence[EvalSetResult], repetitions: Sequence[int],
               judge_stats: JudgeStats | None, judge_model: str | None) -> UsageBook:
    """Agent usage per turn (from the turns' events) and the judge's run total (its service counts it)."""
    book = UsageBook()
    for result, rep in zip(results, repetitions):
        for case in result.case_results:
            for turn, inv in enumerate(case.actual):
                for model, usage in invocation_usage(inv):
                    book.add("agent", model, usage, case_id=case.eval_id, repetition=rep, turn=turn)
    if judge_stats is not None and (judge_stats.prompt_tokens or judge_stats.output_tokens or judge_stats.total_tokens):
        # The judge service counts no cached tokens: its cached count stays 0.
        book.add("judge", judge_model or UNKNOWN_MODEL,
                 TokenUsage(prompt_tokens=judge_stats.prompt_tokens, output_tokens=judge_stats.output_tokens,
                            total_tokens=judge_stats.total_tokens))
    return book


def build_insight(results: Sequence[EvalSetResult], repetitions: Sequence[int], *, num_runs: int,
                  judge_stats: JudgeStats | None = None, configs: Iterable[EvalConfig] = (),
                  prices: PriceTable | None = None, wall_seconds: float = 0.0) -> RunInsight:
    statuses: dict[str, dict[str, list[Any]]] = {}
    # A single run has nothing to say across repetitions (k/1): no repeats, no cost on big runs.
    for result in results if num_runs > 1 else ():
        per_case = statuses.setdefault(result.eval_set_file, {})
        for case in result.case_results:
            per_case.setdefault(case.eval_id, []).append(case.status)
    repeats = {file: [summarize_case(cid, s) for cid, s in cases.items()] for file, cases in statuses.items()}
    models = judge_models(configs)
    # Several judge models share one counter: name them all (no single price fits, the cost says so).
    judge_model = models[0] if len(models) == 1 else (" + ".join(models) if models else None)
    # A run with neither model events, timings nor durations (replayed turns) has nothing to add up:
    # one quick pass says so, instead of three passes over every turn.
    if any(isinstance(inv.intermediate_data, InvocationEvents) or inv.tool_timings or inv.duration is not None
           for r in results for c in r.case_results for inv in c.actual):
        book = usage_book(results, repetitions, judge_stats, judge_model)
        walls = [inv.duration for r in results for c in r.case_results for inv in c.actual if inv.duration is not None]
        timings = tool_call_timings(results)
    else:
        book = usage_book((), (), judge_stats, judge_model)
        walls, timings = [], []
    by_model = book.by_model()
    cost = estimate_cost(by_model, prices) if by_model else None
    return RunInsight(num_runs=num_runs, repeats=repeats, cost=cost, tool_latency=tool_latencies(timings),
                      turn_wall=turn_wall_times(walls), wall_seconds=wall_seconds)
