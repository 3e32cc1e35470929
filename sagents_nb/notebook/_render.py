"""Turns projected view state into the JSON the front end draws: the tree and one pane at a time.

Text goes out raw (the front end inserts it as text, never as HTML), clipped so that one update
stays small however long a run gets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .._messages import Message
from ..events import Event
from ._projector import Mark, NodeState, Projector, ToolCard, Turn

TEXT_LIMIT = 20_000
JSON_LIMIT = 12_000
ROWS = 200
EXCHANGES = 20
TABS = ("transcript", "context", "tools", "compaction", "wire", "events")
HIDDEN_MARK = {"main": "sunk", "realtime": "trimmed"}
COMMON_FIELDS = frozenset({"type", "seq", "ts", "path", "run"})


@dataclass
class Focus:
    """What the person looks at: a node, a pane, a turn, and the event-log filter."""

    node: str | None = None
    tab: str = "transcript"
    turn: int | None = None
    """Index into the node's turns; None follows the latest."""
    types: list[str] = field(default_factory=list)
    """Event types shown in the log; empty shows all."""
    node_only: bool = False

    def key(self) -> tuple[Any, ...]:
        return (self.node, self.tab, self.turn, tuple(self.types), self.node_only)


def clip(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much was left out."""
    text = text or ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def as_json(value: Any, limit: int = JSON_LIMIT) -> str:
    """Indented JSON text of `value`, clipped."""
    try:
        text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


def message_state(message: Message, mark: str | None = None) -> dict[str, Any]:
    """One message for the front end."""
    data: dict[str, Any] = {"role": message.role, "text": clip(message.content)}
    if message.tool_calls:
        data["calls"] = [
            {"id": c.id, "name": c.name, "arguments": clip(c.arguments, 4000)}
            for c in message.tool_calls
        ]
    if message.tool_call_id:
        data["call_id"] = message.tool_call_id
    if mark:
        data["mark"] = mark
    return data


# the tree


def tree_state(projector: Projector) -> dict[str, Any]:
    """The delegation tree, nested, with tokens rolled up from the children."""
    if projector.root is None:
        return {}
    return _tree_node(projector, projector.nodes[projector.root])


def _tree_node(projector: Projector, node: NodeState) -> dict[str, Any]:
    children = [_tree_node(projector, projector.nodes[path]) for path in node.children]
    return {
        "id": node.path,
        "agent": node.agent,
        "kind": node.kind,
        "status": node.status,
        "detail": clip(node.detail, 500),
        "turns": node.turns,
        "tokens": node.tokens + sum(child["tokens"] for child in children),
        "display_text": node.display_text,
        "reattached": node.reattached,
        "refused": [clip(reason, 500) for reason in node.refused],
        "children": children,
    }


# panes


def pane_state(
    projector: Projector,
    focus: Focus,
    exchanges: Sequence[Any] | None,
    json_cache: dict[int, str],
) -> dict[str, Any]:
    """The selected node's pane named by `focus.tab`."""
    path = focus.node if focus.node in projector.nodes else projector.root
    pane: dict[str, Any] = {"node": path, "tab": focus.tab}
    node = projector.nodes.get(path) if path else None
    if focus.tab == "events":
        pane.update(events_pane(projector, focus, path, json_cache))
    elif focus.tab == "wire":
        pane.update(wire_pane(exchanges))
    elif node is None:
        pane["empty"] = "nothing has happened yet"
    else:
        pane.update(node_pane(node, focus))
    return pane


def node_pane(node: NodeState, focus: Focus) -> dict[str, Any]:
    """A pane about one node: transcript, context, tool calls or compaction timeline."""
    match focus.tab:
        case "context":
            return context_pane(node, focus.turn)
        case "tools":
            return _last(tools_state(node.cards.values()), "cards")
        case "compaction":
            return _last([mark_state(mark) for mark in node.timeline], "entries")
        case _:
            return transcript_pane(node)


def _last(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return {name: items[-ROWS:], "earlier": max(0, len(items) - ROWS)}


def transcript_pane(node: NodeState) -> dict[str, Any]:
    """The node's conversation as a person reads it, and any text still streaming."""
    entries = node.transcript[-ROWS:]
    rows = []
    for entry in entries:
        row: dict[str, Any] = {"role": entry.role, "text": clip(entry.text), "seq": entry.seq}
        if entry.calls:
            row["calls"] = [
                {"id": c.id, "name": c.name, "arguments": clip(c.arguments, 4000)}
                for c in entry.calls
            ]
        for name in ("call_id", "name", "status", "sent_as"):
            value = getattr(entry, name)
            if value is not None:
                row[name] = clip(value) if name == "sent_as" else value
        rows.append(row)
    streaming = "".join(node.streaming) if node.asking is not None else ""
    return {
        "entries": rows,
        "earlier": max(0, len(node.transcript) - ROWS),
        "streaming": clip(streaming),
    }


def tools_state(cards: Iterable[ToolCard]) -> list[dict[str, Any]]:
    """Tool-call cards: arguments, result, duration, status."""
    return [
        {
            "call_id": card.call_id,
            "name": card.name,
            "arguments": clip(_pretty(card.arguments), 8000),
            "status": card.status,
            "result": None if card.result is None else clip(card.result),
            "duration": card.duration,
            "display_text": card.display_text,
            "child": card.child,
            "notes": [clip(note, 1000) for note in card.notes],
            "seq": card.seq,
        }
        for card in cards
    ]


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=1, ensure_ascii=False)
    except ValueError:
        return arguments


def mark_state(mark: Mark) -> dict[str, Any]:
    """One entry of the compaction timeline."""
    return {
        "seq": mark.seq,
        "type": mark.type,
        "at": mark.at,
        "title": mark.title,
        "details": [[str(k), clip(str(v), 2000)] for k, v in mark.details.items()],
        "text": None if mark.text is None else clip(mark.text),
        "previews": [clip(p, 500) for p in mark.previews],
    }


def context_pane(node: NodeState, wanted: int | None) -> dict[str, Any]:
    """The context-size chart of every turn, and the view beside the storage of one turn."""
    turns = node.turn_log
    chart = [
        {
            "turn": t.number,
            "view_tokens": t.view_tokens,
            "storage_tokens": t.storage_tokens,
            "view_messages": t.view_count,
            "storage_messages": t.storage_count,
        }
        for t in turns
    ]
    markers = [
        {"at": m.at, "type": m.type, "title": m.title, "seq": m.seq}
        for m in node.timeline
        if m.type in ("compaction", "context_full", "cold_sink", "window_trim")
    ]
    index = len(turns) - 1 if wanted is None or not 0 <= wanted < len(turns) else wanted
    detail = turn_detail(node, turns[index]) if turns else None
    return {
        "kind": node.kind,
        "chart": chart,
        "markers": markers,
        "index": index,
        "following": wanted is None,
        "detail": detail,
    }


def _key(message: Message) -> tuple[Any, ...]:
    calls = tuple(c.id for c in message.tool_calls or ())
    return (message.role, message.content, message.tool_call_id, calls)


def turn_detail(node: NodeState, turn: Turn) -> dict[str, Any]:
    """One turn's exact view beside its storage, each item marked."""
    storage = turn.storage[: turn.storage_len]
    in_view = {_key(m) for m in turn.view}
    stored = {_key(m) for m in storage}
    hidden = HIDDEN_MARK.get(turn.kind, "hidden")
    storage_rows = [
        message_state(message, how) for how, message in node.forgotten[: turn.forgotten_len]
    ]
    for message in storage:
        if message.meta.get("summary"):
            mark = "summary"
        else:
            mark = "in view" if _key(message) in in_view else hidden
        storage_rows.append(message_state(message, mark))
    view_rows = []
    for message in turn.view:
        if message.meta.get("summary"):
            mark = "summary"
        else:
            mark = None if _key(message) in stored else "view only"
        view_rows.append(message_state(message, mark))
    reply = message_state(turn.reply) if turn.reply is not None else None
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
        "duration": turn.duration,
    }


