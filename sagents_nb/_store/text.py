"""Text a store can keep: a lone surrogate (e.g. from bytes decoded with `surrogateescape`, or a
model's broken escape) has no UTF-8 form, so the stored copy has U+FFFD in its place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic_core import PydanticSerializationError, from_json, to_json, to_jsonable_python

_ascii_json = json.JSONEncoder(separators=(",", ":")).encode
"""ASCII JSON: a lone surrogate in text comes out escaped, which UTF-8 takes."""

SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
UNENCODABLE = (PydanticSerializationError, UnicodeEncodeError)
"""What serializing text with a lone surrogate raises."""

Report = Callable[[int], None]
"""Told how many characters were replaced."""


def repaired(value: Any, report: Report | None) -> Any:
    """`value` (JSON-like data) with every surrogate in its text replaced by U+FFFD; `report`
    is told how many were, if any."""
    count = [0]
    fixed = _walk(value, count)
    if count[0] and report is not None:
        report(count[0])
    return fixed


def read_json(text: str | bytes) -> Any:
    """Stored JSON read back, by pydantic's parser (twice as fast as `json` on the small
    objects rows hold), else by `json`'s: an escaped lone surrogate (in a row another program
    or an older sagents_nb wrote), which pydantic refuses, or the error text is `json`'s."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def has_surrogate(text: str) -> bool:
    return not text.isascii() and SURROGATE.search(text) is not None


def body_text(body: str | bytes | dict[str, Any]) -> str | bytes:
    """An event's body (`PlainStep`) as JSON text; text or bytes (the file store's, with long
    texts kept apart) as given.

    Plain fields get pydantic's JSON, as the other events' bodies have (several times faster
    than the standard library's; until 2026-12-01 they got its ASCII JSON), or ASCII JSON if
    their text has a lone surrogate, which UTF-8 cannot take."""
    if isinstance(body, (str, bytes)):
        return body
    try:
        return to_json(body).decode()
    except PydanticSerializationError:
        return _ascii_json(body)


def safe_json(
    serialize: Callable[[], bytes], data: Callable[[], Any], report: Report | None
) -> str:
    """`serialize()`'s JSON text; if it cannot encode its text, the JSON of `data()` repaired."""
    try:
        return serialize().decode()
    except UNENCODABLE:
        fixed = repaired(to_jsonable_python(data()), report)
        return json.dumps(fixed, ensure_ascii=False, separators=(",", ":"))


def _walk(value: Any, count: list[int]) -> Any:
    if isinstance(value, str):
        if has_surrogate(value):
            fixed, n = SURROGATE.subn(REPLACEMENT, value)
            count[0] += n
            return fixed
        return value
    if isinstance(value, dict):
        return {_walk(k, count): _walk(v, count) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, count) for v in value)
    return value
