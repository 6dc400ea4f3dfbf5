"""Where tui-eval keeps per-user files: an explicit environment variable, else the XDG base directories.

The judge cache and the CES cache (`cache`), the keymap (`config`) and the dashboard's log (`state`) all
follow the same rule, so it is written once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

Kind = Literal["cache", "config", "state"]

# XDG variable and its default below the home folder, per kind.
_XDG: dict[str, tuple[str, tuple[str, ...]]] = {
    "cache": ("XDG_CACHE_HOME", (".cache",)),
    "config": ("XDG_CONFIG_HOME", (".config",)),
    "state": ("XDG_STATE_HOME", (".local", "state")),
}


def user_path(kind: Kind, *parts: str, env: str | None = None) -> Path:
    """`$env` when set, else `$XDG_<KIND>_HOME/tui-eval/<parts>`, else XDG's default below `~`
    (`~/.cache`, `~/.config`, `~/.local/state`); a leading `~` in either variable is expanded."""
    if env:
        explicit = os.environ.get(env)
        if explicit:
            return Path(explicit).expanduser()
    var, default = _XDG[kind]
    base = os.environ.get(var)
    root = Path(base).expanduser() if base else Path.home().joinpath(*default)
    return root.joinpath("tui-eval", *parts)
