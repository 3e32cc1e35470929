"""Processes that create the same new store file at once all succeed, and a write lock held
longer than the busy timeout is reported as a lock, never as damage."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._store.sqlite import store as sqlite_store

pytestmark = pytest.mark.timeout(240)

WORKERS = 4
ROUNDS = 5  # the race is rare here: test_a_lock_refused_at_once_... makes it every time

# Each worker waits for the start file, then opens the store (new to all of them) and runs a
# small mocked session in it; it prints its session's id.
WORKER = """
import os
import sys
import threading
import time

import sagents_nb as sn

db, start, name = sys.argv[1:4]
while not os.path.exists(start):
    time.sleep(0.001)
session = sn.Session(sn.Agent("rédacteur"), llm=sn.script(f"fini {name} 完了 ✅"), store=db)
assert session.send(f"vas-y {name}").result().text == f"fini {name} 完了 ✅"
session.flush()
print(session.id)
"""


def test_processes_creating_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    failures: list[str] = []
    for round in range(ROUNDS):
        db, start = tmp_path / f"runs-{round}.db", tmp_path / f"start-{round}"
        workers = [
            subprocess.Popen(
                [sys.executable, str(script), str(db), str(start), f"{round}-{n}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(WORKERS)
        ]
        time.sleep(0.3 if round == 0 else 0.15)  # let them import and wait at the barrier
        start.touch()
        ids = []
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            if worker.returncode:
                failures.append(f"round {round}: {err.strip().splitlines()[-1]}")
            else:
                ids.append(out.strip())
        listed = {s.id for s in sqlite_store.SQLiteStore(db, create=False).sessions()}
        assert set(ids) <= listed
    assert not failures, "\n".join(failures)


def test_a_lock_refused_at_once_while_the_file_is_new_is_waited_for(tmp_path: Path) -> None:
    """Another process writing the new file's first page: SQLite refuses this one's switch to
    WAL mode at once (SQLITE_BUSY, without waiting), as in a race of processes creating it."""
    db = tmp_path / "runs.db"
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, holder.close)
    release.start()
    try:
        store = sqlite_store.SQLiteStore(db)
    finally:
        release.join()
    session = sn.Session(sn.Agent("rédacteur"), llm=sn.script("prêt 完了"), store=store)
    session.send("go").result()
    session.flush()
    assert [s.id for s in store.sessions()] == [session.id]
    store.close()


@pytest.mark.parametrize("new", [False, True])
def test_a_lock_held_past_the_busy_timeout_is_reported_as_a_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new: bool
) -> None:
    db = tmp_path / "runs.db"
    if not new:
        sn.Session(sn.Agent("rédacteur"), llm=sn.script("prêt"), store=db).send("go").result()
    monkeypatch.setattr(sqlite_store, "BUSY_SECONDS", 0.3, raising=False)
    holder = sqlite3.connect(db, isolation_level=None)  # another process, as SQLite sees it
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN EXCLUSIVE")
    if new:  # the other process is creating the file
        holder.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    try:
        with pytest.raises(sn.StoreError) as raised:
            sqlite_store.SQLiteStore(db)
    finally:
        holder.close()
    message = str(raised.value)
    assert "another process holds the file's write lock" in message
    assert "damaged" not in message
    sqlite_store.SQLiteStore(db).close()  # once the lock is gone, the file opens
