"""A served request's body read off its socket, by Content-Length or chunked, within a size limit."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from email.message import Message

MAX_LINE = 4096
"""The longest chunk-size or trailer line taken."""
MAX_TRAILERS = 64
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")


class _Stream(Protocol):
    def read(self, size: int, /) -> bytes: ...
    def readline(self, size: int, /) -> bytes: ...


class BadBody(Exception):
    """The body cannot be taken: `status` and `reason` are the answer (and the connection is
    closed after it: the rest of the body is left unread)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def read_body(headers: Message, stream: _Stream, limit: int) -> bytes:
    """The body the headers announce, read whole from `stream`; at most `limit` bytes."""
    coding = headers.get("transfer-encoding")
    if coding is not None:  # it overrides Content-Length (RFC 9112)
        if [c.strip().lower() for c in coding.split(",") if c.strip()] != ["chunked"]:
            raise BadBody(
                501,
                f"Transfer-Encoding {coding!r} is not supported; send the body with a "
                "Content-Length or as Transfer-Encoding: chunked",
            )
        return _read_chunked(stream, limit)
    lengths = {value.strip() for value in headers.get_all("content-length") or ()}
    if not lengths:
        return b""
    if len(lengths) > 1:
        raise BadBody(400, f"the request has conflicting Content-Length headers {sorted(lengths)}")
    (value,) = lengths
    if not (value.isascii() and value.isdigit()):
        raise BadBody(
            400, f"Content-Length {value[:40]!r} is not a number of bytes; send the body's size"
        )
    if len(value) > 18 or int(value) > limit:
        raise _too_big(f"{value[:40]} bytes", limit)
    size = int(value)
    data = stream.read(size)
    if len(data) < size:
        raise BadBody(400, f"the body ended after {len(data)} of its {size} bytes")
    return data


def _read_chunked(stream: _Stream, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = _line(stream, "a chunk size")
        size_text = line.split(b";", 1)[0].strip()
        if not _CHUNK_SIZE.fullmatch(size_text):
            shown = size_text[:40].decode("latin-1")
            raise BadBody(400, f"chunk size {shown!r} is not a hexadecimal number of bytes")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > limit:
            raise _too_big(f"more than {limit} bytes in chunks", limit)
        data = stream.read(size)
        if len(data) < size or _line(stream, "a chunk's end").strip():
            raise BadBody(400, "a chunk of the body is cut short or not followed by CRLF")
        parts.append(data)
    for _ in range(MAX_TRAILERS):
        if not _line(stream, "a trailer").strip():
            return b"".join(parts)
    raise BadBody(400, f"the chunked body has more than {MAX_TRAILERS} trailer lines")


def _line(stream: _Stream, what: str) -> bytes:
    line = stream.readline(MAX_LINE + 1)
    if not line.endswith(b"\n"):
        if len(line) > MAX_LINE:
            raise BadBody(400, f"{what} line is longer than {MAX_LINE} bytes")
        raise BadBody(400, f"the chunked body ended before its last chunk (reading {what})")
    return line


def _too_big(size: str, limit: int) -> BadBody:
    return BadBody(
        413,
        f"the request body ({size}) is larger than this mock server takes ({limit} bytes); "
        "send less, or serve with sn.MockServer(..., max_body=...)",
    )
