"""A file store commits on its own connection, on the store thread: a commit that fails (the
writer's death, as the run sees it) loses nothing and is retried, a slow disk holds up no run
between the calls that return, the connection closes with its store, and sessions given one path
share one store."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._store.sqlite import store as _store_sqlite

from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(60)


def stored(session: sn.Session, db: Path | None) -> tuple[object, ...]:
    """The session as it is stored in `db` (or as it is live): events and transcripts."""
    if db is not None:
        session = sn.Session.open(db, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    return (
        [e.model_dump() for e in session.events],
        [m.model_dump() for m in session.llm_messages],
        [m.model_dump() for m in session.display_messages],
    )


def closed(db: Path, within: float = 10.0) -> bool:
    """Whether the last connection to `db` closed within `within` seconds (SQLite then
    checkpoints the WAL into the file and removes it)."""
    deadline = time.monotonic() + within
    while Path(f"{db}-wal").exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_the_connection_closes_with_its_store(tmp_path: Path) -> None:
    store = sn.SQLiteStore(tmp_path / "runs.db")
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    assert not closed(tmp_path / "runs.db", within=0)
    store.close()
    assert closed(tmp_path / "runs.db")
    with pytest.raises(sn.StoreError, match="was closed"):
        store.sessions()

    dropped = sn.SQLiteStore(tmp_path / "other.db")
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=dropped)
    session.send("go").result()
    assert not closed(tmp_path / "other.db", within=0)
    del session, dropped
    time.sleep(0.2)  # the session's last timers on the library loop let go of it
    gc.collect()  # the store's finalizer has the store thread close the connection
    assert closed(tmp_path / "other.db")


def test_a_commit_that_fails_loses_nothing_and_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()

    real = _store_sqlite.write_steps
    failed: list[str] = []

    def dies_once(con: sqlite3.Connection, sid: str, steps: Any) -> None:
        real(con, sid, steps)  # written, then the commit never happens: all rolled back
        if not failed:
            failed.append(sid)
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_store_sqlite, "write_steps", dies_once)
    run = session.send("again")
    try:
        run.result()
    except sn.StoreError as exc:  # the failed commit was the one result() waited for
        assert "disk I/O error" in str(exc)
    assert failed == [session.id]
    assert run.status == "done"  # the run itself went on in memory
    session.send("once more").result()  # the failed steps go first, once
    assert stored(session, db) == stored(session, None)
    store.close()


def test_a_slow_disk_holds_up_no_run_until_a_call_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit is blocked from a worker's first model call until the run's last one: a run
    that waited for the disk between those would never get there (the disk never frees)."""
    writing, disk, armed = threading.Event(), threading.Event(), threading.Event()
    stuck: list[str] = []
    real = _store_sqlite.write_steps

    def slow(con: sqlite3.Connection, sid: str, steps: Any) -> None:
        writing.set()
        if not disk.wait(10):  # a failure here would only be logged: note it for the test
            stuck.append("the run never finished its turns while the disk was slow")
        real(con, sid, steps)

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if armed.is_set() and "task" not in req.tools and not req.tool_results:
            assert writing.wait(10), "no step reached the store thread during the run"
        answer = boss_handler(req)
        if armed.is_set() and isinstance(answer, str) and answer.startswith("boss done"):
            disk.set()  # the last model call: the disk catches up now
        return answer

    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(handler), store=store)
    session.send("go").result()
    monkeypatch.setattr(_store_sqlite, "write_steps", slow)
    armed.set()
    assert session.send("again").result().text.startswith("boss done")
    assert not stuck
    assert writing.is_set() and disk.is_set()
    assert stored(session, db) == stored(session, None)
    store.close()


def test_sessions_given_one_path_share_its_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    second = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=str(db))
    store = first.store
    assert second.store is store
    for session in (first, second):
        session.send("go").result()
    assert {s.id for s in sn.Session.list_stored(db)} == {first.id, second.id}

    for leftover in tmp_path.glob("runs.db*"):  # a new file under the same name
        leftover.unlink()
    third = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    assert third.store is not store
    third.send("go").result()
    assert {s.id for s in sn.Session.list_stored(db)} == {third.id}
