"""Pull, run and push against a CES app, on a connected CesClient: the logic under `tui-eval ces`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .client import CesClient, CesConflictError, CesError
from .mapping import CES_KEY, case_to_evaluation, evaluation_to_case
from .model import OUTPUT_ONLY_FIELDS, Evaluation, EvaluationResult, EvaluationRun

logger = logging.getLogger(__name__)

# Message fields an update mask may name a level down; everything else is named whole.
_MASK_DEPTH = frozenset({"golden", "scenario"})
_MISSING = object()


def update_mask(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The camelCase field paths whose values differ between two Evaluation dicts, output-only ones left out."""
    paths: list[str] = []
    for key in sorted(set(old) | set(new)):
        if key in OUTPUT_ONLY_FIELDS:
            continue
        a, b = old.get(key, _MISSING), new.get(key, _MISSING)
        if a == b:
            continue
        if key in _MASK_DEPTH and isinstance(a, dict) and isinstance(b, dict):
            paths.extend(
                f"{key}.{sub}" for sub in sorted(set(a) | set(b)) if a.get(sub, _MISSING) != b.get(sub, _MISSING)
            )
        else:
            paths.append(key)
    return paths


# ---- pull ------------------------------------------------------------------------------------------


async def pull(client: CesClient, app: str) -> list[Evaluation]:
    """Every evaluation of an app with its last results (the last ten too)."""
    return await client.list_evaluations(app, last_ten_results=True)


# ---- run -------------------------------------------------------------------------------------------


@dataclass
class RunOutcome:
    run: EvaluationRun
    results: list[EvaluationResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        progress = self.run.progress
        if progress and ((progress.failed_count or 0) or (progress.error_count or 0)):
            return True
        return any(r.evaluation_status != "PASS" for r in self.results)


async def run(
    client: CesClient,
    app: str,
    evaluations: list[str] | None,
    *,
    on_progress: Callable[[EvaluationRun], None],
    poll_interval: float = 2.0,
    timeout: float = 3600.0,
    display_name: str | None = None,
) -> RunOutcome:
    """Start run_evaluation, follow the EvaluationRun it names until it is done, fetch its results."""
    operation = await client.run_evaluation(app, evaluations, display_name)
    if operation.error is not None:
        raise CesError(
            f"run_evaluation for {app} failed: {operation.error.message or 'no message'} "
            f"(code {operation.error.code}, operation {operation.name})"
        )
    run_name = operation.evaluation_run()
    if not run_name:
        raise CesError(f"run_evaluation started operation {operation.name} but named no evaluation run")
    deadline = time.monotonic() + timeout
    while True:
        current = await client.get_evaluation_run(run_name)
        on_progress(current)
        if current.state in ("COMPLETED", "ERROR"):
            break
        if time.monotonic() > deadline:
            raise CesError(f"{run_name} still {current.state} after {timeout:.0f}s; it goes on in CES")
        await asyncio.sleep(poll_interval)
    outcome = RunOutcome(current)
    if current.state == "ERROR":
        return outcome
    for name in current.evaluation_results or []:
        outcome.results.append(await client.get_evaluation_result(name))
    return outcome


# ---- push ------------------------------------------------------------------------------------------


@dataclass
class PushReport:
    updated: list[tuple[str, list[str]]] = field(default_factory=list)  # (evaluation name, mask)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # one line each
    skipped: list[str] = field(default_factory=list)  # eval ids that did not come from CES


def _sendable(local: dict[str, Any]) -> dict[str, Any]:
    """What an update sends: the fields it may change, plus the name and the etag it was read with."""
    out = {k: v for k, v in local.items() if k not in OUTPUT_ONLY_FIELDS}
    out["name"] = local["name"]
    if local.get("etag"):
        out["etag"] = local["etag"]
    return out


async def push(client: CesClient, eval_set: dict[str, Any]) -> PushReport:
    """Send each edited CES case back with update_evaluation; nothing is sent when any etag is stale.

    Updated cases are refreshed in `eval_set` from the server's answer (new etag), so that a second
    push after more edits works.
    """
    report = PushReport()
    planned: list[tuple[int, dict[str, Any], list[str]]] = []
    cases = eval_set.get("eval_cases") or []
    for index, case in enumerate(cases):
        local = case_to_evaluation(case).to_json_dict()
        name = local.get("name")
        if not name or not isinstance(case.get(CES_KEY), dict):
            report.skipped.append(str(case.get("eval_id")))
            continue
        server = (await client.get_evaluation(name)).to_json_dict()
        if server.get("etag") != local.get("etag"):
            report.conflicts.append(
                f"{name} was changed in CES since it was pulled (pulled etag {local.get('etag')!r}, "
                f"now {server.get('etag')!r})"
            )
            continue
        mask = update_mask(server, local)
        if not mask:
            report.unchanged.append(name)
            continue
        planned.append((index, local, mask))
    if report.conflicts:
        return report  # all or nothing: a stale etag means the file no longer describes CES
    for index, local, mask in planned:
        try:
            updated = await client.update_evaluation(_sendable(local), mask)
        except CesConflictError as exc:
            report.conflicts.append(f"{local['name']}: {exc.detail}")
            continue
        old_case = cases[index]
        fresh = evaluation_to_case(updated, str(old_case.get("eval_id")))
        # Keep what the case had beyond CES (a session_input, a final state, notes of the user's own).
        cases[index] = {**fresh, **{k: v for k, v in old_case.items() if k not in fresh}}
        report.updated.append((str(local["name"]), mask))
    return report
