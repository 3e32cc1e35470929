"""The SQL that writes to a store file: a step, a new session, a fork, each in one transaction.

`SQLiteStore` runs it on its own connection, on the store thread (`_store/writer.py`). Rows
arrive as plain data (tuples, not `Step` objects: the journal encodes its steps so, and the
store takes them through `commit_plain`): a step is a `PlainStep` (`_store/protocol.py`; a
plain event's JSON is made here, on the store thread). A new session is `((id, agent, created,
parent, fork_seq), events, messages, nodes, tasks)` with `messages` [(n, path, transcript,
added, removed, body)].
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from ..protocol import PlainStep
from ..text import body_text

CHECKPOINT_PAGES = 8192
BUSY_SECONDS = 30

PlainSession = tuple[tuple[Any, ...], list[Any], list[Any], list[Any], list[Any]]

_ADD_MESSAGES = "INSERT INTO messages (session, n, path, transcript, added, body)"
"""A step's new messages: `removed` is NULL (left out rather than bound: SQLite's module looks
for an adapter of each bound None)."""
_RETIRE_MESSAGES = """
UPDATE messages SET removed = ?
WHERE session = ? AND path = ? AND transcript = ? AND removed IS NULL
"""
INSERT_TASKS = (
    "INSERT INTO tasks (session, parent, agent, prompt, child, seq, status, text, settled, retired)"
)
_UPSERT_TASKS = """
ON CONFLICT (session, parent, agent, prompt) WHERE retired IS NULL DO UPDATE SET
child = excluded.child, status = excluded.status, text = excluded.text,
settled = coalesce(settled, excluded.settled)
"""
_RETIRE_TASK = """
UPDATE tasks SET retired = ?
WHERE session = ? AND parent = ? AND agent = ? AND prompt = ? AND retired IS NULL
"""


class Conflict(Exception):
    """The session id is taken, or the session already has events with these numbers."""


def tune(db: sqlite3.Connection) -> None:
    """A writing connection's settings. WAL commits survive a killed process; fsync happens
    at checkpoints, which a larger threshold makes rare (a checkpoint costs milliseconds, a
    commit microseconds). A commit waits up to `BUSY_SECONDS` for another process writing
    the same file (another kernel) before it fails and is retried with the next step."""
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA busy_timeout={BUSY_SECONDS * 1000}")
    db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
    db.execute(f"PRAGMA journal_size_limit={4096 * CHECKPOINT_PAGES}")


def write_steps(db: sqlite3.Connection, sid: str, steps: Sequence[PlainStep]) -> None:
    """Write steps in order (the caller holds a transaction); rows whose order does not
    matter share one statement. Rows are bound as the steps hold them (the session id once a
    statement, see `insert_rows`)."""
    events = [_text_body(e) if type(e[4]) is dict else e for step in steps for e in step[0]]
    if events:
        insert_events(db, sid, events)
    nodes = [node for step in steps for node in step[2]]
    if nodes:
        insert_rows(db, "INSERT OR REPLACE INTO nodes", sid, nodes)
    added: list[tuple[object, ...]] = []
    tasks: list[tuple[object, ...]] = []
    for _, messages, _, step_tasks, retired in steps:
        for path, transcript, seq, numbered, replace in messages:
            if replace:  # retires the rows added so far: write those first
                if added:
                    insert_rows(db, _ADD_MESSAGES, sid, added)
                added = []
                db.execute(_RETIRE_MESSAGES, (seq, sid, path, transcript))
            added += [(n, path, transcript, seq, body) for n, body in numbered]
        if retired:  # retires the live rows: write those first
            if tasks:
                insert_rows(db, INSERT_TASKS, sid, tasks, _UPSERT_TASKS)
            tasks = []
            db.executemany(_RETIRE_TASK, [(seq, sid, *key) for *key, seq in retired])
        tasks += step_tasks
    if tasks:
        insert_rows(db, INSERT_TASKS, sid, tasks, _UPSERT_TASKS)
    if added:
        insert_rows(db, _ADD_MESSAGES, sid, added)


def _text_body(event: tuple[Any, ...]) -> tuple[Any, ...]:
    """An event row whose body is a plain event's fields, with their JSON as its body."""
    return (*event[:4], body_text(event[4]))


def insert_session(db: sqlite3.Connection, info: tuple[Any, ...]) -> str:
    """Add the `sessions` row of a new session; its id. Raises `Conflict` if the id is taken."""
    try:
        db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)", info)
    except sqlite3.IntegrityError as exc:
        raise Conflict(
            f"a session with id {info[0]!r} already exists in this store; pass another session id"
        ) from exc
    return str(info[0])


