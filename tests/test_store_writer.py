"""A file store commits on its own connection, on its store thread: a commit that fails (the
writer's death, as the run sees it) loses nothing and is retried, a slow disk holds up no run
between the calls that return, a stalled store holds up no other store, the connection closes
with its store, and sessions given one path share one store."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
import sagents_nb._runtime.journal as journal_module
from sagents_nb._base.loop import block_on, submit
from sagents_nb._store import writer
from sagents_nb._store.sqlite import log as _store_log
from sagents_nb._store.sqlite import store as _store_sqlite
from sagents_nb.store import MemoryStore

from .settled import settled
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


def test_a_finished_session_is_freed_before_its_rescue_timer_fires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store thread's rescue timer (set at a model request) holds its journal weakly: a
    session done with is collected at once, not kept alive until the timer fires (sessions
    kept that long outlive the young generations and make the oldest one's collections cost
    a store-on run ~25 µs a model turn)."""
    monkeypatch.setattr(journal_module, "RESCUE_SECONDS", 60.0)
    session = sn.Session(
        BOSS, llm=sn.mock_llm(boss_handler), store=sn.SQLiteStore(tmp_path / "r.db")
    )
    session.send("go").result()
    session.flush()
    journal = weakref.ref(session.journal)
    del session
    time.sleep(0.2)  # the session's last timers on the library loop let go of it
    gc.collect()
    assert journal() is None


def test_one_rescue_watch_looks_after_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rescue of a sealed step (for a loop a sync handler blocks) is one timer on the
    chore thread for every journal, not one armed by each run: each timer that fires wakes the
    chore thread, which takes the GIL from the busy loop (~0.1 ms of a 7 ms run, when a timer
    was armed at every run)."""
    monkeypatch.setattr(journal_module, "RESCUE_SECONDS", 0.4)
    store = sn.SQLiteStore(tmp_path / "runs.db")
    BOSS.run_sync("go", llm=sn.mock_llm(boss_handler), store=store)
    time.sleep(0.6)  # the timers armed so far have fired
    woken: list[float | None] = []
    wait = writer._chore_wake.wait

    def counted(timeout: float | None = None) -> bool:
        woken.append(timeout)
        return wait(timeout)

    monkeypatch.setattr(writer._chore_wake, "wait", counted)
    started = time.monotonic()
    for _ in range(20):
        BOSS.run_sync("go", llm=sn.mock_llm(boss_handler), store=store)
    time.sleep(0.5)  # every timer armed by a run has fired
    looks = (time.monotonic() - started) / 0.4
    assert len(woken) <= looks + 3  # with the store's settling
    store.close()


def test_a_blocked_loops_sealed_step_is_rescued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync handler that blocks the loop leaves the step sealed at its request unhanded:
    the rescue watch commits it while the loop is still blocked."""
    monkeypatch.setattr(journal_module, "RESCUE_SECONDS", 0.2)
    for name in ("QUIET_SECONDS", "MAX_DELAY_SECONDS"):
        monkeypatch.setattr(journal_module, name, 60.0)
    db = tmp_path / "runs.db"
    release = threading.Event()
    rescued: list[int] = []

    def blocking(request: sn.ChatRequest) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not rescued:
            with sqlite3.connect(db) as con:
                count = con.execute("SELECT count(*) FROM log").fetchone()[0]
            if count:
                rescued.append(count)
            time.sleep(0.02)
        release.set()
        return "done"

    store = sn.SQLiteStore(db)
    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(blocking), store=store)
    assert session.send("go").result(timeout=20).text == "done"
    assert rescued and release.is_set()
    store.close()


def test_a_commit_that_fails_loses_nothing_and_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()

    real = _store_log.append
    failed: list[str] = []

    def dies_once(con: sqlite3.Connection, sid: str, steps: Any, *created: Any) -> None:
        real(con, sid, steps, *created)  # written, then the commit never happens: all rolled back
        if not failed:
            failed.append(sid)
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_store_log, "append", dies_once)
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
    real = _store_log.append

    def slow(con: sqlite3.Connection, sid: str, steps: Any, *created: Any) -> None:
        writing.set()
        if not disk.wait(10):  # a failure here would only be logged: note it for the test
            stuck.append("the run never finished its turns while the disk was slow")
        real(con, sid, steps, *created)

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
    monkeypatch.setattr(_store_log, "append", slow)
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


