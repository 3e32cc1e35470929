"""The SQL of a PostgreSQL store: a commit, a new session and a fork, each one transaction (the
keeping rules are `MemoryStore`'s, as `sqlite/writes.py` keeps them), and a session's load.

Each is sent as one pipeline (psycopg's): its statements, the transaction's BEGIN and COMMIT
too, go to the server together and their results come back together, so it costs one round
trip however many rows it moves; a table's rows go in as one statement, a column an array. A
refusal (a taken id, event or message number, two live task rows of one key) is psycopg's
`UniqueViolation`, which `refusal` words; the transaction is undone. `db` is a psycopg
connection (`link.py` makes it).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._base.errors import StoreError
from ..protocol import EventRow, MessageRow, NodeRow, SessionRows, Step, StoredSession, TaskRow
from .text import as_given, escaped, maybe_escaped

if TYPE_CHECKING:
    from psycopg import errors

_ARRAYS = {
    "events": "bigint, bigint, text, text, text",
    "messages": "bigint, text, text, bigint, bigint, text",
    "nodes": "text, text, bigint, text",
}
"""The columns after `session` of each table a session's rows go into many at a time."""
_PUT_NODES = " ON CONFLICT (session, seq, path, part) DO UPDATE SET body = excluded.body"
_TASK_COLUMNS = "(session, key, parent, agent, prompt, child, seq, status, text, settled, retired)"
_INSERT_TASK = f"""
INSERT INTO tasks {_TASK_COLUMNS} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"""
_PUT_TASK = f"""{_INSERT_TASK}
ON CONFLICT (session, key) WHERE retired IS NULL DO UPDATE SET
child = excluded.child, status = excluded.status, text = excluded.text,
settled = coalesce(tasks.settled, excluded.settled)
"""
_RETIRE_MESSAGES = """
UPDATE messages SET removed = %s
WHERE session = %s AND path = %s AND transcript = %s AND removed IS NULL
"""
_RETIRE_TASK = "UPDATE tasks SET retired = %s WHERE session = %s AND key = %s AND retired IS NULL"
_REQUIRE = "SELECT require_session(%s)"
"""Refuses, as psycopg's `NoDataFound`, a session the store does not have (`schema.py`)."""
_FORK = [
    "INSERT INTO events SELECT %(sid)s, seq, run, type, path, body FROM events "
    "WHERE session = %(source)s AND seq <= %(seq)s",
    "INSERT INTO messages SELECT %(sid)s, n, path, transcript, added, "
    "CASE WHEN removed > %(seq)s THEN NULL ELSE removed END, body FROM messages "
    "WHERE session = %(source)s AND added <= %(seq)s",
    "INSERT INTO nodes SELECT %(sid)s, path, part, seq, body FROM nodes "
    "WHERE session = %(source)s AND seq <= %(seq)s",
    f"INSERT INTO tasks {_TASK_COLUMNS} SELECT %(sid)s, key, parent, agent, prompt, child, seq, "
    "CASE WHEN settled <= %(seq)s THEN status END, CASE WHEN settled <= %(seq)s THEN text END, "
    "CASE WHEN settled <= %(seq)s THEN settled END, NULL FROM tasks "
    "WHERE session = %(source)s AND seq <= %(seq)s "
    "AND (retired IS NULL OR retired > %(seq)s) ORDER BY id",
]
"""The rows `SessionRows.at(seq)` keeps, copied under the new id."""

_INFO = "SELECT id, agent, created, parent, fork_seq FROM sessions WHERE id = %s"
_READS = (
    "SELECT seq, run, type, path, body FROM events WHERE session = %s ORDER BY seq",
    "SELECT n, path, transcript, added, removed, body FROM messages WHERE session = %s ORDER BY n",
    "SELECT path, part, seq, body FROM nodes WHERE session = %s ORDER BY seq, path, part",
    "SELECT parent, agent, prompt, child, seq, status, text, settled, retired FROM tasks "
    "WHERE session = %s ORDER BY id",
)
_TEXT_COLUMNS = ((2, 3), (1, 2), (0, 1), (0, 1, 2, 3, 5, 6))
"""The plain-text columns of each of `_READS`' rows (`text.py`)."""
_SESSIONS = """
SELECT id, agent, created, parent, fork_seq,
    coalesce((SELECT max(seq) FROM events WHERE session = sessions.id), 0)
FROM sessions ORDER BY created, id
"""


