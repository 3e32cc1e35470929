"""`SQLiteStore`: the built-in store, one SQLite file in WAL mode with a versioned schema."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from itertools import starmap
from pathlib import Path
from typing import Any, TypeVar

from ..._base.checks import check_bool, check_path
from ..._base.errors import StoreError
from ..protocol import (
    EventOutline,
    EventRow,
    GroupWrite,
    MessageRow,
    NodeRow,
    PackedSteps,
    PlainStep,
    SessionRows,
    Step,
    StoredSession,
    TaskRow,
)
from ..writer import later, weakly
from . import log as commit_log
from .log import SCHEMA as LOG_SCHEMA
from .log import SETTLE_SECONDS, SETTLE_SESSIONS, add_log_table
from .streams import SCHEMA as STREAMS_SCHEMA
from .streams import (
    TYPE,
    Stream,
    add_streams_table,
    chunk_count,
    fork_streams,
    insert_streams,
    load_streams,
    pack,
)
from .texts import SCHEMA as TEXTS_SCHEMA
from .texts import Cutter, Texts, add_texts_table, keep
from .writes import (
    ANOTHER_WRITER,
    BUSY_SECONDS,
    Conflict,
    PlainSession,
    create_session,
    failure,
    fork_session,
    is_locked,
    transaction,
    tune,
)

log = logging.getLogger("sagents_nb")

APP = "sagents_nb"
SCHEMA_VERSION = 5
SQLITE_MAGIC = b"SQLite format 3\x00"
MEMORY = ":memory:"

LIVE_TASKS_INDEX = (
    "CREATE UNIQUE INDEX tasks_live ON tasks (session, parent, agent, prompt) WHERE retired IS NULL"
)
"""One live row per task key (schema 2): a commit's tasks go in as one INSERT ... ON CONFLICT."""

SCHEMA = f"""
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
{LIVE_TASKS_INDEX};
{TEXTS_SCHEMA};
{STREAMS_SCHEMA};
{LOG_SCHEMA};
"""

Migration = Callable[[sqlite3.Connection], None]


def _live_tasks_unique(db: sqlite3.Connection) -> None:
    """Schema 2: a key has at most one live task row (schema 1 kept that by its writes), so
    that a commit writes its tasks with one INSERT ... ON CONFLICT statement."""
    db.execute(LIVE_TASKS_INDEX)


MIGRATIONS: dict[int, Migration] = {
    1: _live_tasks_unique,
    2: add_texts_table,
    3: add_streams_table,
    4: add_log_table,
}
"""`MIGRATIONS[v]` upgrades a store from schema `v` to `v + 1`; all run in one transaction."""


