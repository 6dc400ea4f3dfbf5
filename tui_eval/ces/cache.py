"""Where pulled CES apps live on disk, and saving a pull without losing edits that were never pushed.

A pull writes `DIR/<app>.evalset.json`. Before this module it overwrote that file blindly, so edits made
since the last pull and not yet pushed were lost. Now a case counts as *edited* when its editable fields
(everything `update_evaluation` may change) differ both from what CES holds now and from what was
pulled last (kept beside the file in `.<app>.pulled.json`); a case with no resource name (added by
hand) is edited too. When any case is edited the file is left as it is and the caller says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema.ces.mapping import MappingError, case_to_evaluation, evaluations_to_eval_set, short_name
from ..schema.ces.model import OUTPUT_ONLY_FIELDS, Evaluation
from ..userpaths import user_path

logger = logging.getLogger(__name__)

CACHE_ENV = "TUI_EVAL_CES_CACHE"


def cache_root() -> Path:
    """$TUI_EVAL_CES_CACHE, else $XDG_CACHE_HOME/tui-eval/ces, else ~/.cache/tui-eval/ces."""
    return user_path("cache", "ces", env=CACHE_ENV)


def cache_dir_for(app: str) -> Path:
    """The folder an app is pulled into: `<cache root>/<project>/<location>/<app>`."""
    parts = app.split("/")
    return cache_root().joinpath(parts[1], parts[3], parts[5])


def eval_file_for(directory: Path, app: str) -> Path:
    return directory / f"{short_name(app)}.evalset.json"


def snapshot_file_for(eval_file: Path) -> Path:
    """What the last pull wrote, kept to tell a local edit from a change made in CES."""
    stem = eval_file.name.removesuffix(".evalset.json")
    return eval_file.with_name(f".{stem}.pulled.json")


def editable(evaluation: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of an Evaluation dict that an update may change (output-only ones left out)."""
    return {k: v for k, v in evaluation.items() if k not in OUTPUT_ONLY_FIELDS}


def json_bytes(data: Any) -> bytes:
    """How the CES commands and the cache write JSON files: indented by two, a newline at the end."""
    import orjson

    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def _load_json(path: Path) -> Any:
    from ..schema.errors import LoadError
    from ..schema.load import read_json_file

    try:
        return read_json_file(path)
    except FileNotFoundError:
        return None
    except (OSError, LoadError) as exc:
        logger.info("could not read %s: %s", path, exc)
        return None


def _local_evaluations(eval_file: Path) -> list[tuple[str, dict[str, Any] | None]] | None:
    """(eval_id, the Evaluation its case maps to, None when it has no resource name); None: no usable file."""
    data = _load_json(eval_file)
    if not isinstance(data, dict):
        return None
    out: list[tuple[str, dict[str, Any] | None]] = []
    for i, case in enumerate(data.get("eval_cases") or []):
        if not isinstance(case, dict):
            continue
        eval_id = str(case.get("eval_id"))
        try:
            evaluation = case_to_evaluation(case, f"$.eval_cases[{i}]").to_json_dict()
        except (MappingError, ValueError) as exc:
            logger.info("%s: case %s does not map to a CES evaluation: %s", eval_file, eval_id, exc)
            out.append((eval_id, None))
            continue
        out.append((eval_id, evaluation if evaluation.get("name") and "ces" in case else None))
    return out


def unpushed_edits(eval_file: Path, remote: Iterable[Evaluation]) -> list[str]:
    """Ids of the cases of `eval_file` a pull of `remote` would lose: edited locally, not pushed."""
    local = _local_evaluations(eval_file)
    if not local:
        return []
    now = {e.name: editable(e.to_json_dict()) for e in remote if e.name}
    snapshot = _load_json(snapshot_file_for(eval_file))
    pulled: dict[str, dict[str, Any]] = {}
    if isinstance(snapshot, dict):
        for item in snapshot.get("evaluations") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                pulled[item["name"]] = editable(item)
    edited: list[str] = []
    for eval_id, evaluation in local:
        if evaluation is None:
            edited.append(eval_id)  # added by hand: a pull has nowhere to keep it
            continue
        mine = editable(evaluation)
        name = evaluation["name"]
        if now.get(name) == mine:
            continue  # what CES holds (edits pushed, or none made)
        if snapshot is not None and pulled.get(name) == mine:
            continue  # unchanged since the pull: CES changed it, the pull brings that in
        edited.append(eval_id)
    return edited


@dataclass
class SavedPull:
    """What saving a pull did."""

    path: Path
    evaluations: int
    with_results: int
    written: bool = True
    #: Cases with unpushed local edits, for which the file was kept as it was.
    kept_for: list[str] = field(default_factory=list)

    def line(self, app: str) -> str:
        """One line saying what happened, for the CLI and the dashboard."""
        if not self.written:
            shown = ", ".join(self.kept_for[:3]) + (f" +{len(self.kept_for) - 3} more" if len(self.kept_for) > 3 else "")
            return (f"kept {self.path}: it has unpushed edits ({shown}); push them (`tui-eval ces push "
                    f"{self.path}`), or pull with --force to drop them")
        return (f"wrote {self.path}: {self.evaluations} evaluation(s) of {app}, "
                f"{self.with_results} with a last result")


def stable_order(eval_file: Path, evaluations: list[Evaluation]) -> list[Evaluation]:
    """The evaluations in the order of the file they replace; new ones after it, by display name (so a
    first pull is sorted). CES lists in an order of its own, which an update may change: without this,
    every push and pull would reorder the file."""
    before = _load_json(eval_file)
    place: dict[str, int] = {}
    cases = before.get("eval_cases") if isinstance(before, dict) else None
    for case in cases if isinstance(cases, list) else []:
        extra = case.get("ces") if isinstance(case, dict) else None
        residue = extra.get("evaluation") if isinstance(extra, dict) else None
        name = residue.get("name") if isinstance(residue, dict) else None
        if isinstance(name, str):
            place.setdefault(name, len(place))

    def key(e: Evaluation) -> tuple[int, str, str]:
        return (place.get(e.name or "", len(place)), e.display_name or "", e.name or "")

    return sorted(evaluations, key=key)


def save_pull(eval_file: Path, app: str, evaluations: list[Evaluation], *, force: bool = False) -> SavedPull:
    """Write a pull to `eval_file` (and its snapshot) unless that would lose unpushed edits (see above)."""
    from ..schema.fileio import atomic_write

    with_results = sum(1 for e in evaluations if e.last_completed_result is not None)
    saved = SavedPull(eval_file, len(evaluations), with_results)
    if not force and eval_file.exists():
        saved.kept_for = unpushed_edits(eval_file, evaluations)
        if saved.kept_for:
            saved.written = False
            logger.info("not overwriting %s: unpushed edits to %s", eval_file, saved.kept_for)
            return saved
    eval_file.parent.mkdir(parents=True, exist_ok=True)
    evaluations = stable_order(eval_file, evaluations)
    eval_set = evaluations_to_eval_set(evaluations, short_name(app), creation_timestamp=time.time())
    atomic_write(eval_file, json_bytes(eval_set))
    atomic_write(snapshot_file_for(eval_file), json_bytes({"evaluations": [e.to_json_dict() for e in evaluations]}))
    return saved
