"""`PostgresStore`: durable sessions in a PostgreSQL database, shared by every process and machine
that reaches it (psycopg 3, the `postgres` extra)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ..._base.checks import check_str
from ..._base.errors import StoreError
from ..protocol import GroupWrite, PlainStep, SessionRows, Step, StoredSession, plain_steps
from .conninfo import MISSING_PSYCOPG, redacted
from .sql import (
    Missing,
    commit_group,
    commit_steps,
    create_session,
    fork_session,
    list_sessions,
    load_session,
)

if TYPE_CHECKING:
    from .link import Link

DEFAULT_SCHEMA = "sagents_nb"


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
        where = "sn.store.PostgresStore(...)"
        check_str("conninfo", conninfo, where=where)
        check_str("schema", schema, where=where)
        self.schema = schema
        self.url = redacted(conninfo)
        """The database, its password shown as `***`."""
        self._lock = threading.Lock()
        self._link = _link(conninfo, schema, self.url, create, connect_timeout)
        self._closer = weakref.finalize(self, self._link.close)

    def __repr__(self) -> str:
        shown = "" if self.schema == DEFAULT_SCHEMA else f", schema={self.schema!r}"
        return f"PostgresStore({self.url!r}{shown})"

    # the Store protocol

    def create(self, rows: SessionRows) -> None:
        """Add a new session with its rows in one transaction."""
        with self._using() as link:
            link.write(rows.info.id, create_session, rows)

    def fork(self, source: str, seq: int, info: StoredSession) -> None:
        """Add session `info` with `source`'s rows as of event `seq`, copied by the server."""
        with self._using() as link:
            try:
                link.write(info.id, fork_session, source, seq, info)
            except Missing:
                raise self._unknown(link, source) from None

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write steps in order, in one transaction."""
        self._commit([session_id], commit_steps, session_id, steps)

    def commit_plain(self, session_id: str, steps: list[PlainStep]) -> None:
        """`commit` of steps given as plain data (the optional `commit_plain`)."""
        self.commit(session_id, plain_steps(steps))

    def commit_group(self, writes: list[GroupWrite]) -> None:
        """Several sessions' creations and steps in one transaction (the optional
        `commit_group`): a sweep's store thread pays one round of the server for many runs."""
        # steps come packed only to a `PackedCommitStore`, which this store is not
        group = [
            (rows, sid, plain_steps(cast(list[PlainStep], steps))) for rows, sid, steps in writes
        ]
        writing = [group[0][1] if group else ""]
        self._commit(writing, commit_group, group, writing)

    def _commit(self, writing: list[str], writes: Callable[..., None], *args: Any) -> None:
        """`writes(db, *args)`; a commit to a session not there (`writing` names the one being
        written) said so."""
        with self._using() as link:
            try:
                link.write(writing, writes, *args)
            except Missing:
                raise StoreError(
                    f"no session {writing[0]!r} in {self!r} to commit to; create it first"
                ) from None

    def load(self, session_id: str) -> SessionRows:
        """The session's whole record, read in one snapshot of the database."""
        with self._using() as link:
            try:
                return link.read(lambda db: load_session(db, session_id))
            except Missing:
                raise self._unknown(link, session_id) from None

    def sessions(self) -> list[StoredSession]:
        """Every session in the store, oldest first."""
        with self._using() as link:
            return link.read(list_sessions)

    def close(self) -> None:
        """Close the connection (what was committed stays; closing twice is fine)."""
        with self._lock:
            self._closer()

    @contextmanager
    def _using(self) -> Iterator[Link]:
        """The connection, for one method at a time; `StoreError` once closed."""
        with self._lock:
            if not self._closer.alive:
                raise StoreError(
                    f"{self!r} was closed; open the database again with "
                    "sagents_nb.store.PostgresStore(url) or pass the URL as store="
                )
            yield self._link

    def _unknown(self, link: Link, sid: str) -> StoreError:
        ids = [s.id for s in link.read(list_sessions)]
        return StoreError(
            f"no session {sid!r} in {self!r} (sessions there: {', '.join(ids) or 'none'}); "
            "pass one of those ids"
        )


def _link(conninfo: str, schema: str, shown: str, create: bool, timeout: float) -> Link:
    """A connection to the store's database; an ImportError naming the extra without psycopg."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise ImportError(MISSING_PSYCOPG) from exc
    from .link import Link  # psycopg, an optional extra, loads with the first store

    return Link(conninfo, schema, shown, create=create, timeout=timeout)


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
