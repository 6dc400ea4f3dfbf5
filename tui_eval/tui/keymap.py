"""User key bindings: a TOML file mapping binding ids (`run.all`) to keys, applied with `App.set_keymap`.

TOML rather than JSON because people edit this file by hand: it takes comments, and a dotted id needs
no quotes (`run.all = "ctrl+r"` is a nested table in TOML, which we flatten back to the id). `tomllib`
is in the standard library (Python 3.11+), so this costs no dependency. A bad file or an unknown id is
reported (a log line and a notification), never a crash: the dashboard opens with its default keys.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from ..userpaths import user_path

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App
    from textual.binding import Binding, BindingType

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

    def clashes(self, sections: Iterable[Sequence[Binding]],
                bindings: Mapping[str, str] | None = None) -> list[tuple[str, list[str]]]:
        """Keys that two bindings of one screen would have with `bindings` (by default the file's)
        applied, where the keymap moved at least one of them: (key, their ids)."""
        from textual.keys import key_to_character

        mine = self.bindings if bindings is None else bindings
        found: list[tuple[str, list[str]]] = []
        for section in sections:
            owners: dict[str, list[str]] = {}
            for binding in section:
                if not binding.id:
                    continue
                for key in mine.get(binding.id, binding.key).split(","):
                    key = key.strip()
                    owners.setdefault(key_to_character(key) or key, []).append(binding.id)
            for key, ids in owners.items():
                if len(ids) > 1 and any(i in mine for i in ids):
                    found.append((key, ids))
        return found


#: Problems a notification lists; the rest are counted (`… and 49,997 more`), and the log has them all.
SHOWN_PROBLEMS = 3


def summarised(problems: Sequence[str], limit: int = SHOWN_PROBLEMS) -> list[str]:
    """The first `limit` problems, then one line counting the rest."""
    if len(problems) <= limit:
        return list(problems)
    return [*problems[:limit], f"… and {len(problems) - limit:,} more (the log lists them all)"]


def keymap_warnings(keymap: UserKeymap) -> tuple[str | None, list[str], dict[str, str]]:
    """What the user should hear about a keymap, and the bindings to apply: the ids no binding has (with
    a did-you-mean), and each key the keymap would give to a second binding of one screen. A clash keeps
    the defaults: the keymap's entries in it are left out. Imports every screen: called after the first
    frame."""
    from textual.binding import Binding

    from .screens.help import binding_sections

    titled = {title: [b for b in bindings if isinstance(b, Binding)] for title, bindings in binding_sections()}
    known = [b.id for bindings in titled.values() for b in bindings if b.id]
    defaults = {b.id: b.key for bindings in titled.values() for b in bindings if b.id}
    # What one key press can reach: a screen's keys, the app's (help, quit) and, in the browser, the tree's.
    everywhere, tree = titled.pop("Everywhere", []), titled.pop("Tree", [])
    sections = [bindings + (everywhere if title not in ("Help", "Questions", "Search (/)") else [])
                + (tree if title == "Browser" else []) for title, bindings in titled.items()]
    unknown = keymap.unknown_ids(known)
    text = None
    if unknown:
        named = ", ".join(f"{u}{did_you_mean(u, known)}" for u in unknown[:SHOWN_PROBLEMS])
        more = f" and {len(unknown) - SHOWN_PROBLEMS:,} more" if len(unknown) > SHOWN_PROBLEMS else ""
        text = f"{keymap.path}: unknown binding ids {named}{more} (the help screen, ?, lists the ids)"
    applied = {i: k for i, k in keymap.bindings.items() if i in defaults}
    clashes: list[str] = []
    # Leaving an entry out can make another clash (its default was taken): until none is left.
    for _round in range(len(applied) + 1):
        found = keymap.clashes(sections, applied)
        if not found:
            break
        for key, ids in found:
            dropped = [i for i in ids if i in applied]
            for binding_id in dropped:
                del applied[binding_id]
            kept = ", ".join(f"{i} keeps {defaults[i]!r}" for i in dropped)
            clashes.append(f"{key!r} would be {' and '.join(ids)}: {kept} (the default)")
    return text, clashes, applied


class KeymapNotices:
    """Applies the user's keymap to the app and tells the user, once each, what is wrong with it."""

    def __init__(self, app: App[Any], keymap: UserKeymap, on_applied: Callable[[], None] | None = None) -> None:
        self.app = app
        self.keymap = keymap
        #: Called once the keymap is in effect (hints that name keys are drawn again).
        self.on_applied = on_applied
        self._said: set[str] = set()
        #: The bindings in effect from the keymap: its entries less those that clash (binding id -> keys).
        self.applied: dict[str, str] = {}

    def apply(self) -> None:
        for problem in summarised(self.keymap.problems):  # (logged when the file was read)
            self.app.notify(problem, title="Keymap", severity="warning", markup=False, timeout=10)
        if not self.keymap.bindings:
            return
        # Checking ids and clashes imports every screen: done after the first frame, and only when there
        # is a keymap; the keys change then, with the clashing entries left out.
        self.app.call_after_refresh(self._check_and_apply)

    def _check_and_apply(self) -> None:
        unknown, clashes, applied = keymap_warnings(self.keymap)
        self.applied = applied
        if applied:
            self.app.set_keymap(applied)
            if self.on_applied is not None:
                self.on_applied()
        if unknown is not None:
            self._say(unknown, "Keymap")
        for clash in summarised(clashes):
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


#: A binding named in a hint: `{run.all} runs everything`.
_BINDING_ID = re.compile(r"\{([a-z_]+\.[a-z_]+)\}")


def keys_in(text: str, bindings: Iterable[BindingType], applied: Mapping[str, str],
            display: Callable[[Binding], str]) -> str:
    """`text` with each `{binding.id}` replaced by that binding's key now: `applied` (the keymap in
    effect), else its default in `bindings`; `display` shows a key as the footer does. An id found in
    neither stays as written (a hint naming a binding that does not exist shows it, rather than lie)."""
    from textual.binding import Binding

    defaults = {b.id: b.key for b in bindings if isinstance(b, Binding) and b.id}

    def key(match: re.Match[str]) -> str:
        keys = applied.get(match.group(1)) or defaults.get(match.group(1))
        return match.group(0) if keys is None else display(Binding(keys.split(",")[0].strip(), ""))

    return _BINDING_ID.sub(key, text)


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


@functools.cache
def _key_names() -> frozenset[str]:
    """Textual's key names and printable characters' names, built once (per keymap entry it held the
    first frame of a 50,000-line keymap for seconds)."""
    from textual.keys import Keys, _character_to_key

    return frozenset({k.value for k in Keys} | {_character_to_key(chr(c)) for c in range(33, 127)})


def is_key(key: str) -> bool:
    """Whether Textual knows `key`: modifiers joined by `+` to a single character, a character's name
    (`slash`, `question_mark`) or a key name (`enter`, `f5`, `pageup`)."""
    *mods, last = key.strip().split("+")
    if not last or any(m not in _MODIFIERS for m in mods):
        return False
    if len(last) == 1:
        return True
    return last in _key_names()


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean run.all?)` for a close known id, else ``."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _reported(keymap: UserKeymap) -> UserKeymap:
    if keymap.problems:
        log.warning("keymap: %s", "\n  ".join(keymap.problems))
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