class SQLiteStore:
    """Durable sessions in one SQLite file (WAL mode: a crash never corrupts it).

    One connection reads and writes (in turns, under a lock): the journal's steps are
    committed by the store thread (`_store/writer.py`), in groups; reads run on the caller's
    thread. `close()` closes it (so does the store becoming garbage; a closed store refuses to
    be used).

    Args:
        path: the file; `":memory:"` keeps the store in this process only (fork and export
            still work).
        create: make the file if it does not exist; False raises `StoreError` instead.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        check_path("path", path, where="sn.SQLiteStore(...)")
        check_bool("create", create, where="sn.SQLiteStore(...)")
        self.path = os.fsdecode(os.fspath(path))
        self._lock = threading.Lock()
        self.read_only = False
        """The file could only be opened to read (a read-only file, folder or disk): sessions
        in it open and read; writes raise `StoreError` saying so."""
        self._schema = SCHEMA_VERSION
        """The file's store schema: this version's, or an older one on a read-only file."""
        self._streams = True
        """Whether the file has the `streams` table (a read-only file of schema 3 or older
        does not)."""
        self._log = True
        """Whether the file has the `log` table (a read-only file of schema 4 or older does
        not)."""
        self._settling = False
        """A settle of the log is scheduled on the chore thread (`_settle_when_quiet`)."""
        self._committed_at = 0.0
        self._outlines: weakref.WeakSet[EventOutline] = weakref.WeakSet()
        """Outlines of sessions opened from here whose events are not read yet (`outline`)."""
        new = self.path == MEMORY or _check_file(Path(self.path), create)
        self._db = self._connect(new)
        self._file = _identity(self.path)
        # Sessions hold their store in reference cycles, so the garbage collector drops it at
        # any moment; closing checkpoints and syncs the file, so it is left to the store thread.
        self._closer = weakref.finalize(self, later, self._db.close)
        self._closer.atexit = False

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def serves(self, path: str) -> bool:
        """Whether this store is open on the file now at `path`: not closed, not replaced,
        and still at this schema (another program may have changed it)."""
        if not (self._closer.alive and self._file is not None and self._file == _identity(path)):
            return False
        try:
            with self._lock:
                meta = dict(self._db.execute("SELECT key, value FROM meta"))
        except sqlite3.Error:
            return False
        return meta.get("app") == APP and meta.get("schema") == str(self._schema)

    # opening

    def _connect(self, new: bool) -> sqlite3.Connection:
        """The writing connection, its schema checked (or created) in one write transaction.
        Processes opening one file at once take turns: SQLite refuses some of them at once
        rather than wait (two setting up WAL mode), so those try again until `BUSY_SECONDS`
        have passed; a lock held longer is reported as a lock, never as damage."""
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            try:
                return self._connect_once(new)
            except sqlite3.OperationalError as exc:
                if not is_locked(exc):
                    raise  # _connect_once reports every other failure as a StoreError
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"cannot open {self.path}: another process holds the file's write lock "
                        f"(waited {BUSY_SECONDS} s: {exc})",
                        remedy="open it again once the other process has finished writing, or "
                        "pass another file as store=",
                    ) from exc
                time.sleep(random.uniform(0.005, 0.05))

    def _connect_once(self, new: bool) -> sqlite3.Connection:
        try:
            # the busy timeout is set before the first statement, and kept by `tune`
            db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_SECONDS
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open {self.path} ({exc}); check that its folder exists and is writable"
            ) from exc
        try:
            # a new file has nothing to lose yet: no fsync while its schema is written
            db.execute(f"PRAGMA synchronous={'OFF' if new else 'NORMAL'}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")  # the check and the creation under one write lock
            try:
                self._prepare(db)
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            tune(db)
        except sqlite3.DatabaseError as exc:
            db.close()
            if is_locked(exc):
                raise  # `_connect` waits and tries again
            if not new and _is_read_only(exc, self.path):
                return self._connect_read_only()
            raise StoreError(
                f"{self.path} is damaged or not a sagents_nb store ({exc}); restore a backup, "
                "or pass a new file name to start a new store"
            ) from exc
        except StoreError:
            db.close()
            raise
        return db

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that only reads, for a file this process may not write."""
        uri = Path(self.path).resolve().as_uri()
        try:
            try:
                db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
                db.execute("SELECT count(*) FROM sqlite_master")
            except sqlite3.OperationalError:  # WAL cannot make its -shm file: nobody writes
                db = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            self._prepare(db, read_only=True)
            if self._log and commit_log.unsettled(db):
                db = _settled_copy(db)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is read-only and could not be read ({exc}); copy it to a "
                "writable folder and open the copy"
            ) from exc
        self.read_only = True
        return db

    def _prepare(self, db: sqlite3.Connection, read_only: bool = False) -> None:
        """Create the schema in an empty file, or check (and migrate) an existing one. A
        database with no tables is empty, whether new or left so by a process killed while
        it created the store (its schema not committed yet)."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and not read_only:
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
        schema = meta.get("schema", "0")
        if not schema.isdigit():
            raise StoreError(
                f"{self.path} names its store schema {schema!r}, not a number: the file was "
                "changed by another program; restore a backup, or pass a new file name"
            )
        version = int(schema)
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
        self._schema = version
        if read_only:  # read as it is: an older schema lacks tables that would be empty
            self._streams = "streams" in tables
            self._log = "log" in tables
            return
        self._schema = SCHEMA_VERSION
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](db)
        if version != SCHEMA_VERSION:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))

    # the Store protocol

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows in one transaction."""
        cutter = Cutter()
        self._write(_create, *_packed_session(rows, cutter), texts=cutter.found)

    def fork(self, source: str, seq: int, info: StoredSession) -> None:
        """Add session `info` with `source`'s rows as of event `seq`, copied inside the file."""
        stored = (info.id, info.agent, info.created, info.parent, info.fork_seq)
        self._write(_fork, source, seq, stored, self.path)

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, in one transaction."""
        self.commit_plain(session_id, [_plain_step(step) for step in steps])

    def commit_plain(self, session_id: str, steps: list[PlainStep]) -> None:
        """`commit` for steps already as plain data (`PlainCommitStore`): the journal encodes
        its steps so, without building the `Step` rows first. The commit is one row of the
        log (see `log.py`), settled into the tables later."""
        self._write(commit_log.append, session_id, steps)
        self._committed()

    def commit_packed(self, session_id: str, steps: PackedSteps) -> None:
        """`commit` of steps the journal packed (`PackedCommitStore`), as one log row."""
        self._write(commit_log.append, session_id, steps)
        self._committed()

    def commit_group(self, writes: list[GroupWrite]) -> None:
        """Several sessions' creations and steps in one transaction (`GroupCommitStore`): the
        store thread's group commit pays one transaction where it would pay one a session."""
        cutter = Cutter()
        work: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        for rows, session_id, steps in writes:
            created = None
            if rows is not None:
                work.append((_create, _packed_session(rows, cutter)))
                created = (
                    max((e.seq for e in rows.events), default=0),
                    max((m.n for m in rows.messages), default=0),
                )
            if steps:
                work.append((commit_log.append, (session_id, steps, created)))
        if work:  # not an empty transaction for writers with nothing new
            self._write(_each, work, texts=cutter.found)
            self._committed()

    def settle(self) -> None:
        """Write every commit still kept as a log row into the tables (see `log.py`): reads
        do it for what they read, and the store itself once it has been quiet for a while;
        call this before reading the file with SQL of your own."""
        while self._settle_some(None):
            pass

    def _settle_some(self, limit: int | None) -> bool:
        """Settle the log rows of up to `limit` sessions (all if None) in one transaction;
        whether some are left."""
        with self._lock:
            self._check_open()
            if not self._log or self.read_only:
                return False
            sessions = commit_log.waiting(self._db, -1 if limit is None else limit + 1)
            self._settle(sessions[:limit])
            return limit is not None and len(sessions) > limit

    def _settle_session(self, session_id: str) -> None:
        """Before a read of `session_id` (the caller holds the lock): its log rows settled."""
        if self._log and not self.read_only and commit_log.unsettled(self._db, session_id):
            self._settle([session_id])

    def _settle(self, sessions: list[str]) -> None:
        """Settle `sessions` in one transaction (the caller holds the lock); a failure is a
        `StoreError` that names its cause (another process's lock is a lock, not damage)."""
        try:
            with transaction(self._db):
                commit_log.settle(self._db, sessions)
        except sqlite3.Error as exc:
            what, remedy = failure(exc, again="read it again")
            raise StoreError(
                f"writing {self.path}'s log into its tables failed ({what})", remedy=remedy
            ) from exc

    def _committed(self) -> None:
        """After a commit: settle the log once the store has been quiet (`SETTLE_SECONDS`)."""
        self._committed_at = time.monotonic()
        if not self._settling:
            self._settling = True
            later(weakly(self._settle_when_quiet), SETTLE_SECONDS)

    def _settle_when_quiet(self) -> None:
        """On the chore thread: settle a few sessions' log rows if no commit came for
        `SETTLE_SECONDS`, then look again (at once while rows are left); else wait longer."""
        quiet = time.monotonic() - self._committed_at
        if quiet < SETTLE_SECONDS:
            later(weakly(self._settle_when_quiet), SETTLE_SECONDS - quiet)
            return
        started = time.monotonic()
        try:
            more = self._closer.alive and self._settle_some(SETTLE_SESSIONS)
        except StoreError as exc:  # a read settles again, and says so
            log.warning("%s", exc)
            more = False
        if more:
            later(weakly(self._settle_when_quiet), 0.0)
            return
        self._settling = False
        if self._committed_at >= started:  # a commit came meanwhile
            self._committed()

    def _write(
        self, writes: Callable[..., None], *args: Any, texts: dict[bytes, str] | None = None
    ) -> None:
        """Run `writes(db, *args)` in one transaction, after the long `texts` its rows refer
        to (see `texts.py`); a refusal is a `StoreError`."""
        with self._lock:
            self._check_open()
            if self.read_only:
                raise StoreError(
                    f"{self.path} is read-only: sessions in it can be opened and read, not "
                    "written or forked into it",
                    remedy="copy the file to a writable folder, or pass another file as store=",
                )
            try:
                with transaction(self._db):
                    if texts:
                        keep(self._db, texts)
                    writes(self._db, *args)
            except Conflict as exc:
                raise StoreError(str(exc), remedy=ANOTHER_WRITER) from None
            except StoreError:
                raise
            except Exception as exc:  # e.g. sqlite3.Error: the store goes on serving
                what, remedy = failure(exc)
                raise StoreError(f"writing to {self.path} failed ({what})", remedy=remedy) from exc

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record."""
        with self._reading() as db:
            found = self._found(db, session_id)
            events = _rows(db, EventRow, _EVENTS, (session_id,))
            texts = Texts(db)  # one per load: each distinct text is read and checked once
            rows = self._rest(db, found, events, texts)
            try:
                streamed = load_streams(db, session_id, texts) if self._streams else []
            except sqlite3.DatabaseError as exc:
                raise self._damaged(session_id, exc) from exc
        if streamed:
            rows.events = sorted([*events, *(EventRow(*row) for row in streamed)], key=_seq)
            rows.info = replace(rows.info, last_seq=rows.events[-1].seq)
        return rows

    def outline(
        self, session_id: str, types: Sequence[str]
    ) -> tuple[SessionRows, EventOutline] | None:
        """`load` with only the events of `types`, and the outline of them all
        (`OutliningStore`): a pass over the events in SQL for each run's bounds, and one for
        the rows of `types`. None if a stream's chunk is of `types`, or if the seqs do not run
        1..n (then `load`)."""
        if TYPE in types:
            return None
        marks = ", ".join("?" for _ in types)
        with self._reading() as db:
            found = self._found(db, session_id)
            where = (session_id,)
            runs, count, low, top = {}, 0, None, 0
            for run, first, last, many in db.execute(_RUNS, where):
                count += many
                low = first if low is None else min(low, first)
                top = max(top, last)
                if run:
                    runs[run] = (first, last)
            if self._streams:
                for run, first, last, chunks in db.execute(_STREAM_RUNS, where):
                    count += chunk_count(chunks)
                    low = first if low is None else min(low, first)
                    top = max(top, last)
                    if run:
                        known = runs.get(run, (first, last))
                        runs[run] = (min(known[0], first), max(known[1], last))
            if count != top or (count and low != 1):
                return None
            picked = _rows(db, EventRow, _PICKED % marks, (session_id, *types))
            rows = self._rest(db, found, picked, Texts(db))
        rows.info = replace(rows.info, last_seq=top)
        outline = EventOutline(count, runs, partial(self._events_between, session_id))
        self._outlines.add(outline)
        return rows, outline

    def _found(self, db: sqlite3.Connection, session_id: str) -> tuple[Any, ...]:
        """The session's row, its log settled first; `StoreError` if there is none."""
        self._settle_session(session_id)
        found: tuple[Any, ...] | None = db.execute(
            "SELECT id, agent, created, parent, fork_seq FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        if found is None:
            raise _unknown(db, session_id, self.path)
        return found

    def _rest(
        self, db: sqlite3.Connection, found: tuple[Any, ...], events: list[EventRow], texts: Texts
    ) -> SessionRows:
        """A session's record around `events`: its messages, node rows and tasks, their long
        texts put back (the events' too)."""
        where = (found[0],)
        messages = _rows(db, MessageRow, _MESSAGES, where)
        nodes = _rows(db, NodeRow, _NODES, where)
        tasks = _rows(db, TaskRow, _TASKS, where)
        try:
            _whole(texts, events, messages, nodes, tasks)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(found[0], exc) from exc
        sid, agent, created, parent, fork_seq = found
        last = events[-1].seq if events else 0
        info = StoredSession(sid, agent, created, parent, fork_seq, last)
        return SessionRows(info, events, messages, nodes, tasks)

    def _events_between(self, session_id: str, first: int, last: int) -> list[EventRow]:
        """An outlined session's events `first`..`last` (`EventOutline.read`)."""
        with self._reading() as db:
            self._settle_session(session_id)
            events = _rows(db, EventRow, _EVENTS_BETWEEN, (session_id, first, last))
            texts = Texts(db)
            try:
                _whole(texts, events, [], [], [])
                streamed = (
                    load_streams(db, session_id, texts, (first, last)) if self._streams else []
                )
            except sqlite3.DatabaseError as exc:
                raise self._damaged(session_id, exc) from exc
        if streamed:
            events = sorted([*events, *(EventRow(*row) for row in streamed)], key=_seq)
        if len(events) != last - first + 1 or (events and events[-1].seq != last):
            raise StoreError(
                f"session {session_id!r} in {self.path} no longer holds its events {first} to "
                f"{last} as when it was opened ({len(events)} there now): another program "
                "changed it",
                remedy="open the session again (sn.Session.open)",
            )
        return events

    def _damaged(self, session_id: str, exc: Exception) -> StoreError:
        return StoreError(
            f"session {session_id!r} in {self.path} cannot be read back ({exc}): the file is "
            "damaged",
            remedy="restore the file from a backup; other sessions in it may still open",
        )

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first."""
        query = _SESSIONS if self._log else _SESSIONS_BEFORE_LOG
        with self._reading() as db:
            rows = db.execute(query if self._streams else _SESSIONS_BEFORE_STREAMS).fetchall()
        return [StoredSession(*r) for r in rows]

    def skim(self, types: Sequence[str], fields: dict[str, str]) -> dict[str, list[EventRow]]:
        """Each session's events of `types` with only `fields` in their bodies, in one query
        (`SkimmingStore`)."""
        picked = ", ".join("?, json_extract(body, ?)" for _ in fields)
        marks = ", ".join("?" for _ in types)
        query = (
            f"SELECT session, seq, run, type, path, json_object({picked}) FROM events "
            f"WHERE type IN ({marks}) ORDER BY session, seq"
        )
        values = [part for pair in fields.items() for part in pair]
        found: dict[str, list[EventRow]] = {}
        self.settle()
        with self._reading() as db:
            for session, *row in db.execute(query, [*values, *types]):
                found.setdefault(session, []).append(EventRow(*row))
        return found

    def close(self) -> None:
        """Settle the log and close the connection (the file stays consistent whether or not
        this is called; a store dropped unclosed leaves its log rows to the next reader).
        Sessions opened from it read the events they have not read yet first."""
        if self._closer.alive:
            for outline in list(self._outlines):
                try:
                    outline.keep()
                except StoreError as exc:  # told when those events are read
                    log.warning("%s", exc)
        if self._closer.alive and self._log and not self.read_only:
            try:
                self.settle()
            except StoreError as exc:  # they stay in the log, and are settled when read
                log.warning("%s", exc)
        with self._lock:
            closer = self._closer.detach()
            if closer is not None:
                closer[2][0]()

    def _check_open(self) -> None:
        """Refuse use after `close()`."""
        if not self._closer.alive:
            raise StoreError(
                f"{self!r} was closed; open the file again with sn.SQLiteStore({self.path!r}) "
                "or pass the path as store="
            )

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise StoreError(
                    f"reading {self.path} failed ({exc}); the file may be damaged"
                ) from exc


_SESSIONS = """
SELECT id, agent, created, parent, fork_seq,
    max(coalesce((SELECT max(seq) FROM events WHERE session = sessions.id), 0),
        coalesce((SELECT max(last) FROM streams WHERE session = sessions.id), 0),
        coalesce((SELECT max(last) FROM log WHERE session = sessions.id), 0))
FROM sessions ORDER BY created, id
"""
_SESSIONS_BEFORE_LOG = """
SELECT id, agent, created, parent, fork_seq,
    max(coalesce((SELECT max(seq) FROM events WHERE session = sessions.id), 0),
        coalesce((SELECT max(last) FROM streams WHERE session = sessions.id), 0))
FROM sessions ORDER BY created, id
"""
_SESSIONS_BEFORE_STREAMS = """
SELECT id, agent, created, parent, fork_seq,
    (SELECT coalesce(max(seq), 0) FROM events WHERE session = sessions.id)
FROM sessions ORDER BY created, id
"""


_open: weakref.WeakValueDictionary[str, SQLiteStore] = weakref.WeakValueDictionary()
_opening = threading.Lock()


def open_file(path: str | os.PathLike[str], *, create: bool) -> SQLiteStore:
    """The store for a file path given as `store=`: sessions given the same file share one
    `SQLiteStore` (one connection) while any of them lives, as long as the file is the one it
    opened."""
    if str(path) == MEMORY:
        return SQLiteStore(path, create=create)
    key = os.path.realpath(path)
    with _opening:
        store = _open.get(key)
        if store is None or not store.serves(key):
            store = _open[key] = SQLiteStore(path, create=create)
        return store


def _packed_session(rows: SessionRows, cutter: Cutter) -> tuple[PlainSession, list[Stream]]:
    """A new session's rows as `_create` writes them: its chunks packed into streams, its long
    texts cut out into `cutter`."""
    info, events, messages, nodes, tasks = _plain_session(rows)
    events, streams = pack(events, cutter)
    return cutter.session((info, events, messages, nodes, tasks)), streams


def _each(db: sqlite3.Connection, work: list[tuple[Callable[..., None], tuple[Any, ...]]]) -> None:
    for writes, args in work:
        writes(db, *args)


def _create(db: sqlite3.Connection, session: PlainSession, streams: list[Stream]) -> None:
    create_session(db, session)
    insert_streams(db, session[0][0], streams)


def _fork(db: sqlite3.Connection, source: str, seq: int, info: tuple[Any, ...], path: Any) -> None:
    if db.execute("SELECT 1 FROM sessions WHERE id = ?", (source,)).fetchone() is None:
        raise _unknown(db, source, path)
    commit_log.settle(db, [source])
    fork_session(db, source, seq, info)
    fork_streams(db, info[0], source, seq)


def _unknown(db: sqlite3.Connection, session_id: str, path: Any) -> StoreError:
    """The error for an id the file does not hold, naming the ids it does."""
    ids = [r[0] for r in db.execute("SELECT id FROM sessions ORDER BY created, id")]
    return StoreError(
        f"no session {session_id!r} in {path} (sessions there: "
        f"{', '.join(ids) or 'none'}); pass one of those ids"
    )


_EVENTS = "SELECT seq, run, type, path, body FROM events WHERE session = ? ORDER BY seq"
_EVENTS_BETWEEN = (
    "SELECT seq, run, type, path, body FROM events WHERE session = ? AND seq BETWEEN ? AND ? "
    "ORDER BY seq"
)
_PICKED = (
    "SELECT seq, run, type, path, body FROM events WHERE session = ? AND type IN (%s) ORDER BY seq"
)
_RUNS = "SELECT run, min(seq), max(seq), count(*) FROM events WHERE session = ? GROUP BY run"
_STREAM_RUNS = "SELECT run, first, last, chunks FROM streams WHERE session = ?"
_MESSAGES = (
    "SELECT n, path, transcript, added, removed, body FROM messages WHERE session = ? ORDER BY n"
)
_NODES = "SELECT path, part, seq, body FROM nodes WHERE session = ? ORDER BY seq, path, part"
_TASKS = (
    "SELECT parent, agent, prompt, child, seq, status, text, settled, retired "
    "FROM tasks WHERE session = ? ORDER BY id"
)

R = TypeVar("R")


def _rows(db: sqlite3.Connection, row: Callable[..., R], query: str, args: Any) -> list[R]:
    """The rows a query returns, each made by `row` (by `starmap`: no Python loop's frame
    around each of a long session's 160,000 events)."""
    return list(starmap(row, db.execute(query, args)))


def _seq(row: EventRow) -> int:
    return row.seq


def _settled_copy(db: sqlite3.Connection) -> sqlite3.Connection:
    """A read-only file's database copied into memory, its log settled there (reads see every
    commit; the file is not written)."""
    copy = sqlite3.connect(MEMORY, check_same_thread=False, isolation_level=None)
    db.backup(copy)
    db.close()
    with transaction(copy):
        commit_log.settle(copy, commit_log.waiting(copy, -1))
    return copy


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


def _whole(
    texts: Texts,
    events: list[EventRow],
    messages: list[MessageRow],
    nodes: list[NodeRow],
    tasks: list[TaskRow],
) -> None:
    """Put the long texts back into rows that refer to them (their values are BLOBs)."""
    for rows in (events, messages, nodes):
        for row in rows:
            body: str | bytes = row.body  # a BLOB reads as bytes
            if type(body) is bytes:
                row.body = texts.body(body)
    for task in tasks:
        text: str | bytes | None = task.text
        if type(text) is bytes:
            task.text = texts.text(text)


def _plain_session(rows: SessionRows) -> PlainSession:
    """A new session as `create_session` takes it: plain data (see `sqlite/writes.py`)."""
    info = rows.info
    return (
        (info.id, info.agent, info.created, info.parent, info.fork_seq),
        [(e.seq, e.run, e.type, e.path, e.body) for e in rows.events],
        [(m.n, m.path, m.transcript, m.added, m.removed, m.body) for m in rows.messages],
        [(n.path, n.part, n.seq, n.body) for n in rows.nodes],
        [t.values() for t in rows.tasks],
    )


def _plain_step(step: Step) -> PlainStep:
    """A step as `write_steps` takes it: plain data (see `sqlite/writes.py`)."""
    return (
        [(e.seq, e.run, e.type, e.path, e.body) for e in step.events],
        [(m.path, m.transcript, m.seq, m.messages, m.replace) for m in step.messages],
        [(n.path, n.part, n.seq, n.body) for n in step.nodes],
        [t.values() for t in step.tasks],
        step.retired,
    )


def _is_read_only(exc: sqlite3.DatabaseError, path: str) -> bool:
    """Whether opening to write failed because the file, its folder or its disk is read-only
    (WAL mode also writes `-wal` and `-shm` files beside it)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith("SQLITE_READONLY") or "readonly" in str(exc):
        return True
    if name != "SQLITE_CANTOPEN":
        return False
    folder = os.path.dirname(os.path.abspath(path))
    try:
        read_only_disk = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False
    return read_only_disk or not os.access(folder, os.W_OK) or not os.access(path, os.W_OK)


def _identity(path: str) -> tuple[int, int] | None:
    """The file's (device, inode), None for memory or a missing file."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino
