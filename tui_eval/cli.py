"""The headless face: `tui-eval run`, `watch`, `migrate`, and launching the dashboard.

Exit codes of `run` (EXIT_CODES_HELP; engine/gate.py decides 0, 1 and 3): 0 every case passed,
1 a case failed (with --fail-on-regression: a case regressed against --baseline), 2 bad arguments,
unreadable input, or results (eval history, --json, --junit, --md) that could not be written, 3 nothing
failed but the run is incomplete (a metric or case not evaluated, a cancelled run; --strict makes it 1).
Every command takes `--log-level` (also spelt `--log_level`, as ADK's CLI does): `run`, `watch` and
`migrate` log to stderr, the dashboard to a file (see `logging_setup`).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence, TextIO, cast

from .logging_setup import DEFAULT_LEVEL, configure_logging, default_log_file, parse_level, reset_logging

from .engine.exitcodes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_WRITE_FAILED
EXIT_CODES_HELP = """exit codes:
  0  every case passed and every metric was evaluated
  1  a case failed (with --fail-on-regression: only a case that passed in the --baseline run and fails now)
  2  bad arguments, unreadable input, or results (eval history, --json, --junit, --md) not written
  3  nothing failed, but the run is incomplete: a metric or case not evaluated (no judge credentials,
     a judge or user simulator that failed after retries), a case stopped by an outage of the agent's
     model API (503, 429, connection refused), or a cancelled run; --strict makes it 1"""
SUBCOMMANDS = ("run", "watch", "migrate", "open", "ces", "report", "baseline", "rescore", "import-session")
LOG_LEVEL_FLAGS = ("--log-level", "--log_level")

if TYPE_CHECKING:  # pragma: no cover
    from .api import PreparedRun
    from .engine.events import Event
    from .engine.setup import AgentGroup
    from .schema.results import CaseResult
    from .executors import Executor
    from .engine.history import EvalSetPlace, Resolution
    from .engine.options import RunOptions
    from .engine.plan import RunPlan
    from .engine.runner import Run, RunRecord
    from .engine.store import ResultStore
    from .schema.results import CaseResult

log = logging.getLogger(__name__)


class UsageError(Exception):
    """Bad arguments or unreadable input: printed on one line each, exit code 2."""


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "targets",
        nargs="+",
        metavar="[AGENT] EVAL_FILE_OR_ID[:id1,id2]",
        help="an agent folder (or its __init__.py) or replay:PATH (optional when --agent is given), then "
        "eval files, folders of eval files, or eval set ids (AGENT/ID.evalset.json, as `adk eval` "
        "resolves them); a ':id1,id2' suffix selects cases",
    )
    p.add_argument("--agent", help="agent folder, or replay:PATH to score a recorded eval set")
    p.add_argument("--config", "--config_file_path", dest="config",
                   help="EvalConfig JSON (default: test_config.json beside each eval file)")
    p.add_argument("--concurrency", type=int, default=8, help="cases run at once (default 8)")
    p.add_argument("--judge-concurrency", type=int, default=None, metavar="N",
                   help="the most judge calls in flight (default 64), fewer while the endpoint pushes back "
                   "(429, Retry-After) and widening again as calls are answered")
    p.add_argument("--turn-timeout", type=_positive_seconds, default=120.0, metavar="SECONDS",
                   help="seconds an agent turn may take (default 120)")
    p.add_argument("--no-judge-cache", action="store_true", help="always call the judge, ignoring the cache")
    p.add_argument("--judge-timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="seconds one judge call may take before it is retried (default 60)")
    p.add_argument("--strict", action="store_true",
                   help="a case with any metric not evaluated (no judge credentials, a judge that failed "
                   "after retries) fails, instead of passing on the metrics that ran as ADK does; an "
                   "incomplete run exits 1, not 3")
    _add_executor_arg(p)
    p.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="worker processes of the local pool (default: one per core, at most 4; never more than "
                   "four per core, at least 8: a larger N is capped, with a warning); on Ray each case "
                   "is a task of its own")
    p.add_argument("--agent-memory-limit", type=_memory_size, default=None, metavar="SIZE",
                   help="address space each agent worker process may use, e.g. 2G or 512M: a runaway tool "
                   "fails its case with a MemoryError instead of exhausting the machine; the worker is "
                   "recycled and the cases that were in it run again, each alone (local pool only)")
    p.add_argument("--no-retry-after-crash", dest="retry_after_crash", action="store_false",
                   help="a case whose worker process died (or ran out of memory) because of another case fails "
                   "as its worker died, instead of running again alone (for tools with side effects: a re-run "
                   "runs them twice); the summary, --json and the run record name each re-run either way "
                   "(local pool only)")
    _add_mock_tools(p)


def _add_executor_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", type=_executor, metavar="local|ray|ray://HOST:PORT",
                   help="where agent code runs: a local pool of worker processes (default), or each case "
                   "as a Ray task (pip install 'tui-eval[ray]'): `ray` starts or joins a Ray instance on "
                   "this machine (or the cluster in $RAY_ADDRESS), `ray://HOST:PORT` connects to a "
                   "cluster's Ray Client port")


def _executor(value: str) -> str:
    if value in ("local", "ray") or (value.startswith("ray://") and len(value) > len("ray://")):
        return value
    raise argparse.ArgumentTypeError(f"not an executor: {value!r} (local, ray or ray://HOST:PORT)")


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _memory_size(value: str) -> int:
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS and text[-1:] else ""
    number = text[: len(text) - len(unit)] if unit else text
    try:
        size = int(float(number) * _UNITS[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a memory size: {value!r} (e.g. 2G, 512M)") from None
    if size < 64 << 20:
        raise argparse.ArgumentTypeError(f"{value!r} is too small for a Python process (64M at least)")
    return size


MOCK_TOOLS_FLAG = "--mock-tools"
RESUME_FLAG = "--resume"
LATEST_RUN = "latest"


def _add_mock_tools(p: argparse.ArgumentParser) -> None:
    # A bare --mock-tools is rewritten to --mock-tools=strict before parsing (see main), so the value
    # never swallows the agent or eval file that follows it.
    p.add_argument(MOCK_TOOLS_FLAG, dest="mock_tools", choices=("strict", "fallback"), default=None,
                   metavar="{strict,fallback}",
                   help="hermetic run: the model runs, the tools do not: each tool call is answered from the "
                   "case's recorded tool_responses; a call with none fails the turn (strict, the default "
                   "of a bare --mock-tools) or runs the real tool (--mock-tools=fallback)")


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return seconds


def _log_level(value: str) -> str:
    try:
        return parse_level(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_common_options(p: argparse.ArgumentParser) -> None:
    """The options every command takes."""
    p.add_argument(*LOG_LEVEL_FLAGS, dest="log_level", type=_log_level, default=DEFAULT_LEVEL,
                   metavar="LEVEL", help="debug, info, warning (default), error or critical; the dashboard "
                   "logs to $TUI_EVAL_LOG_FILE (default ~/.local/state/tui-eval/tui-eval.log), "
                   "the other commands to stderr")


def common_options() -> argparse.ArgumentParser:
    """A parent parser with the options every command takes (`parents=[common_options()]`)."""
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common)
    return common


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
                help: str) -> argparse.ArgumentParser:
    """A subcommand's parser, with the options every command takes."""
    return sub.add_parser(name, help=help, parents=[common_options()])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tui-eval",
        description="Evaluate LLM agents the way Google's ADK does: a terminal dashboard and a CI runner.",
        epilog="Without a subcommand, `tui-eval [PATH]` opens the dashboard on PATH (default: .).",
    )
    sub = parser.add_subparsers(dest="command")

    run = add_command(sub, "run", "run eval sets headlessly (CI): summary, --json, --junit, exit code")
    run.epilog = EXIT_CODES_HELP
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    _add_run_args(run)
    run.add_argument("--json", dest="json_out", metavar="OUT", help="write ADK EvalSetResult list as JSON")
    run.add_argument("--junit", dest="junit_out", metavar="OUT", help="write a JUnit XML report")
    run.add_argument("--print-detailed-results", "--print_detailed_results", action="store_true",
                     help="print every invocation")
    run.add_argument("--num-runs", type=int, default=1, help="repeat the whole evaluation N times")
    run.add_argument("--no-save", action="store_true", help="do not write eval history")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the summary")
    run.add_argument("--md", dest="md_out", metavar="OUT", help="write a Markdown report (PR comment; appended to $GITHUB_STEP_SUMMARY)")
    run.add_argument("--baseline", metavar="RUN|latest|PATH",
                     help="compare with a saved run of the same eval sets and the same kind (agent or replay, live "
                     "or mocked tools, criteria, judge): `latest` (the newest one in the eval history that did not "
                     "fail its gate), a run id, a .tui-eval.json record, or a baseline file (`tui-eval baseline "
                     "save`); lists regressions, fixes, still failing and not run. A run of another kind is refused")
    run.add_argument("--fail-on-regression", action="store_true",
                     help="with --baseline: only a regression (passed there, fails now) exits 1; known failures do "
                     "not. An eval set with no baseline found fails on any failure (and says so)")
    run.add_argument("--require-baseline", action="store_true",
                     help="with --baseline: exit 2 before running when an eval set has no baseline run")
    run.add_argument(RESUME_FLAG, nargs="?", const=LATEST_RUN, default=None, metavar="RUN|latest",
                     help="finish an interrupted run (killed, out of memory, a lost machine): run only the cases it "
                     "had not finished and complete its record; refused when the agent or criteria changed since")
    run.add_argument("--rerun", choices=("failed", "errored", "stale"), default=None,
                     help="re-run only the cases that failed (or errored, or whose versions are stale) in the latest "
                     "saved run of the same kind; with nothing to re-run, exit with that run's outcome")
    run.add_argument("--timeout", type=_duration, default=None, metavar="DURATION",
                     help="bound the whole run (90s, 15m, 1h30m): it then ends cleanly with what finished (exit 3, "
                     "1 if a finished case failed)")
    run.add_argument("--dry-run", action="store_true",
                     help="print which agent runs which eval file, the run's kind and the baseline chosen; run nothing")

    report = add_command(sub, "report", "a shareable Markdown or HTML report of a saved run")
    report.add_argument("record", metavar="RUN|latest|PATH",
                        help="a .tui-eval.json run record, a folder (its eval history's newest run), `latest` or a "
                        "run id (in the eval history of this folder and the agent folders in it)")
    report.add_argument("--md", dest="md_out", metavar="OUT", help="write Markdown here (default: print it)")
    report.add_argument("--html", dest="html_out", metavar="OUT", help="write a static HTML page here")

    rescore = add_command(sub, "rescore", "score a saved run again (another config, judge or expected turns) "
                          "without running its agent; saved as a re-score of that run")
    rescore.add_argument("record", metavar="RUN|latest|PATH",
                         help="a .tui-eval.json run record, a folder (its eval history's newest run), `latest` or a "
                         "run id (in the eval history of this folder and the agent folders in it)")
    rescore.add_argument("--config", metavar="FILE", help="score with this config's criteria (default: the criteria "
                         "the run was scored with)")
    rescore.add_argument("--judge-model", metavar="M", help="ask this judge model in every judged metric "
                         "(a Gemini model, or openai:MODEL[@URL])")
    rescore.add_argument("--expected", choices=("recorded", "current"), default="recorded",
                         help="compare with the expected turns recorded with the run (default) or the eval file "
                         "on disk now")
    rescore.add_argument("--history", metavar="FOLDER", default=".",
                         help="where to look for `latest` and run ids (default: .)")
    rescore.add_argument("--json", dest="json_out", metavar="OUT", help="write ADK EvalSetResult list as JSON")
    rescore.add_argument("--print-detailed-results", action="store_true", help="print every invocation")
    rescore.add_argument("--no-save", action="store_true", help="do not write eval history")

    baseline = add_command(sub, "baseline", "keep a saved run as a baseline file to commit beside the eval sets")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True)
    save = baseline_sub.add_parser("save", help="write a saved run (its verdicts) as a baseline file",
                                   parents=[common_options()])
    save.add_argument("spec", nargs="+", metavar="[RUN|latest] PATH",
                      help="the run (default latest: the newest run in the eval history of this folder and the agent "
                      "folders in it that finished every case and did not fail its gate; or a run id, a "
                      ".tui-eval.json record, an agent folder), then the baseline file to write; `tui-eval run "
                      "--baseline PATH` reads it")
    save.add_argument("--history", metavar="FOLDER", default=".",
                      help="where to look for `latest` and run ids (default: .)")

    watch = add_command(sub, "watch", "re-run what changed whenever eval files, configs or agents are saved")
    _add_run_args(watch)
    watch.add_argument("--debounce", type=float, default=0.3, help="seconds of quiet before reacting")
    watch.add_argument("--num-runs", type=int, default=1, metavar="N",
                       help="repeat every run N times; each re-run says k/N runs passed per case")
    watch.add_argument("--no-rerun-on-agent-change", action="store_true",
                       help="only reload eval files and configs; never re-run the agent on its own edits")

    migrate = add_command(sub, "migrate", "convert a legacy .test.json file to the EvalSet schema")
    migrate.add_argument("source", help="legacy .test.json file")
    migrate.add_argument("dest", nargs="?", help="output file (default: SOURCE with .evalset.json)")
    migrate.add_argument("--eval-set-id", help="id of the new eval set (default: from the file name)")
    migrate.add_argument("--force", action="store_true", help="overwrite DEST if it exists")

    _add_import_session(sub)

    open_ = add_command(sub, "open", "open the dashboard (same as `tui-eval [PATH]`)")
    _add_open_args(open_)
    _add_adk_aliases(run)
    from .ces_cli import add_ces_parser

    # `tui-eval ces --log-level debug pull ...`: ces's own subcommands come after the option.
    add_common_options(add_ces_parser(sub))
    return parser


