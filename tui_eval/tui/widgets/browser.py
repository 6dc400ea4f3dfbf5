"""The eval browser: a lazy tree of eval files > cases > turns with each one's last status and score."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterable, Sequence, Union

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...schema.status import CASE_STATUSES, EvalStatus
from ..text import NO_RESULT_GLYPH, RUNNING_GLYPH, STATUS_GLYPH, literal, one_line
from ..textual_private import add_tree_nodes, tree_node_label

if TYPE_CHECKING:  # pragma: no cover
    from ...schema.ces.caseview import CesMarker
    from ...engine.events import CaseKey
    from ..listing import CaseListing


@dataclass(frozen=True, slots=True)
class SetEntry:
    """A tree node for one eval file."""

    path: Path


@dataclass(frozen=True, slots=True)
class CaseEntry:
    """A tree node for one eval case."""

    key: CaseKey


@dataclass(frozen=True, slots=True)
class TurnEntry:
    """A tree node for one turn (invocation) of a case."""

    key: CaseKey
    index: int


@dataclass(frozen=True, slots=True)
class MoreEntry:
    """A tree leaf standing for the cases of a file past the pages shown so far (enter shows the next)."""

    path: Path
    start: int
    total: int


Entry = Union[SetEntry, CaseEntry, TurnEntry, MoreEntry, None]
#: Cases a file shows per page: 100,000 tree nodes built at once froze the dashboard for seconds, so a
#: huge file shows its cases a page at a time (search and the failed-only filter narrow it first).
PAGE = 5000
#: A case whose repetitions (--num-runs) passed and failed.
FLAKY_GLYPH = "~"
_STATUS_CLASS: dict[int | None, str] = {
    EvalStatus.PASSED: "browser--passed", EvalStatus.FAILED: "browser--failed",
    EvalStatus.NOT_EVALUATED: "browser--not-evaluated", EvalStatus.INFORMATIONAL: "browser--muted", None: "browser--none",
}
#: A CES evaluation's last verdict in our vocabulary.
_CES_STATUS = {"PASS": EvalStatus.PASSED, "FAIL": EvalStatus.FAILED}


class EvalBrowser(Tree[Entry]):
    """Eval files, cases and turns. Cases load when a file is expanded, turns when a case is."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "browser--passed",
        "browser--failed",
        "browser--not-evaluated",
        "browser--none",
        "browser--running",
        "browser--muted",
        "browser--error",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "expand_node", "Expand", show=False, id="browser.expand"),
        Binding("left", "collapse_node", "Collapse", show=False, id="browser.collapse"),
    ]

    def __init__(self, listing: CaseListing, *, id: str | None = None) -> None:
        super().__init__("eval files", id=id)
        self.listing = listing
        self.show_root = False
        self.guide_depth = 2
        self._set_nodes: dict[Path, TreeNode[Entry]] = {}
        self._case_nodes: dict[CaseKey, TreeNode[Entry]] = {}
        self._populated: set[int] = set()

    # ---- building ----------------------------------------------------------------------------

    def sync_files(self) -> None:
        """Add nodes for eval files the listing knows and the tree does not (keeping listing order)."""
        visible = [p for p in self.listing.files if not self.listing.filter.active or self.listing.visible_cases(p)]
        for i, path in enumerate(visible):
            if path in self._set_nodes:
                continue
            after = next((self._set_nodes[p] for p in reversed(visible[:i]) if p in self._set_nodes), None)
            before = None if after is not None else next((self._set_nodes[p] for p in visible[i + 1:] if p in self._set_nodes), None)
            if after is not None:
                node = self.root.add(Text(literal(path.name)), SetEntry(path), after=after)
            elif before is not None:
                node = self.root.add(Text(literal(path.name)), SetEntry(path), before=before)
            else:
                node = self.root.add(Text(literal(path.name)), SetEntry(path))
            self._set_nodes[path] = node
            if self.listing.filter.active:
                node.expand()
        if self.cursor_node is None and self.root.children:
            self.move_cursor(self.root.children[0])

    def rebuild(self, *, keep_open: bool = False) -> None:
        """Rebuild every node after the filter or the order changed, keeping the cursor on the same case
        if it is still shown (and, with `keep_open`, the files and cases that were open: a re-sort)."""
        keep = self.cursor_node.data if self.cursor_node is not None else None
        open_sets = [p for p, n in self._set_nodes.items() if n.is_expanded] if keep_open else []
        open_cases = [k for k, n in self._case_nodes.items() if n.is_expanded] if keep_open else []
        self.clear()
        self._set_nodes.clear()
        self._case_nodes.clear()
        self._populated.clear()
        self.sync_files()
        for path in open_sets:
            node = self._set_nodes.get(path)
            if node is not None:
                node.expand()
                self._populate_set(node)
        for key in open_cases:
            case_node = self._case_nodes.get(key)
            if case_node is not None:
                case_node.expand()
                self._populate_case(case_node)
        if isinstance(keep, (CaseEntry, TurnEntry)):
            self.select_key(keep.key, quiet=True)
        elif isinstance(keep, SetEntry) and keep.path in self._set_nodes:
            self.move_cursor(self._set_nodes[keep.path])

    def remove_file(self, path: Path) -> None:
        node = self._set_nodes.pop(path, None)
        if node is not None:
            for key in [k for k in self._case_nodes if Path(k.eval_file) == path]:
                del self._case_nodes[key]
            self._populated.discard(id(node))
            node.remove()

    def reload_file(self, path: Path) -> None:
        """A file was reloaded: re-list its cases if they were shown, keeping expansion and cursor."""
        node = self._set_nodes.get(path)
        if node is None:
            self.sync_files()
            return
        if id(node) in self._populated:
            keep = self.cursor_node.data if self.cursor_node is not None else None
            expanded = {k for k, n in self._case_nodes.items() if Path(k.eval_file) == path and n.is_expanded}
            self._populate_set(node, force=True)
            for key in expanded:
                if key in self._case_nodes:
                    self._case_nodes[key].expand()
            if isinstance(keep, (CaseEntry, TurnEntry)) and Path(keep.key.eval_file) == path:
                self.select_key(keep.key, quiet=True, turn=keep.index if isinstance(keep, TurnEntry) else None)
        node.refresh()

    def _populate_set(self, node: TreeNode[Entry], force: bool = False) -> None:
        if id(node) in self._populated and not force:
            return
        entry = node.data
        assert isinstance(entry, SetEntry)
        for key in [k for k in self._case_nodes if Path(k.eval_file) == entry.path]:
            self._case_nodes.pop(key, None)
        node.remove_children()
        self._populated.add(id(node))
        self._add_page(node, entry.path, 0)

    def _add_page(self, node: TreeNode[Entry], path: Path, start: int) -> None:
        """Add one page of a file's cases from `start`, then a MoreEntry leaf if any are left."""
        cases = self.listing.visible_cases(path)
        items: list[tuple[Text, Entry, bool]] = []
        for case in cases[start:start + PAGE]:
            key = self.listing.key(path, case.eval_id)
            turns = len(case.conversation or [])
            summary = self.listing.results.summary(key)
            if summary is not None:
                turns = max(turns, summary.turns)
            items.append((Text(literal(case.eval_id)), CaseEntry(key), turns > 0))
        for data, child in zip((data for _l, data, _e in items), self._add_nodes(node, items)):
            if isinstance(data, CaseEntry):
                self._case_nodes[data.key] = child
        if start + PAGE < len(cases):
            node.add_leaf(Text("…"), MoreEntry(path, start + PAGE, len(cases)))

    def show_more(self, more: TreeNode[Entry]) -> None:
        """Replace a MoreEntry leaf with the next page of its file's cases."""
        entry = more.data
        parent = more.parent
        if not isinstance(entry, MoreEntry) or parent is None:
            return
        more.remove()
        self._add_page(parent, entry.path, entry.start)

    def _add_nodes(self, parent: TreeNode[Entry], items: Sequence[tuple[Text, Entry, bool]]) -> list[TreeNode[Entry]]:
        """Add many children at once. Tree.add invalidates the whole tree per node (slow for thousands
        of cases); with Textual pinned, build the nodes with the Tree's own helper and invalidate once."""
        nodes = add_tree_nodes(self, parent, items) if len(items) >= 64 else None
        if nodes is None:
            return [parent.add(label, data, allow_expand=expand) for label, data, expand in items]
        return nodes

    def _populate_case(self, node: TreeNode[Entry]) -> None:
        if id(node) in self._populated:
            return
        entry = node.data
        assert isinstance(entry, CaseEntry)
        self._populated.add(id(node))
        node.remove_children()
        case = self.listing.case(entry.key)
        summary = self.listing.results.summary(entry.key)
        turns = len(case.conversation or []) if case is not None else 0
        if summary is not None:
            turns = max(turns, summary.turns)
        for i in range(turns):
            node.add_leaf(Text(str(i + 1)), TurnEntry(entry.key, i))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        # Keys typed ahead may have moved the cursor past this node before its children arrive: keep
        # the cursor on the node it is on, rather than on whatever child lands on its line.
        current = self.cursor_node
        if isinstance(event.node.data, SetEntry):
            self._populate_set(event.node)
        elif isinstance(event.node.data, CaseEntry):
            self._populate_case(event.node)
        if current is not None and current is not event.node and current.parent is not event.node:
            _ = self.last_line
            if self.cursor_node is not current:
                self.move_cursor(current)

    # ---- updating ----------------------------------------------------------------------------

    def refresh_keys(self, keys: Iterable[CaseKey]) -> None:
        """Repaint the lines of these cases (and their files and turns) after new results."""
        # Per key only a set insert of the file's string: a Path per key cost most of a tick when
        # thousands of results arrive a tick.
        files: set[str] = set()
        for key in keys:
            files.add(key.eval_file)
            node = self._case_nodes.get(key)
            if node is None:
                continue
            if id(node) in self._populated:
                summary = self.listing.results.summary(key)
                if summary is not None and summary.turns > len(node.children):
                    self._populated.discard(id(node))
                    if node.is_expanded:
                        self._populate_case(node)
                for child in node.children:
                    child.refresh()
            elif not node.allow_expand:
                node.allow_expand = True
            node.refresh()
        for path in files:
            set_node = self._set_nodes.get(Path(path))
            if set_node is not None:
                set_node.refresh()

    def select_key(self, key: CaseKey, *, quiet: bool = False, turn: int | None = None) -> bool:
        """Move the cursor to a case (or one of its turns), expanding its file. False if it is not shown."""
        set_node = self._set_nodes.get(Path(key.eval_file))
        if set_node is None:
            return False
        self._populate_set(set_node)
        set_node.expand()
        node = self._case_nodes.get(key)
        while node is None:
            # The case may sit on a page not shown yet: show pages until it is (or there are none left).
            last = set_node.children[-1] if set_node.children else None
            if last is None or not isinstance(last.data, MoreEntry):
                return False
            self.show_more(last)
            node = self._case_nodes.get(key)
        if turn is not None:
            self._populate_case(node)
            node.expand()
            if 0 <= turn < len(node.children):
                node = node.children[turn]
        # Nodes learn their line when the tree rebuilds; reading last_line rebuilds it now.
        _ = self.last_line
        self.move_cursor(node)
        if not quiet:
            self.scroll_to_node(node)
        return True

    def action_expand_node(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand and not node.is_expanded:
            node.expand()
        elif node is not None and node.children:
            self.move_cursor(node.children[0])

    def action_collapse_node(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    # ---- rendering ---------------------------------------------------------------------------

    def get_label_width(self, node: TreeNode[Entry]) -> int:
        """Cheap width for case and turn lines (rendering 5,000 labels just to measure them is slow)."""
        entry = node.data
        if isinstance(entry, CaseEntry):
            return cell_len(literal(entry.key.eval_id)) + 16
        if isinstance(entry, (TurnEntry, MoreEntry)):
            return 56
        return super().get_label_width(node)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def render_label(self, node: TreeNode[Entry], base_style: Style, style: Style) -> Text:
        entry = node.data
        if isinstance(entry, SetEntry):
            label = self._set_label(entry.path)
        elif isinstance(entry, CaseEntry):
            label = self._case_label(entry.key)
        elif isinstance(entry, TurnEntry):
            label = self._turn_label(entry)
        elif isinstance(entry, MoreEntry):
            shown = min(PAGE, entry.total - entry.start)
            label = Text(f"… {entry.total - entry.start:,} more cases: enter shows {shown:,}",
                         self._style("browser--muted"))
        else:
            label = tree_node_label(node).copy()
        label.stylize(style)
        if node.allow_expand:
            icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            return Text.assemble((icon, base_style + Style(bold=True)), label)
        return label

    def _glyph(self, status: int | None, running: bool) -> tuple[str, Style]:
        if running:
            return RUNNING_GLYPH, self._style("browser--running")
        glyph = STATUS_GLYPH.get(status, NO_RESULT_GLYPH) if status is not None else NO_RESULT_GLYPH
        return glyph, self._style(_STATUS_CLASS[status])

    def _set_label(self, path: Path) -> Text:
        listing = self.listing
        state = listing.file_state(path)
        counts = listing.counts(path)
        text = Text(literal(listing.set_label(path)))
        muted = self._style("browser--muted")
        n = sum(counts.values())
        text.append(f" ({n})", muted)
        for status in CASE_STATUSES:
            if counts[status]:
                text.append(f" {STATUS_GLYPH[status]}{counts[status]}", self._style(_STATUS_CLASS[status]))
        if listing.run_book.num_runs > 1:
            flaky = listing.flaky_count(path)
            if flaky:
                # Counted above by their latest repetition; this says how many of them are flaky.
                text.append(f" {FLAKY_GLYPH}{flaky} flaky", self._style("browser--not-evaluated"))
        stale = listing.stale_count(path)
        if stale:
            # Counted above by their status; this says how many of those results are out of date.
            text.append(f" {stale} stale", self._style("browser--not-evaluated"))
        if state is not None and state.error is not None:
            text.append(" ⚠ stale" if state.eval_set is not None else " ⚠ broken", self._style("browser--error"))
        return text

    def _case_label(self, key: CaseKey) -> Text:
        listing = self.listing
        glyph, gstyle = self._glyph(listing.case_status(key), key in listing.running)
        flaky = listing.flaky(key) if listing.run_book.num_runs > 1 else None
        if flaky is not None and key not in listing.running and not listing.filter.metric:
            # Passed in some repetitions, failed in others: neither ✔ nor ✘ is the truth.
            glyph, gstyle = FLAKY_GLYPH, self._style("browser--not-evaluated")
        text = Text.assemble((glyph, gstyle), " ")
        ces = ces_marker_of(listing, key)
        if ces is not None:
            # A case pulled from CES: its last CES verdict (and the kind when it is a scenario), before the
            # id so that a long CES id never pushes it out of a narrow tree.
            status = _CES_STATUS.get(ces.status or "")
            text.append("CES " if ces.kind == "golden" else "CES scenario ", self._style("browser--muted"))
            text.append(STATUS_GLYPH[status] if status else NO_RESULT_GLYPH, self._style(_STATUS_CLASS[status]))
            text.append(" ")
        text.append(literal(key.eval_id))
        summary = listing.results.summary(key)
        if listing.order == "duration":
            if summary is not None:
                text.append(f"  {summary.seconds:.2f}s", self._style("browser--muted"))
        else:
            score = listing.score_text(key)
            if score is not None:
                text.append(f"  {score}", self._style("browser--muted"))
        if flaky is not None:
            text.append(f"  {flaky[0]}/{flaky[1]} passed", self._style("browser--not-evaluated"))
        if listing.stale_reasons(key):
            # Computed from other code, case, criteria, tools or judge than the files now say.
            text.append("  stale", self._style("browser--not-evaluated"))
        elif summary is not None and summary.error:
            text.append("  agent error", self._style("browser--error"))
        elif summary is not None and not listing.filter.metric and summary.status == EvalStatus.PASSED:
            done, total = summary.coverage()
            if done != total:
                # `2/4 evaluated` (`2 of 4 metrics evaluated` in the summary): the tree is narrow at 80 columns.
                text.append(f"  {done}/{total} evaluated", self._style("browser--not-evaluated"))
        return text

    def _turn_label(self, entry: TurnEntry) -> Text:
        listing = self.listing
        glyph, gstyle = self._glyph(listing.turn_status(entry.key, entry.index), entry.key in listing.running)
        case = listing.case(entry.key)
        prompt = ""
        if case is not None and case.conversation and entry.index < len(case.conversation):
            prompt = case.conversation[entry.index].user_content.text
        else:
            result = listing.result(entry.key)
            if result is not None and entry.index < len(result.actual):
                prompt = result.actual[entry.index].user_content.text
        return Text.assemble((glyph, gstyle), f" {entry.index + 1}. ", one_line(prompt, 48))


def ces_marker_of(listing: CaseListing, key: CaseKey) -> CesMarker | None:
    """The CES tag of a case (golden or scenario, last CES verdict), None for a case not from CES."""
    case = listing.case(key)
    if case is None or not case.model_extra:
        return None
    from ...schema.ces.caseview import marker

    return marker(case.model_extra, scenario=case.conversation_scenario is not None)
