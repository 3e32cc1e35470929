"""A file store commits through a writer process of its own: it stops with its store, comes
back if killed, and a request it committed without answering is not written twice."""

from __future__ import annotations

import gc
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._store.sqlite import store as _store_sqlite

from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(60)


def writer_pid(store: sn.SQLiteStore) -> int:
    process = store._writer._process  # type: ignore[union-attr]
    assert process is not None and process.poll() is None
    return process.pid


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process `pid` ended (and was reaped) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def stored(session: sn.Session, db: Path | None) -> tuple[object, ...]:
    """The session as it is stored in `db` (or as it is live): events and transcripts."""
    if db is not None:
        session = sn.Session.open(db, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    return (
        [e.model_dump() for e in session.events],
        [m.model_dump() for m in session.llm_messages],
        [m.model_dump() for m in session.display_messages],
    )


def test_the_writer_process_stops_with_its_store(tmp_path: Path) -> None:
    store = sn.SQLiteStore(tmp_path / "runs.db")
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()
    pid = writer_pid(store)
    assert os.getsid(pid) != os.getsid(0)  # a kernel interrupt to our process group spares it
    store.close()
    assert gone(pid)

    dropped = sn.SQLiteStore(tmp_path / "other.db")
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=dropped)
    session.send("go").result()
    session.flush()
    pid = writer_pid(dropped)
    del session, dropped
    time.sleep(0.2)  # the session's last timers on the library loop let go of it
    gc.collect()  # the store's finalizer stops its writer on the store thread
    assert gone(pid)


def test_a_killed_writer_process_is_started_again_and_nothing_is_lost(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()
    killed = writer_pid(store)
    os.kill(killed, signal.SIGKILL)
    store._writer._process.wait(10)  # type: ignore[union-attr]

    session.send("again").result()
    session.flush()
    assert writer_pid(store) != killed
    assert stored(session, db) == stored(session, None)
    store.close()


def test_a_request_committed_but_not_answered_is_not_written_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()

    real = _store_sqlite.receive
    lost: list[object] = []

    def answer_lost(pipe: Any) -> Any:  # the process committed, then died before answering
        answer = real(pipe)
        if not lost:
            lost.append(answer)
            raise EOFError
        return answer

    monkeypatch.setattr(_store_sqlite, "receive", answer_lost)
    run = session.send("again")
    try:  # result() commits before it returns; the store thread may have sent it first
        run.result()
        session.flush()
    except sn.StoreError as exc:
        assert "writer process stopped" in str(exc)
    assert lost == [("ok", "")]
    session.send("once more").result()
    session.flush()  # the lost request's rows are there: only the rest is written
    assert stored(session, db) == stored(session, None)
    store.close()


def test_sessions_given_one_path_share_its_store_and_writer(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    second = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=str(db))
    store = first.store  # type: ignore[union-attr]
    assert second.store is store  # type: ignore[union-attr]
    pid = writer_pid(store)
    for session in (first, second):
        session.send("go").result()
        session.flush()  # type: ignore[union-attr]
    assert writer_pid(store) == pid
    assert {s.id for s in sn.Session.list_stored(db)} == {first.id, second.id}

    for leftover in tmp_path.glob("runs.db*"):  # a new file under the same name
        leftover.unlink()
    third = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    assert third.store is not store  # type: ignore[union-attr]
    third.send("go").result()
    assert {s.id for s in sn.Session.list_stored(db)} == {third.id}


def test_a_writer_that_cannot_serve_leaves_the_writing_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken_writer.py"
    broken.write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(_store_sqlite, "WRITER_SCRIPT", str(broken))
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()  # type: ignore[union-attr]
    assert not store._writer.available  # type: ignore[union-attr]
    assert "stopped before it answered (exit code 3); writing from this process" in caplog.text
    session.send("again").result()
    session.flush()  # type: ignore[union-attr]
    assert stored(session, db) == stored(session, None)
    store.close()
