"""Tolerant readers for one line of a CLI's JSON-lines output: wrong shapes read as empty."""

from __future__ import annotations

import json
from typing import Any


def load_object(line: str) -> dict[str, Any] | None:
    """The JSON object on `line`, or None for noise, a bare JSON value or nesting too deep."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def text_field(obj: dict[str, Any], key: str) -> str:
    """`obj[key]` when it is a string, else ``""``."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def object_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """`obj[key]` when it is an object, else ``{}``."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def list_field(obj: dict[str, Any], key: str) -> list[Any]:
    """`obj[key]` when it is a list, else ``[]``."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def token_count(usage: dict[str, Any], *keys: str) -> int:
    """The sum of the non-negative integer counters at `keys`; anything else counts as 0."""
    return sum(
        value
        for key in keys
        if isinstance(value := usage.get(key), int) and not isinstance(value, bool) and value > 0
    )