def wire_pane(exchanges: Sequence[Any] | None) -> dict[str, Any]:
    """The endpoint's recent exchanges: request and response JSON (keys already redacted)."""
    if exchanges is None:
        return {"exchanges": [], "earlier": 0, "note": "a finished result keeps no wire log"}
    recent = list(exchanges)[-EXCHANGES:]
    first = len(exchanges) - len(recent)
    rows = []
    for offset, exchange in enumerate(recent):
        data = exchange.to_dict()
        request = data.get("request") or {}
        rows.append(
            {
                "index": first + offset + 1,
                "url": data.get("url"),
                "model": request.get("model") if isinstance(request, dict) else None,
                "status": data.get("status"),
                "duration": data.get("duration"),
                "error": data.get("error"),
                "headers": as_json(data.get("headers") or {}, 2000),
                "request": as_json(request),
                "response": as_json(data.get("response")),
            }
        )
    return {"exchanges": rows, "earlier": first}


def events_pane(
    projector: Projector, focus: Focus, path: str | None, json_cache: dict[int, str]
) -> dict[str, Any]:
    """The newest events matching the type filter (and the node, if asked).

    `json_cache` keeps each event's JSON text by seq: events never change once emitted.
    """
    types = set(focus.types)
    rows: list[Event] = []
    for event in reversed(projector.events):
        if types and event.type not in types:
            continue
        if focus.node_only and event.path != path:
            continue
        rows.append(event)
        if len(rows) == ROWS:
            break
    rows.reverse()
    return {
        "types": dict(sorted(projector.counts.items())),
        "selected": sorted(types),
        "node_only": focus.node_only,
        "rows": [event_row(event, json_cache) for event in rows],
        "total": len(projector.events),
    }


def event_row(event: Event, json_cache: dict[int, str]) -> dict[str, Any]:
    """One line of the event log, with the event's JSON."""
    text = json_cache.get(event.seq)
    if text is None:
        if len(json_cache) > 4 * ROWS:
            json_cache.clear()
        text = json_cache[event.seq] = clip(event.model_dump_json(indent=1), 4000)
    return {
        "seq": event.seq,
        "type": event.type,
        "path": event.path,
        "run": event.run,
        "headline": headline(event),
        "json": text,
    }


def headline(event: Event) -> str:
    """A short `field=value` summary of an event's own fields."""
    parts = []
    for name in type(event).model_fields:
        if name in COMMON_FIELDS:
            continue
        value = getattr(event, name)
        if value is None or value == [] or value == {}:
            continue
        parts.append(f"{name}={_short(value)}")
    return clip(" ".join(parts), 300)


def _short(value: Any) -> str:
    if isinstance(value, Message):
        calls = ", ".join(c.name for c in value.tool_calls or ())
        text = value.content or (f"calls {calls}" if calls else "")
        return f"{value.role}: {clip(text, 80)!r}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, BaseModel):
        return clip(value.model_dump_json(), 80)
    if isinstance(value, str):
        return repr(clip(value, 80))
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return clip(json.dumps(value, ensure_ascii=False, default=str), 80)
    return str(value)
