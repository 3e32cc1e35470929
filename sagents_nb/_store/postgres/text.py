"""Text through PostgreSQL: its `text` type holds no NUL character, which Python text (and
SQLite) may hold, e.g. in a model's answer. On a store's connection a NUL goes in as U+FFFF
then `0`, and a U+FFFF as two (a noncharacter, absent from ordinary text), and both come back
as they went in; any other text is stored as it is."""

from __future__ import annotations

import re
from typing import Any

from psycopg.adapt import Buffer
from psycopg.types.string import StrDumperUnknown, TextLoader

MARK = "\uffff"
_MARKED = re.compile("\uffff([\uffff0])")


def escaped(text: str) -> str:
    """`text` as the store keeps it."""
    if "\x00" in text or MARK in text:
        return text.replace(MARK, MARK + MARK).replace("\x00", MARK + "0")
    return text


def unescaped(text: str) -> str:
    """Text the store kept, as it was given."""
    if MARK in text:
        return _MARKED.sub(lambda found: MARK if found[1] == MARK else "\x00", text)
    return text


class Dumper(StrDumperUnknown):
    """Python text in a query's parameters or a COPY row, escaped."""

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(escaped(obj))


class Loader(TextLoader):
    """A `text` column's value, unescaped."""

    def load(self, data: Buffer) -> Any:
        return unescaped(str(data, "utf-8"))


def adapt(connection: Any) -> None:
    """Make `connection` send and read text so."""
    connection.adapters.register_dumper(str, Dumper)
    connection.adapters.register_loader("text", Loader)
