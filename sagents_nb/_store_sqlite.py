"""`SQLiteStore`: the built-in store, one SQLite file in WAL mode with a versioned schema."""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ._errors import StoreError
from ._store import (
    EventRow,
    MessageRow,
    NodeRow,
    SessionRows,
    Step,
    StoredSession,
    TaskRow,
)
from ._store_writer import later

APP = "sagents_nb"
SCHEMA_VERSION = 2
SQLITE_MAGIC = b"SQLite format 3\x00"
MEMORY = ":memory:"
CHECKPOINT_PAGES = 8192

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, agent TEXT NOT NULL, created REAL NOT NULL,
    parent TEXT, fork_seq INTEGER
);
CREATE TABLE events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, run INTEGER NOT NULL, type TEXT NOT NULL,
    path TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE messages (
    session TEXT NOT NULL, n INTEGER NOT NULL, path TEXT NOT NULL, transcript TEXT NOT NULL,
    added INTEGER NOT NULL, removed INTEGER, body TEXT NOT NULL, PRIMARY KEY (session, n)
) WITHOUT ROWID;
CREATE TABLE nodes (
    session TEXT NOT NULL, path TEXT NOT NULL, part TEXT NOT NULL, seq INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (session, seq, path, part)
) WITHOUT ROWID;
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY, session TEXT NOT NULL, parent TEXT NOT NULL, agent TEXT NOT NULL,
    prompt TEXT NOT NULL, child TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT, text TEXT,
    settled INTEGER, retired INTEGER
);
CREATE INDEX tasks_key ON tasks (session, parent, agent, prompt, retired);
CREATE UNIQUE INDEX tasks_live ON tasks (session, parent, agent, prompt) WHERE retired IS NULL;
"""

Migration = Callable[[sqlite3.Connection], None]


def _live_tasks_unique(db: sqlite3.Connection) -> None:
    """Schema 2: a key has at most one live task row (schema 1 kept that by its writes), so
    that a commit writes its tasks with one INSERT ... ON CONFLICT statement."""
    db.execute(SCHEMA.split(";")[-2])


MIGRATIONS: dict[int, Migration] = {1: _live_tasks_unique}
"""`MIGRATIONS[v]` upgrades a store from schema `v` to `v + 1`; all run in one transaction."""

_RETIRE_MESSAGES = """
UPDATE messages SET removed = ?
WHERE session = ? AND path = ? AND transcript = ? AND removed IS NULL
"""
_INSERT_TASKS = (
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


class SQLiteStore:
    """Durable sessions in one SQLite file (WAL mode: a crash never corrupts it).

    Args:
        path: the file; `":memory:"` keeps the store in this process only (fork and export
            still work).
        create: make the file if it does not exist; False raises `StoreError` instead.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        new = self.path == MEMORY or _check_file(Path(self.path), create)
        self._db = self._connect(new, create)
        # Sessions hold their store in reference cycles, so the garbage collector drops it at
        # any moment; closing checkpoints and syncs the file, so it is left to the store thread.
        self._closer = weakref.finalize(self, later, self._db.close)
        self._closer.atexit = False

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # opening

    def _connect(self, new: bool, create: bool) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=5
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open {self.path} ({exc}); check that its folder exists and is writable"
            ) from exc
        try:
            # a new file has nothing to lose yet: no fsync while its schema is written
            db.execute(f"PRAGMA synchronous={'OFF' if new else 'NORMAL'}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            db.execute(f"PRAGMA journal_size_limit={4096 * CHECKPOINT_PAGES}")
            db.execute("BEGIN IMMEDIATE")
            try:
                self._prepare(db, create)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            # WAL commits survive a killed process; fsync happens at checkpoints, which a
            # larger threshold makes rare (a checkpoint costs milliseconds, a commit microseconds)
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StoreError(
                f"{self.path} is damaged or not a sagents_nb store ({exc}); restore a backup, "
                "or pass a new file name to start a new store"
            ) from exc
        except StoreError:
            db.close()
            raise
        return db

    def _prepare(self, db: sqlite3.Connection, create: bool) -> None:
        """Create the schema in an empty file, or check (and migrate) an existing one."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and create:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("app", APP), ("schema", str(SCHEMA_VERSION))]
            )
            return
        meta = dict(db.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
        if meta.get("app") != APP:
            found = ", ".join(sorted(tables)) or "none"
            raise StoreError(
                f"{self.path} is an SQLite database but not a sagents_nb store (its tables: "
                f"{found}); pass the file a session was saved to, or a new file name"
            )
        version = int(meta.get("schema", "0"))
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer sagents_nb (store schema {version}; this "
                f"version reads schema {SCHEMA_VERSION} and older); upgrade sagents_nb to open it"
            )
        missing = [v for v in range(version, SCHEMA_VERSION) if v not in MIGRATIONS]
        if missing:
            raise StoreError(
                f"{self.path} uses store schema {version} and this sagents_nb has no migration "
                f"from schema {missing[0]} to {missing[0] + 1}; open it with the sagents_nb "
                "version that wrote it and move the session with session.export_jsonl(...)"
            )
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](db)
        if version != SCHEMA_VERSION:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))

    # the Store protocol

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows in one transaction."""
        with self._lock, _transaction(self._db, self.path):
            _create(self._db, rows)

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, in one transaction."""
        with self._lock, _transaction(self._db, self.path):
            _write_steps(self._db, session_id, steps)

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record."""
        with self._reading() as db:
            found = db.execute(
                "SELECT id, agent, created, parent, fork_seq FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if found is None:
                ids = [r[0] for r in db.execute("SELECT id FROM sessions ORDER BY created, id")]
                raise StoreError(
                    f"no session {session_id!r} in {self.path} (sessions there: "
                    f"{', '.join(ids) or 'none'}); pass one of those ids"
                )
            where = (session_id,)
            events = [
                EventRow(*r)
                for r in db.execute(
                    "SELECT seq, run, type, path, body FROM events WHERE session = ? ORDER BY seq",
                    where,
                )
            ]
            messages = [
                MessageRow(*r)
                for r in db.execute(
                    "SELECT n, path, transcript, added, removed, body FROM messages "
                    "WHERE session = ? ORDER BY n",
                    where,
                )
            ]
            nodes = [
                NodeRow(*r)
                for r in db.execute(
                    "SELECT path, part, seq, body FROM nodes WHERE session = ? ORDER BY seq, path",
                    where,
                )
            ]
            tasks = [
                TaskRow(*r)
                for r in db.execute(
                    "SELECT parent, agent, prompt, child, seq, status, text, settled, retired "
                    "FROM tasks WHERE session = ? ORDER BY id",
                    where,
                )
            ]
        sid, agent, created, parent, fork_seq = found
        last = events[-1].seq if events else 0
        info = StoredSession(sid, agent, created, parent, fork_seq, last)
        return SessionRows(info, events, messages, nodes, tasks)

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT id, agent, created, parent, fork_seq, "
                "(SELECT coalesce(max(seq), 0) FROM events WHERE session = sessions.id) "
                "FROM sessions ORDER BY created, id"
            ).fetchall()
        return [StoredSession(*r) for r in rows]

    def close(self) -> None:
        """Close the connection (the file stays consistent whether or not this is called)."""
        with self._lock:
            self._closer.detach()
            self._db.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise StoreError(
                    f"reading {self.path} failed ({exc}); the file may be damaged"
                ) from exc


@contextmanager
def _transaction(db: sqlite3.Connection, path: str) -> Iterator[None]:
    """One write transaction (the caller holds the store's lock)."""
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
    except BaseException as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise StoreError(
                f"writing to {path} failed ({exc}); check the disk space and the file's permissions"
            ) from exc
        raise
    db.execute("COMMIT")


def _create(db: sqlite3.Connection, rows: SessionRows) -> None:
    info = rows.info
    try:
        db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
            (info.id, info.agent, info.created, info.parent, info.fork_seq),
        )
    except sqlite3.IntegrityError as exc:
        raise StoreError(
            f"a session with id {info.id!r} already exists in this store; pass another session id"
        ) from exc
    sid = info.id
    _insert_events(db, sid, [(sid, e.seq, e.run, e.type, e.path, e.body) for e in rows.events])
    _insert_rows(
        db,
        "INSERT INTO messages",
        [(sid, m.n, m.path, m.transcript, m.added, m.removed, m.body) for m in rows.messages],
    )
    _insert_rows(
        db,
        "INSERT OR REPLACE INTO nodes",
        [(sid, n.path, n.part, n.seq, n.body) for n in rows.nodes],
    )
    _insert_rows(db, _INSERT_TASKS, [(sid, *_task_values(t)) for t in rows.tasks])