class StalledDisk(MemoryStore):
    """A store whose commits hang, once `stall` is set, until `release` is."""

    def __init__(self) -> None:
        super().__init__()
        self.stall, self.stalled, self.release = (
            threading.Event(),
            threading.Event(),
            threading.Event(),
        )

    def commit(self, session_id: str, steps: Any) -> None:
        if self.stall.is_set():
            self.stalled.set()
            self.release.wait(30)
        super().commit(session_id, steps)


def committed(db: Path, session_id: str) -> bool:
    """Whether the file holds the end of the session's run (read beside the library)."""
    with sqlite3.connect(f"file:{settled(db)}?mode=ro", uri=True) as con:
        try:
            rows = con.execute("SELECT count(*) FROM events WHERE session = ?", (session_id,))
        except sqlite3.OperationalError:  # not created yet
            return False
        return rows.fetchone()[0] >= 3


def store_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("sagents_nb-store-")}


def test_a_stalled_store_holds_up_no_other_stores_commits(tmp_path: Path) -> None:
    stalled = StalledDisk()
    slow = sn.Session(sn.Agent("a"), llm=sn.script("un"), store=stalled)
    stalled.stall.set()
    cut = slow.send("bloqué")
    assert stalled.stalled.wait(10)  # its commit hangs on the store thread of that store
    db = tmp_path / "other.db"
    answers: list[str] = []

    def elsewhere() -> None:
        other = sn.Session(sn.Agent("b"), llm=sn.script("réponse ✓"), store=db)
        run = other.send("ailleurs")
        deadline = time.monotonic() + 10
        while not committed(db, other.id):  # in the background: no call here commits it
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        answers.append(run.result().text)
        (info,) = sn.Session.list_stored(db)  # reading it waits for its own commits only
        reopened = sn.Session.open(db, info.id, agent=sn.Agent("b"))
        answers.extend(m.content or "" for m in reopened.display_messages)

    thread = threading.Thread(target=elsewhere, daemon=True)
    thread.start()
    thread.join(10)
    try:
        assert answers == ["réponse ✓", "ailleurs", "réponse ✓"], "it waited for the stalled store"
    finally:
        stalled.release.set()
    assert cut.result(timeout=10).text == "un"
    slow.flush()
    assert [e.type for e in stalled.load(slow.id).events][-1] == "run_finished"


def test_a_store_thread_ends_when_its_store_has_nothing_to_commit(tmp_path: Path) -> None:
    before = store_threads()
    session = sn.Session(sn.Agent("a"), llm=sn.script("un"), store=MemoryStore())
    session.send("x").result()
    assert store_threads() - before
    deadline = time.monotonic() + 10 + writer.IDLE_SECONDS
    while store_threads() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not store_threads() - before
    assert session.send("y").result().text  # a new one starts for the next step
    session.flush()
    assert [e.type for e in session.store.load(session.id).events].count("run_finished") == 2


