"""Plan a run: which eval files, which cases in each (`FILE:id1,id2`), and the config each runs with.

An eval target is what `adk eval` accepts too: an eval file, a folder (every eval file below it), or an
eval set id, which resolves as google-adk 2.13's LocalEvalSetsManager does: `<agent>/<id>.evalset.json`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..schema.config import EvalConfig, config_for
from ..schema.criteria import METRIC_NAMES
from ..schema.errors import LoadError, did_you_mean
from ..schema.load import EVAL_FILE_SUFFIXES, load_eval_set
from ..schema.model import EvalCase, EvalSet
from .events import CaseKey

# Folders never searched: VCS, caches, virtualenvs, our own history.
SKIP_DIRS = {".git", ".hg", ".svn", ".adk", ".tui-eval", "__pycache__", "node_modules", ".venv", "venv",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", "site-packages", "build", "dist"}


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


def eval_target(path: Path, eval_set: EvalSet, config: EvalConfig, case_ids: list[str] | None = None) -> EvalTarget:
    """The one way a run target is made, for every face (`run`, `watch`, the dashboard, the Python API).

    One policy for a criterion naming an unknown metric: the target is refused with a PlanError naming
    it (with a did-you-mean), because a misspelt criterion would otherwise never run, unseen. Cases
    imported from CES are also scored the way CES scores them."""
    if config.unknown_metrics:
        choices = [*METRIC_NAMES, *config.custom_metrics]
        named = ", ".join(f"{m}{did_you_mean(m, choices)}" for m in config.unknown_metrics)
        raise PlanError(f"{config.source or 'config'}: unknown metric(s) {named} (a misspelt criterion would "
                        "never run)")
    # Here, not at the top: the metrics (and their result models) are only needed once a run is planned.
    from ..metrics.ces import with_ces_metrics

    return EvalTarget(path, eval_set, with_ces_metrics(config, eval_set), case_ids)


def split_target(arg: str) -> tuple[str, list[str] | None]:
    """`path/to/x.evalset.json:id1,id2` -> (path, [id1, id2]). A plain path selects every case."""
    path, sep, ids = arg.rpartition(":")
    if sep and path and not Path(arg).exists() and "/" not in ids and "\\" not in ids:
        selected = [i.strip() for i in ids.split(",") if i.strip()]
        if not selected:
            raise PlanError(f"{arg}: no eval ids after ':'")
        return path, selected
    return arg, None


ADK_EVAL_SET_SUFFIX = ".evalset.json"


def eval_files_below(folder: Path) -> list[Path]:
    """Every `*.evalset.json` and `*.test.json` below a folder, in path order (hidden folders,
    virtualenvs, caches and eval history skipped, as the dashboard's discovery does)."""

    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found.extend(Path(dirpath) / n for n in sorted(filenames) if n.endswith(EVAL_FILE_SUFFIXES))
    return found


def resolve_target(arg: str, agent_dir: Path | None = None) -> list[tuple[Path, list[str] | None]]:
    """The eval files one target names, each with its case selection. Raises PlanError."""
    file, ids = split_target(arg)
    path = Path(file)
    if path.is_file() or (path.is_symlink() and not path.exists()):  # a broken link or a loop: say which
        return [(path, ids)]
    # A bare name is an eval set id first (`adk eval agent my_set` run beside a `my_set/` folder).
    as_id = agent_dir is not None and bool(file) and not any(c in file for c in "/\\\x00") \
        and file not in (".", "..")
    by_id = agent_dir / f"{file}{ADK_EVAL_SET_SUFFIX}" if agent_dir is not None and as_id else None
    if by_id is not None and by_id.is_file():
        return [(by_id, ids)]
    if path.is_dir():
        if ids is not None:
            raise PlanError(f"{arg}: a case selection (':id1,id2') needs one eval file, not a folder")
        files = eval_files_below(path)
        if not files:
            raise PlanError(f"{file}: no eval files (*.evalset.json, *.test.json) below this folder")
        return [(f, None) for f in files]
    if by_id is not None:
        raise PlanError(f"{file}: no such eval file, and no eval set with that id ({by_id} does not exist)")
    raise PlanError(f"{file}: no such eval file")


def _identity(path: Path) -> Path:
    """The file a path names, for spotting one file named twice; a symlink loop (which cannot be
    resolved) is its own absolute path, and loading it then says what it is."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: pathlib's "Symlink loop" before Python 3.13
        return Path(os.path.abspath(path))


def plan_run(
    eval_args: list[str],
    *,
    config_path: str | Path | None = None,
    num_runs: int = 1,
    agent_dir: str | Path | None = None,
    config: EvalConfig | None = None,
) -> RunPlan:
    """Load every eval file named (files, folders, or eval set ids of the agent in `agent_dir`).
    `config` (a loaded EvalConfig) or `config_path` overrides each file's test_config.json.
    Collects every load error before raising, one line each."""
    errors: list[str] = []
    targets: list[EvalTarget] = []
    warnings: list[str] = []
    config_cache: dict[Path | None, EvalConfig] = {}
    if config is not None:
        warnings.extend(f"{config.source or 'config'}: {w}" for w in config.warnings)
    resolved: list[tuple[Path, list[str] | None]] = []
    whole: set[Path] = set()
    for arg in eval_args:
        try:
            found = resolve_target(arg, Path(agent_dir) if agent_dir is not None else None)
        except PlanError as exc:
            errors.append(str(exc))
            continue
        for path, ids in found:
            # A file already running whole (named twice, or also inside a folder named) runs once.
            if ids is None:
                key = _identity(path)
                if key in whole:
                    continue
                whole.add(key)
            resolved.append((path, ids))
    for path, ids in resolved:
        file = str(path)
        try:
            eval_set = load_eval_set(path)
        except LoadError as exc:
            errors.append(str(exc))
            continue
        config_key = Path(config_path) if config_path else path.parent
        try:
            if config is not None:
                config_cache[config_key] = config
            if config_key not in config_cache:
                config_cache[config_key] = config_for(path, config_path)
                cfg = config_cache[config_key]
                warnings.extend(f"{cfg.source}: {w}" for w in cfg.warnings)
            file_config = config_cache[config_key]
        except LoadError as exc:
            errors.append(str(exc))
            continue
        try:
            target = eval_target(path, eval_set, file_config, ids)
        except PlanError as exc:
            errors.append(str(exc))
            continue
        if ids is not None:
            known = {c.eval_id for c in eval_set.eval_cases}
            missing = [i for i in ids if i not in known]
            if missing:
                errors.append(f"{file}: no eval case with id {', '.join(repr(m) for m in missing)}")
                continue
        targets.append(target)
    if errors:
        raise PlanError("\n".join(dict.fromkeys(errors)))
    if not targets:
        raise PlanError("no eval files given")
    if num_runs < 1:
        raise PlanError("--num-runs must be at least 1")
    return RunPlan(targets, num_runs=num_runs, warnings=warnings)
