"""Text through PostgreSQL: its `text` type holds no NUL character, which Python text (and
SQLite) may hold, e.g. in a task's prompt or a child's answer. The SQL (`sql.py`) writes the
rows' plain-text fields through `escaped`: a NUL goes in as U+FFFF then `0`, a U+FFFF as two (a
noncharacter, absent from ordinary text), any other text as it is; reading undoes it. The JSON
bodies need none of it: JSON writes a NUL as `\\u0000`."""

from __future__ import annotations

import re
from typing import Any

MARK = "\uffff"
_MARKED = re.compile("\uffff([\uffff0])")


def escaped(text: str) -> str:
    """`text` as the store keeps it."""
    if "\x00" in text or MARK in text:
        return text.replace(MARK, MARK + MARK).replace("\x00", MARK + "0")
    return text


def maybe_escaped(text: str | None) -> str | None:
    return None if text is None else escaped(text)


def unescaped(text: str) -> str:
    """Text the store kept, as it was given."""
    return _MARKED.sub(lambda found: MARK if found[1] == MARK else "\x00", text)


def as_given(rows: list[Any], columns: tuple[int, ...]) -> list[Any]:
    """`rows` read back, the text at `columns` as it was given (the rows themselves unless a
    value there holds the mark, which ordinary text never does)."""
    if not any(MARK in "".join(filter(None, [row[i] for row in rows])) for i in columns):
        return rows
    return [
        tuple(
            unescaped(value) if i in columns and value is not None else value
            for i, value in enumerate(row)
        )
        for row in rows
    ]
