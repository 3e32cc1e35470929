"""A step's rows as JSON text, made the same way from the journal's objects (`PendingStep.plain`)
and from a packed step (`packed.unpack`): a stored message, a node's state row, a model
request's view and a model response's message naming stored messages by number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import Struct
from msgspec.json import encode

from .._base.messages import Message, ToolCall
from .text import UNENCODABLE, Report, has_surrogate, repaired, safe_json

Ref = str | Message
"""A message an event names: the text of its number (`MessageRow.n`) or of its row's JSON, or
the message, whose row's JSON is made (`message_json`)."""


def stored_fields(message: Message) -> dict[str, Any]:
    """`message` as its row keeps it: `model_dump(exclude_defaults=True)`, written out (this
    runs for every message a session stores)."""
    data: dict[str, Any] = {"role": message.role}
    if message.content is not None:
        data["content"] = message.content
    if message.tool_calls is not None:
        data["tool_calls"] = [
            {"id": c.id, "name": c.name}
            if c.arguments == "{}"
            else {"id": c.id, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        data["name"] = message.name
    if message.meta:
        data["meta"] = message.meta
    return data


class _StoredCall(Struct, omit_defaults=True):
    """A tool call as a message's row keeps it (see `_StoredMessage`)."""

    id: str
    name: str
    arguments: str = "{}"


def _stored_call(call: ToolCall) -> _StoredCall:
    """msgspec leaves out a field whose value *is* its default (not an equal one)."""
    if call.arguments == "{}":
        return _StoredCall(call.id, call.name)
    return _StoredCall(call.id, call.name, call.arguments)


class _StoredMessage(Struct, omit_defaults=True):
    """A message as its row keeps it: msgspec writes `stored_fields`' JSON from it, fields left
    out at their defaults (None, the identical text, an empty `meta`), without building the
    dict (this runs for every stored message)."""

    role: str
    content: str | None = None
    tool_calls: list[_StoredCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    meta: dict[str, Any] = {}


def stored_message_json(message: Message) -> str:
    """`message`'s row JSON; text UTF-8 cannot encode raises `UnicodeEncodeError`."""
    calls = message.tool_calls
    stored = _StoredMessage(
        message.role,
        message.content,
        None if calls is None else [_stored_call(call) for call in calls],
        message.tool_call_id,
        message.name,
        message.meta,
    )
    return encode(stored).decode()


def message_json(message: Message, report: Report | None = None) -> str:
    """`message`'s row JSON, its text repaired if need be (see `text`)."""
    try:
        return stored_message_json(message)
    except UNENCODABLE:
        data = stored_fields(message)
        return safe_json(lambda: encode(data), lambda: data, report)


def ref_json(ref: Ref, report: Report | None = None) -> str:
    """What a request's view or a response holds for a message it names (see `Ref`)."""
    return ref if type(ref) is str else message_json(ref, report)  # type: ignore[arg-type]


def request_json(head: str, view: Sequence[Ref], report: Report | None = None) -> str:
    """A model request's row: `head` (the JSON of its other fields) with its view last."""
    try:
        parts = ",".join(view)  # type: ignore[arg-type]  # all text: the common case
    except TypeError:  # a message to make the JSON of
        parts = ",".join([ref_json(ref, report) for ref in view])
    return f'{head[:-1]},"messages":[{parts}]}}'


def response_json(head: str, message: Ref, report: Report | None = None) -> str:
    """A model response's row: `head` (the JSON of its other fields) with its message last."""
    return f'{head[:-1]},"message":{ref_json(message, report)}}}'


def without(data: bytes, field: bytes) -> str:
    """An event's JSON `data` without `field` (its key and value, an empty one: the caller
    writes the field after the rest). The first match is the field: a quote inside a JSON
    string is escaped, so `,"name"` is found nowhere else."""
    return data.replace(field, b"", 1).decode()


def state_json(row: dict[str, Any], report: Report | None = None) -> str:
    """A `state` row's JSON: msgspec's, the same bytes as pydantic's (`dump_json`) for what a
    snapshot holds (text, integers, None, and arrays and objects of them; no floats, which the
    two write apart), several times faster; text that UTF-8 cannot encode is repaired."""
    try:
        return encode(row).decode()
    except UnicodeEncodeError:
        return encode(repaired(row, report)).decode()


def task_values(values: tuple[Any, ...], report: Report | None) -> tuple[Any, ...]:
    """A task row's values (or a retired task's key: text, numbers or None), its text
    repaired if need be. Their texts are checked joined: a surrogate shows there as alone."""
    if has_surrogate("".join([value for value in values if type(value) is str])):
        return repaired(values, report)
    return values
