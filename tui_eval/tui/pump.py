"""The pull loop: on one timer finished cases are stored in small slices, on another the read model is
pulled; what a pull changed goes to the app's consumers in order, then to the screens on `changed`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from .readmodel import Changes
from .textual_private import app_is_exiting

if TYPE_CHECKING:  # pragma: no cover
    from textual.signal import Signal

    from ..engine.events import CaseKey
    from .app import EvalApp
    from .readmodel import ReadModel

log = logging.getLogger(__name__)

#: The screens redraw what changed this many times a second.
TICK_HZ = 8
#: Finished cases are stored in slices of at most STORE_BUDGET seconds, STORE_HZ times a second, and
#: FOLD_BUDGET seconds at each redraw: the rest wait, in order, so a key never waits behind a burst of
#: thousands of results (bench/README.md, "the dashboard with 100,000 cases").
STORE_HZ = 32
STORE_BUDGET = 0.003
FOLD_BUDGET = 0.003


class Pump:
    """Moves the read model onto the screen. An error is logged and shown once while it repeats."""

    def __init__(self, app: EvalApp, model: ReadModel, consumers: Sequence[Callable[[Changes], None]],
                 changed: Signal[Changes]) -> None:
        self.app = app
        self.model = model
        #: Called with every pull's changes, in order, before the screens hear of them.
        self.consumers = tuple(consumers)
        self.changed = changed
        self._error: str | None = None

    def start(self) -> None:
        self.app.set_interval(1 / TICK_HZ, self.tick, name="pull")
        self.app.set_interval(1 / STORE_HZ, self.store, name="store")

    def pull(self) -> None:
        """Fold everything waiting onto the screen now (the timer does it in slices)."""
        self._pull(None)

    def tick(self) -> None:
        """A slice of the fold now (what the timer does, for a change the user should see at once)."""
        self._pull(FOLD_BUDGET)

    def store(self) -> None:
        """The store timer: a slice of the finished cases waiting (shown at the next pull)."""
        if self.model.backlog:
            try:
                self.model.store(STORE_BUDGET)
            except Exception as exc:  # noqa: BLE001 - reported like the pull's errors
                self._report(exc)

    def redraw(self, keys: set[CaseKey]) -> None:
        """Pull everything, then redraw these cases on every screen (an edit rewrote them)."""
        self.pull()
        self.changed.publish(Changes(dirty=keys))

    def _pull(self, budget: float | None) -> None:
        app = self.app
        stack = app.screen_stack
        # The timer can fire once more while the app shuts down and its screens are being removed.
        if app_is_exiting(app) or not app.is_running or not stack or not stack[0].is_attached:
            return
        try:
            changes = self.model.pull(budget)
            for consume in self.consumers:
                consume(changes)
            if changes:
                self.changed.publish(changes)
        except Exception as exc:  # noqa: BLE001 - reported (once per distinct error) and logged
            self._report(exc)
        else:
            self._error = None

    def _report(self, exc: Exception) -> None:
        text = f"{type(exc).__name__}: {exc}"
        if text != self._error:
            self._error = text
            self.app.report_error("Could not update the screen", exc)
        else:
            log.debug("pull loop failed again: %s", text)
