"""Plan a run: which eval files, which cases in each (`FILE:id1,id2`), and the config each runs with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..schema.config import EvalConfig, config_for
from ..schema.errors import LoadError
from ..schema.load import load_eval_set
from ..schema.model import EvalCase, EvalSet
from .events import CaseKey


class PlanError(Exception):
    """The run cannot be planned as asked (bad target, unknown eval id...)."""


@dataclass(slots=True)
class EvalTarget:
    """One eval file of a run, the cases selected in it and the config it runs with."""

    eval_file: Path
    eval_set: EvalSet
    config: EvalConfig
    case_ids: list[str] | None = None

    @property
    def cases(self) -> list[EvalCase]:
        if self.case_ids is None:
            return list(self.eval_set.eval_cases)
        wanted = set(self.case_ids)
        return [c for c in self.eval_set.eval_cases if c.eval_id in wanted]

    def key(self, case: EvalCase) -> CaseKey:
        return CaseKey(str(self.eval_file), case.eval_id)


@dataclass(slots=True)
class RunPlan:
    targets: list[EvalTarget]
    num_runs: int = 1
    warnings: list[str] = field(default_factory=list)

    @property
    def total_cases(self) -> int:
        return sum(len(t.cases) for t in self.targets) * self.num_runs


def split_target(arg: str) -> tuple[str, list[str] | None]:
    """`path/to/x.evalset.json:id1,id2` -> (path, [id1, id2]). A plain path selects every case."""
    path, sep, ids = arg.rpartition(":")
    if sep and path and not Path(arg).exists() and "/" not in ids and "\\" not in ids:
        selected = [i.strip() for i in ids.split(",") if i.strip()]
        if not selected:
            raise PlanError(f"{arg}: no eval ids after ':'")
        return path, selected
    return arg, None


def plan_run(
    eval_args: list[str],
    *,
    config_path: str | Path | None = None,
    num_runs: int = 1,
) -> RunPlan:
    """Load every eval file named. Collects every load error before raising, one line each."""
    errors: list[str] = []
    targets: list[EvalTarget] = []
    warnings: list[str] = []
    config_cache: dict[Path | None, EvalConfig] = {}
    for arg in eval_args:
        try:
            file, ids = split_target(arg)
        except PlanError as exc:
            errors.append(str(exc))
            continue
        path = Path(file)
        if not path.is_file():
            errors.append(f"{file}: no such eval file")
            continue
        try:
            eval_set = load_eval_set(path)
        except LoadError as exc:
            errors.append(str(exc))
            continue
        config_key = Path(config_path) if config_path else path.parent
        try:
            if config_key not in config_cache:
                config_cache[config_key] = config_for(path, config_path)
                cfg = config_cache[config_key]
                warnings.extend(f"{cfg.source}: {w}" for w in cfg.warnings)
            config = config_cache[config_key]
        except LoadError as exc:
            errors.append(str(exc))
            continue
        if config.unknown_metrics:
            errors.append(
                f"{config.source}: unknown metric(s) {', '.join(config.unknown_metrics)}"
                " (a misspelt criterion would never run)"
            )
            continue
        if ids is not None:
            known = {c.eval_id for c in eval_set.eval_cases}
            missing = [i for i in ids if i not in known]
            if missing:
                errors.append(f"{file}: no eval case with id {', '.join(repr(m) for m in missing)}")
                continue
        targets.append(EvalTarget(path, eval_set, config, ids))
    if errors:
        raise PlanError("\n".join(dict.fromkeys(errors)))
    if not targets:
        raise PlanError("no eval files given")
    if num_runs < 1:
        raise PlanError("--num-runs must be at least 1")
    return RunPlan(targets, num_runs=num_runs, warnings=warnings)
