"""User key bindings: a TOML file mapping binding ids (`run.all`) to keys, applied with `App.set_keymap`.

TOML rather than JSON because people edit this file by hand: it takes comments, and a dotted id needs
no quotes (`run.all = "ctrl+r"` is a nested table in TOML, which we flatten back to the id). `tomllib`
is in the standard library (Python 3.11+), so this costs no dependency. A bad file or an unknown id is
reported (a log line and a notification), never a crash: the dashboard opens with its default keys.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..userpaths import user_path

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App
    from textual.binding import Binding

log = logging.getLogger(__name__)

ENV_VAR = "TUI_EVAL_KEYMAP"
FILE_NAME = "keymap.toml"
#: A keymap is a few hundred bytes; a file past this is not read.
MAX_KEYMAP_BYTES = 1024 * 1024


def keymap_path() -> Path:
    """Where the keymap is read from: `$TUI_EVAL_KEYMAP`, else `$XDG_CONFIG_HOME/tui-eval/keymap.toml`."""
    return user_path("config", FILE_NAME, env=ENV_VAR)


@dataclass(frozen=True)
class UserKeymap:
    """A keymap read from a file: binding id -> Textual key list ("ctrl+r" or "r,ctrl+r"), and what was wrong."""

    path: Path | None = None
    bindings: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def unknown_ids(self, known: Iterable[str]) -> list[str]:
        """Ids in the file that no binding has (a typo, or a binding that was renamed)."""
        known_set = set(known)
        return [binding_id for binding_id in self.bindings if binding_id not in known_set]

    def clashes(self, sections: Iterable[Sequence[Binding]]) -> list[str]:
        """Keys the keymap gives to a binding while another binding of the same screen keeps them:
        Textual then lets the remapped one win and the other loses its key."""
        from textual.keys import key_to_character

        found: list[str] = []
        for bindings in sections:
            owners: dict[str, list[str]] = {}
            for binding in bindings:
                if not binding.id:
                    continue
                for key in self.bindings.get(binding.id, binding.key).split(","):
                    key = key.strip()
                    owners.setdefault(key_to_character(key) or key, []).append(binding.id)
            for key, ids in owners.items():
                if len(ids) > 1 and any(i in self.bindings for i in ids):
                    found.append(f"{key!r} is bound to {' and '.join(ids)}")
        return found


def keymap_warnings(keymap: UserKeymap) -> tuple[str | None, list[str]]:
    """What the user should hear about a keymap: the ids no binding has (with a did-you-mean), and the
    keys it takes from another binding of the same screen. Imports every screen: called after the first
    frame."""
    from textual.binding import Binding

    from .screens.help import binding_sections

    sections = [[b for b in bindings if isinstance(b, Binding)] for _title, bindings in binding_sections()]
    known = [b.id for bindings in sections for b in bindings if b.id]
    unknown = keymap.unknown_ids(known)
    text = None
    if unknown:
        named = ", ".join(f"{u}{did_you_mean(u, known)}" for u in unknown)
        text = f"{keymap.path}: unknown binding ids {named} (the help screen, ?, lists the ids)"
    return text, [f"{clash}: the keymap's binding wins" for clash in keymap.clashes(sections)]


class KeymapNotices:
    """Applies the user's keymap to the app and tells the user, once each, what is wrong with it."""

    def __init__(self, app: App[Any], keymap: UserKeymap) -> None:
        self.app = app
        self.keymap = keymap
        self._said: set[str] = set()

    def apply(self) -> None:
        for problem in self.keymap.problems:  # (logged when the file was read)
            self.app.notify(problem, title="Keymap", severity="warning", markup=False, timeout=10)
        if not self.keymap.bindings:
            return
        self.app.set_keymap(self.keymap.bindings)
        # Checking ids imports every screen: done after the first frame, and only when there is a keymap.
        self.app.call_after_refresh(self._check_ids)

    def _check_ids(self) -> None:
        unknown, clashes = keymap_warnings(self.keymap)
        if unknown is not None:
            self._say(unknown, "Keymap")
        for clash in clashes:
            self._say(clash, "Keymap clash")

    def clashed(self, bindings: Iterable[Binding]) -> None:
        """Textual found a remapped key that another binding had (it asks on every key press)."""
        ids = ", ".join(sorted(b.id or b.action for b in bindings))
        self._say(f"the keymap's keys replace {ids}", "Keymap clash")

    def _say(self, text: str, title: str) -> None:
        if text in self._said:
            return
        self._said.add(text)
        log.warning("keymap: %s", text)
        self.app.notify(text, title=title, severity="warning", markup=False, timeout=10)