def create_session(db: sqlite3.Connection, session: PlainSession) -> None:
    """Add a new session with its rows (the caller holds a transaction)."""
    info, events, messages, nodes, tasks = session
    sid = insert_session(db, info)
    insert_events(db, sid, events)
    insert_rows(db, "INSERT INTO messages", sid, messages)
    insert_rows(db, "INSERT OR REPLACE INTO nodes", sid, nodes)
    insert_rows(db, INSERT_TASKS, sid, tasks)


def fork_session(db: sqlite3.Connection, source: str, seq: int, info: tuple[Any, ...]) -> None:
    """Add session `info` holding `source`'s rows as they stood after event `seq` (the rows
    `SessionRows.at` keeps), copied inside the file without reading them out (the caller
    holds a transaction)."""
    sid = insert_session(db, info)
    db.execute(
        "INSERT INTO events SELECT ?, seq, run, type, path, body FROM events "
        "WHERE session = ? AND seq <= ?",
        (sid, source, seq),
    )
    db.execute(
        "INSERT INTO messages SELECT ?, n, path, transcript, added, "
        "CASE WHEN removed > ? THEN NULL ELSE removed END, body FROM messages "
        "WHERE session = ? AND added <= ?",
        (sid, seq, source, seq),
    )
    db.execute(
        "INSERT INTO nodes SELECT ?, path, part, seq, body FROM nodes "
        "WHERE session = ? AND seq <= ?",
        (sid, source, seq),
    )
    settled = "CASE WHEN settled <= ? THEN {} END"
    db.execute(
        f"{INSERT_TASKS} SELECT ?, parent, agent, prompt, child, seq, {settled.format('status')}, "
        f"{settled.format('text')}, {settled.format('settled')}, NULL FROM tasks "
        "WHERE session = ? AND seq <= ? AND (retired IS NULL OR retired > ?) ORDER BY id",
        (sid, seq, seq, seq, source, seq, seq),
    )


def insert_events(db: sqlite3.Connection, sid: str, rows: list[tuple[object, ...]]) -> None:
    try:
        insert_rows(db, "INSERT INTO events", sid, rows)
    except sqlite3.IntegrityError as exc:
        raise taken_numbers(sid) from exc


def taken_numbers(sid: str) -> Conflict:
    """The refusal of a write with event numbers the session has: another writer's."""
    return Conflict(
        f"session {sid!r} already has events with these numbers: another process (or "
        "another Session object) is writing it; keep one live Session per stored session"
    )


def insert_rows(
    db: sqlite3.Connection,
    insert: str,
    sid: str,
    rows: Sequence[tuple[object, ...]],
    then: str = "",
) -> None:
    """`insert` ("INSERT INTO table", whose first column is the session) `rows` of session
    `sid` (each row without it), many in one statement (`executemany` steps once a row), the
    session bound once a statement (`?1`). Statements take 64, 32, ... 1 rows, so that a few
    prepared ones serve every count; `then` ends each (ON CONFLICT ...)."""
    start = 0
    while start < len(rows):
        size = min(64, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start : start + size]
        statement = _multi_row(insert, len(chunk[0]), size, then)
        db.execute(statement, [sid, *chain.from_iterable(chunk)])
        start += size


@functools.lru_cache(maxsize=64)
def _multi_row(insert: str, width: int, count: int, then: str) -> str:
    """The statement of `count` rows of the session (`?1`) and `width` more values each;
    a bare `?` is numbered one past the largest before it."""
    row = "(?1" + ", ?" * width + ")"
    return f"{insert} VALUES " + ", ".join([row] * count) + then


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: committed when the block ends, rolled back if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
            db.execute("ROLLBACK")
        raise


ANOTHER_WRITER = (
    "close the other Session and open the stored one again with sn.Session.open(...) to go "
    "on from what is stored (session.flush() here would be refused again)"
)
"""What to do when another writer holds the session's numbers."""


def failure(exc: Exception, again: str = "call session.flush()") -> tuple[str, str]:
    """What went wrong, in words a person acts on, and what to do about it (`again`: how to
    try again): a full disk, a read-only file and another process's lock by name."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL":
        return f"disk full ({exc})", f"free space on its disk, then {again}"
    if name.startswith("SQLITE_READONLY"):
        return f"the file is read-only ({exc})", (
            f"make the file and its folder writable, then {again}"
        )
    if is_locked(exc):
        return f"another process held the file's write lock too long ({exc})", (
            f"{again} once the other process has finished writing"
        )
    return f"{type(exc).__name__}: {exc}", f"fix what it names, then {again}"


def is_locked(exc: Exception) -> bool:
    """Whether SQLite refused for another connection's lock (SQLITE_BUSY or SQLITE_LOCKED)."""
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
