"""`PostgresStore`: durable sessions in a PostgreSQL database, shared by every process and machine
that reaches it (psycopg 3, the `postgres` extra)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from ..._base.errors import StoreError
from ..protocol import (
    EventRow,
    MessageRow,
    NodeRow,
    SessionRows,
    Step,
    StoredSession,
    TaskRow,
)
from .conninfo import MISSING_PSYCOPG, redacted, scrubbed
from .schema import prepare
from .writes import Missing, commit_steps, create_session, fork_session, refusal

DEFAULT_SCHEMA = "sagents_nb"

_INFO = "SELECT id, agent, created, parent, fork_seq FROM sessions WHERE id = %s"
_READS = (
    "SELECT seq, run, type, path, body FROM events WHERE session = %s ORDER BY seq",
    "SELECT n, path, transcript, added, removed, body FROM messages WHERE session = %s ORDER BY n",
    "SELECT path, part, seq, body FROM nodes WHERE session = %s ORDER BY seq, path, part",
    "SELECT parent, agent, prompt, child, seq, status, text, settled, retired FROM tasks "
    "WHERE session = %s ORDER BY id",
)
_SESSIONS = """
SELECT id, agent, created, parent, fork_seq,
    coalesce((SELECT max(seq) FROM events WHERE session = sessions.id), 0)
