"""Long texts stored once (store schema 3): rows refer to them by the hash of their content.

A model's answer would otherwise be written four or five times (the reply's message, the display
transcript's copy, `run_finished`, the node's outcome, its `text_delta`), a tool's result twice,
a child's answer four times. So on the way into the file every string of `MIN_CHARS` or more
in a row's JSON body (at any depth), and a task's outcome text, goes to the `texts` table, keyed
by the BLAKE2b hash of its UTF-8, and the row keeps a reference:

- a body with references is a BLOB: its JSON text with each such string's JSON (`literal`)
  replaced by `reference(hash)`, `"\\u0000\\u0000<the hash in 32 hex digits>"`;
- a task's `text` is a BLOB: the hash itself.

Reading (`Texts`) puts each literal back, so the rows a store returns are the rows it was given,
to the byte: a cut is checked so before it is kept, and a body that would not come back the
same (e.g. one holding a string that looks like a reference) stays whole. A TEXT value is what
it always was, so rows written before schema 3 read as they did. Texts are immutable and shared
by every session and fork in the file; one is written in the transaction of the first rows that
refer to it, before them.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from ..protocol import PlainStep
from .writes import PlainSession

MIN_CHARS = 512
"""Strings this long or longer are kept apart: a reference and its row cost ~100 bytes, so
shorter texts stay in their rows."""

SCHEMA = "CREATE TABLE texts (hash BLOB PRIMARY KEY, text TEXT NOT NULL)"

_REFS = re.compile(r'"\\u0000\\u0000([0-9a-f]{32})"')


def add_texts_table(db: sqlite3.Connection) -> None:
    """Schema 3: long texts are kept once, in `texts` (rows written before keep theirs)."""
    db.execute(SCHEMA)


def reference(key: bytes) -> str:
    """What a body holds in place of the literal of the text with hash `key`."""
    return f'"\\u0000\\u0000{key.hex()}"'


def literal(text: str) -> str:
    """A text's JSON, as the journal's serializers write it."""
    return to_json(text).decode()


class Cutter:
    """Takes the long texts out of the rows of one write (`step`, `session`); `found` holds
    them by hash, to be written (`keep`) before the rows, in their transaction."""

    def __init__(self) -> None:
        self.found: dict[bytes, str] = {}

    def step(self, step: PlainStep) -> PlainStep:
        if _short_only(step):  # the common case: nothing to rebuild
            return step
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
        if not _may_cut(body):
            return body
        if isinstance(body, dict):
            try:
                text = to_json(body).decode()  # the JSON the writer would make, in UTF-8
            except PydanticSerializationError:  # a lone surrogate: the writer escapes it
                return body
        else:
            text = body
        cut: dict[str, tuple[str, str]] = {}
        skeleton = text
        for string in sorted(set(_long_strings(json.loads(text))), key=len, reverse=True):
            key = _key(string)
            if key is None:
                continue
            found = literal(string)
            if found in skeleton:
                skeleton = skeleton.replace(found, reference(key))
                cut[key.hex()] = (string, found)
        if not cut or _whole(skeleton, lambda hex: cut[hex][1] if hex in cut else "") != text:
            return body  # nothing to cut, or it would not read back the same
        self.found.update((bytes.fromhex(hex), string) for hex, (string, _) in cut.items())
        return skeleton.encode()

    def task(self, task: tuple[Any, ...]) -> tuple[Any, ...]:
        if not _long_task(task):
            return task
        return (*task[:6], self.text(task[6]), *task[7:])

    def text(self, text: str) -> str | bytes:
        """A text as a column of its own stores it: a long one as its hash (a BLOB)."""
        key = _key(text) if len(text) >= MIN_CHARS else None
        if key is None:
            return text
        self.found[key] = text
        return key


def keep(db: sqlite3.Connection, texts: dict[bytes, str]) -> None:
    """Write `texts` (the caller holds a transaction); those the file has already stay."""
    db.executemany("INSERT OR IGNORE INTO texts VALUES (?, ?)", texts.items())


class Texts:
    """Puts stored texts back into the rows read from one connection (each text read, checked
    against its hash and turned into its literal once)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self._texts: dict[bytes, str] = {}
        self._literals: dict[str, str] = {}

    def body(self, stored: bytes) -> str:
        """A body stored with references, whole again."""
        return _whole(stored.decode(), self._literal)

    def text(self, stored: bytes) -> str:
        """A task's text stored as a reference, whole again."""
        found = self._texts.get(stored)
        if found is None:
            found = self._texts[stored] = self._read(stored)
        return found

    def _read(self, key: bytes) -> str:
        """The text with hash `key`; a text missing or changed since it was written (its
        hash no longer its key) is damage, raised as `sqlite3.DatabaseError`."""
        found = self.db.execute("SELECT text FROM texts WHERE hash = ?", (key,)).fetchone()
        if found is None:
            raise sqlite3.DatabaseError(
                f"the text {key.hex()} a row refers to is missing from the texts table"
            )
        text = found[0]
        if type(text) is not str or _key(text) != key:
            raise sqlite3.DatabaseError(
                f"the text {key.hex()} in the texts table was changed since it was written "
                "(its content no longer has that hash)"
            )
        return text

    def _literal(self, hex: str) -> str:
        found = self._literals.get(hex)
        if found is None:
            found = self._literals[hex] = literal(self.text(bytes.fromhex(hex)))
        return found


def _whole(skeleton: str, literal_of: Callable[[str], str]) -> str:
    """`skeleton` with each reference replaced by `literal_of(its hash in hex)`."""
    return _REFS.sub(lambda ref: literal_of(ref[1]), skeleton)


def _long_strings(value: Any) -> Iterator[str]:
    """The strings of `MIN_CHARS` or more in JSON data (values, not keys)."""
    if type(value) is str:
        if len(value) >= MIN_CHARS:
            yield value
    elif type(value) is dict:
        for item in value.values():
            yield from _long_strings(item)
    elif type(value) is list:
        for item in value:
            yield from _long_strings(item)


def _may_cut(body: object) -> bool:
    """Whether a body may hold a string to keep apart: JSON text long enough, or plain fields
    with such a string (or list of strings)."""
    if type(body) is str:
        return len(body) >= MIN_CHARS
    if type(body) is not dict:
        return False
    for value in body.values():
        if type(value) is str:
            if len(value) >= MIN_CHARS:
                return True
        elif type(value) is list and any(type(v) is str and len(v) >= MIN_CHARS for v in value):
            return True
    return False


def _short_only(step: PlainStep) -> bool:
    """Whether no row of `step` may hold a string to keep apart."""
    events, messages, nodes, tasks, _ = step
    bodies = [*map(_fifth, events), *map(_fourth, nodes)]
    for write in messages:
        bodies += map(_second, write[3])
    if max(map(len, bodies), default=0) >= MIN_CHARS:  # JSON text that long (or many fields)
        return False
    if dict in set(map(type, bodies)) and any(_may_cut(b) for b in bodies if type(b) is dict):
        return False  # plain fields with a long text
    return not any(map(_long_task, tasks))


_second, _fourth, _fifth = itemgetter(1), itemgetter(3), itemgetter(4)


def _long_task(task: tuple[Any, ...]) -> bool:
    text = task[6]
    return type(text) is str and len(text) >= MIN_CHARS


def _key(text: str) -> bytes | None:
    """The text's hash; None if UTF-8 cannot encode it (a lone surrogate: such text stays in
    its row, as the journal made it)."""
    try:
        return hashlib.blake2b(text.encode(), digest_size=16).digest()
    except UnicodeEncodeError:
        return None
