"""Pull, run and push against a CES app, on a connected CesClient: the logic under `tui-eval ces`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..schema.ces.mapping import CES_KEY, app_of, case_to_evaluation, evaluation_to_case, short_name
from ..schema.ces.model import OUTPUT_ONLY_FIELDS, Evaluation, EvaluationResult, EvaluationRun
from .client import CANONICAL_CODES, CesClient, CesError, CesRunError

logger = logging.getLogger(__name__)

_MISSING = object()


def update_mask(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The top-level camelCase fields whose values differ between two Evaluation dicts, output-only ones
    left out. `golden` and `scenario` are named whole: the reference documents no sub-paths for them,
    and the whole object is sent anyway."""
    return [
        key for key in sorted(set(old) | set(new))
        if key not in OUTPUT_ONLY_FIELDS and old.get(key, _MISSING) != new.get(key, _MISSING)
    ]


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
        """An evaluation ran and did not pass."""
        progress = self.run.progress
        if progress and progress.failed_count:
            return True
        return any(r.evaluation_status == "FAIL" for r in self.results)

    @property
    def incomplete(self) -> bool:
        """The run ended in ERROR, or an evaluation could not be judged (ended in ERROR, no verdict)."""
        if self.run.state == "ERROR":
            return True
        progress = self.run.progress
        if progress and progress.error_count:
            return True
        return any(r.execution_state == "ERROR" or r.evaluation_status not in ("PASS", "FAIL") for r in self.results)


def evaluation_ids(app: str, evaluations: list[str]) -> list[str]:
    """Evaluation ids for run_evaluation, which takes ids: a full resource name of the app becomes its id."""
    ids: list[str] = []
    for item in evaluations:
        item = item.strip()
        if "/" in item:
            if app_of(item) != app:
                raise CesError(f"{item} is not an evaluation of {app}")
            item = short_name(item)
        if item and item not in ids:
            ids.append(item)
    return ids


async def run(
    client: CesClient,
    app: str,
    evaluations: list[str] | None,
    *,
    on_progress: Callable[[EvaluationRun], None],
    poll_interval: float = 2.0,
    timeout: float = 3600.0,
    display_name: str | None = None,
    app_version: str | None = None,
) -> RunOutcome:
    """Start run_evaluation, follow the EvaluationRun it names until it is done, fetch its results.

    With `evaluations` None the whole app runs: the ids of every evaluation CES lists for it are sent
    (the reference leaves a call naming neither evaluations nor a dataset undefined)."""
    if evaluations is None:
        ids = [short_name(e.name) for e in await client.list_evaluations(app) if e.name]
        if not ids:
            raise CesError(f"{app} has no evaluations to run (CES lists none)")
    else:
        ids = evaluation_ids(app, evaluations)
    operation = await client.run_evaluation(app, ids, display_name, app_version)
    if operation.error is not None:
        code = operation.error.code
        status = CANONICAL_CODES.get(code) if isinstance(code, int) else None
        raise CesRunError(
            f"run_evaluation for {app} failed: {operation.error.message or 'no message'} "
            f"(code {code}{' ' + status if status else ''}, operation {operation.name})",
            status,
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
            raise CesRunError(f"{run_name} still {current.state} after {timeout:g}s; it goes on in CES "
                              "(pull later for its results)")
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
    updated: list[tuple[str, list[str]]] = field(default_factory=list)  # (evaluation name, mask), as pushed
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # stale etags found before sending anything, one line each
    skipped: list[str] = field(default_factory=list)  # eval ids that did not come from CES
    #: The update that failed (evaluation name, why); the ones after it were not tried.
    failed: tuple[str, CesError] | None = None
    not_tried: list[str] = field(default_factory=list)


def _sendable(local: dict[str, Any]) -> dict[str, Any]:
    """What an update sends: the fields it may change, plus the name and the etag it was read with."""
    out = {k: v for k, v in local.items() if k not in OUTPUT_ONLY_FIELDS}
    out["name"] = local["name"]
    if local.get("etag"):
        out["etag"] = local["etag"]
    return out


def refreshed_case(old_case: dict[str, Any], answer: Evaluation) -> dict[str, Any]:
    """A case rebuilt from update_evaluation's answer (the new etag), keeping what the answer leaves out:
    output-only fields it does not carry (the last ten results are filled only when asked for) and
    what the case had beyond CES (a session_input, a final state, notes of the user's own)."""
    data = answer.to_json_dict()
    extra = old_case.get(CES_KEY)
    before = extra.get("evaluation") if isinstance(extra, dict) else None
    if isinstance(before, dict):
        for key in OUTPUT_ONLY_FIELDS:
            if key not in data and key in before:
                data[key] = before[key]
    fresh = evaluation_to_case(Evaluation.model_validate(data), str(old_case.get("eval_id")))
    return {**fresh, **{k: v for k, v in old_case.items() if k not in fresh}}


async def push(
    client: CesClient, eval_set: dict[str, Any], on_updated: Callable[[], None] | None = None
) -> PushReport:
    """Send each edited CES case back with update_evaluation; nothing is sent when any etag is stale.

    Each accepted update refreshes its case in `eval_set` from the server's answer (the new etag) and
    calls `on_updated` at once (the CLI writes the file), so that when a later update fails, the ones
    CES took are on disk and the next push does not mistake them for a conflict. The first update that
    fails stops the push: `report.failed` says which and why, `report.not_tried` lists the rest.
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
    for n, (index, local, mask) in enumerate(planned):
        name = str(local["name"])
        try:
            answer = await client.update_evaluation(_sendable(local), mask)
        except CesError as exc:
            report.failed = (name, exc)
            report.not_tried = [str(later["name"]) for _, later, _ in planned[n + 1:]]
            break
        cases[index] = refreshed_case(cases[index], answer)
        report.updated.append((name, mask))
        if on_updated is not None:
            on_updated()
    return report
