"""The context pane: a context-size chart of every turn, and one turn's view beside its storage."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._base.messages import Message
from ._context_diff import diff_state, forgotten_state
from ._paging import CHART_MARKERS, buckets, merged_markers, zoom_range
from ._projector import CHARTED
from ._render import ROWS, message_parts, message_state
from ._state import NodeState, Stored, Turn

IN_VIEW = (None, "in view", "summary")
"""Storage marks of items the view did send."""
NATIVE_NOTE = "a coding CLI keeps this child's context itself: there is no view to show or compare"


def context_pane(
    node: NodeState, wanted: int | None, zoom: tuple[int, int] | None = None
) -> dict[str, Any]:
    """The context-size chart of the turns in `zoom` (all when None), and the view beside the
    storage of one turn."""
    turns = node.turn_log
    first, last = zoom_range(len(turns), zoom)
    cuts = buckets(first, last)
    size = cuts[0][1] - cuts[0][0] + 1 if cuts else 1
    spacing = max(size, -(-(last - first + 1) // CHART_MARKERS))  # turns one marker stands for
    markers = [
        {"at": m.at, "type": m.type, "title": m.title, "seq": m.seq}
        for m in node.timeline
        if m.type in CHARTED
    ]
    index = len(turns) - 1 if wanted is None or not 0 <= wanted < len(turns) else wanted
    detail = turn_detail(node, turns[index]) if turns else None
    return {
        "kind": node.kind,
        "chart": [chart_point(turns, start, end) for start, end in cuts],
        "range": {"first": first, "last": last, "turns": len(turns), "zoomed": zoom is not None},
        "markers": merged_markers(markers, first, last, spacing),
        "legend": [[kind, label] for kind, label in CHARTED.items()],
        "index": index,
        "following": wanted is None,
        "detail": detail,
        "changes": diff_state(node, index) if turns else None,
        "forgotten": forgotten_state(node, index) if turns else None,
        "note": None if turns or node.kind != "native" else NATIVE_NOTE,
    }


def chart_point(turns: list[Turn], start: int, end: int) -> dict[str, Any]:
    """One point of the chart: the turns `start..end` (indices), drawn at their largest view."""
    top = max(turns[start : end + 1], key=_view_tokens)
    return {
        "index": start,
        "span": end - start + 1,
        "turn": turns[start].number,
        "last_turn": turns[end].number,
        "view_tokens": top.view_tokens,
        "storage_tokens": max(t.storage_tokens for t in turns[start : end + 1]),
        "view_messages": top.view_count,
        "storage_messages": top.storage_count,
    }


def _view_tokens(turn: Turn) -> int:
    return turn.view_tokens


def _key(item: Stored) -> tuple[Any, ...]:
    role, content, call_id, calls = message_parts(item)
    return (role, content, call_id, tuple(c.id for c in calls))


def turn_detail(node: NodeState, turn: Turn) -> dict[str, Any]:
    """One turn's exact view beside its storage, each item marked."""
    storage = turn.storage[: turn.storage_len]
    in_view = {_key(m) for m in turn.view}
    stored = {_key(m) for m in storage}
    hidden = turn.hidden_as
    storage_rows = [
        message_state(message, how) for how, message in node.forgotten[: turn.forgotten_len]
    ]
    for item in storage:
        if _is_summary(item):
            kept = "summary"
        else:
            kept = "in view" if _key(item) in in_view else hidden
        storage_rows.append(message_state(item, kept))
    view_rows = []
    for message in turn.view:
        if _is_summary(message):
            sent: str | None = "summary"
        else:
            sent = None if _key(message) in stored else "view only"
        view_rows.append(message_state(message, sent))
    reply = message_state(turn.reply) if turn.reply is not None else None
    marks = Counter(row.get("mark") for row in storage_rows)
    # what the column marks as not sent: sunk, trimmed, summarised... (a kind names its own)
    left_out = {mark: count for mark, count in marks.items() if mark not in IN_VIEW}
    return {
        "turn": turn.number,
        "kind": turn.kind,
        "model": turn.model,
        "tool_choice": turn.tool_choice,
        "view_tokens": turn.view_tokens,
        "storage_tokens": turn.storage_tokens,
        "hidden": turn.hidden,
        "view": view_rows[-ROWS:],
        "view_earlier": max(0, len(view_rows) - ROWS),
        "storage": storage_rows[-ROWS:],
        "storage_earlier": max(0, len(storage_rows) - ROWS),
        "reply": reply,
        "tokens": turn.usage.total_tokens if turn.usage else None,
        "prompt_tokens": turn.usage.prompt_tokens if turn.usage else None,
        "completion_tokens": turn.usage.completion_tokens if turn.usage else None,
        "storage_items": len(storage_rows),
        # stored items not in the view, by how: counted from the marks the column shows
        "left_out": left_out,
        "duration": turn.duration,
    }


def _is_summary(item: Stored) -> bool:
    return isinstance(item, Message) and bool(item.meta.get("summary"))
