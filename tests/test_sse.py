"""The event-stream decoder (WHATWG rules) and streamed replies in many scripts, fed in any slices."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._endpoints.sse import SSEDecoder

TEXTS = {
    "french": "Où est la bibliothèque ? Déjà vu, garçon, « guillemets » et cœur.",
    "chinese": "你好，世界。我们今天讨论代理。",
    "japanese": "こんにちは、世界。エージェントを作りましょう。",
    "emoji": "ok 👍🏽 family 👨‍👩‍👧 flag 🇫🇷 done ✅",
    "code": "def f(x):\n\treturn {\"a\": [x, '\\n']}  # tab\tand\r\nCRLF\rCR",
    "unicode line breaks": "line\u2028separator\u2029paragraph\u0085next\x0bvt\x0cff\x1c\x1d\x1e end",
}


def decode(body: bytes, size: int | None = None) -> list[str]:
    decoder = SSEDecoder()
    if size is None:
        return [e.data for e in decoder.feed(body)]
    return [e.data for i in range(0, len(body), size) for e in decoder.feed(body[i : i + size])]


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
@pytest.mark.parametrize("size", [None, 1, 2, 3, 7])
def test_lines_end_only_in_cr_lf_or_crlf_in_any_slicing(ending: bytes, size: int | None) -> None:
    body = ending.join(
        [
            b"\xef\xbb\xbfdata: first",  # a leading BOM is dropped
            b": a comment",
            b"data:second line of one event",
            b"data:  two spaces keep one",
            b"",
            b"event: update",
            b"id: 7",
            b"retry: 1000",
            b"data",
            b"",
            b"",  # an empty line with nothing pending dispatches nothing
            "data: \u2028 \u0085 \u2029 text".encode(),
            b"",
            b"data: never finished",
        ]
    )
    assert decode(body, size) == [
        "first\nsecond line of one event\n two spaces keep one",
        "",
        "\u2028 \u0085 \u2029 text",
    ]


def test_event_fields_follow_the_standard() -> None:
    decoder = SSEDecoder()
    (event,) = decoder.feed(b"event: delta\nid: 3\nretry: 50\ndata: x\n\n")
    assert (event.event, event.id, event.retry, event.data) == ("delta", "3", 50, "x")
    (event,) = decoder.feed(b"id: a\0b\nretry: soon\ndata: y\n\n")
    # the type resets; the last id and the reconnection time are the stream's
    assert (event.event, event.id, event.retry) == ("message", "3", 50)


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert decode(b"data: caf\xc3\n\n") == ["caf\ufffd"]


class Slices(httpx.AsyncByteStream):
    """A response body delivered a few bytes at a time, as a slow network does."""

    def __init__(self, body: bytes, size: int) -> None:
        self.body, self.size = body, size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(0, len(self.body), self.size):
            yield self.body[i : i + self.size]


def raw_stream(text: str, size: int, line_end: str = "\n") -> httpx.Response:
    """`text` streamed in pieces, its JSON written with raw (unescaped) non-ASCII characters."""
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    events = [{"choices": [{"delta": {"content": p}}]} for p in pieces]
    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}{line_end}{line_end}" for e in events)
    body += f"data: [DONE]{line_end}{line_end}"
    return httpx.Response(
        200, stream=Slices(body.encode(), size), headers={"content-type": "text/event-stream"}
    )


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize(("size", "line_end"), [(1, "\n"), (3, "\r\n"), (4096, "\r")])
def test_streamed_text_in_any_script_arrives_whole(name: str, size: int, line_end: str) -> None:
    text = TEXTS[name]
    llm = sn.mock_llm(lambda req: raw_stream(text, size, line_end))
    result = sn.Agent("a", kind=sn.kinds.Realtime()).run_sync("x", llm=llm)
    assert (result.status, result.text) == ("done", text)
    assert "".join(e.text for e in result.events if e.type == "text_delta") == text
    chunks = llm.exchanges[-1].response["chunks"]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == text