def _insert_events(db: sqlite3.Connection, sid: str, rows: list[tuple[object, ...]]) -> None:
    try:
        _insert_rows(db, "INSERT INTO events", rows)
    except sqlite3.IntegrityError as exc:
        raise StoreError(
            f"session {sid!r} already has events with these numbers: another process (or "
            "another Session object) is writing it; keep one live Session per stored session"
        ) from exc


def _write_steps(db: sqlite3.Connection, sid: str, steps: Sequence[Step]) -> None:
    """Write steps in order; rows whose order does not matter share one statement."""
    events = [(sid, e.seq, e.run, e.type, e.path, e.body) for step in steps for e in step.events]
    if events:
        _insert_events(db, sid, events)
    nodes = [(sid, n.path, n.part, n.seq, n.body) for step in steps for n in step.nodes]
    if nodes:
        _insert_rows(db, "INSERT OR REPLACE INTO nodes", nodes)
    added: list[tuple[object, ...]] = []
    tasks: list[tuple[object, ...]] = []
    for step in steps:
        for write in step.messages:
            if write.replace:  # retires the rows added so far: write those first
                if added:
                    _insert_rows(db, "INSERT INTO messages", added)
                added = []
                db.execute(_RETIRE_MESSAGES, (write.seq, sid, write.path, write.transcript))
            added.extend(
                (sid, n, write.path, write.transcript, write.seq, None, body)
                for n, body in write.messages
            )
        if step.retired:  # retires the live rows: write those first
            if tasks:
                _insert_rows(db, _INSERT_TASKS, tasks, _UPSERT_TASKS)
            tasks = []
            db.executemany(_RETIRE_TASK, [(seq, sid, *key) for *key, seq in step.retired])
        tasks.extend((sid, *_task_values(task)) for task in step.tasks)
    if tasks:
        _insert_rows(db, _INSERT_TASKS, tasks, _UPSERT_TASKS)
    if added:
        _insert_rows(db, "INSERT INTO messages", added)