def held_turns(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """A new store thread takes no turn until the returned event is set."""
    go = threading.Event()
    real = writer._next_turn

    def held(lane: Any) -> Any:
        assert go.wait(20), "the test never let the store thread go"
        return real(lane)

    monkeypatch.setattr(writer, "_next_turn", held)
    return go


def ran(runs: list[sn.Run]) -> None:
    """Wait until every run has ended (without waiting for its commit) and handed its steps
    over to the store thread."""
    deadline = time.monotonic() + 20
    while not all(run.done for run in runs):
        assert time.monotonic() < deadline, "the runs did not end"
        time.sleep(0.01)
    time.sleep(writer.MAX_DELAY_SECONDS * 4)


def awaited(runs: list[sn.Run]) -> list[sn.Result | BaseException]:
    """Each run's result as `await run` gives it on the library loop (a sweep's way: the
    store thread commits; `run.result()` would commit on this thread), or what it raised."""

    async def each() -> list[sn.Result | BaseException]:
        return await asyncio.gather(*runs, return_exceptions=True)

    return block_on(submit(each()), what="the test")


def counted_transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets an item for each transaction the file store opens from now on."""
    transactions: list[int] = []
    real = _store_sqlite.transaction

    def counted(con: sqlite3.Connection) -> Any:
        transactions.append(1)
        return real(con)

    monkeypatch.setattr(_store_sqlite, "transaction", counted)
    return transactions


def test_sessions_handed_over_together_commit_in_one_transaction_and_wake_up_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store thread commits what many sessions handed over in one transaction (a sweep's
    runs), not one transaction per session, and settles their calls with one wake-up of their
    loop, not one per session (a socket write each)."""
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    sessions = [sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store) for _ in range(20)]
    transactions = counted_transactions(monkeypatch)
    wakes: list[int] = []
    settle = writer._settle

    def woken(promises: Any, error: Any) -> None:
        wakes.append(len(promises))
        settle(promises, error)

    monkeypatch.setattr(writer, "_settle", woken)
    go = held_turns(monkeypatch)
    runs = [session.send(f"tâche {i} 任务") for i, session in enumerate(sessions)]
    ran(runs)
    go.set()
    assert all(isinstance(result, sn.Result) for result in awaited(runs))
    assert len(transactions) == 1, f"{len(transactions)} transactions for 20 sessions"
    assert max(wakes) >= 20, f"wake-ups of {wakes} promises for 20 sessions"
    for session in sessions:
        assert stored(session, db) == stored(session, None)
    store.close()


def test_a_record_made_on_the_store_thread_commits_with_its_first_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new session whose record the store thread makes (a sweep's, `create_later`) is
    created in its first step's transaction, not in one of its own before it."""
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler))
    session.journal = journal_module.Journal(session, store, create_later=True)
    transactions = counted_transactions(monkeypatch)
    go = held_turns(monkeypatch)
    run = session.send("résumé « café » 東京 🚀")
    ran([run])
    go.set()
    assert isinstance(awaited([run])[0], sn.Result)
    assert len(transactions) == 1, f"{len(transactions)} transactions for one session"
    assert stored(session, db) == stored(session, None)
    store.close()


def test_a_session_refused_in_a_group_holds_up_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group that one session's rows fail is committed again session by session: the others
    are kept, the refused one's call says why, and its rows go first with its next step."""
    db = tmp_path / "runs.db"
    store = sn.SQLiteStore(db)
    sessions = [sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store) for _ in range(4)]
    refused = sessions[1].id
    real = _store_log.append
    failed: list[str] = []

    def refuses_twice(con: sqlite3.Connection, sid: str, steps: Any, *created: Any) -> None:
        if sid == refused and len(failed) < 2:  # in the group, then alone
            failed.append(sid)
            raise sqlite3.OperationalError("disk I/O error")
        real(con, sid, steps, *created)

    monkeypatch.setattr(_store_log, "append", refuses_twice)
    go = held_turns(monkeypatch)
    runs = [session.send("go ✓") for session in sessions]
    ran(runs)
    go.set()
    results = awaited(runs)
    for session, result in zip(sessions, results, strict=True):
        if session.id == refused:
            assert isinstance(result, sn.StoreError) and "disk I/O error" in str(result)
        else:
            assert isinstance(result, sn.Result)
    assert failed == [refused, refused]
    sessions[1].send("encore").result(timeout=10)
    for session in sessions:
        assert stored(session, db) == stored(session, None)
    store.close()


