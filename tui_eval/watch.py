"""`tui-eval watch`: run everything once, then re-run what each save changes and print it, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time
from pathlib import Path
from typing import TextIO, cast

from .engine.events import (
    AgentPaused,
    AgentReloaded,
    AgentStale,
    CasesRemoved,
    Event,
    FileProblem,
    LiveRunFinished,
    Log,
    RunError,
    RunNotice,
    StaleChanged,
    WatchFailed,
)
from .engine.exitcodes import EXIT_BAD_INPUT, EXIT_OK
from .engine.live import LiveSession
from .engine.options import run_options_from_flags
from .engine.runner import RunRecord
from .engine.signals import ReaderMayLeave, stop_on_signals
from .engine.store import ResultStore
from .report import case_lines, print_summary
from .schema.results import counts_text, status_counts
from .textsafe import safe_line


log = logging.getLogger(__name__)


def _targets(args: argparse.Namespace) -> tuple[Path, str | None, list[Path] | None]:
    """(root folder, agent reference, eval files to restrict to) from the command line: one folder to
    watch, or the agent and eval files as `run` reads them (engine.setup.split_agent)."""
    from .engine.plan import split_target
    from .engine.setup import split_agent

    if len(args.targets) == 1 and Path(args.targets[0]).is_dir():
        return Path(args.targets[0]), args.agent, None
    agent, targets = split_agent(args.agent, args.targets)
    if not targets:
        raise ValueError("no eval files given")
    if len(targets) == 1 and Path(targets[0]).is_dir():
        return Path(targets[0]), agent, None
    files = []
    for target in targets:
        path = Path(split_target(target)[0])
        if path.is_dir():
            raise ValueError(f"{target}: give one folder, or eval files (not both)")
        if not path.is_file():
            raise ValueError(f"{target}: no such file or folder")
        files.append(path.resolve())
    root = Path(os.path.commonpath([str(f.parent) for f in files]))
    return root, agent, files


class _Printer:
    """Turns live events into lines: one per re-run, then why each case that did not pass failed."""

    def __init__(self, session: LiveSession, out: TextIO, err: TextIO) -> None:
        self.session = session
        self.out = out
        self.err = err
        self.quiet_runs = True  # the initial run prints a full summary instead
        self.notices: set[str] = set()

    def _line(self, text: str, stream: TextIO | None = None) -> None:
        # Every line carries file names, ids, agent errors or reasons: each is printed as one literal line.
        print(safe_line(text), file=stream or self.out, flush=True)

    def __call__(self, event: Event) -> None:
        stamp = time.strftime("%H:%M:%S")
        if isinstance(event, FileProblem):
            tail = " (keeping its last good version)" if event.stale else ""
            self._line(f"[{stamp}] ! {event.message}{tail}", self.err)
        elif isinstance(event, AgentReloaded) and event.error:
            self._line(f"[{stamp}] ! agent {Path(event.ref).name}: {event.error}", self.err)
        elif isinstance(event, AgentStale):
            self._line(f"[{stamp}] agent {Path(event.ref).name} changed ({Path(event.path).name}); "
                       "re-run on agent edits is off", self.out)
        elif isinstance(event, AgentPaused):
            self._line(f"[{stamp}] note: {event.message}", self.out)
        elif isinstance(event, StaleChanged) and event.stale:
            from .engine.versions import stale_text

            ids = ", ".join(k.eval_id for k, _r in event.stale[:5]) + (" …" if len(event.stale) > 5 else "")
            reasons = tuple(dict.fromkeys(r for _k, rs in event.stale for r in rs))
            self._line(f"[{stamp}] {stale_text(reasons)}: {_plural_cases(len(event.stale))} ({ids})", self.out)
        elif isinstance(event, CasesRemoved):
            self._line(f"[{stamp}] removed: {', '.join(str(k.eval_id) for k in event.keys)}")
        elif isinstance(event, RunNotice):
            # Said once per watch, not on every re-run: again only when it names a metric not yet named.
            if not self.notices.issuperset(event.metrics):
                self.notices.update(event.metrics)
                self._line(f"[{stamp}] note: {event.message}", self.err)
        elif isinstance(event, RunError):
            self._line(f"[{stamp}] error: {event.message}", self.err)
        elif isinstance(event, WatchFailed):
            self._line(f"[{stamp}] ! file watching stopped: {event.message}; retrying in {event.retry_after:g} s",
                       self.err)
        elif isinstance(event, Log) and event.level in ("warning", "error"):
            self._line(f"[{stamp}] {event.level}: {event.message}", self.err)
        elif isinstance(event, LiveRunFinished) and not self.quiet_runs:
            self._finished(event, stamp)

    def _repeats(self, event: LiveRunFinished) -> None:
        for line in _repeat_lines(event.records):
            self._line(line)

    def _finished(self, event: LiveRunFinished, stamp: str) -> None:
        results = [self.session.results[k] for k in event.keys if k in self.session.results]
        verb = "re-scored" if event.rescore else "re-ran"
        self._line(f"[{stamp}] {event.reason} -> {verb} {len(results)} case(s): {counts_text(status_counts(results))} "
                   f"({event.wall_seconds:.2f} s)")
        if self.session.num_runs > 1:
            self._repeats(event)
            return
        for case in results:
            # The same block as `tui-eval run` prints (reasons, trajectory details, grouped not-evaluated).
            for line in case_lines(case, f"{Path(case.eval_set_file).name}:{case.eval_id}"):
                print(line, file=self.out, flush=True)


def _plural_cases(n: int) -> str:
    return f"{n} result" + ("" if n == 1 else "s")


def _repeat_lines(records: tuple[RunRecord, ...]) -> list[str]:
    """With --num-runs: one line per case that did not pass every run, flaky first."""
    from .engine.repeats import RepeatLabel, order_for_summary
    from .share import repeat_marks

    lines = []
    for record in records:
        if record.insight is None:
            continue
        for file, cases in record.insight.repeats.items():
            for r in order_for_summary(cases):
                if r.label != RepeatLabel.STABLE_PASS:
                    lines.append(safe_line(f"  {Path(file).name}:{r.case_id}  {r.fraction} ({r.label.value}) "
                                           f"{repeat_marks(r.statuses)}"))
    return lines


def _merge(records: list[RunRecord]) -> RunRecord:
    """One record of several runs; a case a later run ran again (an edit during the first run) is
    counted once, with its latest result."""
    merged = RunRecord(run_id="initial", started=min((r.started for r in records), default=time.time()))
    where: dict[tuple[str, int], int] = {}
    for r in records:
        for result, repetition in zip(r.results, r.repetitions or [1] * len(r.results)):
            at = where.get((result.eval_set_file, repetition))
            if at is None:
                where[(result.eval_set_file, repetition)] = len(merged.results)
                merged.results.append(result.model_copy(update={"case_results": list(result.case_results)}))
                merged.repetitions.append(repetition)
                continue
            cases = merged.results[at].case_results
            index = {c.eval_id: i for i, c in enumerate(cases)}
            for case in result.case_results:
                if case.eval_id in index:
                    cases[index[case.eval_id]] = case
                else:
                    cases.append(case)
        merged.saved.extend(r.saved)
        merged.num_runs = max(merged.num_runs, r.num_runs)
        merged.cancelled = merged.cancelled or r.cancelled
    return merged


def _print_initial(records: list[RunRecord], out: TextIO) -> None:
    """The first run's summary: one summary, or with --num-runs one per agent's run (each holds its
    own k/N repeat summary, which a merged record would not)."""
    if len(records) > 1 and any(r.num_runs > 1 for r in records):
        for record in records:
            print_summary(record, out)
    else:
        print_summary(records[0] if len(records) == 1 else _merge(records), out)


async def _watch(session: LiveSession, printer: _Printer, out: TextIO) -> None:
    def interrupt() -> None:
        session.cancel()
        session.stop()

    try:
        with stop_on_signals(interrupt):
            watcher = asyncio.create_task(session.watch())
            await asyncio.sleep(0)  # start watching before the first run, so no save is missed
            records = await session.start()
            if records:
                _print_initial(records, out)
            elif not session.workspace.eval_files:
                print("no eval files found yet; waiting for some to appear", file=out)
            printer.quiet_runs = False
            names = ", ".join(str(p) for p in session.watch_paths())
            print(safe_line(f"watching {names} for changes (Ctrl-C to stop)"), file=out, flush=True)
            await watcher
    finally:
        await session.aclose()


def _join_our_watcher_threads(timeout: float = 2.0) -> None:
    """Wait for the file watcher's AnyIO worker thread, ours, which ends just after the loop does:
    left alive, the console script took it for a thread left running by agent code and said so."""
    import threading

    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith("AnyIO worker thread") and thread.is_alive():
            thread.join(max(0.0, deadline - time.monotonic()))


def watch_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the live loop headlessly until interrupted (or until the reader of its output goes away).
    Exit 0 when stopped, 2 for bad arguments."""
    if args.concurrency < 1 or (args.judge_concurrency or 1) < 1 or args.num_runs < 1:
        print("error: --concurrency, --judge-concurrency and --num-runs must be at least 1", file=err)
        return EXIT_BAD_INPUT
    try:
        root, agent, files = _targets(args)
    except ValueError as exc:
        print(f"error: {safe_line(exc)}", file=err)
        return EXIT_BAD_INPUT
    if args.config and not Path(args.config).is_file():
        print(f"error: {safe_line(args.config)}: no such config file", file=err)
        return EXIT_BAD_INPUT
    options = run_options_from_flags(args)
    session = LiveSession(
        root,
        agent_ref=agent,
        config_override=args.config,
        options=options,
        store=ResultStore(),
        rerun_on_agent_change=not args.no_rerun_on_agent_change,
        debounce=args.debounce,
        only_files=files,
        num_runs=args.num_runs,
    )

    def reader_left() -> None:  # `tui-eval watch ... | head -1`: nobody reads the re-runs any more
        session.cancel()
        session.stop()

    out = cast(TextIO, ReaderMayLeave(out, reader_left))
    printer = _Printer(session, out, err)
    session.on_event = printer
    try:
        asyncio.run(_watch(session, printer, out))
    except KeyboardInterrupt:  # Ctrl-C where no signal handler could be installed: stopping is the point
        log.debug("interrupted")
    _join_our_watcher_threads()
    print("stopped watching", file=out)
    return EXIT_OK
