"""A server-sent-events decoder, as the WHATWG HTML standard defines the `text/event-stream` format."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Only CR, LF and CRLF end a line. `str.splitlines` (and so httpx's `aiter_lines`) also splits on
# U+2028, U+0085 and other Unicode breaks, which model text may well contain.
_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass(slots=True)
class ServerSentEvent:
    """One dispatched event: its data lines joined by LF, with the stream's last id and
    reconnection time (`retry`, ms) as they stand when it is dispatched."""

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


class SSEDecoder:
    """Turns the bytes of an event stream, fed in any slices, into events.

    Lines are split on bytes (a CR or LF byte never occurs inside a UTF-8 sequence), then decoded
    as UTF-8 with replacement characters, as the standard requires whatever the declared charset.
    An event still pending at the end of the stream is discarded, as the standard says.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._after_cr = False  # the last slice ended in CR: a leading LF of the next is its pair
        self._first_line = True
        self._data: list[str] = []
        self._event = ""
        self._id = ""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by `chunk`."""
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        buffer = self._pending + chunk if self._pending else chunk
        if b"\r" in buffer:
            lines = _LINE_END.split(buffer)
        else:
            lines = buffer.split(b"\n")
        self._pending = lines.pop()
        events: list[ServerSentEvent] = []
        for raw in lines:
            event = self._line(raw.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if self._first_line:
            self._first_line = False
            if line.startswith(_BOM):
                line = line[1:]
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # a comment, e.g. a keep-alive
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event, self._data, self._event = self._data, self._event, [], ""
        if not data:
            return None
        return ServerSentEvent("\n".join(data), event or "message", self._id, self._retry)
