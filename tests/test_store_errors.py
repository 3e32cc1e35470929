"""Clear errors for a store that cannot be used: missing, foreign, damaged, another version, a
wrong id or agent."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._store.sqlite import store as _store_sqlite

from .settled import settled
from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, sn.Session]:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    session.flush()
    return db, session


def reopen(db: Path, session_id: str = "x") -> sn.Session:
    return sn.Session.open(db, session_id, agent=BOSS, llm=sn.mock_llm(boss_handler))


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(sn.StoreError, match=r"no store at .*nope\.db: the file does not exist"):
        reopen(tmp_path / "nope.db")
    with pytest.raises(sn.StoreError, match="is a directory"):
        reopen(tmp_path)


def test_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    with pytest.raises(sn.StoreError, match="not a sagents_nb store: it is not an SQLite database"):
        reopen(notes)
    with pytest.raises(sn.StoreError, match="not an SQLite database"):
        sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=notes)


def test_an_sqlite_file_of_another_program(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    with pytest.raises(sn.StoreError, match=r"not a sagents_nb store \(its tables: invoices\)"):
        reopen(other)
    with pytest.raises(sn.StoreError, match="not a sagents_nb store"):
        sn.Session.list_stored(other)


def test_a_file_whose_creation_was_killed_reads_as_an_empty_store(tmp_path: Path) -> None:
    """Found by benchmarks/soak.py: a process killed while it created its store leaves an
    SQLite file with no tables yet (WAL mode set, the schema not committed). Writing to it
    already made it a store; reading it said "not a sagents_nb store". It reads as an empty
    store now."""
    db = tmp_path / "runs.db"
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA journal_mode=WAL")
    assert sn.Session.list_stored(db) == []
    with pytest.raises(sn.StoreError, match=r"no session 'x'"):
        reopen(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db, session_id="x")
    session.send("go").result()
    assert [s.id for s in sn.Session.list_stored(db)] == ["x"]


def test_a_wrong_session_id_lists_the_ids(saved: tuple[Path, sn.Session]) -> None:
    db, session = saved
    with pytest.raises(sn.StoreError, match=rf"no session 'nope'.*sessions there: {session.id}"):
        reopen(db, "nope")


def test_the_wrong_top_agent(saved: tuple[Path, sn.Session]) -> None:
    db, session = saved
    with pytest.raises(sn.StoreError, match="saved with top agent 'boss', not 'stranger'"):
        sn.Session.open(db, session.id, agent=sn.Agent("stranger"), llm=sn.mock_llm(boss_handler))


def set_schema(db: Path, version: int) -> None:
    with sqlite3.connect(settled(db)) as con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(version),))


def test_a_store_from_a_newer_version(saved: tuple[Path, sn.Session]) -> None:
    db, session = saved
    newer = _store_sqlite.SCHEMA_VERSION + 1
    set_schema(db, newer)
    with pytest.raises(sn.StoreError, match=rf"newer sagents_nb \(store schema {newer}; .*upgrade"):
        reopen(db, session.id)


def test_an_older_store_is_migrated_by_explicit_steps(
    saved: tuple[Path, sn.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, session = saved
    set_schema(db, 0)
    with pytest.raises(sn.StoreError, match="no migration from schema 0 to 1"):
        reopen(db, session.id)
    ran = []
    monkeypatch.setitem(_store_sqlite.MIGRATIONS, 0, lambda con: ran.append(con))
    with sqlite3.connect(settled(db)) as con:
        con.execute("DROP INDEX tasks_live")  # as schema 1 had it
        con.execute("DROP TABLE texts")  # as schemas 1 and 2 had it
        con.execute("DROP TABLE streams")  # as schemas 1 to 3 had it
        con.execute("DROP TABLE log")  # as schemas 1 to 4 had it
    assert reopen(db, session.id).id == session.id
    assert len(ran) == 1
    with sqlite3.connect(settled(db)) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (
            str(_store_sqlite.SCHEMA_VERSION),
        )
        assert con.execute("SELECT name FROM sqlite_master WHERE name = 'tasks_live'").fetchone()


def test_a_schema_1_store_opens_and_goes_on(tmp_path: Path) -> None:
    """Schema 1 lacked the unique index on live tasks; migrating adds it, and a reopened
    session with settled tasks goes on writing them."""
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    session.flush()
    with sqlite3.connect(settled(db)) as con:
        con.execute("DROP INDEX tasks_live")
        con.execute("DROP TABLE texts")
        con.execute("DROP TABLE streams")
        con.execute("DROP TABLE log")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    reopened = reopen(db, session.id)
    assert [e.model_dump() for e in reopened.events] == [e.model_dump() for e in session.events]
    reopened.send("again").result()
    reopened.flush()
    again = reopen(db, session.id)
    assert again.tree.to_dict() == reopened.tree.to_dict()
    with sqlite3.connect(settled(db)) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (
            str(_store_sqlite.SCHEMA_VERSION),
        )


def test_a_damaged_file(saved: tuple[Path, sn.Session], tmp_path: Path) -> None:
    db, session = saved
    with sqlite3.connect(settled(db)) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(bytes(data[:100]) + b"\xa5" * (len(data) - 100))
    with pytest.raises(sn.StoreError, match="damaged"):
        reopen(damaged, session.id)
    page = 4096
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(bytes(data[: 2 * page]) + b"\x00" * (len(data) - 2 * page))
    with pytest.raises(sn.StoreError, match="damaged"):
        reopen(truncated, session.id)


def test_store_takes_a_path_or_a_store(tmp_path: Path) -> None:
    with pytest.raises(sn.StoreError, match="store= takes a file path"):
        sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=42)
    store = sn.SQLiteStore(tmp_path / "runs.db")
    assert isinstance(store, sn.Store)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    assert sn.Session.open(session.store, session.id, agent=BOSS).events[-1].type == "run_finished"


def test_opening_never_creates_a_file(tmp_path: Path) -> None:
    with pytest.raises(sn.StoreError):
        sn.Session.list_stored(tmp_path / "typo.db")
    assert not (tmp_path / "typo.db").exists()


class PlainStore:
    """Another store behind the `sn.Store` protocol (here kept by an in-memory SQLite one):
    it gets `Step` rows through `commit`, not the built-in's plain data."""

    def __init__(self) -> None:
        self.inner = sn.SQLiteStore(":memory:")
        self.steps = 0

    def create(self, rows: Any) -> None:
        self.inner.create(rows)

    def commit(self, session_id: str, steps: Any) -> None:
        self.steps += len(steps)
        self.inner.commit(session_id, steps)

    def load(self, session_id: str) -> Any:
        return self.inner.load(session_id)

    def sessions(self) -> Any:
        return self.inner.sessions()

    def close(self) -> None:
        self.inner.close()


def test_another_store_behind_the_protocol(tmp_path: Path) -> None:
    store = PlainStore()
    assert isinstance(store, sn.Store)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()  # type: ignore[union-attr]
    assert store.steps > 0
    reopened = sn.Session.open(store, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert [e.model_dump() for e in reopened.events] == [e.model_dump() for e in session.events]
    assert reopened.tree.to_dict() == session.tree.to_dict()
