"""A folder under evaluation: the agents, eval files and configs below it, kept loaded and current.

Both faces use it: the dashboard browses it, the live loop reloads files as they are saved. A file that
was good and turns bad (a half-saved edit) keeps its last good version, marked stale, with the error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path


from ..schema.config import CONFIG_FILE_NAME, EvalConfig, default_config, load_eval_config
from ..schema.errors import LoadError
from ..schema.load import EVAL_FILE_SUFFIXES, parse_eval_set, read_regular_file
from ..schema.model import EvalCase, EvalSet
from .events import CaseKey
from .plan import SKIP_DIRS, EvalTarget, RunPlan, eval_target
from .versions import case_version

log = logging.getLogger(__name__)



def resolve_path(path: str | Path) -> Path:
    """`Path.resolve()` that survives a symlink loop (Python 3.11 raises RuntimeError for one): the
    absolute path as given, so the file can still be named in an error."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as exc:
        log.debug("cannot resolve %s: %s", path, exc)
        return Path(os.path.abspath(path))


def case_digest(case: EvalCase) -> str:
    """A content hash of a case: an edit to it changes the digest, a reorder of other cases does not.
    (The version a result keeps of its case: `versions.case_version`.)"""
    return case_version(case)


@dataclass(slots=True)
class EvalFileState:
    """An eval file: its last good EvalSet and, if the file is broken now, the error."""

    path: Path
    eval_set: EvalSet | None = None
    error: LoadError | None = None
    legacy: bool = False
    mtime_ns: int = 0

    @property
    def stale(self) -> bool:
        """Broken now, but a last good version is still shown."""
        return self.error is not None and self.eval_set is not None


@dataclass(slots=True)
class ConfigState:
    path: Path
    config: EvalConfig | None = None
    error: LoadError | None = None

    @property
    def stale(self) -> bool:
        return self.error is not None and self.config is not None


@dataclass(slots=True)
class FileChange:
    """What one reload found: which cases changed, appeared or went away, or what kind of file it was."""

    path: Path
    kind: str  # "eval" | "config" | "agent" | "other"
    changed_cases: list[str] = field(default_factory=list)
    added_cases: list[str] = field(default_factory=list)
    removed_cases: list[str] = field(default_factory=list)
    error: LoadError | None = None
    # For configs: criteria changed, so stored inferences must be re-scored (no agent call needed).
    criteria_changed: bool = False
    # For configs: the user simulator's settings changed, so scenario cases must re-run.
    simulator_changed: bool = False
    # For agent sources: the agent folder whose cases must re-run.
    agent_dir: Path | None = None


