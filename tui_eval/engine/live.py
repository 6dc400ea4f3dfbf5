"""The live loop: watch eval files, configs and agent sources, and re-run or re-score exactly what changed.

Both faces drive it: the dashboard folds its events into state, `tui-eval watch` prints them. It sits on
a Workspace (what is loaded, last good versions) and Runs (inference and scoring):
- an edited eval case re-runs that case only; added cases run; removed cases drop;
- a config whose criteria changed re-scores the stored inferences of its eval files, without the agent;
- an edited agent source reloads the agent fresh and re-runs its cases (unless `rerun_on_agent_change`
  is off: then the agent is only marked stale and reloaded before the next run);
- a half-written file keeps its last good version (stale) and reports the error; the next save wins;
- an agent that cannot be imported, raises or hangs makes its cases FAILED with the error; the loop
  goes on.
`handle_changes(paths)` does one batch and is what tests call; `watch()` wraps it in watchfiles'
awatch with a trailing debounce of our own. It is the one watch loop: `tui-eval watch` prints its events,
the dashboard folds them into state. With `rerun` off (the dashboard's live mode off) saves only reload
files and mark edited agents stale; nothing runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..agents.base import AgentError
from ..schema.config import CONFIG_FILE_NAME
from ..schema.errors import LoadError
from ..schema.load import EVAL_FILE_SUFFIXES
from .events import (
    AgentPaused,
    AgentReloaded,
    AgentStale,
    CaseFinished,
    CaseKey,
    CasesRemoved,
    Event,
    FileProblem,
    LiveRunFinished,
    LiveRunStarted,
    Log,
    RunError,
    StaleChanged,
    WatchFailed,
    deliver,
)
from ..executors import BrokenAgentExecutor, Executor
from .options import RunOptions
from .own_writes import SelfWrites
from .plan import PlanError
from .versions import AgentVersions, Current, case_version, criteria_version, stale_reasons, tools_mode
from .plan import SKIP_DIRS
from .workspace import FileChange, Workspace, resolve_path

if TYPE_CHECKING:  # pragma: no cover
    # The runner (with its metrics, insight, pricing and code state) and the result models are
    # imported when a run starts: the dashboard builds a LiveSession at start-up and may never run.
    from ..schema.config import EvalConfig
    from ..schema.model import EvalCase, Invocation
    from ..schema.results import CaseResult
    from .runner import ResultSink, Run, RunRecord

DEFAULT_DEBOUNCE = 0.15
# How often a vanished watched folder is looked for (and how often a live one is checked for having
# been replaced: inotify keeps watching the deleted inode, so a recreated folder is otherwise unseen).
FOLDER_POLL_SECONDS = 0.25

log = logging.getLogger(__name__)


Sink = Callable[[Event], None]


def _folder_ids(paths: list[Path]) -> tuple[tuple[int, int] | None, ...]:
    """(device, inode) of each folder, None where none is: a deleted and re-made folder has a new inode."""
    out: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None)
    return tuple(out)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep, but wake up at once on `stop()`."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except (TimeoutError, asyncio.TimeoutError):
        pass


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@dataclass(slots=True)
class _Batch:
    """What one batch of file changes asks for."""

    run: dict[CaseKey, None] = field(default_factory=dict)
    rescore: dict[CaseKey, None] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    reload_agents: set[str] = field(default_factory=set)


class LiveSession:
    """The live state of a folder under evaluation: workspace, loaded agents and the latest results."""

    def __init__(
        self,
        root: str | Path,
        *,
        agent_ref: str | None = None,
        config_override: str | Path | None = None,
        options: RunOptions | None = None,
        store: ResultSink | None = None,
        on_event: Sink | None = None,
        rerun: bool = True,
        rerun_on_agent_change: bool = True,
        debounce: float = DEFAULT_DEBOUNCE,
        only_files: Iterable[str | Path] | None = None,
        num_runs: int = 1,
    ) -> None:
        if agent_ref is not None and not agent_ref.startswith("replay:"):
            agent_ref = str(Path(agent_ref).resolve())
        self.workspace = Workspace(Path(root), agent_ref=agent_ref, config_override=config_override)
        self.agent_ref = agent_ref
        self.options = options or RunOptions()
        self.store = store
        self.on_event = on_event
        #: Saves re-run (or re-score) what they change; off, they only reload (and mark agents stale).
        self.rerun = rerun
        self.rerun_on_agent_change = rerun_on_agent_change
        self.debounce = debounce
        #: Every run repeats each case this many times (--num-runs).
        self.num_runs = max(1, num_runs)
        self.only_files = {resolve_path(p) for p in only_files} if only_files is not None else None
        #: The latest result of every case (a re-run replaces only the cases it ran).
        self.results: dict[CaseKey, CaseResult] = {}
        self.runs: list[Run] = []
        # Each agent's executor (worker processes stay warm between runs; an edit replaces them).
        self._agents: dict[str, Executor] = {}
        self._stale_agents: set[str] = set()
        # Agents whose last load failed: they get another try after watching was interrupted.
        self._broken: set[str] = set()
        # Files that belong to a loaded agent but are not under an agent folder of the workspace
        # (a replay recording, an --agent folder outside the root).
        self._sources: dict[Path, str] = {}
        #: What each loaded agent runs, and what is on disk (`engine.versions`).
        self.versions = AgentVersions()
        # Agents whose own runs keep changing their files (the bounded rule, `own_writes`).
        self._self_writes = SelfWrites()
        self._paused_told: set[str] = set()
        # Agents whose files changed during a run that just ended, with the keys it ran.
        self._changed_during: dict[str, list[CaseKey]] = {}
        #: Results whose inputs changed on disk since they were computed: key -> reasons (`versions`).
        self.stale: dict[CaseKey, tuple[str, ...]] = {}
        self._case_versions: dict[int, tuple[EvalCase, str]] = {}
        self._criteria_versions: dict[int, tuple[EvalConfig, str]] = {}
        self._lock = asyncio.Lock()
        self._stop: asyncio.Event | None = None
        self._closed = False
        self._root_is_file = self.workspace.root.is_file() or self.workspace.root.name.endswith(EVAL_FILE_SUFFIXES)

    # ---- events ----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, CaseFinished):
            self.results[event.key] = event.result
        if self.on_event is not None:
            deliver(self.on_event, event, RunError)

    # ---- agents ----------------------------------------------------------------------------

    async def agent(self, ref: str) -> Executor:
        """The executor of an agent reference; (re)loads the agent when absent or stale. Never raises:
        an agent that cannot be loaded answers every case with the load error."""
        if ref in self._agents and ref not in self._stale_agents:
            # A save the watcher has not reported yet (saved, then `R` at once): the run must still
            # run the code on disk, so a pool loaded from older files is replaced first.
            if not await asyncio.to_thread(self.versions.changed_on_disk, ref):
                return self._agents[ref]
            self.emit(Log(f"agent {Path(ref).name} changed on disk: reloaded before the run", "info"))
        return await self.reload_agent(ref)

    async def reload_agent(self, ref: str) -> Executor:
        """Load the agent's code afresh: its worker processes are replaced (a warm spare imports it)."""
        from ..executors import executor_for

        executor = self._agents.get(ref)
        self._stale_agents.discard(ref)
        # Read just before the load: the agent loads these files or newer ones (whose results then read
        # as stale, never as fresh).
        await asyncio.to_thread(self.versions.load, ref)
        error: str | None
        try:
            if executor is None or isinstance(executor, BrokenAgentExecutor) or not executor.runs_user_code:
                if executor is not None:
                    await executor.aclose()
                # A replay file is read here: keep the event loop free meanwhile.
                executor = await asyncio.to_thread(executor_for, ref, self.options.executor_options(), live=True)
                error = await executor.start()
            else:
                error = await executor.restart()
        except (AgentError, LoadError) as exc:
            executor, error = BrokenAgentExecutor(ref, str(exc)), str(exc)
        except Exception as exc:  # a bug in a loader must not stop the loop either
            log.exception("loading agent %s failed", ref)
            error = f"{type(exc).__name__}: {exc}"
            executor = BrokenAgentExecutor(ref, error)
        self._agents[ref] = executor
        if error is None:
            self._broken.discard(ref)
        else:
            self._broken.add(ref)
        for path in executor.source_paths():
            self._sources[Path(path).resolve()] = ref
        self.emit(AgentReloaded(ref, error))
        return executor

    # ---- the initial scan and explicit runs --------------------------------------------------

    def _wanted(self, path: Path) -> bool:
        return self.only_files is None or resolve_path(path) in self.only_files

    async def start(self, *, run: bool = True) -> list[RunRecord]:
        """Load everything below the root; then (by default) run every case."""
        changes = self.workspace.scan()
        if self.only_files is not None:
            for path in list(self.workspace.eval_files):
                if not self._wanted(path):
                    del self.workspace.eval_files[path]
        for change in changes:
            self._report_problem(change)
        if not run:
            return []
        return await self.run_keys(self.all_keys(), "initial run")

    def all_keys(self) -> list[CaseKey]:
        return [CaseKey(str(path), case.eval_id) for path, case in self.workspace.cases()]

    def stored_inference(self, key: CaseKey) -> list[Invocation] | None:
        """The actual invocations of a case's latest result, when its inference succeeded."""
        result = self.results.get(key)
        if result is None or result.error is not None or not result.actual:
            return None
        return result.actual

    async def run_keys(self, keys: Iterable[CaseKey], reason: str, *, rescore: bool = False,
                       only_stale: bool = False) -> list[RunRecord]:
        """Run (or, with `rescore`, re-score from stored inferences where there are some) these cases,
        one Run per agent, all at once. With `only_stale`, only those of them still out of date when their
        turn comes (a run queued before them may have run them: see `_outdated`). Returns the records."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return []
        async with self._lock:
            if only_stale:
                keys = [k for k in keys if self._outdated(k)]
                if not keys:
                    return []
            self._reread_saved({k.eval_file for k in keys})
            t0 = time.perf_counter()
            self.emit(LiveRunStarted(reason, tuple(keys), rescore))
            groups: dict[str | None, list[CaseKey]] = {}
            for key in keys:
                groups.setdefault(self.workspace.agent_for(Path(key.eval_file)), []).append(key)
            jobs = []
            for ref, group in groups.items():
                if ref is None:
                    files = sorted({k.eval_file for k in group})
                    self.emit(RunError(f"no agent for {', '.join(files)}: pass --agent or keep the eval file "
                                       "inside an agent folder"))
                    continue
                jobs.append(self._run_group(ref, group, rescore))
            records = [r for r in await asyncio.gather(*jobs) if r is not None]
            self.emit(LiveRunFinished(reason, tuple(keys), rescore, tuple(records), time.perf_counter() - t0))
        await self.restale()
        return records + await self._after_run()

    async def _after_run(self) -> list[RunRecord]:
        """An agent whose files changed during its run: in live mode, re-run its cases now (unless its own
        runs keep changing them: then its re-runs pause, with a notice). Its results are stale meanwhile."""
        changed, self._changed_during = self._changed_during, {}
        records: list[RunRecord] = []
        for ref in sorted(changed):
            if not (self.rerun and self.rerun_on_agent_change):
                self._stale_agents.add(ref)
                continue
            if self._self_writes.paused(ref):
                self._tell_paused(ref)
                continue
            records += await self.run_keys(self._keys_of_agent(ref), f"agent {Path(ref).name} changed during the run",
                                           only_stale=True)
        return records

    def _reread_saved(self, files: Iterable[str]) -> None:
        """Eval files saved since they were read, the watcher not having said so yet (saved, then `r` at
        once): read again before the run is planned, so each case runs as its file has it now."""
        for name in files:
            path = Path(name)
            state = self.workspace.eval_files.get(path)
            if state is None:
                continue
            try:
                saved = path.stat().st_mtime_ns
            except OSError:
                continue  # gone: the watcher's report of it drops its cases
            if saved != state.mtime_ns:
                self._on_eval(self.workspace.reload(path), _Batch())  # reports a bad file, drops removed cases

    def _outdated(self, key: CaseKey) -> bool:
        """Whether a case needs running to be current: stale, never run, or run before versions were kept."""
        if key in self.stale:
            return True
        result = self.results.get(key)
        return result is None or result.versions is None

    def _tell_paused(self, ref: str) -> None:
        if ref not in self._paused_told:
            self._paused_told.add(ref)
            self.emit(AgentPaused(ref, self._self_writes.notice(ref, Path(ref).name)))

    async def _run_group(self, ref: str, keys: list[CaseKey], rescore: bool) -> RunRecord | None:
        from .runner import ResultSink, Run, RunRecord

        inferences: dict[CaseKey, list[Invocation]] = {}
        if rescore:
            for key in keys:
                stored = self.stored_inference(key)
                if stored is not None:
                    inferences[key] = stored
        try:
            plan = self.workspace.plan_for(keys=keys)
        except (LoadError, PlanError) as exc:  # a broken config with no last good version, an unknown metric
            self.emit(RunError(str(exc)))
            return None
        if not plan.targets:
            return None
        plan.num_runs = self.num_runs
        # A pure re-score never touches the agent (not even to load it).
        needs_agent = any(CaseKey(str(t.eval_file), c.eval_id) not in inferences
                          for t in plan.targets for c in t.cases)
        agent = await self.agent(ref) if needs_agent else None
        loaded = self.versions.loaded.get(ref) if needs_agent else None
        stored_versions = {key: self._agent_version_of(key) for key in inferences}
        # The session state each stored inference left: final_session_state_v1 judges it again.
        states = {key: result.final_session_state for key in inferences
                  if (result := self.results.get(key)) is not None}
        run = Run(plan, agent, options=self.options, on_event=self.emit, store=self.store, inferences=inferences,
                  agent_version=loaded, inference_versions=stored_versions,
                  session_states={key: dict(state) if state is not None else None for key, state in states.items()})
        self.runs.append(run)
        try:
            return await run.execute()
        finally:
            self.runs.remove(run)
            if needs_agent:
                on_disk = await asyncio.to_thread(self.versions.on_disk, ref)
                if self._self_writes.ran(ref, loaded, on_disk):
                    self._changed_during.setdefault(ref, []).extend(keys)
                else:
                    self._paused_told.discard(ref)

    def _agent_version_of(self, key: CaseKey) -> str | None:
        """The agent version a case's latest result came from (a re-score keeps it)."""
        result = self.results.get(key)
        versions = result.versions if result is not None else None
        return versions.agent if versions is not None else None

    # ---- stale ------------------------------------------------------------------------------

    def _case_version(self, case: EvalCase) -> str:
        cached = self._case_versions.get(id(case))
        if cached is None or cached[0] is not case:
            cached = self._case_versions[id(case)] = (case, case_version(case))
        return cached[1]

    def _criteria_version(self, config: EvalConfig) -> str:
        cached = self._criteria_versions.get(id(config))
        if cached is None or cached[0] is not config:
            cached = self._criteria_versions[id(config)] = (config, criteria_version(config))
        return cached[1]

    def current(self, key: CaseKey, agents: dict[str, str | None] | None = None) -> Current | None:
        """What a case's result would be computed from now; None when the case is gone."""
        path = Path(key.eval_file)
        state = self.workspace.eval_files.get(path)
        case = None
        if state is not None and state.eval_set is not None:
            case = next((c for c in state.eval_set.eval_cases if c.eval_id == key.eval_id), None)
        if case is None:
            return None
        ref = self.workspace.agent_for(path)
        if agents is None:
            agents = {}
        if ref is not None and ref not in agents:
            agents[ref] = self.versions.on_disk(ref)
        try:
            criteria: str | None = self._criteria_version(self.workspace.config_for(path))
        except LoadError:
            criteria = None
        return Current(agent=agents.get(ref) if ref is not None else None, tools=tools_mode(self.options),
                       case=self._case_version(case), criteria=criteria)

    def stale_now(self) -> dict[CaseKey, tuple[str, ...]]:
        """Every result whose inputs differ from what is on disk now, with the reasons (`stale_reasons`)."""
        agents: dict[str, str | None] = {}
        out: dict[CaseKey, tuple[str, ...]] = {}
        for key, result in list(self.results.items()):
            if result.versions is None:
                continue
            now = self.current(key, agents)
            reasons = stale_reasons(result.versions, now) if now is not None else ()
            if reasons:
                out[key] = reasons
        return out

    async def restale(self) -> None:
        """Work out the stale results again (on a thread: it hashes the agents' files) and tell the faces
        what changed (StaleChanged)."""
        now = await asyncio.to_thread(self.stale_now)
        old = self.stale
        became = tuple((k, r) for k, r in now.items() if old.get(k) != r)
        fresh = tuple(k for k in old if k not in now)
        self.stale = now
        if became or fresh:
            self.emit(StaleChanged(became, fresh))

    def request_stop(self) -> None:
        """From any thread: the runs in progress start no further case (`cancel` stops the rest)."""
        for run in list(self.runs):
            run.request_stop()

    def skip(self, key: CaseKey) -> bool:
        """Skip one running case of the runs in progress (`Run.skip`); False if none runs it."""
        return any([run.skip(key) for run in list(self.runs)])

    def cancel(self) -> None:
        """Cancel every run in progress (finished cases are kept)."""
        for run in list(self.runs):
            run.cancel()

    # ---- reacting to changes -----------------------------------------------------------------

    def _report_problem(self, change: FileChange) -> None:
        if change.error is None:
            return
        state: Any = (self.workspace.eval_files.get(change.path) if change.kind == "eval"
                      else self.workspace.configs.get(change.path))
        self.emit(FileProblem(str(change.path), str(change.error), bool(state is not None and state.stale)))

    def _agent_ref_for_source(self, path: Path) -> str | None:
        """The agent whose source this file is, if any."""
        ref = self._sources.get(path)
        if ref is not None:
            return ref
        agent_dir = self.workspace.agent_dir_of(path) if path.suffix == ".py" else None
        if agent_dir is None:
            return None
        if self.agent_ref is not None:
            # Every eval file runs with the explicit agent: only its own folder counts.
            return self.agent_ref if Path(self.agent_ref) == agent_dir else None
        return str(agent_dir)

    def _keys_of_agent(self, ref: str) -> list[CaseKey]:
        return [CaseKey(str(p), c.eval_id) for p, c in self.workspace.cases()
                if self.workspace.agent_for(p) == ref]

    def _on_eval(self, change: FileChange, batch: _Batch) -> None:
        path = str(change.path)
        if change.error is not None:
            self._report_problem(change)
            return
        removed = tuple(CaseKey(path, i) for i in change.removed_cases)
        for key in removed:
            self.results.pop(key, None)
        if removed:
            self.emit(CasesRemoved(removed))
        edited = change.changed_cases + change.added_cases
        for eval_id in edited:
            batch.run[CaseKey(path, eval_id)] = None
        if edited:
            batch.reasons.append(f"{change.path.name}: {', '.join(edited)}")

    def _on_config(self, change: FileChange, batch: _Batch) -> None:
        if change.error is not None:
            self._report_problem(change)
            return
        state = self.workspace.configs.get(change.path)
        if state is not None and state.config is not None:
            for warning in state.config.warnings:
                self.emit(Log(f"{change.path}: {warning}", "warning"))
        files = [p for p in self.workspace.eval_files_of_config(change.path) if self._wanted(p)]
        if change.simulator_changed:
            # The simulated user writes the conversation: its settings changing means new turns.
            scenario = [CaseKey(str(p), c.eval_id) for p, c in self.workspace.cases() if p in files and c.is_scenario]
            for key in scenario:
                batch.run[key] = None
            if scenario:
                batch.reasons.append(f"{change.path.name} user simulator: re-run {_plural(len(scenario), 'scenario case')}")
        if not change.criteria_changed:
            return
        keys = [CaseKey(str(p), c.eval_id) for p, c in self.workspace.cases() if p in files]
        for key in keys:
            if key not in batch.run:
                batch.rescore[key] = None
        if keys:
            batch.reasons.append(f"{change.path.name} criteria: re-score {_plural(len(files), 'eval file')}")

    async def _agent_saved(self, ref: str, path: Path, batch: _Batch) -> None:
        """A file of an agent changed. Nothing to do when the files are what its loaded executor runs (a
        write that changed no byte, or one a re-run after its run has taken in already); when its live
        re-runs are paused and nothing changed since its last run ended, its results stay stale; else
        it is an edit."""
        if ref in self.versions.loaded:
            on_disk = await asyncio.to_thread(self.versions.on_disk, ref)
            if on_disk == self.versions.loaded[ref] and ref not in self._stale_agents:
                return
            if self._self_writes.paused(ref) and not self._self_writes.changed_since_run(ref, on_disk):
                self._tell_paused(ref)
                return
        self._on_agent(ref, path, batch)

    def _on_agent(self, ref: str, path: Path, batch: _Batch) -> None:
        if not (self.rerun and self.rerun_on_agent_change):
            if ref in self._agents:
                self._stale_agents.add(ref)
            self.emit(AgentStale(ref, str(path)))
            return
        batch.reload_agents.add(ref)
        for key in self._keys_of_agent(ref):
            batch.run[key] = None
        batch.reasons.append(f"agent {Path(ref).name}: {path.name}")

    async def handle_changes(self, paths: Iterable[str | Path]) -> list[RunRecord]:
        """React to one batch of changed (or deleted) files: reload them, then (with `rerun`) re-run and
        re-score what they affect. Never raises for a bad file or a broken agent: those are reported as events."""
        batch = _Batch()
        agent_paths: dict[str, Path] = {}
        resolved = list(dict.fromkeys(resolve_path(p) for p in paths))
        if any(p.name in ("agent.py", "__init__.py") and p.parent not in self.workspace.agent_dirs
               for p in resolved):
            self.workspace.discover()  # a new agent folder appeared
        for path in resolved:
            try:
                ref = self._agent_ref_for_source(path)
                kind = self.workspace.classify(path)
                if kind == "eval" and self._wanted(path):
                    self._on_eval(self.workspace.reload(path), batch)
                elif kind == "config":
                    self._on_config(self.workspace.reload(path), batch)
                if ref is not None:
                    agent_paths.setdefault(ref, path)
            except Exception as exc:  # one file's trouble must not lose the others
                log.exception("reacting to a change of %s failed", path)
                self.emit(RunError(f"{path}: {type(exc).__name__}: {exc}"))
        for ref, path in agent_paths.items():
            await self._agent_saved(ref, path, batch)
        await self.restale()
        if not self.rerun:
            return []
        # Reloaded when a run next needs them, not now: a run of theirs may be under way (its end
        # re-runs what an edit during it made stale).
        self._stale_agents.update(r for r in batch.reload_agents if r in self._agents)
        records: list[RunRecord] = []
        reason = "; ".join(batch.reasons) or "files changed"
        rescore = [k for k in batch.rescore if k not in batch.run]
        # Only what is still out of date when its turn comes: a run under way, or the re-run at its end,
        # may have run it with these very files already.
        if batch.run:
            records += await self.run_keys(batch.run, reason, only_stale=True)
        if rescore:
            records += await self.run_keys(rescore, reason, rescore=True, only_stale=True)
        return records

    # ---- watching ----------------------------------------------------------------------------

    def watch_paths(self) -> list[Path]:
        """The folders to watch: the root, plus an explicit agent or replay file outside it."""
        root = self.workspace.root
        # Decided once: a root folder that vanishes for a while must not turn into its parent.
        paths = [root.parent if self._root_is_file else root]
        extra: list[Path] = []
        if self.agent_ref is not None:
            ref = self.agent_ref.removeprefix("replay:")
            extra.append(resolve_path(ref))
        if self.workspace.config_override is not None:
            extra.append(self.workspace.config_override)
        for path in extra:
            folder = path if path.is_dir() else path.parent
            if not any(folder == p or p in folder.parents for p in paths):
                paths.append(folder)
        return paths

    def relevant(self, path: str | Path) -> bool:
        """Whether a changed path can matter: eval files, configs, Python sources, agent sources;
        never our own history, caches, VCS folders or editors' hidden temp files."""
        p = Path(path)
        name = p.name
        if name.startswith(".") or name.endswith("~"):
            return False
        for base in self.watch_paths():
            try:
                rel = p.relative_to(base)
            except ValueError:
                continue
            if any(part in SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
                return False
            break
        if name.endswith(EVAL_FILE_SUFFIXES) or name == CONFIG_FILE_NAME or name.endswith(".py"):
            return True
        resolved = resolve_path(p)
        return resolved in self._sources or resolved == self.workspace.config_override

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def watch(self, *, ready: asyncio.Event | None = None, retry_after: float | None = None) -> None:
        """Watch until `stop()`: each burst of saves becomes one `handle_changes` call once the files
        have been quiet for `debounce` seconds (editors save in several steps). `ready` is set once the
        watcher is up.

        A watched folder that is deleted (or deleted and made again) is not a failure: it is reported
        (WatchFailed) and looked for every FOLDER_POLL_SECONDS; once it is back the watcher restarts on
        it and everything below is re-read, so what changed meanwhile runs. If the watcher itself fails
        otherwise, with `retry_after` it is reported (WatchFailed) and restarted after that many seconds;
        without, the error is raised."""
        stop = self._stop = asyncio.Event()
        if self._closed:
            return
        rescan = False
        reported: tuple[Path, ...] = ()
        while not stop.is_set():
            paths = self.watch_paths()
            ids = _folder_ids(paths)
            present = [p for p, i in zip(paths, ids) if i is not None]
            missing = tuple(p for p, i in zip(paths, ids) if i is None)
            if missing != reported:
                if missing:
                    names = ", ".join(str(p) for p in missing)
                    log.warning("watched folder gone: %s", names)
                    self.emit(WatchFailed(f"{names} is gone; waiting for it to come back", FOLDER_POLL_SECONDS))
                else:
                    self.emit(Log(f"watching {', '.join(str(p) for p in paths)} again", "info"))
                reported = missing
            if not present:
                await self._wait_for_change(stop, paths, ids)
                rescan = True
                continue
            try:
                moved = await self._watch_until_stopped(stop, ready, present, lambda: _folder_ids(paths) != ids,
                                                        rescan)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _folder_ids(paths) != ids:  # the watcher died with its folder: wait for the folder
                    log.info("the file watcher ended with its folder: %s", exc)
                    rescan = True
                    continue
                if retry_after is None:
                    raise
                log.exception("the file watcher failed; restarting it in %.1f s", retry_after)
                self.emit(WatchFailed(f"{type(exc).__name__}: {exc}", retry_after))
                await _wait(stop, retry_after)
                rescan = True
                continue
            rescan = moved
            if not moved and not stop.is_set():
                # awatch ended on its own (some platforms end it when its folder goes): look again soon.
                await _wait(stop, FOLDER_POLL_SECONDS)
                rescan = True

    async def _wait_for_change(self, stop: asyncio.Event, paths: list[Path],
                               ids: tuple[tuple[int, int] | None, ...]) -> None:
        """Wait (until `stop()`) for any watched folder to come back or be replaced."""
        while not stop.is_set() and _folder_ids(paths) == ids:
            await _wait(stop, FOLDER_POLL_SECONDS)

    def _rescan_paths(self) -> set[Path]:
        """Every file to re-read after watching was interrupted: what is there now, and what was. The
        loaded agents' sources are in it too: while no watcher ran they may have changed (a checkout of
        another branch), so they reload (or, with re-runs on agent edits off, are marked stale)."""
        # An agent that could not load while its folder was gone gets another try on its next run.
        self._stale_agents |= self._broken & set(self._agents)
        found = set(self.workspace.discover())
        return found | set(self.workspace.eval_files) | set(self.workspace.configs) | set(self._sources)

    async def _watch_until_stopped(self, stop: asyncio.Event, ready: asyncio.Event | None, paths: list[Path],
                                   moved: Callable[[], bool], rescan: bool) -> bool:
        """Run one watcher on `paths` until `stop()` (returns False) or until `moved()` says a watched
        folder vanished or was replaced (returns True). With `rescan`, re-reads every file once the
        watcher is up, so nothing saved while no watcher ran is missed."""
        from watchfiles import awatch

        queue: asyncio.Queue[set[Path]] = asyncio.Queue()
        folder_moved = False

        async def read() -> None:
            nonlocal folder_moved
            async for changes in awatch(
                *paths,
                watch_filter=lambda _change, path: self.relevant(path),
                stop_event=stop,
                step=20,
                rust_timeout=int(FOLDER_POLL_SECONDS * 1000),
                yield_on_timeout=True,
            ):
                if changes:
                    queue.put_nowait({Path(p) for _, p in changes})
                elif ready is not None and not ready.is_set():
                    ready.set()  # the watcher is up and has seen no change yet
                if moved():  # one stat per folder per tick: inotify never reports its folder's return
                    folder_moved = True
                    return

        reader = asyncio.create_task(read())
        stopper = asyncio.create_task(stop.wait())
        if rescan:
            # Queued now, handled after the debounce: by then the reader has set the watcher up.
            queue.put_nowait(self._rescan_paths())
        try:
            while not stop.is_set():
                getter = asyncio.create_task(queue.get())
                done, _ = await asyncio.wait({getter, stopper, reader}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    if reader in done and not stop.is_set():
                        reader.result()  # the watcher died: raise its error
                    break
                pending = set(getter.result())
                while True:  # trailing debounce: wait for the burst to end
                    try:
                        pending |= await asyncio.wait_for(queue.get(), self.debounce)
                    except (TimeoutError, asyncio.TimeoutError):
                        break
                try:
                    await self.handle_changes(sorted(pending))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep watching whatever happened
                    log.exception("live update failed")
                    self.emit(RunError(f"live update failed: {type(exc).__name__}: {exc}"))
        finally:
            stopper.cancel()
            reader.cancel()
            await asyncio.gather(reader, stopper, return_exceptions=True)
        return folder_moved

    async def aclose(self) -> None:
        self._closed = True
        self.stop()
        self.cancel()
        agents, self._agents = dict(self._agents), {}
        for ref, executor in agents.items():
            try:
                await executor.aclose()
            except Exception:  # one agent failing to close must not keep the others open
                log.exception("closing agent %s failed", ref)
