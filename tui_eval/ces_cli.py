"""`tui-eval ces import|export|pull|run|push|show`: CES evaluations as ADK eval sets, and the CES app behind them.

Exit codes (the README lists them too):
  0 done (run: every evaluation passed)
  1 run: an evaluation failed; push: a conflict (a stale etag, or CES answered ABORTED or
    FAILED_PRECONDITION); pull: a file with unpushed edits was kept
  2 bad arguments, unreadable input, CES unreachable, INVALID_ARGUMENT or another refusal
  3 run: incomplete, nothing failed but the run could not start, ended in ERROR, was not followed to
    its end (--timeout) or an evaluation errored
  4 UNAUTHENTICATED (no or refused credentials), 5 PERMISSION_DENIED, 6 NOT_FOUND,
  7 RESOURCE_EXHAUSTED (quota)
A refusal's code comes from CES's canonical status, never from its wording. Errors print one line each,
no traceback; text from CES passes `safe_line`, as every terminal output does. Only argparse and two
light modules (`ces.address`, `engine.exitcodes`) are imported here at start-up; the rest waits for a
`ces` command.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

from .ces.address import DEFAULT_ENDPOINT
from .engine.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK

if TYPE_CHECKING:
    from .ces.client import CesClient
    from .schema.ces.model import EvaluationRun

T = TypeVar("T")
EXIT_UNAUTHENTICATED, EXIT_PERMISSION_DENIED, EXIT_NOT_FOUND, EXIT_QUOTA = 4, 5, 6, 7
#: A CES failure's exit code by its canonical status; any other status (or none) is EXIT_BAD_INPUT.
EXIT_BY_STATUS = {
    "ABORTED": EXIT_FAILED,
    "FAILED_PRECONDITION": EXIT_FAILED,
    "INVALID_ARGUMENT": EXIT_BAD_INPUT,
    "UNAUTHENTICATED": EXIT_UNAUTHENTICATED,
    "PERMISSION_DENIED": EXIT_PERMISSION_DENIED,
    "NOT_FOUND": EXIT_NOT_FOUND,
    "RESOURCE_EXHAUSTED": EXIT_QUOTA,
}


class _Usage(Exception):
    """Bad input or a CES failure: one line, and the exit code it deserves (2 unless said)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def exit_code_for(exc: Exception) -> int:
    """The exit code of a CES failure: by its canonical status; a run that could not start or end: 3."""
    from .ces.client import CesRunError

    if isinstance(exc, CesRunError):
        return EXIT_INCOMPLETE
    return EXIT_BY_STATUS.get(getattr(exc, "status", None) or "", EXIT_BAD_INPUT)


