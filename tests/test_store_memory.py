"""Sessions in a `MemoryStore` (the reference store) reopen, fork, resume and move through
JSON lines just as they do in SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.store import MemoryStore, SessionRows

from .test_store import BOSS, boss_handler, dumps
from .test_store_fork import snapshot

pytestmark = pytest.mark.timeout(30)


def ran(store: Any, *messages: str) -> sn.Session:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    for text in messages:
        assert session.send(text).result().status == "done"
    session.flush()
    return session


def test_a_session_reopens_from_a_memory_store_and_goes_on() -> None:
    store = MemoryStore()
    session = ran(store, "go")
    again = sn.Session.open(store, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert snapshot(again) == snapshot(session)
    child = again.node("boss/worker.1")
    assert child is not None and dumps(child.history) == dumps(
        session.node("boss/worker.1").history
    )
    entry = again.root.tasks[("worker", "job A")]
    assert entry.child is child and entry.outcome is not None
    assert again.send("and now? 你好 🤖").result().run == 2
    third = sn.Session.open(store, session.id, agent=BOSS)
    assert [r.status for r in third.runs] == ["done", "done"]
    users = [m.content for m in third.display_messages if m.role == "user"]
    assert users == ["go", "and now? 你好 🤖"]
    assert [s.id for s in sn.Session.list_stored(store)] == [session.id]
    assert sn.Session.open(again.store, session.id, agent=BOSS).id == session.id


def test_a_session_in_a_memory_store_forks() -> None:
    store = MemoryStore()
    session = ran(store, "go", "encore une fois")
    first_end = next(e for e in session.events if e.type == "run_finished")
    before = snapshot(session)
    fork = session.fork(at=first_end.seq)
    assert [e.seq for e in fork.events] == list(range(1, first_end.seq + 1))
    fork.llm = sn.mock_llm(lambda req: f"branch heard {req.last_user}")
    assert fork.send("ここから分岐").result().text == "branch heard ここから分岐"
    fork.flush()
    assert snapshot(session) == before
    stored = {s.id: s for s in sn.Session.list_stored(store)}
    assert (stored[fork.id].parent, stored[fork.id].fork_seq) == (session.id, first_end.seq)
    reopened = sn.Session.open(store, fork.id, agent=BOSS)
    assert snapshot(reopened) == snapshot(fork)


def test_a_memory_store_record_cut_mid_run_resumes() -> None:
    store = MemoryStore()
    session = ran(store, "go")
    request = [e for e in session.events if e.type == "model_request" and e.path == "boss"][1]
    cut = session.fork(at=request.seq)
    assert [r.status for r in cut.runs] == ["incomplete"]
    cut.llm = sn.mock_llm(boss_handler)
    assert cut.resume().result(timeout=10).text == session.runs[0].result().text
    cut.flush()
    assert [r.status for r in sn.Session.open(store, cut.id, agent=BOSS).runs] == ["done"]


def test_jsonl_moves_sessions_between_memory_and_sqlite(tmp_path: Path) -> None:
    session = ran(MemoryStore(), "go", "again")
    exported = session.export_jsonl(tmp_path / "from-memory.jsonl")
    db = tmp_path / "runs.db"
    in_sqlite = sn.Session.import_jsonl(exported, db, agent=BOSS)
    assert snapshot(in_sqlite) == snapshot(session)
    back = in_sqlite.export_jsonl(tmp_path / "from-sqlite.jsonl")
    assert back.read_text(encoding="utf-8") == exported.read_text(encoding="utf-8")
    memory = MemoryStore()
    in_memory = sn.Session.import_jsonl(back, memory, agent=BOSS)
    assert snapshot(in_memory) == snapshot(session)
    first_end = next(e for e in session.events if e.type == "run_finished")
    assert snapshot(in_memory.fork(at=first_end.seq)) == snapshot(in_sqlite.fork(at=first_end.seq))
    with pytest.raises(sn.StoreError, match="already exists"):
        sn.Session.import_jsonl(back, memory, agent=BOSS)


def settled_view(rows: SessionRows) -> tuple[object, ...]:
    """What a record holds in the end, free of clocks and of when steps were cut."""
    events = [
        {k: v for k, v in json.loads(e.body).items() if k not in ("ts", "duration")}
        for e in rows.events
    ]
    live = {
        key: [json.loads(m.body) for m in messages]
        for key, messages in rows.live_messages().items()
    }
    tasks = sorted((t.parent, t.agent, t.prompt, t.child, t.status, t.text) for t in rows.tasks)
    return events, live, rows.node_states(), tasks


class Both:
    """A store that writes one session's rows to two stores (reads come from the first)."""

    def __init__(self, *stores: Any) -> None:
        self.stores = stores

    def create(self, rows: SessionRows) -> None:
        for store in self.stores:
            store.create(rows)

    def commit(self, session_id: str, steps: list[Any]) -> None:
        for store in self.stores:
            store.commit(session_id, steps)

    def load(self, session_id: str) -> SessionRows:
        return self.stores[0].load(session_id)

    def sessions(self) -> list[Any]:
        return self.stores[0].sessions()

    def close(self) -> None:
        for store in self.stores:
            store.close()


def test_memory_and_sqlite_record_a_session_alike(tmp_path: Path) -> None:
    """Given the same writes (one run: its two workers' events interleave as the threads of
    their tools finish, which differs from run to run)."""
    memory = MemoryStore()
    sqlite = sn.SQLiteStore(tmp_path / "runs.db")
    try:
        session = ran(Both(memory, sqlite), "go", "again")
        assert settled_view(memory.load(session.id)) == settled_view(sqlite.load(session.id))
    finally:
        sqlite.close()
