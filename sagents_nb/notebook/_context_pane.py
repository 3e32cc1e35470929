"""The context pane: a context-size chart of every turn, and one turn's view beside its storage."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._base.messages import Message
from ._context_diff import diff_state, forgotten_state
from ._paging import CHART_MARKERS, buckets, merged_markers, page_of, zoom_range
from ._projector import CHARTED
from ._render import ROWS, message_parts, message_state
from ._state import NodeState, Stored, Turn

Pages = tuple[int | None, int | None]
"""Where the pages of the view and storage columns begin (None: the newest, following)."""
NATIVE_NOTE = "a coding CLI keeps this child's context itself: there is no view to show or compare"


def context_pane(
    node: NodeState,
    wanted: int | None,
    zoom: tuple[int, int] | None = None,
    pages: Pages = (None, None),
) -> dict[str, Any]:
    """The context-size chart of the turns in `zoom` (all when None), and the view beside the
    storage of one turn, a page of each (`pages`)."""
    turns = node.turn_log
    first, last = zoom_range(len(turns), zoom)
    cuts = buckets(first, last)
    size = cuts[0][1] - cuts[0][0] + 1 if cuts else 1
    markers = [
        {"at": m.at, "type": m.type, "title": m.title, "seq": m.seq}
        for m in node.timeline
        if m.type in CHARTED and first <= m.at <= last + 1
    ]
    shown = {m["type"] for m in markers}
    share = max(1, CHART_MARKERS // max(1, len(shown)))  # markers each type may draw
    spacing = max(size, -(-(last - first + 2) // share))  # turns one marker stands for
    index = len(turns) - 1 if wanted is None or not 0 <= wanted < len(turns) else wanted
    detail = turn_detail(node, turns[index], pages) if turns else None
    return {
        "kind": node.kind,
        "chart": [chart_point(turns, start, end) for start, end in cuts],
        "range": {"first": first, "last": last, "turns": len(turns), "zoomed": zoom is not None},
        "markers": merged_markers(markers, first, last, spacing),
        "legend": [[kind, label] for kind, label in CHARTED.items() if kind in shown],
        "index": index,
        "following": wanted is None,
        "detail": detail,
        "changes": diff_state(node, index) if turns else None,
        "forgotten": forgotten_state(node, index) if turns else None,
        "note": None if turns or node.kind != "native" else NATIVE_NOTE,
        "about_to_send": about_to_send(node),
    }


def about_to_send(node: NodeState) -> dict[str, Any] | None:
    """The whole request a model pause of this node stands before (its newest messages)."""
    request = node.about_to_send
    if request is None:
        return None
    shown = request.messages[-ROWS:]
    return {
        "model": request.model,
        "tool_choice": request.tool_choice,
        "endpoint": request.endpoint,
        "tokens": request.tokens,
        "tools": request.tools,
        "count": len(request.messages),
        "earlier": len(request.messages) - len(shown),
        "messages": [message_state(m) for m in shown],
    }


def chart_point(turns: list[Turn], start: int, end: int) -> dict[str, Any]:
    """One point of the chart: the turns `start..end` (indices), drawn at their largest view.

    Its view and storage sizes are estimates by one counter; `prompt_tokens` is what the
    endpoint reported for that turn's request (measured; None when it reported nothing)."""
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
        "prompt_tokens": top.usage.prompt_tokens if top.usage else None,
    }


def _view_tokens(turn: Turn) -> int:
    return turn.view_tokens


def _key(item: Stored) -> tuple[Any, ...]:
    role, content, call_id, calls = message_parts(item)
    return (role, content, call_id, tuple(c.id for c in calls))


def _held(turn: Turn, storage: Sequence[Stored]) -> tuple[bytearray, bytearray]:
    """Flags per stored item (1: the view held it) and per view message (1: it is a stored
    one), by identity from the turn's `from_storage`; by text only in a log from before it,
    where two messages of the same text cannot be told apart."""
    view = turn.view
    runs = turn.from_storage
    if runs is None:
        in_view = {_key(m) for m in view}
        stored = {_key(m) for m in storage}
        return (
            bytearray(_key(m) in in_view for m in storage),
            bytearray(_key(m) in stored for m in view),
        )
    held, sent = bytearray(len(storage)), bytearray(len(view))
    for start in range(0, len(runs) - 2, 3):
        at, first, count = runs[start : start + 3]
        # a run past what the projector holds (its storage rebuilt from events) is cut there
        count = min(count, len(view) - at, len(storage) - first)
        if count > 0 and at >= 0 and first >= 0:
            held[first : first + count] = b"\x01" * count
            sent[at : at + count] = b"\x01" * count
    return held, sent


def _summaries(storage: Sequence[Stored]) -> int:
    """How many summaries begin the projector's storage: it puts each compaction's summary
    first, before the part of storage the compaction kept, and nothing else is one."""
    count = 0
    while count < len(storage) and _is_summary(storage[count]):
        count += 1
    return count


def turn_detail(node: NodeState, turn: Turn, pages: Pages = (None, None)) -> dict[str, Any]:
    """One turn's exact view beside its storage, each item marked; each column one page."""
    storage = turn.storage[: turn.storage_len]
    forgotten = node.forgotten[: turn.forgotten_len]
    held, sent = _held(turn, storage)
    summaries = _summaries(storage)
    hidden = turn.hidden_as
    # what the column marks as not sent: sunk, trimmed, summarised... (a kind names its own)
    left_out = dict(Counter(how for how, _ in forgotten))
    unsent = held.count(0, summaries)
    if unsent:
        left_out[hidden] = left_out.get(hidden, 0) + unsent
    storage_at, storage_page = page_of(range(len(forgotten) + len(storage)), pages[1], ROWS)
    storage_rows = []
    for at in storage_at:
        if at < len(forgotten):
            how, message = forgotten[at]
            storage_rows.append(message_state(message, how))
            continue
        item = at - len(forgotten)
        kept = "summary" if item < summaries else "in view" if held[item] else hidden
        storage_rows.append(message_state(storage[item], kept))
    view_at, view_page = page_of(range(len(turn.view)), pages[0], ROWS)
    view_rows = []
    for at in view_at:
        message = turn.view[at]
        sent_as = "summary" if _is_summary(message) else None if sent[at] else "view only"
        view_rows.append(message_state(message, sent_as))
    reply = message_state(turn.reply) if turn.reply is not None else None
    return {
        "turn": turn.number,
        "kind": turn.kind,
        "model": turn.model,
        "tool_choice": turn.tool_choice,
        "view_tokens": turn.view_tokens,
        "storage_tokens": turn.storage_tokens,
        "hidden": turn.hidden,
        "view": view_rows,
        "view_earlier": view_page["start"],
        "view_page": view_page,
        "view_items": len(turn.view),
        "storage": storage_rows,
        "storage_earlier": storage_page["start"],
        "storage_page": storage_page,
        "reply": reply,
        "tokens": turn.usage.total_tokens if turn.usage else None,
        "prompt_tokens": turn.usage.prompt_tokens if turn.usage else None,
        "completion_tokens": turn.usage.completion_tokens if turn.usage else None,
        "storage_items": len(forgotten) + len(storage),
        # stored items not in the view, by how: counted from the marks the column shows
        "left_out": left_out,
        "duration": turn.duration,
    }


def _is_summary(item: Stored) -> bool:
    return isinstance(item, Message) and bool(item.meta.get("summary"))
