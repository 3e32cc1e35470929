"""Long texts stored once (store schema 3): rows refer to them by the hash of their content.

A model's answer would otherwise be written four or five times (the reply's message, the display
transcript's copy, `run_finished`, the node's outcome, its `text_delta`), a tool's result twice,
a child's answer four times. So on the way into the file every string of `MIN_CHARS` or more
in a row's JSON body (at any depth), and a task's outcome text, goes to the `texts` table, keyed
by the BLAKE2b hash of its UTF-8, and the row keeps a reference:

- a body with references is a BLOB: its JSON with each such string replaced by `REF` + the
  hash in hex (`"\\u0000\\u0000<32 hex digits>"` in the JSON text);
- a task's `text` is a BLOB: the hash itself.

A TEXT value is what it always was, so rows written before schema 3 read as they did; reads
(`Texts.body`, `Texts.text`) put the strings back, so the rows a store returns are whole. Texts
are immutable and shared by every session and fork in the file: one is written before the rows
that refer to it, and never changed.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from .writes import PlainSession, PlainStep

MIN_CHARS = 512
"""Strings this long or longer are kept apart: a reference and its row cost ~100 bytes, so
shorter texts stay in their rows."""

SCHEMA = "CREATE TABLE texts (hash BLOB PRIMARY KEY, text TEXT NOT NULL)"

REF = "\x00\x00"
"""What a reference in a body starts with (then the hash in hex): a text of its own would
need two NULs before 32 hex digits, and a body holding such a string is kept whole."""

_REFS = re.compile(r'"\\u0000\\u0000([0-9a-f]{32})"')


def add_texts_table(db: sqlite3.Connection) -> None:
    """Schema 3: long texts are kept once, in `texts` (rows written before keep theirs)."""
    db.execute(SCHEMA)


class Cutter:
    """Takes the long texts out of the rows of one write (`step`, `session`); `found` holds
    them by hash, to be written (`keep`) before the rows."""

    def __init__(self) -> None:
        self.found: dict[bytes, str] = {}

    def step(self, step: PlainStep) -> PlainStep:
        events, messages, nodes, tasks, retired = step
        return (
            [(*e[:4], self.body(e[4])) for e in events],
            [
                (path, transcript, seq, [(n, self.body(body)) for n, body in numbered], swap)
                for path, transcript, seq, numbered, swap in messages
            ],
            [(*node[:3], self.body(node[3])) for node in nodes],
            [self.task(task) for task in tasks],
            retired,
        )

    def session(self, session: PlainSession) -> PlainSession:
        info, events, messages, nodes, tasks = session
        return (
            info,
            [(*e[:4], self.body(e[4])) for e in events],
            [(*m[:5], self.body(m[5])) for m in messages],
            [(*node[:3], self.body(node[3])) for node in nodes],
            [self.task(task) for task in tasks],
        )

    def body(self, body: str | dict[str, Any]) -> str | dict[str, Any] | bytes:
        """`body` (JSON text, or an event's plain fields) as stored: with references in place
        of its long strings, else unchanged."""
        if type(body) is str:
            if len(body) < MIN_CHARS:
                return body
            data = json.loads(body)
        elif type(body) is dict and any(map(_long, body.values())):
            data = body
        else:
            return body
        found: dict[bytes, str] = {}
        cuts = [0]
        data = _cut(data, found, cuts)
        if not found:
            return body
        try:
            skeleton = to_json(data).decode()
        except (PydanticSerializationError, UnicodeEncodeError):  # a lone surrogate: kept whole
            return body
        if len(_REFS.findall(skeleton)) != cuts[0]:  # a text of its own looks like a reference
            return body
        self.found.update(found)
        return skeleton.encode()

    def task(self, task: tuple[Any, ...]) -> tuple[Any, ...]:
        text = task[6]
        key = _key(text) if type(text) is str and len(text) >= MIN_CHARS else None
        if key is None:
            return task
        self.found[key] = text
        return (*task[:6], key, *task[7:])


def keep(db: sqlite3.Connection, texts: dict[bytes, str]) -> None:
    """Write `texts` (the caller holds a transaction); those the file has already stay."""
    db.executemany("INSERT OR IGNORE INTO texts VALUES (?, ?)", texts.items())


class Texts:
    """Puts stored texts back into the rows read from one connection (each text read and
    JSON-encoded once)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self._texts: dict[bytes, str] = {}
        self._literals: dict[str, str] = {}

    def body(self, stored: bytes) -> str:
        """A body stored with references, whole again."""
        return _REFS.sub(self._literal, stored.decode())

    def text(self, stored: str | bytes | None) -> str | None:
        """A task's text, whole again."""
        return self._text(stored) if isinstance(stored, bytes) else stored

    def _literal(self, ref: re.Match[str]) -> str:
        key = ref[1]
        literal = self._literals.get(key)
        if literal is None:
            literal = self._literals[key] = to_json(self._text(bytes.fromhex(key))).decode()
        return literal

    def _text(self, key: bytes) -> str:
        text = self._texts.get(key)
        if text is None:
            found = self.db.execute("SELECT text FROM texts WHERE hash = ?", (key,)).fetchone()
            if found is None:
                raise sqlite3.DatabaseError(
                    f"the text {key.hex()} a row refers to is missing from the texts table"
                )
            text = self._texts[key] = found[0]
        return text


def _cut(value: Any, found: dict[bytes, str], cuts: list[int]) -> Any:
    """`value` with each long string (not a key) replaced by its reference, noted in `found`
    and counted in `cuts`."""
    if type(value) is str:
        key = _key(value) if len(value) >= MIN_CHARS else None
        if key is None:
            return value
        found[key] = value
        cuts[0] += 1
        return REF + key.hex()
    if type(value) is dict:
        return {k: _cut(v, found, cuts) for k, v in value.items()}
    if type(value) is list:
        return [_cut(v, found, cuts) for v in value]
    return value


def _long(value: object) -> bool:
    """A plain event's field holds a string to keep apart."""
    if type(value) is str:
        return len(value) >= MIN_CHARS
    return type(value) is list and any(type(v) is str and len(v) >= MIN_CHARS for v in value)


def _key(text: str) -> bytes | None:
    """The text's hash; None if UTF-8 cannot encode it (a lone surrogate: such text stays in
    its row, which keeps it as the journal repaired it)."""
    try:
        return hashlib.blake2b(text.encode(), digest_size=16).digest()
    except UnicodeEncodeError:
        return None