def _present(path: Path) -> bool:
    """Whether something is at this path. A symlink loop (or an unreadable entry) counts: loading it
    reports what is wrong, where `Path.exists()` would call it deleted. A dangling link does not."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _is_agent_dir(path: Path) -> bool:
    return (path / "agent.py").is_file() or (
        (path / "__init__.py").is_file() and "agent" in (path / "__init__.py").read_text(errors="replace")
    )


class Workspace:
    """Everything tui-eval knows about a folder. Not thread-safe: one owner mutates it."""

    def __init__(self, root: Path, *, agent_ref: str | None = None, config_override: str | Path | None = None) -> None:
        self.root = resolve_path(root)
        self.agent_ref = agent_ref
        self.config_override = resolve_path(config_override) if config_override else None
        self.eval_files: dict[Path, EvalFileState] = {}
        self.configs: dict[Path, ConfigState] = {}
        self.agent_dirs: set[Path] = set()

    # ---- discovery -----------------------------------------------------------------------

    def discover(self) -> list[Path]:
        """Find eval files, configs and agent folders below the root (not loading eval files).

        Folder symlinks are not followed (os.walk's default, kept on purpose): a link loop cannot make
        the walk endless, and a link to a large tree outside the project ($HOME, /) is not searched. A
        symlinked *file* is found like any other; if it is a loop, loading it reports the loop."""
        found: list[Path] = []
        if self.root.is_file():
            found.append(self.root)
        else:
            for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
                here = Path(dirpath)
                if "agent.py" in filenames or ("__init__.py" in filenames and _is_agent_dir(here)):
                    self.agent_dirs.add(here)
                for name in sorted(filenames):
                    if name.endswith(EVAL_FILE_SUFFIXES) or name == CONFIG_FILE_NAME:
                        found.append(here / name)
        if self.config_override is not None:
            found.append(self.config_override)
        return found

    def scan(self) -> list[FileChange]:
        """Discover and load everything (configs first, so eval files can see theirs)."""
        return [self.reload(p) for p in self.load_order(self.discover())]

    def load_order(self, paths: list[Path]) -> list[Path]:
        """The order files are loaded in: configs first, so each eval file sees its config, then eval files."""
        configs = [p for p in paths if p.name == CONFIG_FILE_NAME or p == self.config_override]
        taken = set(configs)
        return configs + [p for p in paths if p not in taken and p.name.endswith(EVAL_FILE_SUFFIXES)]

    # ---- reloading -----------------------------------------------------------------------

    def classify(self, path: Path) -> str:
        path = Path(path)
        if path.name.endswith(EVAL_FILE_SUFFIXES):
            return "eval"
        if path.name == CONFIG_FILE_NAME or (self.config_override is not None and path == self.config_override):
            return "config"
        if path.suffix == ".py" and self.agent_dir_of(path) is not None:
            return "agent"
        return "other"

    def agent_dir_of(self, path: Path) -> Path | None:
        """The agent folder a source file belongs to (the nearest one above it)."""
        path = resolve_path(path)
        for parent in path.parents:
            if parent in self.agent_dirs:
                return parent
            if parent == self.root:
                break
        return None

    def reload(self, path: Path) -> FileChange:
        """Re-read one file after a change (or its deletion) and say what changed."""
        path = resolve_path(path)
        kind = self.classify(path)
        if kind == "eval":
            return self._reload_eval(path)
        if kind == "config":
            return self._reload_config(path)
        if kind == "agent":
            return FileChange(path, "agent", agent_dir=self.agent_dir_of(path))
        return FileChange(path, "other")

    def _reload_eval(self, path: Path) -> FileChange:
        state = self.eval_files.get(path)
        if not _present(path):
            removed = [c.eval_id for c in state.eval_set.eval_cases] if state and state.eval_set else []
            self.eval_files.pop(path, None)
            return FileChange(path, "eval", removed_cases=removed)
        if state is None:
            state = self.eval_files[path] = EvalFileState(path)
        try:
            # Never a plain open: a FIFO named *.evalset.json would block the loop forever.
            raw = read_regular_file(path)
            state.mtime_ns = path.stat().st_mtime_ns
            new, legacy = parse_eval_set(raw, path)
        except LoadError as exc:
            state.error = exc
            return FileChange(path, "eval", error=exc)
        except OSError as exc:
            state.error = LoadError(str(path), f"cannot read file: {exc.strerror or exc}")
            return FileChange(path, "eval", error=state.error)
        old = state.eval_set
        state.eval_set, state.error, state.legacy = new, None, legacy
        if old is None:
            return FileChange(path, "eval", added_cases=[c.eval_id for c in new.eval_cases])
        old_digests = {c.eval_id: case_digest(c) for c in old.eval_cases}
        change = FileChange(path, "eval")
        for case in new.eval_cases:
            before = old_digests.pop(case.eval_id, None)
            if before is None:
                change.added_cases.append(case.eval_id)
            elif before != case_digest(case):
                change.changed_cases.append(case.eval_id)
        change.removed_cases = list(old_digests)
        return change

    def _reload_config(self, path: Path) -> FileChange:
        state = self.configs.get(path)
        if not _present(path):
            self.configs.pop(path, None)
            return FileChange(path, "config", criteria_changed=True)
        if state is None:
            state = self.configs[path] = ConfigState(path)
        try:
            read_regular_file(path)  # a FIFO or a link loop is an error here, not a blocked read below
            new = load_eval_config(path)
        except LoadError as exc:
            state.error = exc
            return FileChange(path, "config", error=exc)
        old = state.config
        state.config, state.error = new, None
        criteria_changed = old is None or {k: c.to_dict() for k, c in old.criteria.items()} != {
            k: c.to_dict() for k, c in new.criteria.items()
        }
        simulator_changed = old is not None and old.user_simulator != new.user_simulator
        return FileChange(path, "config", criteria_changed=criteria_changed, simulator_changed=simulator_changed)

    # ---- questions -----------------------------------------------------------------------

    def config_state_for(self, eval_file: Path) -> ConfigState | None:
        if self.config_override is not None:
            return self.configs.get(self.config_override)
        # A loaded eval file's path is resolved already: the dashboard asks on every cursor move, and
        # resolving costs a syscall per folder (each one a chance for a busy engine thread to take the GIL).
        path = eval_file if eval_file in self.eval_files else resolve_path(eval_file)
        return self.configs.get(path.parent / CONFIG_FILE_NAME)

    def config_for(self, eval_file: Path) -> EvalConfig:
        """The config an eval file runs with (last good version if the file is broken now)."""
        state = self.config_state_for(eval_file)
        if state is None or state.config is None:
            if state is not None and state.error is not None:
                raise state.error
            return default_config()
        return state.config

    def eval_files_of_config(self, config_path: Path) -> list[Path]:
        config_path = resolve_path(config_path)
        if self.config_override is not None and config_path == self.config_override:
            return list(self.eval_files)
        return [p for p in self.eval_files if p.parent == config_path.parent]

    def agent_for(self, eval_file: Path) -> str | None:
        """The agent an eval file runs with: the explicit one, else the agent folder it lives in."""
        if self.agent_ref is not None:
            return self.agent_ref
        path = resolve_path(eval_file)
        for parent in path.parents:
            if parent in self.agent_dirs:
                return str(parent)
            if parent == self.root or parent == parent.parent:
                break
        return None

    def cases(self) -> list[tuple[Path, EvalCase]]:
        out: list[tuple[Path, EvalCase]] = []
        for path, state in sorted(self.eval_files.items()):
            if state.eval_set is not None:
                out.extend((path, c) for c in state.eval_set.eval_cases)
        return out

    def target(self, eval_file: Path, case_ids: list[str] | None = None) -> EvalTarget:
        """A run target for an eval file (all cases, or the given ones that still exist). Raises LoadError
        for a file not loaded, PlanError as `run` does (`plan.eval_target`: a criterion naming an unknown
        metric)."""
        path = resolve_path(eval_file)
        state = self.eval_files.get(path)
        if state is None or state.eval_set is None:
            raise LoadError(str(path), "not a loaded eval file")
        if case_ids is not None:
            known = {c.eval_id for c in state.eval_set.eval_cases}
            case_ids = [i for i in case_ids if i in known]
        return eval_target(path, state.eval_set, self.config_for(path), case_ids)

    def plan_for(self, keys: list[CaseKey] | None = None, files: list[Path] | None = None) -> RunPlan:
        """A plan over whole files, or over exactly the given cases (grouped by file, file order kept).
        Raises LoadError (a broken config with no last good version) or PlanError (`plan.eval_target`)."""
        targets: list[EvalTarget] = []
        if keys is not None:
            # Grouped by the key's file string first: one path resolution per file, not per case
            # (100,000 keys took seconds of realpath calls).
            by_name: dict[str, list[str]] = {}
            for key in keys:
                by_name.setdefault(key.eval_file, []).append(key.eval_id)
            by_file: dict[Path, list[str]] = {}
            for name, ids in by_name.items():
                by_file.setdefault(resolve_path(name), []).extend(ids)
            for path, ids in by_file.items():
                targets.append(self.target(path, ids))
        else:
            for path in files if files is not None else sorted(self.eval_files):
                state = self.eval_files.get(resolve_path(path))
                if state is not None and state.eval_set is not None:
                    targets.append(self.target(path))
        return RunPlan([t for t in targets if t.cases])
