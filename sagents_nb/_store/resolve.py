"""`resolve_store`: what `store=` accepts, made into a `Store`."""

from __future__ import annotations

import os

from .._base.errors import StoreError
from .protocol import Store


def resolve_store(target: object, *, create: bool) -> Store:
    """The `Store` behind `target`: a file path (SQLite), a `Store`, or a session's `.store`.

    Args:
        target: what the user passed as `store=`.
        create: make the file when it does not exist (False when reopening).
    """
    if not create:  # reading: what this process queued must be readable first
        from .writer import drain_all

        drain_all()
    if isinstance(target, str | os.PathLike):
        from .sqlite.store import open_file

        return open_file(target, create=create)
    if isinstance(target, Store):
        return target
    inner = getattr(target, "store", None)
    if isinstance(inner, Store):
        return inner
    raise StoreError(
        f"store= takes a file path (e.g. 'runs.db') or a Store such as sn.SQLiteStore(path), "
        f"not {type(target).__name__}"
    )