def test_a_sooner_chore_wakes_the_chore_thread_from_a_longer_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The chore thread sleeps until its soonest chore; one added sooner wakes it (it used to
    wait out its wait: up to `LOOK_SECONDS`, which a test had made an hour)."""
    monkeypatch.setattr(writer, "LOOK_SECONDS", 3600.0)
    ran = threading.Event()
    writer.later(lambda: None, 30.0)  # the thread now sleeps towards this one
    time.sleep(0.1)
    writer.later(ran.set, 0.05)
    assert ran.wait(5)


def test_a_stored_run_sync_writes_its_record_and_its_run_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agent.run_sync(..., store=...)` made its session's record in a transaction of its own
    before the run; it now goes in with the run's commit. A chosen id is still checked first."""
    store = sn.SQLiteStore(tmp_path / "runs.db")
    transactions = counted_transactions(monkeypatch)
    result = BOSS.run_sync("go · 行け", llm=sn.mock_llm(boss_handler), store=store)
    assert len(transactions) == 1
    (stored_session,) = store.sessions()
    assert stored_session.last_seq == result.events[-1].seq  # durable at return
    calls: list[str] = []

    def counting(req: sn.ChatRequest) -> sn.Reply | str:
        calls.append(req.agent or "")
        return boss_handler(req)

    taken = stored_session.id
    with pytest.raises(sn.StoreError, match="already exists"):
        BOSS.run_sync("go", llm=sn.mock_llm(counting), store=store, session_id=taken)
    assert calls == []  # refused before any model call
    store.close()


def test_the_store_thread_opens_no_transaction_for_runs_their_callers_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run_sync` commits its run on its own thread; the store thread's next look found those
    writers still waiting and opened an empty transaction for them, beside the next run."""
    monkeypatch.setattr(_store_sqlite, "SETTLE_SECONDS", 3600.0)  # no settle meanwhile
    store = sn.SQLiteStore(tmp_path / "runs.db")
    transactions = counted_transactions(monkeypatch)
    for i in range(3):
        BOSS.run_sync(f"go {i} · ça 行け 🚀", llm=sn.mock_llm(boss_handler), store=store)
    time.sleep(writer.LOOK_SECONDS * 4)  # the store thread looks meanwhile
    assert len(transactions) == 3
    store.close()


def test_a_new_sessions_record_waits_a_look_for_its_first_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored run's record goes in with its first commit; a look of the store thread during
    a run shorter than a look made it in a transaction of its own."""
    store = sn.SQLiteStore(tmp_path / "runs.db")
    transactions = counted_transactions(monkeypatch)
    looked: list[float] = []

    def looking(req: sn.ChatRequest) -> sn.Reply | str:
        if not looked:  # the store thread looks now, while the run goes on
            with writer._lock:
                lane = writer._lanes[id(store)]
                lane.urgent = True
                lane.wake.notify()
            looked.append(time.monotonic())
            time.sleep(0.01)
        return boss_handler(req)

    BOSS.run_sync("go · 東京 « café »", llm=sn.mock_llm(looking), store=store)
    assert looked and time.monotonic() - looked[0] < writer.LOOK_SECONDS  # a short run
    assert len(transactions) == 1
    (stored_session,) = store.sessions()
    assert stored_session.agent == BOSS.name
    store.close()


def test_a_commit_packs_and_writes_with_the_collector_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit's packing and rows are all gone when it ends: a young collection in its
    middle walked everything the run had made, for nothing (one in four of a stored fanout's)."""
    store = sn.SQLiteStore(tmp_path / "runs.db")
    real = _store_log.append
    enabled: list[bool] = []

    def noting(con: sqlite3.Connection, sid: str, steps: Any, *created: Any) -> None:
        enabled.append(gc.isenabled())
        real(con, sid, steps, *created)

    monkeypatch.setattr(_store_log, "append", noting)
    BOSS.run_sync("go · « ça » 行け 🚀", llm=sn.mock_llm(boss_handler), store=store)
    assert enabled == [False]
    assert gc.isenabled()
    store.close()


def test_no_store_thread_is_started_under_the_writers_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's start waits until it runs, and a collection in its first steps may run a
    store's finalizer, whose `later` takes the writers' lock: a store thread started under
    that lock then waited for ever (seen as a test suite's streaming tests all hanging, each
    thread started under the lock, the new one in `Event.set` running `later`)."""
    starts: list[tuple[str, bool]] = []
    start = threading.Thread.start

    def noting(thread: threading.Thread) -> None:
        if thread.name.startswith("sagents_nb-store"):
            starts.append((thread.name, writer._mutex._is_owned()))  # type: ignore[attr-defined]
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", noting)
    for n in range(3):  # each store has a lane of its own, so a thread started for it
        session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / f"{n}.db")
        assert session.send("go").result().status == "done"
        session.flush()
        session.store.close()
    assert starts and not any(held for _, held in starts), starts
