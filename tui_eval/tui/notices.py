"""What a pull tells the user in notifications: the read model's lines, and an eval file that stopped
loading (its notice withdrawn once the file loads again)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .textual_private import withdraw_notification

if TYPE_CHECKING:  # pragma: no cover
    from textual.notifications import Notification

    from .app import EvalApp
    from .readmodel import Changes

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
