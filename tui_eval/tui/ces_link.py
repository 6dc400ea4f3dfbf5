"""The dashboard's link to a CES app: pull it into its cache file at start-up, run its evaluations in CES
with the run's progress in the run panel, pull the new results when the run ends.

The network work runs in the app's jobs (thread workers running tui_eval.tui.ces_jobs); they report back
in notifications and through the RunState the run panel shows, and a file they rewrote is reloaded in the
engine, so the browser, turn view and CES history redraw from the new file. A CES failure is one line
(a notification naming the endpoint and what to do), never a traceback; the dashboard keeps going with
what it has (the copy pulled last, the local eval sets).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..schema.status import EvalStatus

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.events import CaseKey
    from ..schema.ces.model import EvaluationRun
    from .app import EvalApp
    from .ces_jobs import Cancel, CesTarget
    from .progress import RunState

log = logging.getLogger(__name__)

#: How long a CES failure stays on screen: it explains why the CES cases are old or missing.
ERROR_SECONDS = 30


class CesLink:
    """Owned by the app; all methods but the workers run on the UI thread."""

    def __init__(self, app: EvalApp, target: CesTarget | None, endpoint: str | None = None,
                 app_version: str | None = None) -> None:
        self.app = app
        self.target = target
        #: The endpoint runs of a pulled folder's cases use (`--endpoint`), when there is no target.
        self.endpoint = endpoint
        #: The app version runs of a pulled folder's cases use (`--app-version`), when there is no target.
        self.app_version = app_version
        #: The last CES failure, as shown (tests read it).
        self.last_error: str | None = None
        #: Work in flight, stopped on quit: the default executor's threads are joined at exit, and a
        #: pull waiting on an unreachable endpoint would otherwise hold the exit for its timeout.
        self._cancels: set[Cancel] = set()

    def close(self) -> None:
        """Stop every pull and run being followed (quitting)."""
        for cancel in list(self._cancels):
            cancel.cancel()

    # ---- pull --------------------------------------------------------------------------------

    def start(self) -> None:
        """Pull the target app (if any) in a thread worker; the load of local files goes on meanwhile."""
        if self.target is not None:
            self.app.jobs.start(self._pull_work, group="ces", name="CES pull", failure="CES", then=self.app.sync_status)

    def _pull_work(self) -> None:
        from ..ces.client import CesError
        from .ces_jobs import Cancel, pull_app

        target = self.target
        assert target is not None
        cancel = Cancel()
        self._cancels.add(cancel)
        try:
            saved = pull_app(target, cancel=cancel)
        except asyncio.CancelledError:
            log.info("CES pull of %s stopped (quitting)", target.app)
            return
        except CesError as exc:
            cached = " (showing the copy pulled last)" if target.eval_file.exists() else ""
            self._say(f"CES pull of {target.app} failed{cached}: {exc}", "error")
        else:
            self._say(saved.line(target.app), "information" if saved.written else "warning")
        finally:
            self._cancels.discard(cancel)
        self._reload(target.eval_file)

    # ---- run ---------------------------------------------------------------------------------

    def target_for(self, key: CaseKey | None) -> tuple[CesTarget, list[str] | None] | None:
        """The app and evaluations a run in CES covers: the case's evaluation, else (None) every evaluation
        CES lists for the target app (sent by id: see remote.run)."""
        from ..schema.ces.caseview import results_of
        from ..schema.ces.mapping import app_of
        from .ces_jobs import CesTarget

        if key is None:
            return (self.target, None) if self.target is not None else None
        case = self.app.listing.case(key)
        found = results_of(case.model_extra if case is not None else None)
        app = app_of(found.name) if found is not None else None
        if found is None or found.name is None or app is None:
            return None
        if self.target is not None and self.target.app == app:
            return self.target, [found.name]
        # A pulled folder opened as a plain path: the case names its app; the results go back to its file.
        endpoint = self.target.endpoint if self.target is not None else self.endpoint
        version = self.target.app_version if self.target is not None else self.app_version
        base = CesTarget(app, Path(key.eval_file), app_version=version)
        return (replace(base, endpoint=endpoint) if endpoint else base), [found.name]

    def run(self, key: CaseKey | None) -> bool:
        """Start a run in CES; False, with a notification, when it cannot start now."""
        from ..schema.ces.mapping import short_name
        from .ces_jobs import Cancel

        found = self.target_for(key)
        if found is None:
            what = "this case did not come from CES" if key is not None else "no CES app (open ces://projects/…/apps/A)"
            self.app.notify(f"Nothing to run in CES: {what}.", severity="warning", markup=False)
            return False
        target, evaluations = found
        label = f"CES run {short_name(target.app)}" + (f" {short_name(evaluations[0])}" if evaluations else "")
        state = self.app.model.new_run(label)
        if state is None:
            self.app.notify("A run is in progress: x cancels it.", severity="warning")
            return False
        cancel = Cancel()
        state.set_canceller(cancel.cancel)
        self._cancels.add(cancel)
        self.app.jobs.start(lambda: self._run_work(state, target, evaluations, cancel), group="ces", name=label,
                            failure="CES", then=self.app.sync_status, failed=partial(self._run_failed, state))
        self.app.sync_status()
        return True

    def _run_failed(self, state: RunState, error: BaseException) -> None:
        """The run's worker raised (a bug, not a CES error): the run ends failed, with the error."""
        if state.active:
            state.finish("failed", f"{type(error).__name__}: {error}")
        self.app.sync_status()

    def _run_work(self, state: RunState, target: CesTarget, evaluations: list[str] | None, cancel: Cancel) -> None:
        from ..ces.client import CesError
        from .ces_jobs import run_and_pull

        def on_progress(current: EvaluationRun) -> None:
            p = current.progress
            if p is None:
                return
            state.set_counts(p.total_count or 0, (p.completed_count or 0) + (p.error_count or 0),
                             {EvalStatus.PASSED: p.passed_count or 0, EvalStatus.FAILED: p.failed_count or 0,
                              EvalStatus.NOT_EVALUATED: p.error_count or 0})

        try:
            done = run_and_pull(target, evaluations, on_progress, cancel=cancel)
        except asyncio.CancelledError:
            state.finish("cancelled")
            self._say(f"Stopped following the CES run of {target.app}: it goes on in CES "
                      "(pull again, or reopen, for its results).", "warning")
            return
        except CesError as exc:
            state.finish("failed", str(exc))
            self._say(f"CES run of {target.app} failed: {exc}", "error")
            return
        finally:
            self._cancels.discard(cancel)
        run = done.outcome.run
        if run.state == "ERROR":
            state.finish("failed", f"{run.name} ended in ERROR: {run.error_reason}")
        else:
            state.finish("finished")
        self._say(done.saved.line(target.app), "information" if done.saved.written else "warning")
        self._reload(target.eval_file)

    # ---- plumbing (worker threads) -----------------------------------------------------------

    def _say(self, text: str, severity: str) -> None:
        if severity == "error":
            self.last_error = text
            log.warning("%s", text)
        if not self.app.is_running:  # quitting: nobody to tell
            log.info("CES (not shown, the app is closing): %s", text)
            return
        self.app.call_from_thread(self._notify, text, severity)

    def _notify(self, text: str, severity: str) -> None:
        timeout = ERROR_SECONDS if severity == "error" else 8
        self.app.notify(text, title="CES", severity=severity, markup=False, timeout=timeout)  # type: ignore[arg-type]

    def _reload(self, path: Path) -> None:
        """Reload a pulled file (here and in the engine) once the folder is loaded; the next pull redraws
        its cases everywhere."""
        app = self.app
        deadline = time.monotonic() + 60
        while app.model.loading and time.monotonic() < deadline:
            time.sleep(0.05)
        if not path.exists():
            return
        app.engine.reload_everywhere(path.resolve())
