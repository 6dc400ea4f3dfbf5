"""What a pull tells the user in notifications: the read model's lines, and an eval file that stopped
loading (its notice withdrawn once the file loads again); and what a screen says of a key that cannot
act now (`CannotAct`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .textual_private import withdraw_notification

if TYPE_CHECKING:  # pragma: no cover
    from textual.notifications import Notification

    from .app import EvalApp
    from .readmodel import Changes

@runtime_checkable
class CannotAct(Protocol):
    """A screen that says why a key of its own cannot act now (a run is going, nothing is cut, the last
    turn): the app shows it as a short notice when the screen's `check_action` turned the key down."""

    def cannot_act(self, action: str, parameters: tuple[object, ...]) -> str | None:
        """A short notice for the action (by name), or None to let the key go on as before."""


#: How long a "File not loaded" notice stays (it stays in the tree as the file's error too).
FILE_NOTICE_SECONDS = 8


class Notices:
    """A pull's consumer, owned by the app."""

    def __init__(self, app: EvalApp) -> None:
        self.app = app
        #: The "File not loaded" notice shown per file.
        self._not_loaded: dict[Path, Notification] = {}

    def take(self, changes: Changes) -> None:
        from textual.notifications import Notification, Notify

        app = self.app
        for text, severity in changes.messages:
            app.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]
        for path in changes.files.reloaded:
            file_state = app.listing.file_state(path)
            notice = self._not_loaded.pop(path, None)
            if notice is not None and file_state is not None and file_state.error is None:
                withdraw_notification(app, notice)  # the file loads again: its notice is out of date
        for path, error in changes.files.broke:
            notice = Notification(app.listing.error_text(error), "File not loaded", "warning", FILE_NOTICE_SECONDS,
                                  markup=False)
            self._not_loaded[path] = notice
            app.post_message(Notify(notice))
