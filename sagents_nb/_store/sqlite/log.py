"""A commit as one row (store schema 5): the `log` table, and its rows made into the tables later.

A durable run's commit used to write each event, message, node state and task as a row of its
own: for a fanout run, ~50 pages of B-trees and the JSON of every row, on the run's path. Now
a commit is one row of `log`: its steps as one msgpack blob, durable when the commit returns
(the same transaction, the same WAL). The blob's rows go into `events`, `messages`, `nodes`,
`tasks`, `streams` and `texts` (exactly as a commit wrote them before, by the same code) when
they are *settled*: before a session is read (`load`), forked or skimmed, when the store is
closed, and by the chore thread once the store has been quiet for `SETTLE_SECONDS`. Every
reader of the tables settles first, so the rows a store returns are the rows it was given (the
`Store` protocol is unchanged); a read-only file is settled in a copy in memory.

A commit with many of a stream's chunks (`text_delta` events) is written into the tables at
once, after the session's log rows: its chunks packed into `streams` rows take about their text,
where a log row would keep each chunk's fields until settled.

A log row's `form` says what its blob holds: `PACKED`, the steps as the journal packed them
(the file store takes them so, `PackedCommitStore`), or `PLAIN`, `PlainStep`s (a step that
could not be packed, or a commit through the `Store` protocol's own methods).

A commit is refused (as before) if its events or messages are not new to the session: every
event number must be after the session's last stored one, in the tables or the log, and so
must every message number (the journal numbers both in order; a second writer of the session
reuses them). The check is one query, not a write that fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import msgspec

from ..packed import unpack
from ..protocol import PackedSteps, PlainStep, Span
from .streams import TYPE, Stream, check_order, has_streams, insert_streams, pack_steps
from .texts import Cutter, keep
from .writes import Conflict, taken_numbers, write_steps

SCHEMA = """CREATE TABLE log (
    session TEXT NOT NULL, n INTEGER NOT NULL, last INTEGER NOT NULL, top INTEGER NOT NULL,
    form INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (session, n)
) WITHOUT ROWID"""
"""`n`: the commit's number in its session; `last`: its last event (0: none); `top`: its
largest message number (0: none)."""

PLAIN = 0
"""A `form`: the blob is msgpack of the commit's `PlainStep`s."""
PACKED = 1
"""A `form`: the blob is msgpack of the commit's steps as the journal packed them, a blob each
(`PackedSteps`, read back by `_store.packed.unpack`): made in C from the events and messages
themselves, their JSON made only when the row is settled."""

SETTLE_SECONDS = 0.5
"""How long a store waits with no commit before its log rows are settled (off any run)."""

SETTLE_SESSIONS = 16
"""Sessions settled in one transaction when the store is quiet (then commits may go first)."""

CHUNKS_IN_LOG = 32
"""A commit with more stream chunks than this is written into the tables at once."""

_encode = msgspec.msgpack.Encoder().encode
_Rows = list[tuple[Any, ...]]
_decode_plain = msgspec.msgpack.Decoder(list[tuple[_Rows, _Rows, _Rows, _Rows, _Rows]]).decode
_decode_blobs = msgspec.msgpack.Decoder(list[bytes]).decode

_STORED = """
SELECT (SELECT max(seq) FROM events WHERE session = ?1),
    (SELECT max(last) FROM streams WHERE session = ?1),
    (SELECT max(n) FROM messages WHERE session = ?1),
    max(n), max(last), max(top)
FROM log WHERE session = ?1
"""


def add_log_table(db: sqlite3.Connection) -> None:
    """Schema 5: a commit is one row of `log` until it is settled (rows before stay as they are)."""
    db.execute(SCHEMA)


