"""What every face (`run`, `watch`, the Python API, pytest) does before a run: name the agent, open it.

One rule for all of them: the agent is the one named (`--agent`, an argument), else the first positional
argument when it names an agent (a folder, its `__init__.py` or `agent.py`, or `replay:PATH`), else the
agent folder around the first eval file (ADK keeps eval files inside the agent folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..executors import Executor

__all__ = ["AGENT_FILES", "AgentGroup", "SetupError", "agent_around", "agent_ref_of", "resolve_agent", "split_agent",
           "start_executor", "group_targets"]

#: The files of an agent folder a user may name instead of the folder (as `adk eval` users paste them).
AGENT_FILES = ("__init__.py", "agent.py")
NO_AGENT = ("no agent: name an agent folder or replay:PATH first, or pass --agent "
            "(or keep the eval file inside an agent folder)")


class SetupError(ValueError):
    """The run cannot start as asked: no agent, a missing or unreadable eval file or config, an unknown id,
    an agent that cannot be imported. The faces print it (exit 2) or raise it (the Python API)."""


def agent_ref_of(arg: str) -> str | None:
    """The agent an argument names, or None: `replay:PATH`, an agent folder, or (as `adk eval` users
    sometimes paste) the folder's `__init__.py` or `agent.py`."""
    from ..agents import is_agent_ref

    if is_agent_ref(arg):
        return arg
    path = Path(arg)
    if path.name in AGENT_FILES and path.is_file() and is_agent_ref(str(path.parent)):
        return str(path.parent)
    return None


def agent_around(target: str) -> str | None:
    """ADK keeps eval files inside the agent folder: find an agent folder above the eval file."""
    from ..agents import is_agent_ref
    from .plan import split_target

    path = Path(split_target(target)[0]).resolve()
    for parent in list(path.parents)[:4]:
        if is_agent_ref(str(parent)) and (parent / "agent.py").is_file():
            return str(parent)
    return None


def split_agent(agent: str | None, targets: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the agent named, the eval targets): `agent` when given (its folder for an `agent.py`), else the
    first target when it names an agent (it is taken off the targets). None when neither names one."""
    rest = list(targets)
    if agent is not None:
        return agent_ref_of(agent) or agent, rest
    if rest:
        first = agent_ref_of(rest[0])
        if first is not None:
            rest.pop(0)
            agent = first
    return agent, rest


def resolve_agent(agent: str | None, targets: Sequence[str]) -> str:
    """The agent to run `targets` with: the one named (its folder for an `agent.py`), else the agent
    folder around the first eval file. Raises SetupError when there are no targets or no agent."""
    if not targets:
        raise SetupError("no eval files given")
    if agent is not None:
        return agent_ref_of(agent) or agent
    found = agent_around(targets[0])
    if found is not None:
        return found
    if len(targets) > 1 and _looks_like_missing_folder(targets[0]):
        # `run demo_agents/suport x.evalset.json`: the first positional was meant as the agent.
        raise SetupError(f"agent folder not found: {targets[0]}")
    raise SetupError(NO_AGENT)


def _looks_like_missing_folder(arg: str) -> bool:
    """A path that does not exist and does not name an eval file (or eval set id)."""
    from .plan import split_target

    path = Path(split_target(arg)[0])
    return not path.exists() and not path.name.endswith(".json")


async def start_executor(executor: Executor) -> None:
    """Open an agent's executor (an agent folder: import it in a worker). Raises SetupError when the
    agent cannot be loaded, after closing what was started, on this loop."""
    error = await executor.start()
    if error is not None:
        await executor.aclose()
        raise SetupError(error)


@dataclass(slots=True)
class AgentGroup:
    """The eval targets one agent runs in a command (`tui-eval run` may name several agents)."""

    agent: str
    targets: list[str]


def group_targets(agent: str | None, positionals: list[str]) -> list[AgentGroup]:
    """Which agent runs which eval file: the one written rule for `run`'s positional arguments.

    With `--agent`, it runs every target. Otherwise a positional that names an agent (an agent folder,
    its `__init__.py` or `agent.py`, or `replay:PATH`) is an agent and runs the targets after it, up to
    the next agent (`AGENT FILE… AGENT FILE…`); any other folder is a folder of eval files. An eval file
    named before any agent (or found in such a folder) is run with the agent folder that contains it, so
    mixed folders each run their own agent (`run demo_agents`). An agent named with no targets runs the
    eval files below its folder. Raises PlanError naming every eval file that has no agent."""
    from .plan import PlanError, eval_files_below, resolve_target, split_target

    if agent is not None:
        return [AgentGroup(agent_ref_of(agent) or agent, list(positionals))]
    groups: list[AgentGroup] = []
    loose: list[str] = []  # targets before any agent: each runs with the agent folder around it
    current: AgentGroup | None = None
    for arg in positionals:
        ref = agent_ref_of(arg)
        if ref is not None:
            current = AgentGroup(ref, [])
            groups.append(current)
        elif current is not None:
            current.targets.append(arg)
        else:
            loose.append(arg)
    for group in groups:
        if not group.targets:
            group.targets = ([group.agent.removeprefix("replay:")] if group.agent.startswith("replay:")
                             else [str(f) for f in eval_files_below(Path(group.agent))])
            if not group.targets:
                raise PlanError(f"{group.agent}: no eval files (*.evalset.json, *.test.json) below this agent folder; "
                                "name them after it")
    errors: list[str] = []
    around: dict[str, AgentGroup] = {}
    for i, arg in enumerate(loose):
        if len(positionals) > 1 and i == 0 and _looks_like_missing_folder(arg):
            # `run demo_agents/suport x.evalset.json`: the first positional was meant as the agent.
            errors.append(f"agent folder not found: {arg}")
            continue
        try:
            found = resolve_target(arg)
        except PlanError as exc:
            # A bare eval set id (or a missing path) names no file: said as the plan says it.
            errors.append(str(exc) if Path(split_target(arg)[0]).exists() or os.sep in arg or "/" in arg
                          else f"{arg}: {NO_AGENT}")
            continue
        for path, ids in found:
            target = str(path) if ids is None else f"{path}:{','.join(ids)}"
            owner = agent_around(str(path))
            if owner is None:
                errors.append(f"{path}: no agent: this eval file is not inside an agent folder; name the agent "
                              "before it (`run AGENT FILE`) or pass --agent")
                continue
            if owner not in around:
                around[owner] = AgentGroup(owner, [])
            around[owner].targets.append(target)
    if errors:
        raise PlanError("\n".join(dict.fromkeys(errors)))
    merged: dict[str, AgentGroup] = {}
    for group in [*around.values(), *groups]:
        key = group.agent if group.agent.startswith("replay:") else str(Path(group.agent).resolve())
        if key in merged:
            merged[key].targets += group.targets
        else:
            merged[key] = group
    if not merged:
        raise PlanError("no eval files given")
    return list(merged.values())
