"""One metric catalog (`schema/criteria.py`'s CATALOG): each row names a metric, its criterion model, its
kind, what it needs and the module that implements it; the registry and the faces read it, nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tui_eval.metrics.base import get_metric
from tui_eval.schema.config import read_eval_config
from tui_eval.schema.criteria import CATALOG, MetricKind


@pytest.mark.parametrize("name", list(CATALOG))
def test_each_row_is_what_its_module_registers(name: str) -> None:
    info = CATALOG[name]
    spec = get_metric(name)
    assert spec is not None, f"{info.module} registers no {name}"
    assert spec.evaluate.__module__.startswith(info.module)
    assert (spec.kind, spec.needs_judge, spec.needs_reference, spec.scenario_only) == (
        info.kind, info.kind is MetricKind.JUDGE, info.needs_reference, info.scenario_only)


def test_what_each_metric_needs_is_adks() -> None:
    # ADK's evaluators that read expected invocations, and CES's golden-turn comparisons.
    assert {n for n, i in CATALOG.items() if i.needs_reference} == {
        "tool_trajectory_avg_score", "response_evaluation_score", "response_match_score",
        "final_response_match_v2", "ces_tool_invocation", "ces_parameter_correctness",
        "ces_tool_ordered_invocation", "ces_semantic_similarity",
        # tui-eval's own: the calls expected inside tool calls are keyed by the expected turns' ids.
        "deep_tool_trajectory_v1"}
    assert {n for n, i in CATALOG.items() if i.scenario_only} == {"per_turn_user_simulator_quality_v1"}


def test_a_deterministic_metric_loads_only_its_own_module() -> None:
    code = (
        "import sys\n"
        "from tui_eval.metrics.base import get_metric\n"
        "assert get_metric('response_match_score') is not None\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('tui_eval.metrics.', 'google.genai')))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.strip().split(","))
    assert loaded & {info.module for info in CATALOG.values()} == {"tui_eval.metrics.response_match"}
    assert not any(m.startswith("google.genai") for m in loaded)


@pytest.mark.parametrize(
    ("criterion", "requested"),
    [
        (0.8, False),
        ({"threshold": 0.8}, False),
        ({"threshold": 0.8, "judge_model_options": {"num_samples": 1}}, True),
        ({"threshold": 0.8, "judgeModelOptions": {"numSamples": 1}}, True),
    ],
)
def test_safety_judge_mode_is_a_property_of_its_criterion(criterion: object, requested: bool) -> None:
    """safety_v1 runs on Vertex AI as in ADK, unless its criterion names judge options (in either case)."""
    crit = read_eval_config({"criteria": {"safety_v1": criterion}}).criteria["safety_v1"]
    assert crit.judge_requested is requested
    spec = get_metric("safety_v1")
    assert spec is not None and spec.kind is MetricKind.VERTEX and not spec.needs_judge