FROM sessions ORDER BY created, id
"""


class PostgresStore:
    """Durable sessions in a PostgreSQL database: one store for a team's machines, or for the
    workers of a sweep, each process writing its own sessions.

    The tables live in a PostgreSQL schema of their own (`schema`), made by the first process
    that connects (processes that start together take turns). One connection reads and
    writes, in turns (the store thread commits, the caller's thread reads); a connection the
    server dropped is made again at the next use. Each commit is one transaction, durable as
    the server's settings make it (`synchronous_commit`). `close()` closes the connection (so
    does the store becoming garbage); a closed store refuses to be used.

    Args:
        conninfo: the database, as a URL (`postgresql://user:password@host:5432/dbname`) or
            libpq's `key=value` words; its password is never shown (`***` in reprs and errors).
        schema: the PostgreSQL schema holding the store's tables.
        create: make the tables if the schema has none; False raises `StoreError` instead.
        connect_timeout: seconds to wait for the server when connecting.

    Raises:
        ImportError: psycopg is not installed (`pip install 'sagents_nb[postgres]'`).
        StoreError: the server cannot be reached, or the schema holds something else.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        create: bool = True,
        connect_timeout: float = 10,
    ) -> None:
        self._pg = _psycopg()
        self._conninfo = conninfo
        self.schema = schema
        self.url = redacted(conninfo)
        """The database, its password shown as `***`."""
        self._password = _password(self._pg, conninfo)
        self._create = create
        self._timeout = connect_timeout
        self._lock = threading.Lock()
        self._link = _Link()
        self._closer = weakref.finalize(self, self._link.close)
        self._link.db = self._connect()

    def __repr__(self) -> str:
        shown = "" if self.schema == DEFAULT_SCHEMA else f", schema={self.schema!r}"
        return f"PostgresStore({self.url!r}{shown})"

    # connecting

    def _connect(self) -> Any:
        """A new connection, its text adapted (`text.py`) and its search path the schema."""
        from .text import adapt  # subclasses psycopg's adapters: loaded with psycopg

        try:
            db = self._pg.connect(
                self._conninfo,
                autocommit=True,
                client_encoding="utf8",
                connect_timeout=max(1, round(self._timeout)),
            )
        except self._pg.Error as exc:
            raise StoreError(
                f"cannot connect to {self.url} ({self._said(exc)}); check that the server is "
                "running and that the URL's host, port, database, user and password are right"
            ) from None
        try:
            adapt(db)
            prepare(db, self.schema, self.url, create=self._create)
        except self._pg.Error as exc:
            db.close()
            raise StoreError(
                f"cannot prepare the store in schema {self.schema!r} of {self.url} "
                f"({self._said(exc)}); check that the user may create a schema and tables there"
            ) from None
        except BaseException:
            db.close()
            raise
        return db

    def _connection(self) -> Any:
        """The open connection (a new one if the server dropped the last); `StoreError` once
        closed."""
        if not self._closer.alive:
            raise StoreError(
                f"{self!r} was closed; open the database again with "
                "sagents_nb.store.PostgresStore(url) or pass the URL as store="
            )
        db = self._link.db
        if db is None or db.closed:
            self._link.db = None
            self._link.db = db = self._connect()
        return db

    def _said(self, exc: BaseException) -> str:
        """A driver's error in words, without the password."""
        text = str(exc).strip() or type(exc).__name__
        return scrubbed(text, self._conninfo, self._password)

    # the Store protocol

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows in one transaction."""
        self._write(rows.info.id, create_session, rows)

    def fork(self, source: str, seq: int, info: StoredSession) -> None:
        """Add session `info` with `source`'s rows as of event `seq`, copied by the server."""
        self._write(info.id, fork_session, source, seq, info)

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, in one transaction."""
        self._write(session_id, commit_steps, session_id, steps)

    def _write(self, sid: str, writes: Callable[..., None], *args: Any) -> None:
        """Run `writes(db, *args)` (one transaction); a refusal or a failure as `StoreError`."""
        with self._lock:
            db = self._connection()
            try:
                writes(db, *args)
            except self._pg.errors.UniqueViolation as exc:
                raise refusal(exc, sid) from None
            except Missing as missing:
                raise self._unknown(db, str(missing), writes is commit_steps) from None
            except self._pg.OperationalError as exc:
                raise StoreError(
                    f"writing to {self.url} failed ({self._said(exc)}); check that the server "
                    "is running and reachable (the store connects again at its next use)"
                ) from None
            except (self._pg.Error, UnicodeError) as exc:
                raise StoreError(
                    f"writing to {self.url} failed ({type(exc).__name__}: {self._said(exc)}); "
                    "check the server's log, its disk space and the user's privileges"
                ) from None

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record, read in one snapshot of the database."""
        with self._reading() as db:
            with db.pipeline() as pipeline, db.transaction():
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                found = db.execute(_INFO, (session_id,))
                reads = [db.execute(query, (session_id,)) for query in _READS]
                pipeline.sync()
            info = found.fetchone()
            if info is None:
                raise self._unknown(db, session_id, commit=False)
            events, messages, nodes, tasks = (read.fetchall() for read in reads)
        sid, agent, created, parent, fork_seq = info
        return SessionRows(
            StoredSession(sid, agent, created, parent, fork_seq, events[-1][0] if events else 0),
            [EventRow(*row) for row in events],
            [MessageRow(*row) for row in messages],
            [NodeRow(*row) for row in nodes],
            [TaskRow(*row) for row in tasks],
        )

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first."""
        with self._reading() as db:
            return [StoredSession(*row) for row in db.execute(_SESSIONS).fetchall()]

    def close(self) -> None:
        """Close the connection (what was committed stays; closing twice is fine)."""
        with self._lock:
            self._closer()

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        with self._lock:
            db = self._connection()
            try:
                yield db
            except self._pg.Error as exc:
                raise StoreError(
                    f"reading {self.url} failed ({self._said(exc)}); check that the server is "
                    "running and reachable (the store connects again at its next use)"
                ) from None

    def _unknown(self, db: Any, sid: str, commit: bool) -> StoreError:
        """The error for a session id the store does not have."""
        if commit:
            return StoreError(f"no session {sid!r} in {self!r} to commit to; create it first")
        ids = [row[0] for row in db.execute("SELECT id FROM sessions ORDER BY created, id")]
        return StoreError(
            f"no session {sid!r} in {self!r} (sessions there: {', '.join(ids) or 'none'}); "
            "pass one of those ids"
        )


class _Link:
    """The store's connection, apart from the store, so that closing it needs no store."""

    db: Any = None

    def close(self) -> None:
        db, self.db = self.db, None
        if db is not None:
            db.close()


def _psycopg() -> ModuleType:
    """psycopg, or an ImportError naming the extra that installs it."""
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(MISSING_PSYCOPG) from exc
    return psycopg


def _password(pg: ModuleType, conninfo: str) -> str | None:
    """The password `conninfo` holds, to keep out of what is shown."""
    try:
        return pg.conninfo.conninfo_to_dict(conninfo).get("password")  # type: ignore[no-any-return]
    except pg.Error:
        return None


_open: weakref.WeakValueDictionary[str, PostgresStore] = weakref.WeakValueDictionary()
_opening = threading.Lock()


def open_url(url: str, *, create: bool) -> PostgresStore:
    """The store for a URL given as `store=`: sessions given the same URL share one
    `PostgresStore` (one connection) while any of them lives."""
    with _opening:
        store = _open.get(url)
        if store is None or not store._closer.alive:
            store = _open[url] = PostgresStore(url, create=create)
        return store
