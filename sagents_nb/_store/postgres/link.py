"""A `PostgresStore`'s connection: psycopg's, made on first use and again after the server
dropped it (a restart, an idle timeout), its search path the store's schema (`schema.py`). Errors come out as `StoreError`s, the password kept out of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from ..._base.errors import StoreError
from .conninfo import scrubbed
from .schema import prepare
from .sql import Missing, refusal

T = TypeVar("T")


class Link:
    """One connection, used in turns (the store holds a lock). A write or a read on a connection
    the server dropped is tried once more on a new one: a dropped connection takes its open
    transaction with it, so nothing was half written."""

    def __init__(self, conninfo: str, schema: str, shown: str, *, create: bool, timeout: float):
        self._conninfo = conninfo
        self._schema = schema
        self._shown = shown
        self._create = create
        self._timeout = max(1, round(timeout))
        try:
            password = psycopg.conninfo.conninfo_to_dict(conninfo).get("password")
        except psycopg.Error:  # malformed: connecting says so, and `redacted` hides it
            password = None
        self._password = None if password is None else str(password)
        self._db: Any = None
        self._db = self._connect()

    def write(self, sid: str | list[str], writes: Callable[..., None], *args: Any) -> None:
        """`writes(db, *args)` (one transaction); a refusal or a failure as `StoreError`, said
        of session `sid` (a one-item list: the session a group commit was writing)."""
        for retry in (False, True):
            db = self._connection()
            try:
                writes(db, *args)
                return
            except psycopg.errors.UniqueViolation as exc:
                raise refusal(exc, sid if isinstance(sid, str) else sid[0], retried=retry) from None
            except psycopg.errors.NoDataFound:  # `require_session`
                raise Missing() from None
            except psycopg.OperationalError as exc:
                if db.closed and not retry:
                    continue
                raise StoreError(
                    f"writing to {self._shown} failed ({self._said(exc)}); check that the "
                    "server is running and reachable (the store connects again at its next use)"
                ) from None
            except (psycopg.Error, UnicodeError) as exc:
                raise StoreError(
                    f"writing to {self._shown} failed ({type(exc).__name__}: {self._said(exc)}); "
                    "check the server's log, its disk space and the user's privileges"
                ) from None

    def read(self, reads: Callable[[Any], T]) -> T:
        """`reads(db)`; a failure as `StoreError`."""
        error: psycopg.Error | None = None
        for retry in (False, True):
            db = self._connection()
            try:
                return reads(db)
            except psycopg.OperationalError as exc:
                if db.closed and not retry:
                    continue
                error = exc
            except psycopg.Error as exc:
                error = exc
            raise StoreError(
                f"reading {self._shown} failed ({self._said(error)}); check that the server is "
                "running and reachable (the store connects again at its next use)"
            ) from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()

    def _connection(self) -> Any:
        if self._db is None or self._db.closed:
            self._db = None
            self._db = self._connect()
        return self._db

    def _connect(self) -> Any:
        try:
            db = psycopg.connect(
                self._conninfo,
                autocommit=True,
                client_encoding="utf8",
                connect_timeout=self._timeout,
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to {self._shown} ({self._said(exc)}); check that the server is "
                "running and that the URL's host, port, database, user and password are right"
            ) from None
        try:
            prepare(db, self._schema, self._shown, create=self._create)
        except psycopg.errors.LockNotAvailable as exc:  # the server's lock_timeout
            db.close()
            raise StoreError(
                f"another process is making or checking the store in schema {self._schema!r} of "
                f"{self._shown}, and waiting for it took longer than the server's lock_timeout "
                f"({self._said(exc)}); the store is not damaged: open it again"
            ) from None
        except psycopg.Error as exc:
            db.close()
            raise StoreError(
                f"cannot prepare the store in schema {self._schema!r} of {self._shown} "
                f"({self._said(exc)}); check that the user may create a schema and tables there"
            ) from None
        except BaseException:
            db.close()
            raise
        return db

    def _said(self, exc: BaseException) -> str:
        """A driver's error in words, without the password."""
        text = str(exc).strip() or type(exc).__name__
        return scrubbed(text, self._conninfo, self._password)
