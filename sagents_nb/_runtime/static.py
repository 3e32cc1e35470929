"""Static text/plain and escaped text/html renderings of a tree, for front ends without widgets."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from .._base.text import counted

if TYPE_CHECKING:
    from .result import TreeNode

_COLOURS = {
    "done": "#1a7f37",
    "running": "#0969da",
    "paused": "#9a6700",
    "waiting": "#9a6700",
    "error": "#cf222e",
    "incomplete": "#bc4c00",
    "cancelled": "#57606a",
}


def static_bundle(tree: TreeNode, text: str, status: str) -> dict[str, Any]:
    """A MIME bundle with the tree and the latest answer; every piece of text is escaped."""
    plain = f"{tree.render()}\n\n[{status}] {text}"
    items = []
    for node in tree.walk():
        depth = node.id.count("/")
        colour = _COLOURS.get(node.status, "#57606a")
        label = html.escape(node.display_text or "")
        extra = f" · reattached ×{node.reattached}" if node.reattached else ""
        extra += "".join(f" · refused: {html.escape(reason)}" for reason in node.refused)
        items.append(
            f'<div style="margin-left:{depth * 1.2}em">'
            f"<b>{html.escape(node.id)}</b> "
            f'<span style="border:1px solid #ccc;border-radius:3px;padding:0 3px">'
            f"{html.escape(node.kind)}</span> "
            f'<span style="color:{colour}">{html.escape(node.status)}</span> · '
            f"{counted(node.turns, 'turn')} · {counted(node.usage.total_tokens, 'token')} "
            f"{label}{extra}</div>"
        )
    body = (
        '<div class="sagents-static" style="font-family:monospace;font-size:12px">'
        + "".join(items)
        + f'<pre style="white-space:pre-wrap">[{html.escape(status)}] {html.escape(text)}</pre></div>'
    )
    return {"text/plain": plain, "text/html": body}
