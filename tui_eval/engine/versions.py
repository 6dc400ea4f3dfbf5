"""Versions and stale: what a result was computed from, and the one rule that says it is out of date.

A result carries `ResultVersions` (schema.results): the agent's code (`agents.version`), the tools' mode,
the eval case as run, the effective criteria and the judge. `Current` is the same, as things are on disk
now (or as a run would run them now). `stale_reasons` compares the two: every face asks it, so the tree,
the summaries, `watch`, `run`'s summary and the reports never disagree about what is stale.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..agents.version import agent_version, sha256_file
from ..schema.fast import adk_json_default

if TYPE_CHECKING:  # pragma: no cover
    # The result models load when a run starts: the dashboard's engine builds a LiveSession at start-up.
    from ..schema.results import JudgeVersion, ResultVersions
    from ..schema.config import EvalConfig
    from ..schema.model import EvalCase
    from ..schema.results import CaseResult, EvalSetResult
    from .options import RunOptions

log = logging.getLogger(__name__)

_DIGITS = 16
# A result that no agent ran (a re-score of stored turns keeps the version its turns came from).
TOOLS_LIVE = "live"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:_DIGITS]


def case_version(case: EvalCase) -> str:
    """The eval case as it would run: a hash of its JSON (ADK's shape, keys sorted)."""
    try:
        return _digest(orjson.dumps(case, default=adk_json_default, option=orjson.OPT_SORT_KEYS))
    except orjson.JSONEncodeError:  # nested deeper than orjson goes (a hostile recorded response)
        import json

        return _digest(json.dumps(case.to_dict(), sort_keys=True, default=repr).encode())


def criteria_version(config: EvalConfig) -> str:
    """The effective criteria (thresholds, metric options, user simulator): a hash of their JSON."""
    return _digest(orjson.dumps(config.to_dict(), option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))


def tools_mode(options: RunOptions) -> str:
    """live | mock-strict | mock-fallback: the run kind's tools place, as the run record names it."""
    return f"mock-{options.mock_tools}" if options.mock_tools else TOOLS_LIVE


def judge_version(options: RunOptions, model_version: str | None = None) -> JudgeVersion:
    """The judge a run asks: provider from its endpoint (an OpenAI-compatible base URL, else Gemini)."""
    from ..schema.results import JudgeVersion

    provider = "openai-compatible" if options.judge_base_url else "gemini"
    return JudgeVersion(provider=provider, endpoint=options.judge_base_url, model_version=model_version)


def version_of_agent_ref(ref: str | None, outside: tuple[str, ...] = ()) -> str | None:
    """The version of an agent reference as it is on disk now: an agent folder's (`agents.version`), a
    replay file's content hash; None for no agent."""
    if ref is None:
        return None
    if ref.startswith("replay:"):
        return files_version([Path(ref.removeprefix("replay:"))])
    folder = Path(ref)
    if not folder.is_dir():
        return "-"
    return agent_version(folder, outside)


def files_version(paths: list[Path]) -> str:
    """A hash over some files' contents (an agent that is a recording: its replay file)."""
    h = hashlib.sha256()
    for path in sorted(Path(p).resolve() for p in paths):
        h.update(str(path).encode("utf-8", "surrogateescape") + b"\0" + (sha256_file(path) or "-").encode() + b"\n")
    return h.hexdigest()[:_DIGITS]


@dataclass(frozen=True, slots=True)
class Current:
    """What a result would be computed from now. A field left None is not compared (unknown here)."""

    agent: str | None = None
    tools: str | None = None
    case: str | None = None
    criteria: str | None = None
    judge: JudgeVersion | None = None


#: The words each changed input is said with (the tree and `watch` show the first, summaries all).
REASONS = {"agent": "agent code changed", "tools": "tools mode changed", "case": "eval case changed",
           "criteria": "criteria changed", "judge": "judge changed"}


def stale_reasons(versions: ResultVersions | None, now: Current) -> tuple[str, ...]:
    """The one rule: which inputs of a result differ from what is on disk now (empty: not stale). A
    result without versions (saved before they were kept) is never called stale on that account."""
    if versions is None:
        return ()
    out: list[str] = []
    if now.agent is not None and versions.agent is not None and versions.agent != now.agent:
        out.append(REASONS["agent"])
    if now.tools is not None and versions.tools != now.tools:
        out.append(REASONS["tools"])
    if now.case is not None and versions.case and versions.case != now.case:
        out.append(REASONS["case"])
    if now.criteria is not None and versions.criteria and versions.criteria != now.criteria:
        out.append(REASONS["criteria"])
    if now.judge is not None and versions.judge is not None and _judge_differs(versions.judge, now.judge):
        out.append(REASONS["judge"])
    return tuple(out)


def _judge_differs(was: JudgeVersion, now: JudgeVersion) -> bool:
    # The model version is what the judge answered with: unknown before it answers, so never compared.
    return (was.provider, was.model, was.endpoint) != (now.provider, now.model, now.endpoint)


def stale_text(reasons: tuple[str, ...]) -> str:
    """`stale: agent code changed, criteria changed` (one line, no markup)."""
    return "stale: " + ", ".join(reasons) if reasons else ""


@dataclass(slots=True)
class AgentVersions:
    """The engine's book of agent versions: what each agent ref's loaded executor runs, and the files
    outside its folder its worker named, so the version on disk is computed over the same files."""

    loaded: dict[str, str | None] = field(default_factory=dict)
    outside: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def on_disk(self, ref: str) -> str | None:
        return version_of_agent_ref(ref, self.outside.get(ref, ()))

    def load(self, ref: str) -> str | None:
        """Just before `ref` is (re)loaded: the version it loads, recorded and returned."""
        version = self.loaded[ref] = self.on_disk(ref)
        return version

    def changed_on_disk(self, ref: str) -> bool:
        """Whether the files on disk are not what the loaded executor of `ref` runs (or none is loaded)."""
        return ref not in self.loaded or self.loaded[ref] != self.on_disk(ref)

    def reported(self, ref: str, outside: tuple[str, ...]) -> None:
        """A worker named the files outside the folder its agent loaded."""
        if outside and self.outside.get(ref) != outside:
            self.outside[ref] = outside


#: A result by its eval file and case id (with --num-runs, every repetition of the case shares it).
ResultId = tuple[str, str]


def stale_of(results: Iterable[CaseResult], agent_ref: str | None, config_sources: dict[str, str | None]
             ) -> dict[ResultId, tuple[str, ...]]:
    """The results whose inputs differ from the files on disk now, each with its reasons, by the one rule
    (`stale_reasons`): the agent (`agent_ref`), each result's eval file, and the config its eval file ran
    with (`config_sources`: eval file -> config path, None for the defaults). A file that cannot be read
    now is not a reason (a report is not the place for its error). For a finished run, what an edit during
    it made stale; for a saved one, what changed since."""
    from ..schema.config import load_eval_config
    from ..schema.errors import LoadError
    from ..schema.load import load_eval_set

    results = list(results)
    outside = next((c.versions.agent_outside for c in results if c.versions is not None and c.versions.agent_outside),
                   ())
    agent = version_of_agent_ref(agent_ref, tuple(outside))
    cases: dict[str, dict[str, str] | None] = {}
    criteria: dict[str, str | None] = {}
    out: dict[ResultId, tuple[str, ...]] = {}
    for case in results:
        versions = case.versions
        file = case.eval_set_file
        if versions is None or (file, case.eval_id) in out:
            continue
        if file not in cases:
            try:
                cases[file] = {c.eval_id: case_version(c) for c in load_eval_set(file).eval_cases}
            except (LoadError, OSError):
                cases[file] = None
        source = config_sources.get(file) or ""
        if source not in criteria:
            try:
                criteria[source] = criteria_version(load_eval_config(Path(source))) if source else None
            except (LoadError, OSError):
                criteria[source] = None
        file_cases = cases[file]
        now = Current(agent=agent, case=file_cases.get(case.eval_id) if file_cases is not None else None,
                      criteria=criteria[source])
        reasons = stale_reasons(versions, now)
        if reasons:
            out[(file, case.eval_id)] = reasons
    return out


def stale_of_saved(loaded: Iterable[tuple[dict[str, Any], EvalSetResult]]) -> dict[ResultId, tuple[str, ...]]:
    """What of saved run records (metadata and results, as `store.load_record` reads them) is stale
    against the files on disk now: their agent (the record's `source`), eval files and configs."""
    loaded = list(loaded)
    agent_ref = None
    for meta, _result in loaded:
        source = meta.get("source")
        if isinstance(source, dict):
            if source.get("replay_file"):
                agent_ref = f"replay:{source['replay_file']}"
            elif source.get("agent_dir"):
                agent_ref = str(source["agent_dir"])
            break
    configs = {str(r.eval_set_file): (str(m["config_source"]) if m.get("config_source") else None) for m, r in loaded}
    return stale_of((c for _m, r in loaded for c in r.case_results), agent_ref, configs)


def result_versions(*, agent: str | None, agent_outside: tuple[str, ...] = (), tools: str, case: str,
                    criteria: str, judge: JudgeVersion | None) -> ResultVersions:
    """A result's versions (the fields the runner fills, in one place)."""
    from ..schema.results import ResultVersions

    return ResultVersions(agent=agent, agent_outside=agent_outside, tools=tools, case=case, criteria=criteria,
                          judge=judge)
