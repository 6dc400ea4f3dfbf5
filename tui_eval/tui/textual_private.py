"""Every use of Textual's private API, in one place.

Textual (pinned in pyproject.toml) keeps these out of its public API, so any release may move or change
them. `tests/app/test_textual_private.py` checks each one against the installed Textual (the names
exist, the attributes are there, the signatures are the ones called here), so a Textual upgrade that
breaks one fails that test by name instead of a screen at run time. Nothing else in the package
imports from `textual.*._*` or touches a Textual object's `_attribute`: add a new use here, with its
check in that test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, TypeVar

# The footer's pieces: `textual.widgets` exports Footer but not the widgets it composes, which
# widgets/footer.py composes itself.
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

if TYPE_CHECKING:
    from rich.text import Text
    from textual.app import App
    from textual.notifications import Notification
    from textual.widgets import Tree
    from textual.widgets.tree import TreeNode

__all__ = ["FooterKey", "FooterLabel", "KeyGroup", "add_tree_nodes", "app_is_exiting", "tree_node_label",
           "withdraw_notification"]

T = TypeVar("T")


def add_tree_nodes(tree: Tree[T], parent: TreeNode[T],
                   items: Sequence[tuple[Text, T, bool]]) -> list[TreeNode[T]] | None:
    """Append many children (label, data, allow_expand) to `parent` and invalidate the tree once.

    `TreeNode.add` invalidates the whole tree per node; this builds the nodes with the Tree's own
    helper instead. None when the installed Textual's Tree lacks the helpers (the caller then adds the
    nodes one by one)."""
    add_node = getattr(tree, "_add_node", None)
    children = getattr(parent, "_children", None)
    if add_node is None or not isinstance(children, list):
        return None
    nodes = []
    for label, data, expand in items:
        node = add_node(parent, label, data)
        node._allow_expand = expand
        nodes.append(node)
    children.extend(nodes)
    parent._updates += 1
    tree._invalidate()
    return nodes


def tree_node_label(node: TreeNode[T]) -> Text:
    """The node's label as the Tree keeps it (always a Text; the public `label` is typed wider)."""
    return node._label


def app_is_exiting(app: App[Any]) -> bool:
    """True once `app.exit()` was called, before the app stops running (a private flag in Textual)."""
    return bool(app._exit)


def withdraw_notification(app: App[Any], notification: Notification) -> None:
    """Take one shown notification away (Textual's public API only clears them all)."""
    app._unnotify(notification)
