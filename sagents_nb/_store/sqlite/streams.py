"""Streamed text stored as one row a stream (store schema 4), not a row a chunk.

A streamed answer arrives as many `text_delta` events of a few characters each: stored as rows
of their own, a chunk of seven characters took a row of ~160 bytes, and the answer's text was on
disk twice (the chunks, and the reply). So on the way into the file, the `text_delta` events a
node emits one after the other (no other event *of that node* between them; other nodes' events
may be) in one write are kept as one `streams` row:

- `first` and `last`: the first and last chunk's `seq`; `run`, `path`: theirs;
- `text`: the chunks joined, which is the reply's text, so a long one is stored once with the
  reply's copies (a BLOB is its hash in the `texts` table, as a task's text is, see `texts.py`);
- `chunks`: zlib-compressed little-endian 64-bit integers: the JSON's form (`FORMS`), then each
  chunk's seq, time and length (seq and time as steps from the previous chunk's; a time as its
  IEEE 754 bits, so it comes back to the bit).

Reading (`expand`) makes each chunk's row again, the row it was to the byte: a chunk is packed
only if the row made from its fields is its row (`_chunk`), so any other `text_delta` (a custom
event's extra field, other JSON) stays a row of its own. Rows a store returns are the rows it
was given (the `Store` protocol is unchanged); a fork at a chunk inside a stream takes the
stream's first part (`fork_streams`). Rows written before schema 4 read as they did.
"""

from __future__ import annotations

import json
import math
import sqlite3
import struct
import zlib
from collections.abc import Callable, Iterable
from itertools import accumulate
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from pydantic_core import to_json

from ..protocol import PlainStep
from ..text import has_surrogate
from .texts import Cutter, Texts, keep
from .writes import taken_numbers

SCHEMA = """CREATE TABLE streams (
    session TEXT NOT NULL, last INTEGER NOT NULL, first INTEGER NOT NULL, run INTEGER NOT NULL,
    path TEXT NOT NULL, chunks BLOB NOT NULL, text TEXT NOT NULL, PRIMARY KEY (session, last)
) WITHOUT ROWID"""

TYPE = "text_delta"
KEYS = ("type", "seq", "ts", "path", "run", "text")
"""A `text_delta` event's fields, in the order its row's JSON has them."""
_HEAD = '{"type":"text_delta",'
_BODY = '{"type":"text_delta","seq":%d,"ts":%r,"path":%s,"run":%d,"text":%s}'
"""A chunk's row as compact JSON (what `json` writes for its fields, in `KEYS` order)."""

FORMS: tuple[Callable[[str], str], ...] = (
    encode_basestring_ascii,  # the journal's until 2026-12-01 (`json`'s ASCII JSON)
    encode_basestring,  # an import's (`json.dumps(..., ensure_ascii=False)`); the journal's now
)
"""How a chunk's row writes its strings, by number: ASCII with escapes, or UTF-8."""
_WRITTEN = 1 << FORMS.index(encode_basestring)
"""The form of the rows the writer makes of plain fields (`body_text`: pydantic's JSON, whose
strings are `json`'s UTF-8 ones, which a test holds it to), if their time reads as `%r` does."""
_LIMIT = 1 << 63

Stream = tuple[int, int, int, str, bytes, str | bytes]
"""A `streams` row without its session: (last, first, run, path, chunks, text)."""
Chunk = tuple[Any, dict[str, Any], int]
"""An event row to pack, its fields and the JSON forms its row is (bits by number)."""


def add_streams_table(db: sqlite3.Connection) -> None:
    """Schema 4: a node's streamed chunks are kept as one row (rows written before keep theirs)."""
    db.execute(SCHEMA)


def pack(events: list[Any], cutter: Cutter) -> tuple[list[Any], list[Stream]]:
    """Split one write's events [(seq, run, type, path, body)] into the rows stored as they are
    and the streams: a node's consecutive chunks, two or more (long texts go to `cutter`)."""
    streams, packed = _streams(events, cutter)
    return [event for event in events if event[0] not in packed] if packed else events, streams


def pack_steps(steps: list[PlainStep], cutter: Cutter) -> tuple[list[PlainStep], list[Stream]]:
    """`pack` for the events of a commit's steps: the steps without their packed chunks."""
    streams, packed = _streams([event for step in steps for event in step[0]], cutter)
    if not packed:
        return steps, streams
    return [([e for e in step[0] if e[0] not in packed], *step[1:]) for step in steps], streams