class Missing(Exception):
    """The session written to, forked from or read is not in the store."""


def task_key(parent: str, agent: str, prompt: str) -> bytes:
    """A task's key column: one digest for its (parent, agent, prompt)."""
    return hashlib.sha256(json.dumps([parent, agent, prompt]).encode()).digest()


def commit_steps(db: Any, sid: str, steps: Sequence[Step]) -> None:
    """Write steps in order, in one transaction; rows whose order does not matter share one
    statement, and a transcript's `replace` (or a retired task) first writes the rows gathered
    before it."""
    key = escaped(sid)
    with db.pipeline(), db.transaction(), db.cursor() as cursor:
        cursor.execute(_REQUIRE, (key,))
        _insert(cursor, "events", key, [_event(e) for step in steps for e in step.events])
        nodes = {(n.seq, n.path, n.part): n for step in steps for n in step.nodes}  # the last
        _insert(cursor, "nodes", key, [_node(n) for n in nodes.values()], _PUT_NODES)
        added: list[tuple[object, ...]] = []
        tasks: list[tuple[object, ...]] = []
        for step in steps:
            for write in step.messages:
                if write.replace:  # retires the rows added so far: write those first
                    _insert(cursor, "messages", key, added)
                    added = []
                    retire = (write.seq, key, escaped(write.path), escaped(write.transcript))
                    cursor.execute(_RETIRE_MESSAGES, retire)
                path, transcript = escaped(write.path), escaped(write.transcript)
                added += [
                    (n, path, transcript, write.seq, None, body) for n, body in write.messages
                ]
            if step.retired:  # retires the live rows: write those first
                _put_tasks(cursor, tasks)
                tasks = []
                cursor.executemany(
                    _RETIRE_TASK, [(seq, key, task_key(*task)) for *task, seq in step.retired]
                )
            tasks += [_task(key, task) for task in step.tasks]
        _put_tasks(cursor, tasks)
        _insert(cursor, "messages", key, added)


def commit_group(
    db: Any, group: list[tuple[SessionRows | None, str, list[Step]]], sid: list[str]
) -> None:
    """Each session's creation (when given) then steps, in order, in one transaction; `sid`
    holds the session being written (for a refusal's words)."""
    with db.transaction():
        for rows, session_id, steps in group:
            sid[0] = session_id
            if rows is not None:
                create_session(db, rows)
            if steps:
                commit_steps(db, session_id, steps)


def create_session(db: Any, rows: SessionRows) -> None:
    """Add a new session with its rows, kept as given, in one transaction."""
    key = escaped(rows.info.id)
    nodes = {(n.seq, n.path, n.part): n for n in rows.nodes}  # a later row replaces one
    with db.pipeline(), db.transaction(), db.cursor() as cursor:
        _insert_session(cursor, rows.info)
        _insert(cursor, "events", key, [_event(e) for e in rows.events])
        messages = [
            (m.n, escaped(m.path), escaped(m.transcript), m.added, m.removed, m.body)
            for m in rows.messages
        ]
        _insert(cursor, "messages", key, messages)
        _insert(cursor, "nodes", key, [_node(n) for n in nodes.values()])
        if rows.tasks:
            cursor.executemany(_INSERT_TASK, [_task(key, task) for task in rows.tasks])


def fork_session(db: Any, source: str, seq: int, info: StoredSession) -> None:
    """Add session `info` holding `source`'s rows as of event `seq`, copied by the server."""
    values = {"sid": escaped(info.id), "source": escaped(source), "seq": seq}
    with db.pipeline(), db.transaction(), db.cursor() as cursor:
        cursor.execute(_REQUIRE, (values["source"],))
        _insert_session(cursor, info)
        for statement in _FORK:
            cursor.execute(statement, values)


