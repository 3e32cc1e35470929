"""`save_html(obj, path)`: a session's, run's, result's, live view's or comparison's view in one
HTML file anyone can open, every tab working offline (`_offline`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._base.checks import check_path
from .._base.messages import Usage
from .._compare.comparison import Comparison
from .._compare.record import RunRecord
from .._runtime.result import Result, TreeNode
from ._export import static_view
from ._offline import write_page
from ._projector import Projector
from ._widget import LiveView


def save_html(obj: Any, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the view of `obj` to one self-contained HTML file that works offline: no kernel
    and no network request; the tree, transcripts, context and its diff, tool calls, timing,
    decisions and the event log of every node, as the live view shows them (a live view's
    forks too, below it).

    Args:
        obj: a `sn.Session`, `sn.Run`, `sn.Result`, `LiveView` or `Comparison` (its table,
            plot and what each variant forgot, then each run's view).
        path: the file to write.
        title: the page's title (by default the view's).

    Returns:
        The file's path.
    """
    target = Path(check_path("path", path, where="save_html()"))
    made: list[LiveView] = []
    try:
        if isinstance(obj, Comparison):
            views = []
            for record in obj.records:
                shown = LiveView(_record_result(record))
                made.append(shown)
                views.append((f"{record.variant} · item {record.item}", shown))
            fallback = obj._repr_mimebundle_()["text/html"]
            heading = title or repr(obj)
        else:
            if isinstance(obj, LiveView):
                shown = obj
            else:
                shown = LiveView(obj)
                made.append(shown)
            shown.read_stored()
            views = [("", shown)]
            fallback = static_view(shown)["text/html"]
            heading = title or f"sagents_nb · {shown.target.title()}"
        return write_page(target, views, fallback, heading)
    finally:
        for shown in made:
            shown.close()


def _record_result(record: RunRecord) -> Result:
    """A `Result` of one run of a comparison, from its events (its tree folded from them)."""
    events = record.events
    projector = Projector()
    for event in events:
        projector.fold(event)
    projector.catch_up()

    def node(path: str) -> TreeNode:
        state = projector.nodes[path]
        children = [node(child) for child in state.children if child in projector.nodes]
        usage = Usage(
            prompt_tokens=state.prompt_tokens,
            completion_tokens=state.completion_tokens,
            total_tokens=state.tokens,
        )
        for child in children:
            usage = usage + child.usage
        return TreeNode(
            id=path,
            agent=state.agent,
            kind=state.kind,
            status=state.status,
            turns=state.turns,
            usage=usage,
            children=children,
            display_text=state.display_text,
            reattached=state.reattached,
            refused=list(state.refused),
        )

    root = projector.root
    tree = node(root) if root is not None else TreeNode("", "", "", record.status, 0, Usage())
    return Result(
        text=record.answer,
        status=record.status,
        turns=tree.turns,
        usage=tree.usage,
        events=events,
        tree=tree,
        run=events[-1].run if events else 1,
        prices=record.prices,
    )
