"""A session reopened from a file reads only the event rows its restore needs (`SQLiteStore.outline`:
each run's bounds in SQL, the rows `SCAN` reads); the others are read at the first look at one of
them, once, from any thread, and are the rows an eager load gives. A closed store reads them
before it closes; a session changed by another program since says so; seqs that do not run 1..n
and an interrupted run are loaded whole."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._runtime import eventlog
from sagents_nb._runtime.eventlog import UNREAD, EventLog
from sagents_nb._store.sqlite.store import SQLiteStore

from .settled import settled

pytestmark = pytest.mark.timeout(120)


@sn.tool
def note(text: str) -> str:
    """Take a note.

    Args:
        text: what to note.
    """
    return f"noté : {text} ✅"


def model(req: sn.ChatRequest) -> sn.Reply | str:
    """The chef delegates to two aides, who take a note and answer in a stream (realtime)."""
    if req.agent == "chef" and not req.tool_results:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="aide", prompt=f"cherche « {req.last_user} » 猫"),
                sn.call("task", agent="aide", prompt=f"vérifie « {req.last_user} » 東京"),
            ]
        )
    if req.agent == "aide" and not req.tool_results:
        return sn.reply(tool_calls=[sn.call("note", text="trouvé 🐈 `x = 1`")])
    answer = f"{req.agent} : {req.tool_results[-1]} — ça roule, 日本語もOK 🚀 `y = 2`\n"
    return sn.reply(answer * 20, stream=True) if req.agent == "aide" else answer


def team() -> sn.Agent:
    aide = sn.Agent("aide", does="prend des notes", tools=[note], kind=sn.kinds.Realtime())
    return sn.Agent("chef", team=[aide], kind=sn.kinds.Worker())


def dumped(events: Any) -> list[dict[str, Any]]:
    return [e.model_dump() for e in events]


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, sn.Session]:
    db = tmp_path / "runs.db"
    session = sn.Session(team(), llm=sn.mock_llm(model), store=db)
    session.send("les chats").result()
    session.send("les trains 🚄").result()
    session.store.close()
    return db, session


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (first, last) seqs of each read of an outlined session's rows."""
    counted: list[tuple[int, int]] = []
    read = SQLiteStore._events_between

    def counting(self: SQLiteStore, session_id: str, first: int, last: int) -> list[Any]:
        rows = read(self, session_id, first, last)
        assert [row.seq for row in rows] == list(range(first, last + 1))
        counted.append((first, last))
        return rows

    monkeypatch.setattr(SQLiteStore, "_events_between", counting)
    return counted


def unread(log: EventLog) -> int:
    return sum(item is UNREAD for item in log._items)


def test_a_reopened_session_reads_its_events_at_the_first_look(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]]
) -> None:
    db, live = stored
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM streams").fetchone()[0] > 0  # chunks packed
    reopened = sn.Session.open(db, live.id, agent=team())
    log = reopened.events
    assert isinstance(log, EventLog) and len(log) == len(live.events)
    assert 0 < unread(log) < len(log) and reads == []
    assert reopened.tree == live.tree
    assert [r.result().text for r in reopened.runs] == [r.result().text for r in live.runs]
    assert dumped(reopened.runs[0].events) == dumped(live.runs[0].events)
    assert reads == [(1, len(live.events))] and unread(log) == 0
    assert dumped(log) == dumped(live.events)
    assert reads == [(1, len(live.events))]  # once
    reopened.store.close()