def load_session(db: Any, sid: str) -> SessionRows:
    """The session's whole record, read in one snapshot of the database."""
    key = (escaped(sid),)
    with db.pipeline(), db.transaction():  # the results come with the COMMIT's
        db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        found = db.execute(_INFO, key)
        reads = [db.execute(query, key) for query in _READS]
    info = found.fetchall()
    if not info:
        raise Missing(sid)
    events, messages, nodes, tasks = (
        as_given(read.fetchall(), columns)
        for read, columns in zip(reads, _TEXT_COLUMNS, strict=True)
    )
    ((_, agent, created, parent, fork_seq),) = as_given(info, (1, 3))
    return SessionRows(
        StoredSession(sid, agent, created, parent, fork_seq, events[-1][0] if events else 0),
        [EventRow(*row) for row in events],
        [MessageRow(*row) for row in messages],
        [NodeRow(*row) for row in nodes],
        [TaskRow(*row) for row in tasks],
    )


def list_sessions(db: Any) -> list[StoredSession]:
    """Every session, oldest first, with its last event."""
    return [StoredSession(*row) for row in as_given(db.execute(_SESSIONS).fetchall(), (0, 1, 3))]


def _insert_session(cursor: Any, info: StoredSession) -> None:
    cursor.execute(
        "INSERT INTO sessions VALUES (%s, %s, %s, %s, %s)",
        (
            escaped(info.id),
            escaped(info.agent),
            info.created,
            maybe_escaped(info.parent),
            info.fork_seq,
        ),
    )


def _event(e: EventRow) -> tuple[object, ...]:
    return (e.seq, e.run, escaped(e.type), escaped(e.path), e.body)


def _node(n: NodeRow) -> tuple[object, ...]:
    return (escaped(n.path), escaped(n.part), n.seq, n.body)


def _task(key: str, t: TaskRow) -> tuple[object, ...]:
    return (
        key,
        task_key(t.parent, t.agent, t.prompt),
        escaped(t.parent),
        escaped(t.agent),
        escaped(t.prompt),
        escaped(t.child),
        t.seq,
        maybe_escaped(t.status),
        maybe_escaped(t.text),
        t.settled,
        t.retired,
    )


def _put_tasks(cursor: Any, rows: list[tuple[object, ...]]) -> None:
    """Tasks one statement each: two of one key in a commit update the same row in turn."""
    if rows:
        cursor.executemany(_PUT_TASK, rows)


def _insert(
    cursor: Any, table: str, key: str, rows: Sequence[tuple[object, ...]], then: str = ""
) -> None:
    """Session `key`'s `rows` into `table`, all in one statement: each column as an array
    (`unnest`), so that the statement is the same whatever the count (prepared once by the
    server); `then` ends it (ON CONFLICT ...)."""
    if rows:
        columns = [list(column) for column in zip(*rows, strict=True)]
        cursor.execute(_unnest(table, then), [key, *columns])


@functools.lru_cache(maxsize=8)
def _unnest(table: str, then: str) -> str:
    arrays = ", ".join(f"%b::{kind}[]" for kind in _ARRAYS[table].split(", "))
    return f"INSERT INTO {table} SELECT %s, * FROM unnest({arrays}){then}"


def refusal(exc: errors.UniqueViolation, sid: str, *, retried: bool = False) -> StoreError:
    """What a unique constraint's violation means for the session written (`retried`: on a
    new connection, after the last one was lost while the write was sent)."""
    constraint = exc.diag.constraint_name
    if retried and constraint in ("events_pkey", "messages_pkey", "sessions_pkey"):
        return StoreError(
            f"the connection was lost while session {sid!r}'s write was sent, and its rows are "
            "in the store now: the server had committed it; reopen the session "
            "(sn.Session.open) to go on from what is stored"
        )
    if constraint == "sessions_pkey":
        return StoreError(
            f"a session with id {sid!r} already exists in this store; pass another session id"
        )
    if constraint == "tasks_live":
        return StoreError(
            f"session {sid!r} has two live task rows for one (parent, agent, prompt); a key has "
            "at most one unretired row"
        )
    rows = "messages" if constraint == "messages_pkey" else "events"
    return StoreError(
        f"session {sid!r} already has {rows} with these numbers: another process (or another "
        "Session object) is writing it; keep one live Session per stored session"
    )