def _add_adk_aliases(p: argparse.ArgumentParser) -> None:
    """`adk eval`'s own spellings not covered above, so a pasted `adk eval` line runs unchanged
    (`--log_level` is one of the options every command takes)."""
    p.add_argument("--eval_storage_uri", default=None, help=argparse.SUPPRESS)


def _add_open_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="*", default=["."], metavar="PATH",
                   help="folder with agents and eval files (default: .), and/or a CES app "
                        "ces://projects/P/locations/L/apps/A")
    p.add_argument("--agent", help="agent folder or replay:PATH to run the eval files with")
    p.add_argument("--endpoint", help="CES MCP endpoint URL for a ces:// app or a pulled folder's runs in CES "
                                      "(default https://ces.googleapis.com/mcp)")
    p.add_argument("--app-version", metavar="VERSION", help="the CES app version `C` runs (default: CES's choice)")
    p.add_argument("--no-mouse", action="store_true", help="disable mouse support (for SSH)")
    p.add_argument("--live", action="store_true", help="start with live re-run on agent edits")
    p.add_argument("--no-save", action="store_true",
                   help="keep this session's runs out of the eval history (nothing is written there)")
    _add_executor_arg(p)
    p.add_argument("--num-runs", type=int, default=1, metavar="N",
                   help="run each case N times (the summary shows each case's N runs as marks)")
    _add_mock_tools(p)


