"""The store's tables in their PostgreSQL schema, made once by whichever process comes first.

Every process sharing a database runs `prepare` when it connects: under a transaction-level
advisory lock of the schema's own (so two processes creating the same store at once take
turns, and neither sees half a schema), it creates the tables if the schema has none, or checks
that they are this store's and of a version it reads. Text columns sort by code point
(`COLLATE "C"`), as Python sorts the ids and paths `load` and `sessions` order by.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..._base.errors import StoreError

APP = "sagents_nb"
SCHEMA_VERSION = 1

TABLES = """
CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY, agent TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,
    parent TEXT, fork_seq BIGINT
);
CREATE TABLE events (
    session TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, run BIGINT NOT NULL,
    type TEXT NOT NULL, path TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session, seq)
);
CREATE TABLE messages (
    session TEXT COLLATE "C" NOT NULL, n BIGINT NOT NULL, path TEXT NOT NULL,
    transcript TEXT NOT NULL, added BIGINT NOT NULL, removed BIGINT, body TEXT NOT NULL,
    PRIMARY KEY (session, n)
);
CREATE INDEX messages_live ON messages (session, path, transcript) WHERE removed IS NULL;
CREATE TABLE nodes (
    session TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL,
    part TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session, seq, path, part)
);
CREATE TABLE tasks (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, session TEXT COLLATE "C" NOT NULL,
    key BYTEA NOT NULL, parent TEXT NOT NULL, agent TEXT NOT NULL, prompt TEXT NOT NULL,
    child TEXT NOT NULL, seq BIGINT NOT NULL, status TEXT, text TEXT, settled BIGINT,
    retired BIGINT
);
CREATE INDEX tasks_session ON tasks (session, id);
CREATE UNIQUE INDEX tasks_live ON tasks (session, key) WHERE retired IS NULL;
CREATE FUNCTION require_session(sid TEXT) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = sid) THEN
        RAISE EXCEPTION USING ERRCODE = 'no_data_found', MESSAGE = 'no session ' || sid;
    END IF;
END $$
"""
"""A task's `key` is the SHA-256 of its (parent, agent, prompt): one live row per key, whatever
the prompt's length (a B-tree entry holds at most about 2.7 kB). `require_session` refuses a
commit to (or a fork of) a session the store does not have, inside the commit's own statements,
so that the commit waits for no answer before its end."""


def lock_id(schema: str) -> int:
    """The advisory lock of `schema`'s store (a signed 64-bit number)."""
    digest = hashlib.sha256(f"{APP} store {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def prepare(db: Any, schema: str, shown: str, *, create: bool) -> None:
    """Make the store's tables in `schema` if it has none (`create`), else check them; the
    connection's search path is then the schema. `shown` names the database in errors."""
    where = f"schema {schema!r} of {shown}"
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id(schema),))
        encoding = db.execute("SHOW server_encoding").fetchone()[0]
        if encoding.upper() not in ("UTF8", "UTF-8"):
            raise StoreError(
                f"{shown} has the encoding {encoding}, which cannot hold every text a session "
                "keeps; create the database with ENCODING 'UTF8' and pass that one"
            )
        tables = {
            row[0]
            for row in db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        }
        quoted = '"' + schema.replace('"', '""') + '"'
        if not tables:
            if not create:
                raise StoreError(
                    f"no sagents_nb store in {where}; check the URL and the schema (a session "
                    "is saved with sn.Session(agent, store=...) first)"
                )
            db.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
            db.execute(f"SET LOCAL search_path TO {quoted}")
            db.execute(TABLES)
            db.execute(
                "INSERT INTO meta VALUES ('app', %s), ('schema', %s)", (APP, str(SCHEMA_VERSION))
            )
        else:
            _check(db, quoted, where, tables)
    db.execute(f"SET search_path TO {quoted}")


def _check(db: Any, quoted: str, where: str, tables: set[str]) -> None:
    """Refuse a schema that is not a sagents_nb store, or one of a newer version."""
    meta = (
        dict(db.execute(f"SELECT key, value FROM {quoted}.meta").fetchall())
        if "meta" in tables
        else {}
    )
    if meta.get("app") != APP:
        raise StoreError(
            f"{where} holds tables that are not a sagents_nb store ({', '.join(sorted(tables))}); "
            "pass another schema, e.g. PostgresStore(url, schema='sagents_nb_runs')"
        )
    version = meta.get("schema", "")
    if not version.isdigit():
        raise StoreError(
            f"{where} names its store schema {version!r}, not a number: it was changed by "
            "another program; restore a backup, or pass another schema"
        )
    if int(version) > SCHEMA_VERSION:
        raise StoreError(
            f"{where} was written by a newer sagents_nb (store schema {version}; this version "
            f"reads schema {SCHEMA_VERSION}); upgrade sagents_nb to open it"
        )
