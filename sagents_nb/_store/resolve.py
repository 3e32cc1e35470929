"""`resolve_store`: what `store=` accepts, made into a `Store`."""

from __future__ import annotations

import os
import re
from typing import cast

from .._base.errors import StoreError
from .postgres.conninfo import is_postgres_url
from .protocol import Store, supports

ACCEPTS = (
    "store= takes a file path (a str or os.PathLike such as 'runs.db': an SQLite file, created "
    "if missing), ':memory:' (SQLite kept in this process), a postgresql:// URL (a PostgreSQL "
    "database, with the postgres extra), or a Store object (sn.SQLiteStore(path), "
    "sagents_nb.store.MemoryStore(), sagents_nb.store.PostgresStore(url), or your own class with "
    "sn.Store's methods create, commit, load, sessions and close)"
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_STORE_METHODS = ("create", "commit", "load", "sessions", "close")


def resolve_store(target: object, *, create: bool) -> Store:
    """The `Store` behind `target`: a file path (SQLite), a `postgresql://` URL or a `Store`.

    Args:
        target: what the user passed as `store=`.
        create: make the file when it does not exist (False when reopening).

    Raises:
        StoreError: `target` is none of those, or a string that cannot name a file (empty, a
            URL, a folder, text with line breaks); the error says what `store=` takes.
    """
    if not create:  # reading: what this process queued for it must be readable first
        from .writer import drain_all

        drain_all(target)
    if isinstance(target, str) and is_postgres_url(target):
        from .postgres.store import open_url

        store = open_url(target, create=create)
        if not create:
            drain_all(store)
        return store
    if isinstance(target, str | os.PathLike):
        from .sqlite.store import open_file

        return open_file(store_path(target), create=create)
    if supports(target, Store):
        return cast(Store, target)
    missing = [name for name in _STORE_METHODS if name not in dir(target)]  # for the message
    lacks = f" (it has no {', '.join(missing)})" if len(missing) < len(_STORE_METHODS) else ""
    raise StoreError(f"{ACCEPTS}; not a {type(target).__name__}{lacks}")


def store_path(target: str | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """`target` as the path of a store file (or ':memory:'); a `StoreError` if it cannot be one."""
    try:
        path = os.fsdecode(os.fspath(target))
    except TypeError as exc:  # a __fspath__ that returns neither str nor bytes
        raise StoreError(f"{ACCEPTS}; {type(target).__name__} gave no path ({exc})") from exc
    shown = repr(path) if len(path) <= 80 else repr(path[:77]) + "..."
    if not path.strip():
        raise StoreError(f"store={shown} is an empty path; {ACCEPTS}")
    if _CONTROL.search(path):
        raise StoreError(
            f"store={shown} holds line breaks or control characters, so it is text rather than "
            f"a file name; {ACCEPTS}"
        )
    url = _URL.match(path)
    if url:
        rest = path[url.end() :]
        rest = rest[1:] if rest.startswith("/") else rest  # sqlite:///runs.db names runs.db
        hint = (
            f"for SQLite pass the file's path itself, e.g. {rest or 'runs.db'!r}"
            if url.group().lower().startswith("sqlite")
            else "for another database pass a Store object that writes to it"
        )
        raise StoreError(f"store={shown} is a URL, not a file path ({hint}); {ACCEPTS}")
    if path.endswith(("/", os.sep)) or os.path.basename(path) in (".", ".."):
        raise StoreError(
            f"store={shown} names a folder; pass a file in it, e.g. "
            f"{os.path.join(path, 'runs.db')!r}; {ACCEPTS}"
        )
    return path