def split_agent(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The agent reference and the eval targets, from `--agent` or the first positional, else the agent
    folder around the first eval file (engine.setup's rule, shared by every face)."""
    from .engine.setup import SetupError, resolve_agent
    from .engine.setup import split_agent as split

    if getattr(args, "eval_storage_uri", None):
        raise UsageError("--eval_storage_uri (eval sets in Cloud Storage) is not supported: "
                         "copy the eval sets beside the agent and name them by id or path")
    agent, targets = split(args.agent, args.targets)
    try:
        return resolve_agent(agent, targets), targets
    except SetupError as exc:
        raise UsageError(str(exc)) from None


def _print_warnings(warnings: Sequence[str], err: TextIO) -> None:
    from .textsafe import safe_line

    for w in warnings:
        print(f"warning: {safe_line(w)}", file=err)


#: Set by the console script, whose process ends soon after `main` returns (`_exit_without_teardown`):
#: a run's eval sets and results are kept here instead of being freed one by one on the way out. Freeing
#: them when `cmd_run` returned was a measurable CPU cost after bench/headless_run.py's run (bench/README.md).
_kept_for_exit: list[object] | None = None


def _keep_for_exit(*objects: object) -> None:
    if _kept_for_exit is not None:
        _kept_for_exit.extend(objects)


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .api import SetupError, prepare_run
    from .engine.options import run_options_from_flags
    from .engine.store import ResultStore
    from .report import print_baseline, print_detailed, print_outcome, print_summary, write_json, write_junit

    if args.concurrency < 1 or (args.judge_concurrency is not None and args.judge_concurrency < 1):
        raise UsageError("--concurrency and --judge-concurrency must be at least 1")
    if args.fail_on_regression and not args.baseline:
        raise UsageError("--fail-on-regression needs --baseline RUN|latest|PATH")
    if args.require_baseline and not args.baseline:
        raise UsageError("--require-baseline needs --baseline RUN|latest|PATH")
    if args.resume and args.rerun:
        raise UsageError("--resume and --rerun cannot be used together")
    options = run_options_from_flags(args)
    prepared_runs: list[PreparedRun] = []
    problems: list[str] = []
    for group in agent_groups(args):
        try:
            prepared_runs.append(prepare_run(group.agent, group.targets, config_path=args.config,
                                             num_runs=args.num_runs, options=options))
        except SetupError as exc:
            problems.append(str(exc))
    if problems:
        raise UsageError("\n".join(dict.fromkeys(problems)))
    for prepared in prepared_runs:
        _print_warnings(prepared.plan.warnings, err)
    store = ResultStore()
    places = {id(p): run_places(p.plan, p.agent_ref, options, store, p.agent) for p in prepared_runs}
    every_place = [place for p in prepared_runs for place in places[id(p)]]
    resolution = _find_baseline(args.baseline, every_place, err) if args.baseline else None
    if resolution is not None and args.require_baseline and resolution.missing:
        raise UsageError("\n".join(f"--require-baseline: no baseline for {p.eval_set_id} ({p.eval_file}): "
                                   f"{resolution.missing[p.eval_file]}" for p in every_place
                                   if p.eval_file in resolution.missing))
    from .engine import resume as resuming

    run_id: str | None = None
    done: dict[tuple[str, str, int], CaseResult] = {}
    resumed: resuming.Interrupted | None = None
    if args.resume:
        try:
            resumed = resuming.find_interrupted(args.resume, every_place)
        except resuming.ResumeError as exc:
            raise UsageError(str(exc)) from None
        try:
            resuming.check_versions(resumed, [(p.agent_ref, p.plan) for p in prepared_runs])
        except resuming.ResumeError as exc:
            raise UsageError(str(exc)) from None
        run_id, done = resumed.run_id, resumed.done
    if args.rerun:
        try:
            chosen = resuming.choose_reruns(args.rerun, every_place, [(p.agent_ref, p.plan) for p in prepared_runs])
        except resuming.ResumeError as exc:
            raise UsageError(str(exc)) from None
        if chosen.nothing:
            print(chosen.nothing_text(), file=out)
            print_outcome(chosen.stored_outcome, out)
            return chosen.stored_outcome.code
    empty = [f"{t.eval_file}: {'no eval case selected' if t.case_ids is not None else 'the eval set has no cases'}"
             for p in prepared_runs for t in p.plan.targets if not t.cases]
    if empty:  # "every case passed" of nothing is not a pass
        raise UsageError("nothing to run: " + "; ".join(empty))
    for path in (args.json_out, args.junit_out):
        if path and Path(path).is_dir():
            raise UsageError(f"{path}: is a folder, not a file")
    for prepared in prepared_runs:
        _refuse_outputs_over_inputs(args, prepared.agent_ref, prepared.plan)
    if args.dry_run:
        _print_dry_run(prepared_runs, places, resolution, args, out, resumed)
        return EXIT_OK
    from .engine.tempfiles import remove_stale_temp_files_for

    remove_stale_temp_files_for(Path(p) for p in (args.json_out, args.junit_out) if p)
    from .engine.preflight import probe_judges

    # Before the first case: a judge whose API rejects the credentials, or has no such model, is exit 2.
    refused = asyncio.run(probe_judges([t.config for p in prepared_runs for t in p.plan.targets], options))
    if refused:
        raise UsageError("\n".join(refused))
    if resumed is not None:
        resumed.take_journals()

    from .engine.events import Event, RunError, RunNotice, deliver
    from .textsafe import safe_line

    bar = _ProgressBar(err) if _isatty(err) else None

    def print_errors(event: Event) -> None:
        if bar is not None:
            bar.on_event(event)
        if isinstance(event, RunError):
            _say(f"error: {safe_line(event.message)}", err, bar)
        elif isinstance(event, RunNotice):
            _say(f"note: {safe_line(event.message)}", err, bar)

    def on_event(event: Event) -> None:
        deliver(print_errors, event, RunError)

    from .engine.gate import BaselineError, BaselineReport, Outcome, baseline_report, gate_record, run_outcome

    gate_problems: list[str] = []
    stop = _Stop(args.timeout)

    def decide_gate(record: RunRecord) -> None:
        """Each run's verdict, decided before its record is saved, so the record keeps its gate."""
        baseline = None
        if resolution is not None:
            try:
                baseline = baseline_report(resolution.found, record.results, why_missing=resolution.missing)
            except BaselineError as exc:
                gate_problems.append(str(exc))
                return
        outcome = run_outcome(record.results, cancelled=record.cancelled, strict=record.strict, baseline=baseline,
                              fail_on_regression=args.fail_on_regression, stopped=stop.why,
                              num_runs=record.num_runs)
        record.gate = gate_record(outcome, baseline, fail_on_regression=args.fail_on_regression)

    try:
        parts = asyncio.run(_execute_all(prepared_runs, options, on_event, store, decide_gate, stop,
                                         run_id=run_id, done=done))
    except SetupError as exc:  # the agent cannot be imported
        raise UsageError(str(exc)) from None
    finally:
        if bar is not None:
            bar.stop()
    from .engine.batch import merge_records

    record = merge_records(parts, [t.config for p in prepared_runs for t in p.plan.targets])
    _keep_for_exit(prepared_runs, parts, record)
    if gate_problems:
        raise UsageError(gate_problems[0])
    if resumed is not None and record.saved and not record.save_errors:
        resumed.remove_replaced()  # the interrupted run's records: the resumed run's records replace them
    baseline: BaselineReport | None = None
    if resolution is not None:
        try:
            baseline = baseline_report(resolution.found, record.results, why_missing=resolution.missing)
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
    outcome: Outcome = run_outcome(record.results, cancelled=record.cancelled, strict=record.strict,
                                   baseline=baseline, fail_on_regression=args.fail_on_regression, stopped=stop.why,
                                   num_runs=record.num_runs)
    if args.print_detailed_results:
        print_detailed(record, out)
    for prepared, part in zip(prepared_runs, parts):
        _find_stale(part, prepared.plan, prepared.agent_ref)
        record.stale.update(part.stale)
    print_summary(record, out, verbose=not args.quiet)
    _print_stale(record, out)
    if baseline is not None:
        print_baseline(baseline, out, verbose=not args.quiet)
    # Results that could not be written are a failure of the run whatever the verdicts: exit 2.
    failed_writes = list(record.save_errors)
    for flag, path, write in (("--json", args.json_out, write_json), ("--junit", args.junit_out, write_junit)):
        if not path:
            continue
        try:
            write(record, Path(path), outcome, baseline)
        except Exception as exc:  # too deep (orjson's TypeError), a full disk, a bad path: say it, exit 2
            logging.getLogger(__name__).debug("writing %s failed", flag, exc_info=True)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            message = f"could not write {flag} {path}: {reason}"
            print(f"error: {safe_line(message)}", file=err)
            failed_writes.append(message)
    if args.md_out:
        from .share import SharedRun, write_reports

        shared = SharedRun.of(record, outcome=outcome, baseline=baseline)
        for message in write_reports(shared, args.md_out, None):
            print(f"error: {safe_line(message)}", file=err)
            failed_writes.append(message)
    if failed_writes:
        print_outcome(None, out, written=False)
        return EXIT_WRITE_FAILED
    print_outcome(outcome, out)
    return outcome.code


def agent_groups(args: argparse.Namespace) -> list[AgentGroup]:
    """Which agent runs which eval file (`engine.setup.group_targets`, the one rule)."""
    from .engine.plan import PlanError
    from .engine.setup import group_targets

    if getattr(args, "eval_storage_uri", None):
        raise UsageError("--eval_storage_uri (eval sets in Cloud Storage) is not supported: "
                         "copy the eval sets beside the agent and name them by id or path")
    try:
        return group_targets(args.agent, list(args.targets))
    except PlanError as exc:
        raise UsageError(str(exc)) from None


class _Stop:
    """Why a run stopped early (`--timeout`), for its verdict."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.why: str | None = None
        self.deadline: float | None = None


async def _execute_all(prepared_runs: list[PreparedRun], options: RunOptions, on_event: Callable[[Event], None],
                       store: ResultStore, decide_gate: Callable[[RunRecord], None], stop: _Stop, *,
                       run_id: str | None, done: dict[tuple[str, str, int], CaseResult]) -> list[RunRecord]:
    """Each agent's run in turn, under one run id. Ctrl-C and SIGTERM (a CI job's timeout, `kill`) and
    `--timeout` cancel the run under way instead of killing it, so finished cases are still reported and
    saved; the agents not started yet are not started (their cases are listed as unfinished)."""
    from .engine.runner import Run, RunRecord, new_run_id
    from .engine.signals import stop_on_signals

    run_id = run_id or new_run_id()
    loop = asyncio.get_running_loop()
    current: list[Run] = []
    stopped: list[bool] = []

    def cancel() -> None:
        stopped.append(True)
        if current:
            current[-1].cancel()

    def timed_out() -> None:
        stop.why = f"the run reached --timeout {_duration_text(stop.timeout or 0)}: unfinished cases were not run"
        cancel()

    timer = loop.call_later(stop.timeout, timed_out) if stop.timeout is not None else None
    parts: list[RunRecord] = []
    try:
        with stop_on_signals(cancel):
            for prepared in prepared_runs:
                if stopped:
                    part = RunRecord(run_id, started=time.time(), finished=time.time(), cancelled=True,
                                     num_runs=prepared.plan.num_runs, coverage="cancelled")
                    part.unfinished = [(str(t.eval_file), t.eval_set.eval_set_id, c.eval_id, rep)
                                       for rep in range(1, prepared.plan.num_runs + 1)
                                       for t in prepared.plan.targets for c in t.cases]
                    parts.append(part)
                    continue
                run = Run(prepared.plan, prepared.agent, options=options, on_event=on_event, store=store,
                          owns_agent=True, before_save=decide_gate, run_id=run_id,
                          done={k: v for k, v in done.items()
                                if any(str(t.eval_file) == k[0] for t in prepared.plan.targets)})
                current.append(run)
                parts.append(await run.execute())
    finally:
        if timer is not None:
            timer.cancel()
    return parts


def _duration(value: str) -> float:
    """`90`, `90s`, `15m`, `2h`, `1h30m`: seconds."""
    import re

    text = value.strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", text)
    if not text or parts is None or not any(parts.groups()):
        raise argparse.ArgumentTypeError(f"not a duration: {value!r} (e.g. 90s, 15m, 1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if not total > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return total


def _duration_text(seconds: float) -> str:
    if seconds >= 3600 and seconds % 60 == 0:
        return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    if seconds >= 60 and seconds == int(seconds):
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{seconds:g}s"


def _print_dry_run(prepared_runs: list[PreparedRun], places: dict[int, list[EvalSetPlace]],
                   resolution: Resolution | None, args: argparse.Namespace, out: TextIO,
                   resumed: object | None) -> None:
    """`--dry-run`: which agent runs which file, the run's kind and the baseline chosen; nothing runs."""
    from .textsafe import safe_line

    from .engine.history import executor_info
    from .engine.options import run_options_from_flags

    options = run_options_from_flags(args)
    print("Dry run: nothing is run.", file=out)
    for prepared in prepared_runs:
        where = executor_info(options, prepared.agent).text()
        print(f"agent {safe_line(prepared.agent_ref)} ({safe_line(where)})", file=out)
        for target, place in zip(prepared.plan.targets, places[id(prepared)]):
            n = len(target.cases)
            runs = f" × {prepared.plan.num_runs} runs" if prepared.plan.num_runs > 1 else ""
            print(f"  runs {safe_line(str(target.eval_file))}: {n} case{'s' if n != 1 else ''}{runs}", file=out)
            print(f"    kind: {safe_line(place.kind.text())}", file=out)
            if resolution is not None:
                found = resolution.found.get(place.eval_file)
                text = (f"run {found.run_id} ({found.path})" if found is not None
                        else f"none: {resolution.missing.get(place.eval_file, 'no saved run')}")
                print(f"    baseline: {safe_line(text)}", file=out)
    if resumed is not None:
        print(f"resumes run {safe_line(getattr(resumed, 'run_id', ''))}", file=out)


def _find_stale(record: RunRecord, plan: RunPlan, agent_ref: str) -> None:
    """Which results an edit during the run made stale (the agent, a case or the criteria changed on disk
    after the run loaded them): the summary, --json, --junit and --md name them."""
    from .engine.versions import stale_of

    record.stale = stale_of((c for r in record.results for c in r.case_results), agent_ref,
                            {str(t.eval_file): t.config.source for t in plan.targets})


def _print_stale(record: RunRecord, out: TextIO) -> None:
    """The results an edit during the run made stale: the summary names them, so no one takes them for the
    files' results."""
    from .textsafe import safe_line

    if not record.stale:
        return
    reasons = ", ".join(dict.fromkeys(r for rs in record.stale.values() for r in rs))
    print(f"Stale: {len(record.stale)} result(s) an edit during the run made stale ({reasons}); run again to "
          "check the files on disk:", file=out)
    for (file, eval_id), why in record.stale.items():
        print(f"  {safe_line(eval_id)} ({safe_line(Path(file).name)}): {', '.join(why)}", file=out)


def run_places(plan: RunPlan, agent_ref: str, options: RunOptions, store: ResultStore,
               agent: Executor) -> list[EvalSetPlace]:
    """Each eval set of a planned run: where its history is kept and its kind in this run (what the
    resolver matches saved runs against)."""
    from .engine.history import EvalSetPlace, agent_kind, run_kind, selection_of
    from .engine.runner import plan_coverage
    from .engine.store import history_dir

    selection = selection_of(plan_coverage(plan))
    kind = agent_kind(agent_ref)
    return [EvalSetPlace(t.eval_set.eval_set_id, str(t.eval_file),
                         store.root or history_dir(t.eval_file, agent.home),
                         run_kind(t.config, agent=kind, options=options, selection=selection))
            for t in plan.targets]


def _find_baseline(spec: str, places: list[EvalSetPlace], err: TextIO) -> Resolution:
    """The saved record of each eval set to compare with, found before the run (so this run's own
    history is never its baseline, and a baseline that does not exist, or is of another kind, stops the
    run before it starts)."""
    from .engine.history import ResolveError, find_records

    try:
        found = find_records(spec, places)
    except ResolveError as exc:
        raise UsageError(str(exc)) from None
    from .textsafe import safe_line

    for place in places:
        why = found.missing.get(place.eval_file)
        if why is not None:
            print(f"warning: --baseline {safe_line(spec)}: no baseline for {safe_line(place.eval_set_id)} "
                  f"({safe_line(place.eval_file)}): {safe_line(why)}; its cases count as not run there", file=err)
    return found


def _refuse_outputs_over_inputs(args: argparse.Namespace, agent_ref: str, plan: RunPlan) -> None:
    """--json, --junit and --md never overwrite what the run reads (an eval file, a config, the replay
    recording) nor each other: the run's input would be lost to its own report."""
    inputs: dict[str, str] = {str(t.eval_file): "an eval file of this run" for t in plan.targets}
    inputs.update({t.config.source: "a config of this run" for t in plan.targets if t.config.source})
    if args.config:
        inputs[str(args.config)] = "the --config file"
    if agent_ref.startswith("replay:"):
        inputs[agent_ref.removeprefix("replay:")] = "the replay recording"
    outputs: dict[str, str] = {}
    for flag, out in (("--json", args.json_out), ("--junit", args.junit_out), ("--md", args.md_out)):
        if not out:
            continue
        for other, what in [*inputs.items(), *outputs.items()]:
            if _same_file(out, other):
                raise UsageError(f"{flag} {out} is {what}: it would be overwritten; name another file")
        outputs[out] = f"also the {flag} output"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): the same file only if the same path
        return os.path.abspath(a) == os.path.abspath(b)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or bare stream: no terminal
        return False


