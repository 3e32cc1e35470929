"""A step packed by the journal (`PendingStep.packed`: one msgpack blob of its events and
messages as they were) read back into its rows, the rows and bytes `PendingStep.plain` gives."""

from __future__ import annotations

from typing import Any

from msgspec.json import encode
from msgspec.msgpack import Decoder

from .._base.messages import Message
from .protocol import PlainStep
from .rows import message_json, request_json, response_json, state_json

_decode = Decoder(
    tuple[
        list[Any],  # events: each its fields (a map), or its row (an array) made when packed
        dict[int, list[Message | str] | Message | str],  # what requests and responses name
        int,  # the first message's number, the others' following in write order
        list[tuple[Any, Any, Any, list[Message | str], Any]],  # message writes
        tuple[list[str], list[str]],  # a state row's fields, and those it stores as objects
        list[tuple[Any, Any, Any, Any, Any]],  # node rows: a state row's values, the previous
        list[tuple[Any, ...]],  # tasks' values
        list[tuple[Any, ...]],  # retired keys
    ]
).decode


def unpack(data: bytes) -> list[PlainStep]:
    """The rows of the step packed in `data` (`PendingStep.packed`), as `[step.plain()]`."""
    packed, refs, n, writes, (names, objects), nodes, tasks, retired = _decode(data)
    events = []
    for index, fields in enumerate(packed):
        if type(fields) is list:
            events.append(tuple(fields))
            continue
        kind = fields["type"]
        row = (fields["seq"], fields["run"], kind, fields["path"])
        named = refs.get(index)
        if isinstance(named, list):  # a model request's view
            del fields["messages"]
            body = request_json(encode(fields).decode(), named)
        elif named is not None:  # a model response's message
            del fields["message"]
            body = response_json(encode(fields).decode(), named)
        elif kind == "text_delta":
            body = fields  # a stream's chunk keeps its fields (see `PendingStep._event_body`)
        else:
            body = encode(fields).decode()
        events.append((*row, body))
    messages = []
    for path, transcript, seq, written, swap in writes:
        rows = []
        for message in written:
            rows.append((n, _message_row(message)))
            n += 1
        messages.append((path, transcript, seq, rows, swap))
    return [
        (
            events,
            messages,
            [
                (
                    path,
                    part,
                    seq,
                    _state_json(names, objects, body, previous) if part == "state" else body,
                )
                for path, part, seq, body, previous in nodes
            ],
            tasks,
            retired,
        )
    ]


def _message_row(message: Message | str) -> str:
    """A written message's row JSON (given as it is when the message had a `meta`)."""
    return message if type(message) is str else message_json(message)  # type: ignore[arg-type]


def _state_json(
    names: list[str], objects: list[str], values: list[Any], previous: list[Any] | None
) -> str:
    """A `state` row's JSON from a node's snapshot (`values`, its fields `names`): the fields
    that differ from `previous`, or all; those in `objects` as objects (`NodeSnapshot.row`,
    `NodeSnapshot.changes`)."""
    if previous is None:
        row = dict(zip(names, values, strict=True))
    else:
        row = {n: v for n, v, before in zip(names, values, previous, strict=True) if v != before}
    for name in objects:
        if name in row:
            row[name] = dict(row[name])
    return state_json(row)
