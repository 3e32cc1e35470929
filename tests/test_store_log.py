"""A commit is one row of the store file's log (schema 5), settled into the tables when read,
forked or once the store is quiet; what a store returns is what it was given."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._store.sqlite import store as _store_sqlite

from .settled import settled
from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(60)

WORDS = "le rapport · 报告 · 報告書 🚀 `def f(): return 1`"


def counts(db: Path, sid: str) -> tuple[int, int]:
    """(log rows, event rows) of session `sid`, read beside the library."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        log = con.execute("SELECT count(*) FROM log WHERE session = ?", (sid,)).fetchone()[0]
        events = con.execute("SELECT count(*) FROM events WHERE session = ?", (sid,)).fetchone()
    return int(log), int(events[0])


def recorded(tmp_path: Path) -> tuple[Path, sn.Session]:
    """A file with one session's run committed (as log rows, not settled yet)."""
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send(WORDS).result()
    session.flush()
    return db, session


def dumped(session: sn.Session) -> list[dict[str, object]]:
    return [e.model_dump() for e in session.events]


def test_a_run_commits_log_rows_that_a_read_settles_into_the_tables(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send(WORDS).result()
    session.flush()
    log, events = counts(db, session.id)
    assert log >= 1 and events == 0  # durable, as one row a commit
    reopened = sn.Session.open(db, session.id, agent=BOSS)
    assert dumped(reopened) == dumped(session)
    assert counts(db, session.id) == (0, len(session.events))
    again = sn.Session.open(db, session.id, agent=BOSS)  # settled once: read as rows now
    assert dumped(again) == dumped(session)
    store.close()


def test_the_log_is_settled_once_the_store_is_quiet(tmp_path: Path) -> None:
    db, session = recorded(tmp_path)
    deadline = time.monotonic() + 10 * _store_sqlite.SETTLE_SECONDS
    while counts(db, session.id)[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counts(db, session.id) == (0, len(session.events))


def test_a_fork_and_the_sessions_list_see_commits_still_in_the_log(tmp_path: Path) -> None:
    db, session = recorded(tmp_path)
    assert counts(db, session.id)[0] >= 1
    (listed,) = sn.Session.list_stored(db)
    assert listed.last_seq == session.events[-1].seq
    middle = session.events[len(session.events) // 2].seq
    fork = session.fork(at=middle)
    assert dumped(fork) == [e for e in dumped(session) if int(e["seq"]) <= middle]  # type: ignore[call-overload]
    assert counts(db, session.id)[0] == 0


def test_a_second_writer_is_refused_when_it_commits(tmp_path: Path) -> None:
    """The log checks a commit's numbers when it is written, not when it is settled."""
    db = tmp_path / "runs.db"
    first = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    first.send("go").result()
    first.flush()
    other = sn.SQLiteStore(db)  # another connection, as another process has
    second = sn.Session.open(other, first.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    first.send("encore").result()
    first.flush()
    with pytest.raises(sn.StoreError, match="already has events with these numbers"):
        second.send("aussi").result()  # refused at its commit, which result() waits for
    reopened = sn.Session.open(db, first.id, agent=BOSS)
    assert dumped(reopened) == dumped(first)
    other.close()


def test_a_schema_4_file_is_upgraded_with_its_rows_intact(tmp_path: Path) -> None:
    db, session = recorded(tmp_path)
    session.store.close()
    with closing(sqlite3.connect(settled(db))) as con, con:
        con.execute("DROP TABLE log")
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")
    reopened = sn.Session.open(db, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert dumped(reopened) == dumped(session)
    reopened.send("et encore").result()
    reopened.flush()
    assert dumped(sn.Session.open(db, session.id, agent=BOSS)) == dumped(reopened)
    with closing(sqlite3.connect(db)) as con:
        schema = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    assert schema == (str(_store_sqlite.SCHEMA_VERSION),)
    reopened.store.close()


def test_a_read_held_up_by_another_writers_lock_says_so_not_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read settles the log, which writes: another process's write lock is reported as a
    lock (it read "the file may be damaged"), and the read works once the lock is gone."""
    monkeypatch.setattr(_store_sqlite, "SETTLE_SECONDS", 3600.0)  # left to the read
    db, session = recorded(tmp_path)
    reader = sn.SQLiteStore(db)
    reader._db.execute("PRAGMA busy_timeout=100")
    with closing(sqlite3.connect(db, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another process, writing
        with pytest.raises(sn.StoreError, match="write lock") as caught:
            reader.load(session.id)
        holder.execute("ROLLBACK")
    assert "damaged" not in str(caught.value) and "read it again" in str(caught.value)
    assert len(reader.load(session.id).events) == len(session.events)
    reader.close()
