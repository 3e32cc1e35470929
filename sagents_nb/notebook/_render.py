"""Shared pieces of the JSON the front end draws (the delegation tree's are in `_tree`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, assert_never

import msgspec

from .._base.messages import Message, ToolCall
from ..events import RunStarted, TaskSpawned, ToolCallFinished
from ._state import Stored

# Text goes out raw (the front end inserts it as text, never as HTML) and clipped, so one update
# stays small however long a run gets.
TEXT_LIMIT = 20_000
JSON_LIMIT = 12_000
ROWS = 200
"""Rows (messages, cards, events) one pane shows at most; older ones are counted."""


def clip(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much was left out."""
    text = text or ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


_ENCODER = msgspec.json.Encoder()


def compact_json(state: Any) -> str:
    """`state` (JSON data) as compact JSON text, as the front end parses it: msgspec's encoder,
    several times json.dumps' speed; text with a lone surrogate, which UTF-8 cannot hold,
    as json.dumps writes it."""
    try:
        return _ENCODER.encode(state).decode()
    except UnicodeEncodeError:
        return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def as_json(value: Any, limit: int = JSON_LIMIT) -> str:
    """Indented JSON text of `value`, clipped."""
    try:
        text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


def message_parts(item: Stored) -> tuple[str, str | None, str | None, tuple[ToolCall, ...]]:
    """Role, content, answered call id and tool calls of a stored item."""
    match item:
        case Message():
            return item.role, item.content, item.tool_call_id, item.tool_calls or ()
        case ToolCallFinished():
            return "tool", item.result, item.call_id, ()
        case TaskSpawned():
            return "user", item.prompt, None, ()
        case RunStarted():
            return "user", item.input, None, ()
        case _:
            assert_never(item)


def message_state(item: Stored, mark: str | None = None) -> dict[str, Any]:
    """One stored message for the front end."""
    role, content, call_id, calls = message_parts(item)
    data: dict[str, Any] = {"role": role, "text": clip(content)}
    if calls:
        data["calls"] = calls_state(calls)
    if call_id:
        data["call_id"] = call_id
    if mark:
        data["mark"] = mark
    return data


def calls_state(calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls a model asked for."""
    return [{"id": c.id, "name": c.name, "arguments": clip(c.arguments, 4000)} for c in calls]
