"""Counts with their nouns, one rule for the whole view (its twin is `static/panes/words.js`)."""

from __future__ import annotations

from .._base import text


def counted(count: int | str, one: str, many: str | None = None) -> str:
    """`count` and its noun, singular for exactly one: `1 node`, `2 nodes`, `0 nodes`.

    Args:
        count: a number, or a figure already shortened (`"4.2 k"`).
        one: the noun for one.
        many: the noun for any other count (`one` with an `s` by default).
    """
    return text.counted(count, one, many)
