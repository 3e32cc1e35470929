"""The wire pane (the endpoint's exchanges) and the event log pane."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base.messages import Message
from .._base.model import Model
from ..events import Event
from ._paging import PAGE, page_of
from ._projector import Projector
from ._render import ROWS, as_json, clip
from ._state import NodeState
from ._words import counted

EXCHANGES = 20
NO_WIRE = "this result keeps no exchanges: a run read back from a store keeps none"
COMMON_FIELDS = frozenset({"type", "seq", "ts", "path", "run"})


class Wire:
    """The exchanges with the endpoint, by what tells whose request each answers: its model,
    tools and number of messages (then its last message), worked out once for every node's
    Wire tab of a saved view (`_offline.snapshot`)."""

    def __init__(self, exchanges: Sequence[Any]) -> None:
        self.total = len(exchanges)
        self.answers: dict[tuple[Any, ...], list[tuple[int, Any, Any]]] = {}
        """(index from 1, exchange, its last message) by (model, tools, number of messages)."""
        for index, exchange in enumerate(exchanges, 1):
            body = exchange.request
            messages = body.get("messages") or []
            if messages:
                tools = tuple(t.get("function", {}).get("name") for t in body.get("tools") or ())
                key = (body.get("model"), tools, len(messages))
                self.answers.setdefault(key, []).append((index, exchange, messages[-1]))


def wire_pane(
    exchanges: Sequence[Any] | Wire | None, node: NodeState | None, start: int | None = None
) -> dict[str, Any]:
    """A page of the node's exchanges with the endpoint (the newest unless `start` says where):
    request and response JSON (keys redacted)."""
    if exchanges is None:
        return {"exchanges": [], "earlier": 0, "note": NO_WIRE}
    wire = exchanges if isinstance(exchanges, Wire) else Wire(exchanges)
    # An exchange is the node's when its body matches one of the node's requests: same model,
    # tools, number of messages and last message.
    sent: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for request in node.requests if node is not None else ():
        if request.messages:
            key = (request.model, tuple(request.tools), len(request.messages))
            sent.setdefault(key, []).append(request.messages[-1].to_wire())
    mine = sorted(
        (index, exchange)
        for key, lasts in sent.items()
        for index, exchange, last in wire.answers.get(key, ())
        if last in lasts
    )
    recent, page = page_of(mine, start, EXCHANGES)
    rows = []
    for index, exchange in recent:
        data = exchange.to_dict()
        rows.append(
            {
                "index": index,
                "url": data["url"],
                "model": data["request"].get("model"),
                "status": data["status"],
                "duration": data["duration"],
                "error": data["error"],
                "headers": as_json(data["headers"], 2000),
                "request": as_json(data["request"]),
                "response": as_json(data["response"]),
            }
        )
    others = wire.total - len(mine)
    note = (
        f"{counted(others, 'more exchange')} {'belongs' if others == 1 else 'belong'} to other nodes: "
        "select them in the tree"
        if others
        else None
    )
    return {"exchanges": rows, "earlier": page["start"], "page": page, "note": note}


def events_pane(
    projector: Projector,
    types: set[str],
    path: str | None,
    json_cache: dict[int, str],
    opened: Sequence[int] = (),
    start: int | None = None,
) -> dict[str, Any]:
    """A page of the events of the given types (all when empty), of the node at `path` if
    given: the newest, unless `start` says where the page begins.

    Only the events in `opened` (those the person opened) carry their JSON, in the window or
    not: a pane of 200 events with their JSON is ~800 KB, sent at every update of a run.
    `json_cache` keeps each event's JSON text by seq: events never change once emitted.
    """
    rows, page = _events_page(projector, types, path, start)
    wanted = set(opened)
    shown = {event.seq for event in rows}
    kept = [_event(projector, seq) for seq in sorted(wanted - shown)]
    return {
        "types": dict(sorted(projector.counts.items())),
        "selected": sorted(types),
        "node_only": path is not None,
        "rows": [event_row(event, json_cache, event.seq in wanted) for event in rows],
        "kept": [event_row(event, json_cache, True) for event in kept if event is not None],
        "total": len(projector.events),
        "page": page,
        "showing": _showing(len(rows), page["total"], len(projector.events), types, path),
    }


def _showing(shown: int, matching: int, total: int, types: set[str], path: str | None) -> str:
    """How many rows are on the page, of how many the filter matches (the pager's count)."""
    if not types and path is None:
        return f"showing {shown} of {counted(total, 'event')}"
    return f"showing {shown} of {counted(matching, 'matching event')} ({total} in all)"


def _events_page(
    projector: Projector, types: set[str], path: str | None, start: int | None
) -> tuple[Sequence[Event], dict[str, Any]]:
    """The page of matching events; the newest page is found from the end, without going
    through the whole log at each update of a long run."""
    events = projector.events
    if not types and path is None:
        return page_of(events, start)
    if path is not None:
        mine = projector.events_at(path)
        return page_of([e for e in mine if e.type in types] if types else mine, start)
    if start is not None:
        return page_of([e for e in events if e.type in types], start)
    rows: list[Event] = []
    for event in reversed(events):
        if event.type in types:
            rows.append(event)
            if len(rows) == PAGE:
                break
    rows.reverse()
    total = sum(projector.counts[name] for name in types)
    return rows, {"start": total - len(rows), "total": total, "size": PAGE, "following": True}


def _event(projector: Projector, seq: int) -> Event | None:
    """The event numbered `seq` (seqs count up from 1, a log may start later after a fork)."""
    events = projector.events
    if not events:
        return None
    index = seq - events[0].seq
    if 0 <= index < len(events) and events[index].seq == seq:
        return events[index]
    return next((event for event in events if event.seq == seq), None)


def event_row(event: Event, json_cache: dict[int, str], with_json: bool = True) -> dict[str, Any]:
    """One line of the event log, with the event's JSON if asked."""
    row = {
        "seq": event.seq,
        "type": event.type,
        "path": event.path,
        "run": event.run,
        "headline": headline(event),
    }
    if with_json:
        text = json_cache.get(event.seq)
        if text is None:
            if len(json_cache) > 4 * ROWS:
                json_cache.clear()
            text = json_cache[event.seq] = clip(event.model_dump_json(indent=1), 4000)
        row["json"] = text
    return row


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
        return f"[{counted(len(value), 'item')}]"
    if isinstance(value, Model):
        return clip(value.model_dump_json(), 80)
    if isinstance(value, str):
        return repr(clip(value, 80))
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return clip(json.dumps(value, ensure_ascii=False, default=str), 80)
    return str(value)