def check_order(db: sqlite3.Connection, sid: str, low: int) -> None:
    """Refuse a write to a session with streams whose first event (`low`) is not after every
    stored one: it is another writer's (a chunk in a stream has no row to clash with)."""
    top = db.execute(
        "SELECT max(coalesce((SELECT max(seq) FROM events WHERE session = ?1), 0), "
        "coalesce((SELECT max(last) FROM streams WHERE session = ?1), 0))",
        (sid,),
    ).fetchone()[0]
    if low <= top:
        raise taken_numbers(sid)


def has_streams(db: sqlite3.Connection, sid: str) -> bool:
    """Whether session `sid` has a stream stored (its writes are then checked in order)."""
    found = db.execute("SELECT 1 FROM streams WHERE session = ? LIMIT 1", (sid,)).fetchone()
    return found is not None


def insert_streams(db: sqlite3.Connection, sid: str, streams: list[Stream]) -> None:
    """Add `streams` to session `sid` (the caller holds a transaction)."""
    db.executemany("INSERT INTO streams VALUES (?, ?, ?, ?, ?, ?, ?)", [(sid, *s) for s in streams])


def load_streams(
    db: sqlite3.Connection, sid: str, texts: Texts, between: tuple[int, int] | None = None
) -> list[tuple[Any, ...]]:
    """Every chunk of session `sid`'s streams (those whose seq is `between` two seqs), as
    event rows [(seq, run, type, path, body)]."""
    query = "SELECT last, first, run, path, chunks, text FROM streams WHERE session = ?"
    if between is None:
        found = db.execute(f"{query} ORDER BY last", (sid,))
        return [row for stream in found for row in expand(stream, texts)]
    first, last = between
    found = db.execute(f"{query} AND last >= ? AND first <= ? ORDER BY last", (sid, first, last))
    return [row for stream in found for row in expand(stream, texts) if first <= row[0] <= last]