def append(
    db: sqlite3.Connection,
    sid: str,
    steps: list[PlainStep] | PackedSteps,
    created: tuple[int, int] | None = None,
) -> None:
    """Add a commit's `steps` to session `sid`'s log, after checking that its event and
    message numbers are new (the caller holds a transaction). A commit of steps with no rows
    writes nothing. `created`: the session's record went in earlier in this transaction, with
    these last event and message numbers (0: none), and nothing else of it is stored (its id
    was new): they are checked against those, with no query."""
    if isinstance(steps, PackedSteps):
        span, form, data = steps.span, PACKED, _encode(steps.blobs)
    else:
        if not any(any(part) for step in steps for part in step):
            return
        span, form, data = _span(sid, steps), PLAIN, b""
    if created is None:
        events, streams, messages, count, logged, top = db.execute(_STORED, (sid,)).fetchone()
    else:
        (events, messages), streams, count, logged, top = created, 0, 0, 0, 0
    if span.first and span.first <= max(events or 0, streams or 0, logged or 0):
        raise taken_numbers(sid)
    if span.low and span.low <= max(messages or 0, top or 0):
        raise _taken_messages(sid)
    if span.chunks > CHUNKS_IN_LOG:  # packed into streams at once, after the log's rows
        settle(db, [sid])
        write(db, sid, _unpacked(steps.blobs) if isinstance(steps, PackedSteps) else steps)
        return
    row = (sid, (count or 0) + 1, span.last, span.top, form, data or _encode(steps))
    db.execute("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?)", row)


def _span(sid: str, steps: list[PlainStep]) -> Span:
    """The `Span` of plain steps; refuses numbers that repeat within them."""
    seqs = [e[0] for step in steps for e in step[0]]
    numbers = [n for step in steps for write in step[1] for n, _ in write[3]]
    if len(set(seqs)) != len(seqs):
        raise taken_numbers(sid)
    if len(set(numbers)) != len(numbers):
        raise _taken_messages(sid)
    chunks = sum([e[2] == TYPE for step in steps for e in step[0]])
    return Span(
        min(seqs, default=0),
        max(seqs, default=0),
        min(numbers, default=0),
        max(numbers, default=0),
        chunks,
    )


def unsettled(db: sqlite3.Connection, sid: str | None = None) -> bool:
    """Whether session `sid` (any session, if None) has log rows not settled yet."""
    if sid is None:
        return db.execute("SELECT 1 FROM log LIMIT 1").fetchone() is not None
    return db.execute("SELECT 1 FROM log WHERE session = ? LIMIT 1", (sid,)).fetchone() is not None


def waiting(db: sqlite3.Connection, limit: int) -> list[str]:
    """Up to `limit` sessions with log rows (all if `limit` is -1)."""
    return [row[0] for row in db.execute("SELECT DISTINCT session FROM log LIMIT ?", (limit,))]


def settle(db: sqlite3.Connection, sessions: Iterable[str]) -> None:
    """Write the log rows of `sessions` into the tables, in order, and drop them (the caller
    holds a transaction)."""
    for sid in sessions:
        rows = db.execute(
            "SELECT form, data FROM log WHERE session = ? ORDER BY n", (sid,)
        ).fetchall()
        if not rows:
            continue
        steps = [
            step
            for form, data in rows
            for step in (_decode_plain(data) if form == PLAIN else _unpacked(_decode_blobs(data)))
        ]
        write(db, sid, steps)
        db.execute("DELETE FROM log WHERE session = ?", (sid,))


def _taken_messages(sid: str) -> Conflict:
    return Conflict(
        f"session {sid!r} already has messages with these numbers: another process (or "
        "another Session object) is writing it; keep one live Session per stored session"
    )


def _unpacked(blobs: list[bytes]) -> list[PlainStep]:
    return [step for blob in blobs for step in unpack(blob)]


def write(db: sqlite3.Connection, sid: str, steps: list[PlainStep]) -> None:
    """Write a commit's steps as rows of the tables: their chunks packed into streams, their
    long texts kept once (the caller holds a transaction)."""
    cutter = Cutter()
    packed, streams = pack_steps(steps, cutter)
    packed = [cutter.step(step) for step in packed]
    if cutter.found:
        keep(db, cutter.found)
    _commit(db, sid, packed, streams)


def _commit(
    db: sqlite3.Connection, sid: str, steps: list[PlainStep], streams: list[Stream]
) -> None:
    """Write a commit's steps and streams (see `streams.py`): in order, if the session has any."""
    if streams or has_streams(db, sid):
        seqs = [e[0] for step in steps for e in step[0]] + [s[1] for s in streams]
        if seqs:
            check_order(db, sid, min(seqs))
        insert_streams(db, sid, streams)
    write_steps(db, sid, steps)
