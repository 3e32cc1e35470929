"""The store seam: the rows a `Store` receives and returns, and the stores that come built in.

A store keeps rows, not objects. `Store.create` takes a new session's `SessionRows`,
`Store.commit` takes `Step`s (events, `MessageWrite`s, node rows, task rows, retired task
keys), `Store.load` gives back `SessionRows` and `Store.sessions` lists `StoredSession`s.
Every row is stamped with the event it follows, so `SessionRows.at(seq)` is the record as it
stood after that event (what reopening and forking read).

`MemoryStore` is the reference: the semantics every store keeps (retired rows, one live
task row per key, merged partial node states, all-or-nothing commits) in plain Python, held
to the same contract tests as `SQLiteStore`. To put sessions elsewhere, implement the five
methods of `Store` the way `MemoryStore` does and pass the object as `store=`. Five more are
optional, each named by a protocol a store satisfies by having the method: `ForkingStore`
(`fork`, a fork copied where the rows are), `PlainCommitStore` (`commit_plain`, steps taken
as plain tuples: `PlainStep` in `_store/protocol.py`), `GroupCommitStore` (`commit_group`,
several sessions' writes in one transaction), `SkimmingStore` (`skim`, a few fields of
some events of every session in one pass, which `sn.browse` lists) and `OutliningStore`
(`outline`, a session's record with only some of its events and an `EventOutline` of them
all, the others read when first looked at: what `Session.open` uses); `PostgresStore` (the
`postgres` extra) is such a store, for a database many processes and machines share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base.errors import StoreError
from ._store.memory import MemoryStore
from ._store.protocol import (
    EventOutline,
    EventRow,
    ForkingStore,
    GroupCommitStore,
    MessageRow,
    MessageWrite,
    NodeRow,
    OutliningStore,
    PlainCommitStore,
    SessionRows,
    SkimmingStore,
    Step,
    Store,
    StoredSession,
    TaskRow,
)

if TYPE_CHECKING:
    from ._store.postgres.store import PostgresStore
    from ._store.sqlite.store import SQLiteStore

__all__ = [
    "EventOutline",
    "EventRow",
    "ForkingStore",
    "GroupCommitStore",
    "MemoryStore",
    "MessageRow",
    "MessageWrite",
    "NodeRow",
    "OutliningStore",
    "PlainCommitStore",
    "PostgresStore",
    "SQLiteStore",
    "SessionRows",
    "SkimmingStore",
    "Step",
    "Store",
    "StoreError",
    "StoredSession",
    "TaskRow",
]


# Shown as sagents_nb.store.<name> in reprs, docs and tracebacks (as httpx does); Store,
# StoredSession and StoreError show as sagents_nb.<name>, where the package publishes them
# (on its first look-up of the name, so here too, for whoever comes through this module first).
for _name in set(__all__) - {
    "PostgresStore",
    "SQLiteStore",
    "Store",
    "StoreError",
    "StoredSession",
}:
    globals()[_name].__module__ = __name__
Store.__module__ = StoredSession.__module__ = "sagents_nb"
del _name


def __getattr__(name: str) -> Any:
    if name == "SQLiteStore":  # sqlite3 loads with the first durable session, not at import
        from ._store.sqlite.store import SQLiteStore

        SQLiteStore.__module__ = "sagents_nb"  # as the package shows it
        globals()[name] = SQLiteStore
        return SQLiteStore
    if name == "PostgresStore":  # psycopg (an optional extra) loads with the first store
        from ._store.postgres.store import PostgresStore

        PostgresStore.__module__ = __name__
        globals()[name] = PostgresStore
        return PostgresStore
    raise AttributeError(f"module 'sagents_nb.store' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