def load_keymap(path: Path | None = None) -> UserKeymap:
    """Read the keymap file; a missing file is an empty keymap, a broken one an empty keymap with a problem."""
    from ..schema.errors import LoadError
    from ..schema.load import read_regular_file

    named = path is None and bool(os.environ.get(ENV_VAR))
    path = path or keymap_path()
    if not named and not os.path.lexists(path):
        return UserKeymap()
    try:
        # A regular file of bounded size: a FIFO would block start-up, /dev/zero never ends.
        raw = read_regular_file(path, MAX_KEYMAP_BYTES)
    except LoadError as exc:
        if named and not os.path.lexists(path):  # a file the user named is expected to exist
            return _reported(UserKeymap(path, problems=(f"{path}: no such file (named by ${ENV_VAR})",)))
        return _reported(UserKeymap(path, problems=(f"{path}: {exc.message}",)))
    import tomllib  # only when there is a file: most start-ups have none

    try:
        data = tomllib.loads(raw.decode("utf-8"))
        pairs = list(_flatten(data))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return _reported(UserKeymap(path, problems=(f"{path}: {exc}",)))
    except RecursionError:  # tables or arrays nested thousands deep
        return _reported(UserKeymap(path, problems=(f"{path}: nested too deeply to be a keymap",)))
    bindings: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in pairs:
        keys = _keys(value)
        if keys is None:
            problems.append(f"{path}: {binding_id}: expected a key (\"ctrl+r\") or a list of keys, "
                            f"got {type(value).__name__}")
            continue
        bad = [k for k in keys.split(",") if not is_key(k)]
        if bad:
            # Textual would accept it silently and the binding would never fire.
            problems.append(f"{path}: {binding_id}: {', '.join(repr(k) for k in bad)} is not a key "
                            "(keys look like \"r\", \"R\", \"ctrl+r\", \"f5\", \"slash\", \"question_mark\")")
            continue
        bindings[binding_id] = keys
    return _reported(UserKeymap(path, bindings, tuple(problems)))


_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


def is_key(key: str) -> bool:
    """Whether Textual knows `key`: modifiers joined by `+` to a single character, a character's name
    (`slash`, `question_mark`) or a key name (`enter`, `f5`, `pageup`)."""
    from textual.keys import Keys, _character_to_key

    *mods, last = key.strip().split("+")
    if not last or any(m not in _MODIFIERS for m in mods):
        return False
    if len(last) == 1:
        return True
    names = {k.value for k in Keys} | {_character_to_key(chr(c)) for c in range(33, 127)}
    return last in names


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean run.all?)` for a close known id, else ``."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _reported(keymap: UserKeymap) -> UserKeymap:
    for problem in keymap.problems:
        log.warning("keymap: %s", problem)
    if keymap.bindings:
        log.info("keymap: %d bindings from %s", len(keymap.bindings), keymap.path)
    return keymap


def _flatten(data: Mapping[str, object], prefix: str = "") -> Iterable[tuple[str, object]]:
    """`{"run": {"all": "x"}}` (what `run.all = "x"` parses to) -> `("run.all", "x")`."""
    for name, value in data.items():
        binding_id = f"{prefix}{name}"
        if isinstance(value, dict):
            yield from _flatten(value, binding_id + ".")
        else:
            yield binding_id, value


def _keys(value: object) -> str | None:
    """A Textual key list ("r,ctrl+r") from a string or a list of strings; None if it is neither."""
    if isinstance(value, str) and value.strip():
        return ",".join(k.strip() for k in value.split(",") if k.strip())
    if isinstance(value, list) and value and all(isinstance(k, str) and k.strip() for k in value):
        return ",".join(k.strip() for k in value)
    return None