def _insert_rows(
    db: sqlite3.Connection, insert: str, rows: list[tuple[object, ...]], then: str = ""
) -> None:
    """`insert` ("INSERT INTO table") `rows`, many in one statement: `executemany` steps once a
    row, giving up the GIL and taking it back each time, and with the library loop busy on the
    other thread every row then costs both threads a hand-over. Statements take 64, 32, ... 1
    rows, so that a few prepared ones serve every count; `then` ends each (ON CONFLICT ...)."""
    start = 0
    while start < len(rows):
        size = min(64, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start : start + size]
        statement = _multi_row(insert, len(chunk[0]), size, then)
        db.execute(statement, [v for row in chunk for v in row])
        start += size


@functools.lru_cache(maxsize=64)
def _multi_row(insert: str, width: int, count: int, then: str) -> str:
    row = "(" + ", ".join("?" * width) + ")"
    return f"{insert} VALUES " + ", ".join([row] * count) + then


def _check_file(path: Path, create: bool) -> bool:
    """Whether `path` is new (missing or empty); raises `StoreError` if it cannot be a store."""
    if not path.exists():
        if create:
            folder = path.parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise StoreError(
                    f"cannot create {path}: the folder {folder} does not exist or is not "
                    "writable; create it or pick another path"
                )
            return True
        raise StoreError(
            f"no store at {path}: the file does not exist; check the path (a session is saved "
            f"with sn.Session(agent, store={str(path)!r}))"
        )
    if path.is_dir():
        raise StoreError(f"{path} is a directory; pass a file path such as {path / 'runs.db'}")
    with path.open("rb") as file:
        head = file.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not a sagents_nb store: it is not an SQLite database; pass the file a "
            "session was saved to, or a new file name"
        )
    return not head


def _task_values(task: TaskRow) -> tuple[object, ...]:
    return (
        task.parent,
        task.agent,
        task.prompt,
        task.child,
        task.seq,
        task.status,
        task.text,
        task.settled,
        task.retired,
    )
