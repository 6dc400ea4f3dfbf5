"""Versions and stale: what a result was computed from, and the one rule that says it is out of date.

A result carries `ResultVersions` (schema.results): the agent's code (`agents.version`), the tools' mode,
the eval case as run, the effective criteria and the judge. `Current` is the same, as things are on disk
now (or as a run would run them now). `stale_reasons` compares the two: every face asks it, so the tree,
the summaries, `watch`, `run`'s summary and the reports never disagree about what is stale.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..agents.version import agent_version, sha256_file
from ..schema.fast import adk_json_default

if TYPE_CHECKING:  # pragma: no cover
    # The result models load when a run starts: the dashboard's engine builds a LiveSession at start-up.
    from ..schema.results import JudgeVersion, ResultVersions
    from ..schema.config import EvalConfig
    from ..schema.model import EvalCase
    from ..schema.results import CaseResult
    from .options import RunOptions
    from .plan import RunPlan
    from .runner import RunRecord

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


def stale_after_run(record: RunRecord, plan: RunPlan, agent_ref: str | None
                    ) -> list[tuple[CaseResult, tuple[str, ...]]]:
    """The results of a finished run that an edit during it made stale: each with its reasons, by the one
    rule (`stale_reasons`) against the agent, eval files and configs as they are on disk now. A file
    that cannot be read now is not a reason (the run's summary is not the place for its error)."""
    from ..schema.config import load_eval_config
    from ..schema.errors import LoadError
    from ..schema.load import load_eval_set

    outside = next((c.versions.agent_outside for r in record.results for c in r.case_results
                    if c.versions is not None and c.versions.agent_outside), ())
    agent = version_of_agent_ref(agent_ref, outside)
    cases: dict[str, dict[str, str] | None] = {}
    criteria: dict[str, str | None] = {}
    sources = {str(t.eval_file): t.config.source for t in plan.targets}
    out: list[tuple[CaseResult, tuple[str, ...]]] = []
    for result in record.results:
        for case in result.case_results:
            versions = case.versions
            if versions is None:
                continue
            file = case.eval_set_file
            if file not in cases:
                try:
                    cases[file] = {c.eval_id: case_version(c) for c in load_eval_set(file).eval_cases}
                except (LoadError, OSError):
                    cases[file] = None
            config_source = sources.get(file)
            if (config_source or "") not in criteria:
                try:
                    criteria[config_source or ""] = (criteria_version(load_eval_config(Path(config_source)))
                                                     if config_source else None)
                except (LoadError, OSError):
                    criteria[config_source or ""] = None
            file_cases = cases[file]
            now = Current(agent=agent, case=file_cases.get(case.eval_id) if file_cases is not None else None,
                          criteria=criteria.get(config_source or ""))
            reasons = stale_reasons(versions, now)
            if reasons:
                out.append((case, reasons))
    return out


def result_versions(*, agent: str | None, agent_outside: tuple[str, ...] = (), tools: str, case: str,
                    criteria: str, judge: JudgeVersion | None) -> ResultVersions:
    """A result's versions (the fields the runner fills, in one place)."""
    from ..schema.results import ResultVersions

    return ResultVersions(agent=agent, agent_outside=agent_outside, tools=tools, case=case, criteria=criteria,
                          judge=judge)
