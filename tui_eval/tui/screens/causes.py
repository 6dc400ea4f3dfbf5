"""Failures by cause: the latest results of every loaded case grouped by what failed (engine/causes.py,
from the typed verdict details, no LLM), each group with its count; enter opens a group to its cases,
and enter on a case shows it in the browser."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Union

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode
from textual.worker import Worker, WorkerState

from ..messages import JumpTo
from ..text import STATUS_GLYPH, STATUS_VAR, literal, rich_style
from ..widgets.footer import KeyFooter

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.causes import CaseRef, CauseGroup
    from ...engine.events import CaseKey
    from ..app import EvalApp
    from ..listing import CaseListing

log = logging.getLogger(__name__)

# cause kind -> theme variable of its colour (Rich Text labels cannot use CSS variables directly)
_KIND_VAR = {"failed": "error", "agent error": "error", "infrastructure": "warning", "not evaluated": "warning"}

NodeData = Union["CauseGroup", "CaseRef", None]


class CausesScreen(Screen[None]):
    """Every cause with its count, failure causes first; it regroups when results change while open."""

    app: EvalApp
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="causes.back"),
        Binding("e", "expand_all", "Expand all", id="causes.expand"),
    ]

    CSS_PATH = "../views.tcss"

    def __init__(self, listing: CaseListing) -> None:
        super().__init__(id="causes")
        self.listing = listing
        self.groups: list[CauseGroup] = []
        self._shown_version: tuple[int, int] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="causes-status")
        tree: Tree[NodeData] = Tree("causes", id="causes-tree")
        tree.show_root = False
        tree.guide_depth = 2
        yield tree
        yield KeyFooter()

    def on_mount(self) -> None:
        tree = self.query_one(Tree)
        tree.border_title = "Failures by cause"
        self.regroup()
        self.set_interval(0.5, self.regroup, name="causes")
        tree.focus()

    def _version(self) -> tuple[int, int]:
        return self.listing.results.version, self.listing.stale_version

    def regroup(self) -> None:
        """Group the latest results again if they changed since the last time (in a thread: grouping
        thousands of results takes long enough to feel, and a run changes them continuously)."""
        version = self._version()
        if version == self._shown_version:
            return
        self._shown_version = version
        results = self.listing.results
        # Which cases have a result is read here, on the UI thread that changes them; the worker fetches
        # the full results (those of this session's runs come from the engine) and groups them.
        self._group([key for key in self.listing.all_keys() if key in results])

    @work(thread=True, group="causes", exclusive=True, exit_on_error=False)
    def _group(self, keys: list[CaseKey]) -> list[CauseGroup]:
        from ...engine.causes import group_cases

        found = self.listing.results.get_many(keys)
        return group_cases([(key.eval_file, found[key], 1) for key in keys if key in found])

    @on(Worker.StateChanged)
    def _grouped(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "causes":
            return
        if event.state == WorkerState.ERROR:
            log.error("could not group the results by cause", exc_info=event.worker.error)
            self.query_one("#causes-status", Static).update(
                Content.styled(f"Could not group the results: {event.worker.error}", "$text-error"))
        elif event.state == WorkerState.SUCCESS:
            self.groups = event.worker.result or []
            self.show()

    def show(self) -> None:
        tree: Tree[NodeData] = self.query_one(Tree)
        from ...engine.causes import CauseGroup

        opened = {node.data.label for node in tree.root.children
                  if node.is_expanded and isinstance(node.data, CauseGroup)}
        cursor = tree.cursor_line
        tree.clear()
        width = len(str(max((g.count for g in self.groups), default=0)))
        for group in self.groups:
            label = Text.assemble((f"{group.count:>{width}} ", "bold"),
                                  (literal(group.label), rich_style(self.app, _KIND_VAR.get(group.kind, ""))))
            # A group's cases become nodes when it is opened: thousands of failures stay one line each.
            node = tree.root.add(label, data=group, allow_expand=True)
            if group.label in opened:
                self._add_cases(node)
                node.expand()
        if self.groups:
            tree.cursor_line = min(max(cursor, 0), max(tree.last_line, 0))
        failing = len({(c.eval_file, c.eval_id) for g in self.groups if g.kind in ("failed", "agent error")
                       for c in g.cases})
        if not self.groups:
            text = Content.styled("No failures and nothing left not evaluated in the latest results. "
                                  "Run something (R) first, or open a folder with saved runs.", "$text-muted")
        else:
            text = Content.styled(
                f"{len(self.groups)} cause{'s' if len(self.groups) != 1 else ''}, {failing} failing "
                f"case{'s' if failing != 1 else ''}. enter opens a cause, then shows a case in the browser.",
                "$text-muted")
            stale = len({(c.eval_file, c.eval_id) for g in self.groups for c in g.cases if self._stale(c)})
            if stale:
                text = Content("\n").join([text, Content.styled(
                    f"⚠ {stale} of these results are stale (their files changed since they ran): S in the "
                    "browser re-runs them", "$text-warning")])
        self.query_one("#causes-status", Static).update(text)

    def _stale(self, ref: CaseRef) -> tuple[str, ...]:
        return self.listing.stale_reasons(self.listing.key(Path(ref.eval_file), ref.eval_id))

    def _add_cases(self, node: TreeNode[NodeData]) -> None:
        from ...engine.causes import CauseGroup

        group = node.data
        if not isinstance(group, CauseGroup) or node.children:
            return
        for ref in group.cases:
            node.add_leaf(Text.assemble(
                (f"{STATUS_GLYPH[ref.status]} ", rich_style(self.app, STATUS_VAR[ref.status])),
                (literal(ref.eval_id), ""), (f"  {literal(ref.eval_set_id)}", "dim"),
                ("  stale", rich_style(self.app, "warning")) if self._stale(ref) else ""), data=ref)

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        self._add_cases(event.node)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[NodeData]) -> None:
        from ...engine.causes import CaseRef

        ref = event.node.data
        if not isinstance(ref, CaseRef):
            return  # a group: the tree opens or closes it
        event.stop()
        from pathlib import Path

        self.post_message(JumpTo(self.listing.key(Path(ref.eval_file), ref.eval_id)))

    def action_expand_all(self) -> None:
        tree: Tree[NodeData] = self.query_one(Tree)
        for node in tree.root.children:
            self._add_cases(node)
            node.expand()