def _add_endpoint(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", help=f"CES MCP endpoint URL (default {DEFAULT_ENDPOINT})")
    p.add_argument("--location", help="use the regional endpoint https://ces.LOCATION.rep.googleapis.com/mcp")


def add_ces_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `ces` and its subcommands on the top-level subparsers."""
    ces = subparsers.add_parser("ces", help="CES (Customer Engagement Suite) evaluations: import, export, pull, run, push")
    sub = ces.add_subparsers(dest="ces_command", required=True)

    imp = sub.add_parser("import", help="CES Evaluation JSON files -> one ADK eval set")
    imp.add_argument("files", nargs="+", metavar="FILE", help="an Evaluation, a list, or a {\"evaluations\": [...]} page")
    imp.add_argument("-o", "--output", required=True, metavar="OUT.evalset.json")
    imp.add_argument("--eval-set-id", help="id of the eval set (default: from OUT's name)")

    exp = sub.add_parser("export", help="an eval set -> CES Evaluations ({\"evaluations\": [...]})")
    exp.add_argument("eval_set", metavar="EVALSET")
    exp.add_argument("-o", "--output", required=True, metavar="OUT.json")

    pull = sub.add_parser("pull", help="save an app's evaluations and their last results as an eval set")
    pull.add_argument("app", metavar="APP_RESOURCE", help="projects/P/locations/L/apps/A")
    pull.add_argument("-o", "--output-dir", default=".", metavar="DIR")
    pull.add_argument("--force", action="store_true", help="overwrite DIR/A.evalset.json even if it has unpushed edits")
    _add_endpoint(pull)

    run = sub.add_parser("run", help="run an app's evaluations in CES and follow the run until it is done")
    run.add_argument("app", metavar="APP_RESOURCE")
    run.add_argument("--evaluations", nargs="+", metavar="ID", help="evaluation ids (or names), comma or space separated")
    run.add_argument("--display-name", help="display name of the evaluation run")
    run.add_argument("--app-version", metavar="VERSION", help="the app version to run (default: CES's choice)")
    run.add_argument("--poll-interval", type=float, default=2.0, help="seconds between progress checks (default 2)")
    run.add_argument("--timeout", type=float, default=3600.0, help="give up following after this many seconds")
    _add_endpoint(run)

    show = sub.add_parser("show", help="print the CES result a pulled case keeps (lastCompletedResult)")
    show.add_argument("target", metavar="EVALSET[:ID,...]", help="a pulled eval set, optionally some case ids")
    show.add_argument("--history", action="store_true", help="also list the last ten results")

    push = sub.add_parser("push", help="send edited CES cases back with update_evaluation (etag-checked)")
    push.add_argument("eval_set", metavar="EVALSET")
    _add_endpoint(push)
    return ces


def _endpoint(args: argparse.Namespace) -> str:
    if args.endpoint:
        return str(args.endpoint)
    if args.location:
        from .ces.address import regional_endpoint

        return regional_endpoint(args.location)
    return DEFAULT_ENDPOINT


def _write(path: Path, data: Any) -> None:
    from .ces.cache import json_bytes
    from .schema.fileio import atomic_write

    try:
        atomic_write(path, json_bytes(data))
    except OSError as exc:
        raise _Usage(f"{path}: cannot write: {exc.strerror or exc}") from None


def _read_eval_set(path: Path) -> dict[str, Any]:
    """An eval set file as its JSON dict, after our loader accepted it (so its shape can be trusted)."""
    import orjson

    from .schema.errors import LoadError
    from .schema.load import parse_eval_set

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _Usage(f"{path}: cannot read file: {exc.strerror or exc}") from None
    try:
        _, legacy = parse_eval_set(raw, path)
    except LoadError as exc:
        raise _Usage(str(exc)) from None
    if legacy:
        raise _Usage(f"{path}: a legacy .test.json list; run `tui-eval migrate` first")
    data: dict[str, Any] = orjson.loads(raw)
    return data


def _eval_set_id_for(path: Path) -> str:
    from .schema.load import eval_set_id_for

    return eval_set_id_for(path)


# ---- files -------------------------------------------------------------------------------------------


def cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    import time

    from .schema.ces.files import read_evaluations
    from .schema.ces.mapping import evaluations_to_eval_set
    from .schema.errors import LoadError

    evaluations = []
    for name in args.files:
        try:
            evaluations.extend(read_evaluations(name))
        except LoadError as exc:
            raise _Usage(str(exc)) from None
    dest = Path(args.output)
    eval_set = evaluations_to_eval_set(
        evaluations, args.eval_set_id or _eval_set_id_for(dest), creation_timestamp=time.time()
    )
    _write(dest, eval_set)
    goldens = sum(1 for e in evaluations if e.golden is not None)
    print(f"wrote {dest}: {len(evaluations)} evaluation(s), {goldens} golden, "
          f"{len(evaluations) - goldens} scenario", file=out)
    return EXIT_OK


def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    from .schema.ces.mapping import MappingError, eval_set_to_evaluations

    src = Path(args.eval_set)
    eval_set = _read_eval_set(src)
    try:
        evaluations = eval_set_to_evaluations(eval_set)
    except MappingError as exc:
        raise _Usage(f"{src} at {exc.json_path}: {exc.message}") from None
    dest = Path(args.output)
    _write(dest, {"evaluations": [e.to_json_dict() for e in evaluations]})
    print(f"wrote {dest}: {len(evaluations)} evaluation(s)", file=out)
    return EXIT_OK


# ---- remote ------------------------------------------------------------------------------------------


def _connect_and(args: argparse.Namespace, work: Callable[[CesClient], Awaitable[T]]) -> T:
    """Run `work` on a client connected to the endpoint the arguments name; CES failures become one line."""
    import asyncio

    from .ces.client import CesError, with_client

    try:
        return asyncio.run(with_client(_endpoint(args), work))
    except CesError as exc:
        raise _Usage(str(exc), exit_code_for(exc)) from None


def cmd_pull(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .ces.cache import eval_file_for, save_pull
    from .ces.remote import pull
    from .schema.ces.model import Evaluation
    from .textsafe import safe_line

    async def work(client: CesClient) -> list[Evaluation]:
        return await pull(client, args.app)

    evaluations = _connect_and(args, work)
    dest = eval_file_for(Path(args.output_dir), args.app)
    try:
        saved = save_pull(dest, args.app, evaluations, force=args.force)
    except OSError as exc:
        raise _Usage(f"{dest}: cannot write: {exc.strerror or exc}") from None
    if not saved.written:
        print(f"error: {safe_line(saved.line(args.app))}", file=err)
        return EXIT_FAILED
    print(safe_line(saved.line(args.app)), file=out)
    return EXIT_OK


def _progress_line(run: EvaluationRun) -> str:
    from .textsafe import safe_line

    p = run.progress
    if p is None:
        return f"{safe_line(run.name)}: {run.state or '?'}"
    done = (p.completed_count or 0) + (p.error_count or 0)
    return (f"{safe_line(run.name)}: {run.state or '?'} {done}/{p.total_count or 0} "
            f"(passed {p.passed_count or 0}, failed {p.failed_count or 0}, errors {p.error_count or 0})")


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .ces.remote import RunOutcome, run
    from .textsafe import safe_line

    wanted = [e for chunk in args.evaluations or [] for e in chunk.split(",") if e.strip()]
    last: list[str] = []

    def on_progress(current: EvaluationRun) -> None:
        line = _progress_line(current)
        if not last or last[-1] != line:  # stream changes only
            print(line, file=err, flush=True)
            last.append(line)

    async def work(client: CesClient) -> RunOutcome:
        return await run(client, args.app, wanted or None, on_progress=on_progress,
                         poll_interval=args.poll_interval, timeout=args.timeout, display_name=args.display_name,
                         app_version=args.app_version)

    outcome = _connect_and(args, work)
    if outcome.run.state == "ERROR":
        print(f"error: {safe_line(outcome.run.name)} ended in ERROR: {safe_line(outcome.run.error_reason)}", file=err)
        return EXIT_INCOMPLETE
    for result in outcome.results:
        errored = result.execution_state == "ERROR"
        status = "ERROR" if errored else result.evaluation_status or result.execution_state or "?"
        line = f"{status:5} {safe_line(result.display_name or result.name)}"
        info = result.error_info
        why = " ".join(x for x in (info.error_type, info.error_message) if x) if info is not None else ""
        if not why and errored and result.error:  # no errorInfo: the result's Status says why
            why = str(result.error.get("message") or "")
        if why:
            line += f": {safe_line(why)}"
        print(line, file=out)
    p = outcome.run.progress
    if p is not None:
        print(f"{safe_line(outcome.run.name)}: {p.passed_count or 0} passed, {p.failed_count or 0} failed, "
              f"{p.error_count or 0} errors of {p.total_count or 0}", file=out)
    if outcome.failed:
        return EXIT_FAILED
    return EXIT_INCOMPLETE if outcome.incomplete else EXIT_OK


def cmd_push(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .ces.remote import PushReport, push
    from .schema.ces.mapping import MappingError, eval_set_to_evaluations
    from .textsafe import safe_line

    path = Path(args.eval_set)
    eval_set = _read_eval_set(path)
    try:  # bad input is found before any network
        eval_set_to_evaluations(eval_set)
    except MappingError as exc:
        raise _Usage(f"{path} at {exc.json_path}: {exc.message}") from None

    def save() -> None:
        # Each accepted update at once: its new etag, so the next push starts from what CES now holds,
        # even when a later update fails.
        from .ces.cache import json_bytes
        from .ces.client import CesError
        from .schema.fileio import atomic_write

        try:
            atomic_write(path, json_bytes(eval_set))
        except OSError as exc:
            raise CesError(f"{path}: cannot write the pushed evaluations' new etags: {exc.strerror or exc}; "
                           "pull before editing again") from None

    async def work(client: CesClient) -> PushReport:
        return await push(client, eval_set, on_updated=save)

    report = _connect_and(args, work)
    for name, mask in report.updated:
        print(f"updated {safe_line(name)} ({', '.join(mask)})", file=out)
    for eval_id in report.skipped:
        print(f"skipped {safe_line(eval_id)}: not pulled from CES (no resource name)", file=out)
    for line in report.conflicts:
        print(f"conflict: {safe_line(line)}", file=err)
    if report.conflicts:
        print("error: nothing was overwritten for the conflicting evaluation(s): pull again "
              "(`tui-eval ces pull`), re-apply your edits, then push", file=err)
        return EXIT_FAILED
    if report.failed is not None:
        name, why = report.failed
        print(f"failed {safe_line(name)}: {safe_line(why)}", file=err)
        for later in report.not_tried:
            print(f"not tried {safe_line(later)}", file=err)
        saved = f" ({path} has their new etags)" if report.updated else ""
        print(f"error: push stopped: {len(report.updated)} pushed{saved}, 1 failed, {len(report.not_tried)} "
              "not tried; fix the failed one, then push again", file=err)
        return exit_code_for(why)
    print(f"{len(report.updated)} updated, {len(report.unchanged)} unchanged, {len(report.skipped)} skipped", file=out)
    return EXIT_OK


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from .ces.show import evaluation_lines
    from .engine.plan import PlanError, split_target
    from .schema.ces.mapping import MappingError, case_to_evaluation

    try:
        file, ids = split_target(args.target)
    except PlanError as exc:
        raise _Usage(str(exc)) from None
    path = Path(file)
    eval_set = _read_eval_set(path)
    cases = eval_set.get("eval_cases") or []
    if ids is not None:
        known = {str(c.get("eval_id")) for c in cases}
        missing = [i for i in ids if i not in known]
        if missing:
            raise _Usage(f"{path}: no eval case with id {', '.join(repr(m) for m in missing)}")
        cases = [c for c in cases if str(c.get("eval_id")) in ids]
    shown = 0
    for i, case in enumerate(cases):
        if "ces" not in case:
            if ids is not None:
                raise _Usage(f"{path}: case {case.get('eval_id')!r} did not come from CES (no 'ces' key)")
            continue
        try:
            evaluation = case_to_evaluation(case, f"$.eval_cases[{i}]")
        except MappingError as exc:
            raise _Usage(f"{path} at {exc.json_path}: {exc.message}") from None
        for line in evaluation_lines(str(case.get("eval_id")), evaluation, history=args.history):
            print(line, file=out)
        shown += 1
    if not shown:
        raise _Usage(f"{path}: no case came from CES (import or pull one first)")
    return EXIT_OK


def cmd_ces(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Dispatch `tui-eval ces ...`; errors are one line each on `err`."""
    from .textsafe import safe_line

    try:
        if args.ces_command == "import":
            return cmd_import(args, out)
        if args.ces_command == "export":
            return cmd_export(args, out)
        if args.ces_command == "pull":
            return cmd_pull(args, out, err)
        if args.ces_command == "run":
            return cmd_run(args, out, err)
        if args.ces_command == "show":
            from .engine.signals import ReaderMayLeave

            # `tui-eval ces show … | head`: the rest is dropped quietly once the reader has left.
            return cmd_show(args, cast(TextIO, ReaderMayLeave(out)))
        return cmd_push(args, out, err)
    except _Usage as exc:
        print(f"error: {safe_line(exc)}", file=err)
        return exc.code