def test_an_outlined_restore_is_the_eager_ones(
    stored: tuple[Path, sn.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, live = stored
    outlined = sn.Session.open(db, live.id, agent=team())
    monkeypatch.setattr(SQLiteStore, "outline", lambda self, session_id, types: None)
    eager = sn.Session.open(db, live.id, agent=team())
    assert unread(outlined.events) > 0 and unread(eager.events) == 0

    def restored(session: sn.Session) -> tuple[Any, ...]:
        return (
            [(run._first, run._last, run.status) for run in session.runs],
            [dumped(run.events) for run in session.runs],
            session.bus.statuses,
            session.bus._seq,
            session.bus.run,
            session.stored_from,
            session.tree,
            {n.path: (n.status, n.cost_usd, sorted(n.tasks)) for n in session.root.walk()},
        )

    assert restored(outlined) == restored(eager)
    assert dumped(outlined.events) == dumped(eager.events) == dumped(live.events)
    outlined.store.close()


def test_a_long_log_is_read_a_block_at_a_time(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, live = stored
    monkeypatch.setattr(eventlog, "BLOCK", 7)
    reopened = sn.Session.open(db, live.id, agent=team())
    log, count = reopened.events, len(live.events)
    assert count > 5 * 7 and reads == []
    at = next(i for i in range(8, count) if log._items[i] is UNREAD)
    assert log[at].model_dump() == live.events[at].model_dump()
    block = at - at % 7
    assert reads == [(block + 1, block + 7)]
    assert dumped(log) == dumped(live.events) and unread(log) == 0
    assert len(set(reads)) == len(reads)  # each block read once
    assert max(reads)[1] == count and all(last - first < 7 for first, last in reads)
    reopened.store.close()


def test_a_closed_store_reads_the_unread_events_before_it_closes(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]]
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    assert unread(reopened.events) > 0
    reopened.store.close()
    assert reads == [(1, len(live.events))]
    assert dumped(reopened.events) == dumped(live.events)
    assert reads == [(1, len(live.events))]
    with pytest.raises(sn.StoreError, match="was closed"):
        reopened.store.sessions()


def test_a_closed_store_does_not_read_again_what_was_read(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]]
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    assert dumped(reopened.events) == dumped(live.events)
    reopened.store.close()
    assert reads == [(1, len(live.events))]


def test_two_threads_reading_at_once_read_the_store_once(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]]
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    log, start, seen = reopened.events, threading.Barrier(4), []

    def look(at: int) -> None:
        start.wait()
        seen.append(log[at])

    threads = [threading.Thread(target=look, args=(i % 2 + 3,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert reads == [(1, len(live.events))] and len({id(e) for e in seen}) == 2
    reopened.store.close()


def test_a_run_after_the_reopen_goes_after_the_unread_rows(
    stored: tuple[Path, sn.Session], reads: list[tuple[int, int]]
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team(), llm=sn.mock_llm(model))
    result = reopened.send("les bateaux ⛵").result()
    assert result.status == "done" and reads == []
    reopened.flush()  # the new run's rows are in the file: the read still takes only the old
    log = reopened.events
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert dumped(log[: len(live.events)]) == dumped(live.events)
    assert reads == [(1, len(live.events))]
    again = sn.Session.open(db, live.id, agent=team())
    assert dumped(again.events) == dumped(log)
    reopened.store.close()


def test_a_session_changed_by_another_program_says_so_when_read(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    with sqlite3.connect(settled(db)) as conn:
        conn.execute("DELETE FROM events WHERE session = ? AND seq = 4", (live.id,))
    with pytest.raises(sn.StoreError, match=r"no longer holds its events 1 to \d+ .* open the"):
        reopened.events[3]
    assert unread(reopened.events) > 0  # nothing lost: it can be read again
    reopened.store.close()


def test_seqs_that_do_not_run_one_to_n_are_loaded_whole(stored: tuple[Path, sn.Session]) -> None:
    db, live = stored
    with sqlite3.connect(settled(db)) as conn:
        conn.execute("DELETE FROM events WHERE session = ? AND seq = 4", (live.id,))
    reopened = sn.Session.open(db, live.id, agent=team())
    assert unread(reopened.events) == 0
    assert [e.seq for e in reopened.events] == [e.seq for e in live.events if e.seq != 4]
    reopened.store.close()


def test_an_interrupted_run_is_loaded_whole_and_its_pause_presented(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(team(), llm=sn.mock_llm(model), store=db)
    session.send("les chats").result()
    run = session.send("les trains", pause_on={"tool"})
    assert run.wait(10) == "paused"
    waiting = [(p.path, p.name, p.arguments) for p in run.pending]
    session.flush()
    reopened = sn.Session.open(db, session.id, agent=team())
    assert unread(reopened.events) == 0
    assert [(p.path, p.name, p.arguments) for p in reopened.pending] == waiting
    run.cancel()
    session.store.close()
    reopened.store.close()


def test_the_file_store_outlines_and_the_memory_store_loads_whole() -> None:
    from sagents_nb.store import MemoryStore, OutliningStore

    assert isinstance(sn.SQLiteStore(":memory:"), OutliningStore)
    assert not isinstance(MemoryStore(), OutliningStore)
    store = MemoryStore()
    session = sn.Session(team(), llm=sn.mock_llm(model), store=store)
    session.send("les chats").result()
    session.flush()
    reopened = sn.Session.open(store, session.id, agent=team())
    assert unread(reopened.events) == 0 and dumped(reopened.events) == dumped(session.events)