def _say(text: str, err: TextIO, bar: _ProgressBar | None) -> None:
    """One line on stderr, above the progress bar while it is shown."""
    if bar is not None and bar.live:
        bar.print(text)
    else:
        print(text, file=err)


class _ProgressBar:
    """Cases done of all, on stderr, only when stderr is a terminal (Rich, imported only then).
    Transient: the bar is erased when the run ends, so the summary stands alone."""

    def __init__(self, err: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("running"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                  console=Console(file=err, stderr=True), transient=True)
        self._task = self._progress.add_task("cases", total=None)
        self.live = False

    def on_event(self, event: object) -> None:
        from .engine.events import CaseFinished, RunFinished, RunStarted

        if isinstance(event, RunStarted):
            self._progress.update(self._task, total=event.total_cases)
            self._progress.start()
            self.live = True
        elif isinstance(event, CaseFinished):
            self._progress.advance(self._task)
        elif isinstance(event, RunFinished):
            self.stop()

    def print(self, text: str) -> None:
        # Already escaped by the caller; neither markup nor highlighting may touch it.
        self._progress.console.print(text, markup=False, highlight=False, emoji=False)

    def stop(self) -> None:
        if self.live:
            self.live = False
            self._progress.stop()


async def _execute(run: Run) -> RunRecord:
    # Ctrl-C, and SIGTERM (a CI job's timeout, `kill`), cancel the run instead of killing it, so
    # finished cases are still reported and saved. The run opens and closes its agent.
    from .engine.signals import stop_on_signals

    with stop_on_signals(run.cancel):
        return await run.execute()


def cmd_rescore(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`tui-eval rescore RUN|latest|PATH`: every metric again from a saved run's turns, no agent call."""
    from .engine.gate import run_outcome
    from .engine.history import ResolveError, records_of_run
    from .engine.options import RunOptions
    from .engine.rescore import RescoreError, plan_rescore
    from .engine.runner import Run
    from .engine.store import ResultStore
    from .report import print_detailed, print_outcome, print_summary, write_json
    from .textsafe import safe_line

    try:
        records = records_of_run(args.record, Path(args.history))
        planned = plan_rescore(records, config_path=args.config, judge_model=args.judge_model,
                               expected=args.expected)
    except (ResolveError, RescoreError) as exc:
        raise UsageError(str(exc)) from None
    _print_warnings(planned.warnings, err)
    if args.judge_model:
        from .schema.judge_model import parse_judge_model

        try:
            parse_judge_model(args.judge_model)
        except ValueError as exc:
            raise UsageError(f"--judge-model: {exc}") from None
    # No executor: every case answers from its stored turns, and no agent is loaded or worker started.
    run = Run(planned.plan, None, options=RunOptions(), inferences=planned.inferences,
              session_states=planned.session_states, rescore_of=planned.rescore_of,
              store=None if args.no_save else ResultStore(planned.history))
    record = asyncio.run(_execute(run))
    print(f"re-scored {safe_line(planned.rescore_of)} ({args.expected} expected turns)", file=out)
    if args.print_detailed_results:
        print_detailed(record, out)
    print_summary(record, out)
    outcome = run_outcome(record.results, cancelled=record.cancelled, strict=record.strict)
    if args.json_out:
        try:
            write_json(record, Path(args.json_out), outcome, None)
        except OSError as exc:
            print(f"error: could not write --json {safe_line(args.json_out)}: {safe_line(exc.strerror or exc)}",
                  file=err)
            return EXIT_WRITE_FAILED
    if record.save_errors:
        for message in record.save_errors:
            print(f"error: {safe_line(message)}", file=err)
        print_outcome(None, out, written=False)
        return EXIT_WRITE_FAILED
    print_outcome(outcome, out)
    return outcome.code


def cmd_baseline(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`tui-eval baseline save [RUN|latest] PATH`: a saved run's records as one file to commit."""
    from .engine.history import LATEST, ResolveError, records_of_run, save_baseline
    from .engine.store import RecordError
    from .textsafe import safe_line

    if len(args.spec) > 2:
        raise UsageError("baseline save takes [RUN|latest] PATH")
    spec, path = (LATEST, args.spec[0]) if len(args.spec) == 1 else args.spec
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{path}: is a folder; name the baseline file to write")
    try:
        records = records_of_run(spec, Path(args.history), for_baseline=True)
        run_id, n = save_baseline(records, target)
    except (ResolveError, RecordError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"could not write {path}: {exc.strerror or exc}") from None
    print(f"saved run {safe_line(run_id)} ({n} record{'s' if n != 1 else ''}) as the baseline {safe_line(path)}; "
          f"commit it and run with --baseline {safe_line(path)}", file=out)
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .engine.store import dump_json
    from .schema.fileio import atomic_write
    from .schema.errors import LoadError
    from .schema.load import eval_set_id_for, parse_eval_set, read_regular_file

    src = Path(args.source)
    try:  # bounded, and never a FIFO or a device
        eval_set, legacy = parse_eval_set(read_regular_file(src), src)
    except LoadError as exc:
        raise UsageError(str(exc)) from None
    if not legacy:
        print(f"{src} is already in the EvalSet schema; nothing to do", file=out)
        return EXIT_OK
    if args.eval_set_id:
        eval_set.eval_set_id = eval_set.name = args.eval_set_id
    # As ADK's migration does, the new file records when it was made.
    now = time.time()
    eval_set.creation_timestamp = now
    for case in eval_set.eval_cases:
        case.creation_timestamp = now
        for turn in case.conversation or []:
            turn.creation_timestamp = now
    dest = Path(args.dest) if args.dest else src.with_name(eval_set_id_for(src) + ".evalset.json")
    if dest.exists() and not args.force:
        raise UsageError(f"{dest} exists; pass --force to overwrite it")
    atomic_write(dest, dump_json(eval_set.to_dict()))
    n_turns = sum(len(c.conversation or []) for c in eval_set.eval_cases)
    print(f"wrote {dest}: {len(eval_set.eval_cases)} case(s), {n_turns} turn(s)", file=out)
    return EXIT_OK


def _add_import_session(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "import-session", "turn an ADK session (adk api_server's session JSON, or "
                    "Session.model_dump_json()) into a new case of an eval set")
    p.add_argument("session", metavar="SESSION.json", help="the session: GET /apps/{app}/users/{user}/sessions/{id} "
                   "of `adk api_server`, or a Session.model_dump_json()")
    p.add_argument("eval_set", metavar="EVALSET", help="the eval set file to add the case to (a new "
                   "NAME.evalset.json is created)")
    p.add_argument("--id", dest="eval_id", metavar="ID", help="the new case's id (default: the session's id)")


def cmd_import_session(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .schema.edits import EditError
    from .schema.session import SessionImportError, import_session

    try:
        done = import_session(Path(args.session), Path(args.eval_set), eval_id=args.eval_id)
    except (SessionImportError, EditError) as exc:
        raise UsageError(f"{exc}; the eval set was not changed") from None
    from .textsafe import safe_line

    made = "new eval set " if done.created else ""
    print(safe_line(f"imported session {done.session_id} as case {done.eval_id} ({done.turns} turn(s)) into "
          f"{made}{done.eval_set}"), file=out)
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .watch import watch_command

    return watch_command(args, out, err)


def cmd_open(args: argparse.Namespace) -> int:
    from .tui.ces_jobs import ces_target_of

    try:
        local, ces = ces_target_of(args.path, args.endpoint, args.app_version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    path = Path(local)
    if not path.exists():
        raise UsageError(f"{local}: no such file or folder")
    if args.num_runs < 1:
        raise UsageError("--num-runs must be at least 1")
    from .tui.app import run_app

    return run_app(path, agent=args.agent, mouse=not args.no_mouse, live=args.live, num_runs=args.num_runs,
                   ces=ces, ces_endpoint=args.endpoint, ces_app_version=args.app_version,
                   mock_tools=args.mock_tools, executor=args.executor, save=not args.no_save) or 0


def _bare_resume(argv: list[str]) -> list[str]:
    """A bare `--resume` means `--resume=latest`: the value is taken only when it names a run (`latest`, a run
    id, a run record or journal), so `--resume AGENT FILE` never swallows the agent."""
    import re

    out = list(argv)
    for i, arg in enumerate(out):
        if arg != RESUME_FLAG:
            continue
        value = out[i + 1] if i + 1 < len(out) else None
        names_run = value is not None and (value == LATEST_RUN or re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]+", value) is not None
                                           or value.endswith((".tui-eval.json", ".tui-eval-journal.jsonl")))
        if not names_run:
            out[i] = f"{RESUME_FLAG}={LATEST_RUN}"
    return out


def _hoist_common_options(argv: list[str]) -> list[str]:
    """`tui-eval --log-level debug run ...`: move options given before the command to after it."""
    front: list[str] = []
    rest = list(argv)
    while rest and rest[0].split("=", 1)[0] in LOG_LEVEL_FLAGS:
        flag = rest.pop(0)
        front.append(flag)
        if "=" not in flag and rest:
            front.append(rest.pop(0))
    if not front:
        return rest
    if rest and rest[0] in SUBCOMMANDS:
        return [rest[0], *front, *rest[1:]]
    return [*front, *rest]


def _start_logging(args: argparse.Namespace, err: TextIO) -> None:
    """The dashboard owns the terminal, so it logs to a file; every other command logs to stderr."""
    level = getattr(args, "log_level", DEFAULT_LEVEL)
    if args.command in (None, "open"):
        configure_logging(level, default_log_file())
    else:
        configure_logging(level, stream=err)


def _without_cyclic_gc(command: Callable[[argparse.Namespace, TextIO, TextIO], int],
                       args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run a one-shot command with the cyclic GC off, then turn it back on.

    Loading eval files and running builds millions of small acyclic objects (pydantic models, turns,
    results, JSON dicts) that the cyclic GC would rescan again and again for nothing: bench/headless_run.py
    loads and runs on clearly less CPU with the GC off (bench/README.md). Only entry points do this.
    """
    gc.disable()
    try:
        return command(args, out, err)
    finally:
        # Everything allocated meanwhile sits in the youngest generation: turned back on as it is, the
        # next young collection would scan all of it (seconds after a cancelled 100k-case run). Moving it
        # to the oldest generation first (freeze, then unfreeze: two list splices) keeps that free.
        gc.freeze()
        gc.unfreeze()
        gc.enable()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    argv = _hoist_common_options(list(sys.argv[1:] if argv is None else argv))
    out = out or sys.stdout
    err = err or sys.stderr
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["open", *argv]
    argv = [f"{MOCK_TOOLS_FLAG}=strict" if a == MOCK_TOOLS_FLAG else a for a in argv]
    argv = _bare_resume(argv)
    if argv[0] == "--version":
        from . import __version__

        print(f"tui-eval {__version__}", file=out)
        return EXIT_OK
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad arguments already
        return int(exc.code or 0)
    _start_logging(args, err)
    # A run's stop signals wait for its signal reader, which knows their sender: one sent from inside an
    # agent process is ignored (engine/signals.py). Held here, before any thread starts, so all inherit it.
    release_signals = None
    if args.command in ("run", "watch"):
        from .engine.signals import hold_stop_signals

        release_signals = hold_stop_signals()
    try:
        if args.command == "run":
            from .engine.signals import ReaderMayLeave

            # A run finishes and saves whoever stops reading its output (`watch` stops instead).
            return _without_cyclic_gc(cmd_run, args, cast(TextIO, ReaderMayLeave(out)), err)
        if args.command == "migrate":
            return cmd_migrate(args, out, err)
        if args.command == "watch":
            return cmd_watch(args, out, err)
        if args.command == "import-session":
            return cmd_import_session(args, out, err)
        if args.command == "report":
            from .share import report_command

            return report_command(args.record, args.md_out, args.html_out, out, err)
        if args.command == "baseline":
            return cmd_baseline(args, out, err)
        if args.command == "rescore":
            return cmd_rescore(args, out, err)
        if args.command == "ces":
            from .ces_cli import cmd_ces

            return cmd_ces(args, out, err)
        return cmd_open(args)
    except UsageError as exc:
        from .textsafe import safe_line

        for line in str(exc).splitlines():
            print(f"error: {safe_line(line)}", file=err)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    finally:
        reset_logging()
        if release_signals is not None:
            release_signals()


def _leaked_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread() and t.is_alive()]


def _exit_without_teardown(outcome: list[int]) -> None:
    """The last exit handler of the console script: end the process once every other one has run.

    What is left after that is the interpreter's teardown, which frees every object still alive one by
    one (the loaded eval sets, the results, the replay cache) just before the process ends anyway: most of
    the exit time of bench/headless_run.py's run (bench/README.md).
    """
    if not outcome:
        return  # main raised: the interpreter reports it and exits as usual
    logging.shutdown()  # (its own exit handler was registered before this one, so it would not run)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(outcome[0])


def entry() -> None:
    """The console script: `main`, then exit without tearing the heap down (see _exit_without_teardown)."""
    # Exit handlers run last-registered first: registered before any agent or SDK code is imported,
    # this one runs after theirs (and after non-daemon threads were waited for), just before teardown.
    global _kept_for_exit
    outcome: list[int] = []
    atexit.register(_exit_without_teardown, outcome)
    _kept_for_exit = []
    code = main()
    outcome.append(code)
    leaked = _leaked_threads()
    if leaked:
        # Agent code may start non-daemon threads that never end; the interpreter would wait for them
        # for ever after the summary. A thread cannot be made a daemon once started, nor stopped, so
        # the only way out is os._exit now, after flushing what we wrote (it skips exit handlers,
        # which is why it is not the path of every run).
        from .textsafe import safe_line

        names = safe_line(", ".join(sorted(t.name for t in leaked)))
        print(f"warning: not waiting for {len(leaked)} thread(s) left running by agent code: {names}",
              file=sys.stderr)
        _exit_without_teardown(outcome)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
