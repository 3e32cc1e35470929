"""A store file made ready for a test's own SQL: commits kept as log rows written into the tables."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import sagents_nb as sn


def settled(db: Path | str) -> Path | str:
    """`db`, with every commit still kept as its log row written into its tables (see
    `sagents_nb/_store/sqlite/log.py`); a file without a store schema yet is left alone."""
    if not Path(db).exists():
        return db
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        try:
            if con.execute("SELECT 1 FROM log LIMIT 1").fetchone() is None:
                return db
        except sqlite3.OperationalError:  # no schema yet, or one before the log
            return db
    store = sn.SQLiteStore(db, create=False)
    try:
        store.settle()
    finally:
        store.close()
    return db