def chunk_count(chunks: bytes) -> int:
    """How many chunks a stream's `chunks` value holds (its form, then three numbers each)."""
    return (len(zlib.decompress(chunks)) // 8 - 1) // 3


def expand(stream: Iterable[Any], texts: Texts) -> list[tuple[int, int, str, str, str]]:
    """A stored stream's chunks as the event rows they were: [(seq, run, type, path, body)]."""
    last, first, run, path, chunks, text = stream
    if type(text) is bytes:
        text = texts.text(text)
    raw = zlib.decompress(chunks)
    form, *values = struct.unpack(f"<{len(raw) // 8}q", raw)
    encode, count = FORMS[form], len(values) // 3
    seqs = list(accumulate(values[:count], initial=first))[1:]
    bits = accumulate(values[count : 2 * count])
    times = struct.unpack(f"<{count}d", struct.pack(f"<{count}q", *bits))
    ends = list(accumulate(values[2 * count :]))
    starts = [0, *ends[:-1]]
    where = encode(path)
    rows = [
        (seq, run, TYPE, path, _BODY % (seq, ts, where, run, encode(text[start:end])))
        for seq, ts, start, end in zip(seqs, times, starts, ends, strict=True)
    ]
    if not rows or seqs[-1] != last or ends[-1] != len(text):
        raise sqlite3.DatabaseError(f"the stream of {path!r} ending at event {last} is damaged")
    return rows


def fork_streams(db: sqlite3.Connection, sid: str, source: str, seq: int) -> None:
    """Copy `source`'s streams as of event `seq` to the fork `sid` (the caller holds a
    transaction): whole ones inside the database, and the part up to `seq` of a stream that
    goes on after it, packed again (or an event row, for a single chunk)."""
    db.execute(
        "INSERT INTO streams SELECT ?, last, first, run, path, chunks, text FROM streams "
        "WHERE session = ? AND last <= ?",
        (sid, source, seq),
    )
    cut = db.execute(
        "SELECT last, first, run, path, chunks, text FROM streams "
        "WHERE session = ? AND last > ? AND first <= ?",
        (source, seq, seq),
    ).fetchall()
    texts, cutter = Texts(db), Cutter()
    for stream in cut:
        rest, streams = pack([row for row in expand(stream, texts) if row[0] <= seq], cutter)
        keep(db, cutter.found)
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", [(sid, *r) for r in rest])
        insert_streams(db, sid, streams)


class _Run:
    """A node's chunks so far, and the JSON forms (bits by number) every one of them fits."""

    def __init__(self, chunk: Chunk) -> None:
        self.chunks = [chunk]
        self.forms = chunk[2]

    def takes(self, chunk: Chunk) -> bool:
        """Add `chunk` if it can follow: the same run, and a JSON form in common."""
        forms = self.forms & chunk[2]
        if not forms or self.chunks[-1][0][1] != chunk[0][1]:
            return False
        self.forms = forms
        self.chunks.append(chunk)
        return True


def _streams(events: list[Any], cutter: Cutter) -> tuple[list[Stream], set[int]]:
    """The streams among `events`, and the seqs of the chunks they hold."""
    chunked = [event[3] for event in events if event[2] == TYPE]
    if len(set(chunked)) == len(chunked):  # no node has two chunks: nothing to pack
        return [], set()
    open_: dict[str, _Run] = {}  # by path: its chunks since its last other event
    runs: list[_Run] = []
    for event in events:
        chunk = _chunk(event) if event[2] == TYPE else None
        current = open_.get(event[3])
        if current is not None and (chunk is None or not current.takes(chunk)):
            runs.append(open_.pop(event[3]))
            current = None
        if chunk is not None and current is None:
            open_[event[3]] = _Run(chunk)
    runs.extend(open_.values())
    packed: set[int] = set()
    streams = []
    for run in runs:
        stream = _stream(run, cutter) if len(run.chunks) > 1 else None
        if stream is not None:
            streams.append(stream)
            packed.update(event[0] for event, _, _ in run.chunks)
    return streams, packed


def _chunk(event: Any) -> Chunk | None:
    """The event as a chunk to pack, if its row is one `expand` makes from its fields."""
    seq, run, _, path, body = event
    if type(body) is str:  # a row given as JSON text (an import, a `Step`'s rows)
        if not body.startswith(_HEAD):
            return None
        fields = json.loads(body)
    elif type(body) is dict:  # a plain event's fields, which the writer makes JSON of
        fields = body
    else:
        return None
    if tuple(fields) != KEYS or fields["type"] != TYPE or fields["path"] != path:
        return None
    if type(seq) is not int or type(fields["seq"]) is not int or fields["seq"] != seq:
        return None
    if type(run) is not int or type(fields["run"]) is not int or fields["run"] != run:
        return None
    ts, text = fields["ts"], fields["text"]
    if type(ts) is not float or not math.isfinite(ts) or type(text) is not str:
        return None
    if type(body) is dict:  # `body_text`'s row: UTF-8 unless a lone surrogate makes it ASCII
        if has_surrogate(text) or has_surrogate(path) or to_json(ts).decode() != repr(ts):
            return None
        return event, fields, _WRITTEN
    forms = sum(
        1 << n
        for n, encode in enumerate(FORMS)
        if _BODY % (seq, ts, encode(path), run, encode(text)) == body
    )
    return (event, fields, forms) if forms else None


def _stream(run: _Run, cutter: Cutter) -> Stream | None:
    """One stream row for a run of chunks, or None if one cannot be stored so."""
    chunks = run.chunks
    try:
        text = "".join(fields["text"] for _, fields, _ in chunks)
        text.encode()  # a lone surrogate: SQLite's UTF-8 cannot take it
    except UnicodeEncodeError:
        return None
    seqs, times, lengths = [], [], []
    seq = first = chunks[0][0][0]
    bits = 0
    for event, fields, _ in chunks:
        seqs.append(event[0] - seq)
        seq = event[0]
        (now,) = struct.unpack("<q", struct.pack("<d", fields["ts"]))
        times.append(now - bits)
        bits = now
        lengths.append(len(fields["text"]))
    form = (run.forms & -run.forms).bit_length() - 1  # the first the chunks have in common
    values = [form, *seqs, *times, *lengths]
    if any(not -_LIMIT <= v < _LIMIT for v in values):
        return None
    packed = zlib.compress(struct.pack(f"<{len(values)}q", *values))
    return (seq, first, chunks[0][0][1], chunks[0][0][3], packed, cutter.text(text))
