"""Score a saved run again without running its agent: `tui-eval rescore RUN|latest|PATH`.

Each record of the run (one per eval set, found by `history.records_of_run`) gives back its cases' actual
turns (the ADK history file beside it), their session state and calls inside tool calls (the record), and
the criteria it ran with. Every metric is computed again from those turns, against the expected turns
recorded with the run (`recorded`) or the eval file on disk now (`current`), with the record's criteria or
another config, and optionally another judge model. No agent is loaded and no worker started: the run has
no executor, and every case answers from its stored turns. The result is saved as a new run whose kind
says it is a re-score of the old one (`RunKind.rescore_of`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..schema.config import EvalConfig, load_eval_config, read_eval_config
from ..schema.criteria import CATALOG, MetricKind
from ..schema.model import EvalCase, EvalSet, Invocation
from .events import CaseKey
from .plan import EvalTarget, RunPlan, eval_target

Expected = Literal["recorded", "current"]


class RescoreError(ValueError):
    """A saved run that cannot be re-scored as asked; the message says why."""


@dataclass(slots=True)
class RescorePlan:
    """What a re-score runs: the plan (no agent), each case's stored turns and session state, the run it
    re-scores and where its history goes."""

    plan: RunPlan
    inferences: dict[CaseKey, list[Invocation]] = field(default_factory=dict)
    session_states: dict[CaseKey, dict[str, Any] | None] = field(default_factory=dict)
    rescore_of: str = ""
    history: Path = Path(".")
    warnings: list[str] = field(default_factory=list)


def with_judge_model(criteria: dict[str, Any], judge_model: str) -> dict[str, Any]:
    """The criteria with every judged metric asking `judge_model` (a metric that runs on Vertex AI by
    default keeps doing so unless its criterion already names judge options)."""
    out = copy.deepcopy(criteria)
    for name, value in out.items():
        info = CATALOG.get(name)
        named = isinstance(value, dict) and "judge_model_options" in value
        if not named and (info is None or info.kind is not MetricKind.JUDGE):
            continue
        crit = value if isinstance(value, dict) else {"threshold": value}
        options = dict(crit.get("judge_model_options") or {})
        options["judge_model"] = judge_model
        crit["judge_model_options"] = options
        out[name] = crit
    return out


def _config(meta: dict[str, Any], config_path: str | None, judge_model: str | None) -> EvalConfig:
    if config_path is not None:
        config = load_eval_config(config_path)
        if judge_model is None:
            return config
        data: dict[str, Any] = {"criteria": {n: c.to_dict() for n, c in config.criteria.items()},
                                "custom_metrics": {n: c.model_dump(by_alias=False) for n, c in
                                                   config.custom_metrics.items()}}
    else:
        criteria = meta.get("criteria")
        if not isinstance(criteria, dict) or not criteria:
            raise RescoreError(f"{meta.get('name', 'the run')}: the record keeps no criteria: name a --config")
        data = {"criteria": criteria}
        source = meta.get("config_source")
        # The custom metrics the run declared: its config file, when it is still there.
        if isinstance(source, str) and Path(source).is_file():
            data["custom_metrics"] = {n: c.model_dump(by_alias=False)
                                      for n, c in load_eval_config(source).custom_metrics.items()}
    if judge_model is not None:
        data["criteria"] = with_judge_model(data["criteria"], judge_model)
    return read_eval_config(data, source=config_path or "the run's criteria")


def _recorded_case(eval_id: str, expected: list[Invocation] | None, on_disk: EvalCase | None) -> EvalCase | None:
    """The case as the run recorded it: its expected turns from the run, its case-level keys (session
    input, rubrics, final_session_state, expected_nested_calls) from the eval file when it still has it."""
    if expected is None:
        return on_disk  # a scenario case: no reference turns to record
    if on_disk is not None and on_disk.conversation is not None:
        return on_disk.model_copy(update={"conversation": expected})
    return EvalCase(eval_id=eval_id, conversation=expected)


def plan_rescore(records: list[Path], *, config_path: str | None = None, judge_model: str | None = None,
                 expected: Expected = "recorded") -> RescorePlan:
    """What re-scoring the run of these records runs. Raises RescoreError."""
    from ..schema.errors import LoadError, SchemaError
    from ..schema.load import load_eval_set
    from .plan import PlanError
    from .store import RecordError, load_record

    out = RescorePlan(RunPlan(targets=[]))
    run_ids: set[str] = set()
    for path in records:
        try:
            meta, result = load_record(path)
        except RecordError as exc:
            raise RescoreError(str(exc)) from None
        run_ids.add(str(meta.get("run_id")))
        out.history = path.parent
        eval_file = Path(result.eval_set_file or str(meta.get("eval_file") or ""))
        on_disk: EvalSet | None = None
        try:
            on_disk = load_eval_set(eval_file)
        except (LoadError, OSError) as exc:
            if expected == "current":
                raise RescoreError(f"--expected current: {exc}") from None
            out.warnings.append(f"{eval_file}: not readable now ({exc}); the cases' own keys (rubrics, "
                                "final_session_state, expected_nested_calls) are not known")
        cases: list[EvalCase] = []
        for case_result in result.case_results:
            if not case_result.actual:
                out.warnings.append(f"{result.eval_set_id} / {case_result.eval_id}: the run kept no turns "
                                    "(the agent failed, or its ADK history file is gone): not re-scored")
                continue
            disk_case = on_disk.case(case_result.eval_id) if on_disk is not None else None
            if expected == "current":
                case = disk_case
                if case is None:
                    out.warnings.append(f"{result.eval_set_id} / {case_result.eval_id}: no longer in "
                                        f"{eval_file}: not re-scored")
                    continue
            else:
                case = _recorded_case(case_result.eval_id, case_result.expected, disk_case)
                if case is None:
                    out.warnings.append(f"{result.eval_set_id} / {case_result.eval_id}: a scenario case no "
                                        f"longer in {eval_file}: not re-scored")
                    continue
            cases.append(case)
            key = CaseKey(str(eval_file), case.eval_id)
            out.inferences[key] = case_result.actual
            out.session_states[key] = (dict(case_result.final_session_state)
                                       if case_result.final_session_state is not None else None)
        if not cases:
            continue
        eval_set = EvalSet(eval_set_id=result.eval_set_id, eval_cases=cases,
                           name=on_disk.name if on_disk is not None else None)
        try:
            target: EvalTarget = eval_target(eval_file, eval_set, _config(meta, config_path, judge_model))
        except (PlanError, SchemaError, LoadError) as exc:
            raise RescoreError(str(exc)) from None
        out.plan.targets.append(target)
    if not out.plan.targets:
        raise RescoreError("nothing to re-score: the run kept no turns of any case")
    out.rescore_of = ", ".join(sorted(run_ids))
    return out
