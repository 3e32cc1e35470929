"""The `Store` contract, run against every built-in store: `MemoryStore` (the reference, plain
Python), `SQLiteStore` on a file and in memory, and `PostgresStore` on a real PostgreSQL server
(`postgres_support.py`). Each behaviour is what `_store/sqlite/writes.py`'s SQL does."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sagents_nb.store import (
    EventRow,
    ForkingStore,
    GroupCommitStore,
    MemoryStore,
    MessageRow,
    MessageWrite,
    NodeRow,
    PlainCommitStore,
    SessionRows,
    SQLiteStore,
    Step,
    Store,
    StoredSession,
    StoreError,
    TaskRow,
)

from .postgres_support import PostgresServer

pytestmark = pytest.mark.timeout(60)

TEXTS = [
    "Où est la bibliothèque ? « déjà vu »",
    "你好，世界：委派给子代理",
    "こんにちは、エージェント。カタカナとひらがな",
    "emoji 🤖🧠✨👩🏽‍💻",
    'def f(x):\n    return {"a": [x, "\\n"]}  # code',
]

KINDS = ["memory", "sqlite-file", "sqlite-memory", "postgres"]


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = make_store(request.param, tmp_path, request)
    yield made
    made.close()


def make_store(kind: str, folder: Path, request: pytest.FixtureRequest | None = None) -> Store:
    """A new, empty store of `kind` (`postgres`: a schema of its own on the run's server)."""
    if kind == "memory":
        return MemoryStore()
    if kind == "postgres":
        assert request is not None, "a PostgresStore needs the test's request for its server"
        server: PostgresServer = request.getfixturevalue("postgres_server")
        return server.store()
    return SQLiteStore(folder / "contract.db" if kind == "sqlite-file" else ":memory:")


def body(**fields: object) -> str:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def event(seq: int, kind: str = "model_request", path: str = "boss", run: int = 1) -> EventRow:
    return EventRow(seq, run, kind, path, body(type=kind, path=path, seq=seq, text=TEXTS[seq % 5]))


def write(
    seq: int, *numbers: int, path: str = "boss", transcript: str = "llm", swap: bool = False
) -> MessageWrite:
    messages = [(n, body(role="user", content=f"{TEXTS[n % 5]} #{n}")) for n in numbers]
    return MessageWrite(path, transcript, seq, messages, swap)


def node(seq: int, path: str = "boss", part: str = "state", **fields: object) -> NodeRow:
    return NodeRow(path, part, seq, body(**fields))


def task(
    seq: int,
    prompt: str = "job A",
    child: str = "boss/worker.1",
    status: str | None = None,
    settled: int | None = None,
    **more: object,
) -> TaskRow:
    text = f"{prompt} -> {TEXTS[seq % 5]}" if status else None
    return TaskRow("boss", "worker", prompt, child, seq, status, text, settled, **more)  # type: ignore[arg-type]


def new(store: Store, sid: str = "s1", created: float = 1.0, **info: object) -> None:
    store.create(SessionRows(StoredSession(sid, "boss", created, **info)))  # type: ignore[arg-type]


def shape(rows: SessionRows) -> tuple[object, ...]:
    """Everything a load returns, as plain values (the info without its id)."""
    return (
        replace(rows.info, id=""),
        rows.events,
        rows.messages,
        rows.nodes,
        rows.tasks,
    )


def test_the_seam_is_one_public_module() -> None:
    import sagents_nb as sn
    import sagents_nb.store as seam

    assert seam.__all__ == sorted(seam.__all__)
    assert (seam.Store, seam.StoredSession, seam.SQLiteStore, seam.StoreError) == (
        sn.Store,
        sn.StoredSession,
        sn.SQLiteStore,
        sn.StoreError,
    )
    assert isinstance(MemoryStore(), sn.Store)
    assert {getattr(seam, name).__module__ for name in seam.__all__} == {
        "sagents_nb",  # Store, StoredSession, StoreError, SQLiteStore: as the package shows them
        "sagents_nb.store",
    }
    code = "import sys, sagents_nb.store; print('sqlite3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # SQLite loads with the first SQLiteStore


# creating and loading


def test_a_created_session_loads_back_as_given(store: Store) -> None:
    rows = SessionRows(
        StoredSession("s1", "boss", 12.5, "parent-id", 4, last_seq=999),
        events=[event(1, "run_started"), event(2), event(4)],
        messages=[
            MessageRow(1, "boss", "llm", 1, 2, body(content=TEXTS[1])),
            MessageRow(2, "boss", "display", 1, None, body(content=TEXTS[2])),
            MessageRow(3, "boss/worker.1", "llm", 2, None, body(content=TEXTS[4])),
        ],
        nodes=[node(0, status="idle"), node(2, "boss/worker.1", status="running", turns=1)],
        tasks=[
            task(2, "job A", status="done", settled=4),
            task(2, "job B", retired=4),
            task(4, "job B", child="boss/worker.2"),
        ],
    )
    store.create(rows)
    loaded = store.load("s1")
    assert loaded.info == replace(rows.info, last_seq=4)  # the last event, whatever was given
    assert (loaded.events, loaded.messages, loaded.nodes, loaded.tasks) == (
        rows.events,
        rows.messages,
        rows.nodes,
        rows.tasks,
    )


def test_any_text_and_a_long_prompt_load_back_as_given(store: Store) -> None:
    """A NUL character (PostgreSQL's text holds none), U+FFFF, a backslash and a tab in every
    text a row carries (in its JSON bodies too), and a task prompt far past a B-tree entry's
    size (about 2.7 kB)."""
    odd = "nul \x00 and \uffff, \uffff0, \\0, tab\t: 日本語 🤖"
    prompt = "résumé 你好 " * 2_000
    sid = f"s {odd}"
    rows = SessionRows(
        StoredSession(sid, f"boss {odd}", 1.0, parent=f"p {odd}", fork_seq=1),
        events=[EventRow(1, 1, f"kind {odd}", f"boss/{odd}", body(text=odd))],
        messages=[MessageRow(1, f"boss/{odd}", f"llm {odd}", 1, None, body(content=odd))],
        nodes=[NodeRow(f"boss/{odd}", f"state {odd}", 1, body(notes=odd))],
        tasks=[TaskRow("boss", f"worker {odd}", prompt, f"child {odd}", 1, "done", odd, 1)],
    )
    store.create(rows)
    later = TaskRow("boss", f"worker {odd}", prompt, "boss/worker.2", 2, "done", odd * 2, 2)
    store.commit(sid, [Step(2, [event(2)], [write(2, 2, path=odd)], tasks=[later])])
    loaded = store.load(sid)
    assert (loaded.events[0], loaded.messages[0], loaded.nodes, loaded.info.agent) == (
        rows.events[0],
        rows.messages[0],
        rows.nodes,
        rows.info.agent,
    )
    (task_row,) = loaded.tasks  # the long prompt's key matched: one row, updated
    assert (task_row.prompt, task_row.child, task_row.text) == (prompt, "boss/worker.2", odd * 2)
    assert loaded.messages[1].path == odd
    assert [s.id for s in store.sessions()] == [sid]


def test_a_taken_id_is_refused_and_the_first_session_kept(store: Store) -> None:
    store.create(SessionRows(StoredSession("s1", "boss", 1.0), events=[event(1)]))
    with pytest.raises(StoreError, match="a session with id 's1' already exists"):
        store.create(SessionRows(StoredSession("s1", "other", 2.0), events=[event(1), event(2)]))
    loaded = store.load("s1")
    assert (loaded.info.agent, loaded.events) == ("boss", [event(1)])


def test_a_create_with_clashing_rows_adds_nothing(store: Store) -> None:
    clashes = [
        SessionRows(StoredSession("e", "boss", 1.0), events=[event(1), event(1)]),
        SessionRows(
            StoredSession("m", "boss", 1.0),
            messages=[MessageRow(1, "boss", "llm", 0, None, "{}")] * 2,
        ),
        SessionRows(StoredSession("t", "boss", 1.0), tasks=[task(1), task(2)]),  # two live rows
    ]
    for rows in clashes:
        with pytest.raises(StoreError):
            store.create(rows)
    assert store.sessions() == []


def test_an_unknown_id_names_the_ids_there_are(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no session 'zz' .*\(sessions there: none\)"):
        store.load("zz")
    new(store, "b", 2.0)
    new(store, "c", 2.0)
    new(store, "a", 3.0)
    with pytest.raises(StoreError, match=r"no session 'zz' .*\(sessions there: b, c, a\)"):
        store.load("zz")


def test_sessions_are_listed_oldest_first_with_their_last_event(store: Store) -> None:
    new(store, "late", 5.0)
    new(store, "fork", 3.0, parent="late", fork_seq=2)
    new(store, "early", 1.0)
    store.commit("late", [Step(3, [event(1), event(2), event(3)])])
    assert store.sessions() == [
        StoredSession("early", "boss", 1.0),
        StoredSession("fork", "boss", 3.0, "late", 2, 0),
        StoredSession("late", "boss", 5.0, last_seq=3),
    ]
    assert store.load("late").info.last_seq == 3


def test_sessions_are_kept_apart(store: Store) -> None:
    new(store, "a")
    new(store, "b", 2.0)
    store.commit("a", [Step(1, [event(1)], [write(1, 1)], [node(1)], [task(1)])])
    store.commit("b", [Step(1, [event(1, "run_started")], [write(1, 1)])])  # same numbers
    a, b = store.load("a"), store.load("b")
    assert [e.type for e in a.events] == ["model_request"]
    assert [e.type for e in b.events] == ["run_started"]
    assert (len(b.messages), b.nodes, b.tasks) == (1, [], [])


# committing


def test_events_are_loaded_in_order(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(2, [event(1), event(2)]), Step(3, [event(3)])])
    store.commit("s1", [Step(5, [event(4), event(5, "run_finished")])])
    loaded = store.load("s1")
    assert loaded.events == [event(1), event(2), event(3), event(4), event(5, "run_finished")]
    assert loaded.info.last_seq == 5


def test_a_taken_event_number_refuses_the_whole_commit(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(2, [event(1), event(2)])])
    before = store.load("s1")
    whole = Step(4, [event(3), event(4)], [write(4, 1)], [node(4, status="x")], [task(4)])
    with pytest.raises(StoreError, match="already has events with these numbers"):
        store.commit("s1", [whole, Step(4, [event(2)])])
    with pytest.raises(StoreError, match="already has events with these numbers"):
        store.commit("s1", [Step(4, [event(3), event(3)])])
    assert shape(store.load("s1")) == shape(before)
    store.commit("s1", [whole])  # the session goes on
    assert store.load("s1").info.last_seq == 4


def test_a_taken_message_number_refuses_the_whole_commit(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(1, [event(1)], [write(1, 1, 2)])])
    before = store.load("s1")
    with pytest.raises(StoreError):
        store.commit("s1", [Step(2, [event(2)], [write(2, 3)]), Step(2, [], [write(2, 2)])])
    assert shape(store.load("s1")) == shape(before)


def test_messages_are_stamped_with_the_event_they_follow(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(1, [event(1)], [write(1, 1), write(1, 2, transcript="display")])])
    store.commit("s1", [Step(3, [event(2), event(3)], [write(3, 3, 4, path="boss/worker.1")])])
    loaded = store.load("s1")
    assert [(m.n, m.path, m.transcript, m.added, m.removed) for m in loaded.messages] == [
        (1, "boss", "llm", 1, None),
        (2, "boss", "display", 1, None),
        (3, "boss/worker.1", "llm", 3, None),
        (4, "boss/worker.1", "llm", 3, None),
    ]
    assert loaded.messages[0].body == write(1, 1).messages[0][1]


def test_replace_retires_the_transcripts_live_rows_only(store: Store) -> None:
    new(store)
    store.commit(
        "s1",
        [
            Step(1, [event(1)], [write(1, 1, 2), write(1, 3, transcript="display")]),
            Step(1, [], [write(1, 4, path="boss/worker.1")]),
        ],
    )
    store.commit(
        "s1",
        [
            Step(2, [event(2)], [write(2, 5)]),  # added earlier in the commit: retired too
            Step(3, [event(3)], [write(3, 6, 7, swap=True), write(3, 8)]),  # 8 comes after
            Step(4, [event(4)], [write(4, 9, swap=True)]),
        ],
    )
    removed = {m.n: m.removed for m in store.load("s1").messages}
    assert removed == {1: 3, 2: 3, 3: None, 4: None, 5: 3, 6: 4, 7: 4, 8: 4, 9: None}
    store.commit("s1", [Step(5, [event(5)], [write(5, 10, swap=True)])])
    removed = {m.n: m.removed for m in store.load("s1").messages}
    assert (removed[1], removed[6], removed[9], removed[10]) == (3, 4, 5, None)  # kept stamps


def test_a_node_row_at_the_same_event_replaces_it(store: Store) -> None:
    new(store)
    store.commit(
        "s1",
        [
            Step(
                1,
                [event(1)],
                nodes=[
                    node(1, "boss/worker.1", status="running"),
                    node(1, status="running", turns=1, notices=[TEXTS[2]]),
                    node(1, part="kind", kind="main", state={"cold": []}),
                ],
            )
        ],
    )
    store.commit("s1", [Step(1, [], nodes=[node(1, status="waiting", turns=1)])])
    store.commit("s1", [Step(2, [event(2)], nodes=[node(2, turns=2)])])
    loaded = store.load("s1")
    assert [(n.seq, n.path, n.part) for n in loaded.nodes] == [
        (1, "boss", "kind"),
        (1, "boss", "state"),
        (1, "boss/worker.1", "state"),
        (2, "boss", "state"),
    ]
    assert loaded.node_states()[("boss", "state")] == {"status": "waiting", "turns": 2}
    assert loaded.at(1).node_states()[("boss", "state")] == {"status": "waiting", "turns": 1}


def test_a_task_row_for_a_live_key_updates_it(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(3, [event(3)], tasks=[task(3)])])
    store.commit("s1", [Step(7, [event(7)], tasks=[task(7, status="done", settled=7)])])
    (row,) = store.load("s1").tasks
    assert (row.seq, row.status, row.settled, row.retired) == (3, "done", 7, None)
    assert row.text == task(7, status="done").text
    later = task(9, child="boss/worker.9", status="failed", settled=9)
    store.commit("s1", [Step(9, [event(9)], tasks=[later])])
    (row,) = store.load("s1").tasks
    # the child, status and text are the newest; the first seq and the first settled stay
    assert (row.child, row.status, row.text) == ("boss/worker.9", "failed", later.text)
    assert (row.seq, row.settled) == (3, 7)


def test_rows_for_one_key_in_one_commit_make_one_row(store: Store) -> None:
    new(store)
    settle = task(2, status="done", settled=2)
    store.commit("s1", [Step(1, [event(1)], tasks=[task(1)]), Step(2, [event(2)], tasks=[settle])])
    store.commit(
        "s1", [Step(3, [event(3)], tasks=[task(3, "job B"), task(3, "job B", status="done")])]
    )
    rows = store.load("s1").tasks
    assert [(t.prompt, t.seq, t.status, t.settled) for t in rows] == [
        ("job A", 1, "done", 2),
        ("job B", 3, "done", None),
    ]


def test_retiring_a_task_stamps_its_live_row_and_its_key_starts_again(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(2, [event(2)], tasks=[task(2, status="done", settled=2)])])
    again = task(5, child="boss/worker.2")
    store.commit(
        "s1", [Step(5, [event(5)], tasks=[again], retired=[("boss", "worker", "job A", 5)])]
    )
    store.commit("s1", [Step(6, [event(6)], retired=[("boss", "worker", "nobody asked", 6)])])
    rows = store.load("s1").tasks
    assert [(t.child, t.seq, t.status, t.retired) for t in rows] == [
        ("boss/worker.1", 2, "done", 5),
        ("boss/worker.2", 5, None, None),
    ]
    store.commit("s1", [Step(7, [event(7)], tasks=[task(7, child="boss/worker.2", status="done")])])
    assert [t.status for t in store.load("s1").tasks] == ["done", "done"]
    assert store.load("s1").tasks[0].retired == 5


def test_a_task_written_earlier_in_the_commit_is_retired_too(store: Store) -> None:
    new(store)
    retire = [("boss", "worker", "job A", 2)]
    store.commit("s1", [Step(1, [event(1)], tasks=[task(1)]), Step(2, [event(2)], retired=retire)])
    assert [(t.seq, t.retired) for t in store.load("s1").tasks] == [(1, 2)]


def test_a_task_row_given_retired_is_a_row_of_its_own(store: Store) -> None:
    new(store)
    store.commit("s1", [Step(1, [event(1)], tasks=[task(1)])])
    store.commit("s1", [Step(2, [event(2)], tasks=[task(2, child="old", retired=2)])])
    rows = store.load("s1").tasks
    assert [(t.child, t.seq, t.retired) for t in rows] == [
        ("boss/worker.1", 1, None),
        ("old", 2, 2),
    ]


# what a fork reads


def test_the_record_as_of_an_event_makes_a_fork(store: Store) -> None:
    new(store)
    store.commit(
        "s1",
        [
            Step(1, [event(1)], [write(1, 1, 2)], [node(1, status="running")], [task(1)]),
            Step(2, [event(2)], [write(2, 3)], [node(2, turns=1)], [task(2, "job B")]),
        ],
    )
    store.commit(
        "s1",
        [
            Step(
                3,
                [event(3)],
                [write(3, 4, swap=True)],
                [node(3, status="done")],
                [task(3, status="done", settled=3), task(3, "job C")],
                [("boss", "worker", "job B", 3)],
            )
        ],
    )
    cut = store.load("s1").at(2)
    assert [e.seq for e in cut.events] == [1, 2]
    assert [(m.n, m.removed) for m in cut.messages] == [(1, None), (2, None), (3, None)]
    assert [(t.prompt, t.status, t.retired) for t in cut.tasks] == [
        ("job A", None, None),
        ("job B", None, None),
    ]
    assert cut.node_states()[("boss", "state")] == {"status": "running", "turns": 1}
    cut.info = StoredSession("f1", "boss", 2.0, "s1", 2, 2)
    store.create(cut)
    fork = store.load("f1")
    assert shape(fork) == shape(cut)
    assert [(s.id, s.parent, s.fork_seq, s.last_seq) for s in store.sessions()] == [
        ("s1", None, None, 3),
        ("f1", "s1", 2, 2),
    ]
    store.commit("f1", [Step(3, [event(3, "run_finished")], [write(3, 5)])])  # it goes on
    assert [m.n for m in store.load("f1").messages] == [1, 2, 3, 5]
    assert [m.n for m in store.load("s1").messages] == [1, 2, 3, 4]


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_fork_copies_the_record_as_of_an_event(store: Store, seq: int) -> None:
    """The optional `fork` keeps exactly what `create(load(...).at(seq))` keeps."""
    if not isinstance(store, ForkingStore):
        pytest.skip("fork is optional (ForkingStore)")
    new(store)
    store.commit(
        "s1",
        [
            Step(1, [event(1)], [write(1, 1, 2)], [node(1, status="running")], [task(1)]),
            Step(2, [event(2)], [write(2, 3)], [node(2, turns=1)], [task(2, "job B")]),
            Step(
                3,
                [event(3)],
                [write(3, 4, swap=True)],
                [node(3, status="done")],
                [task(3, status="done", settled=3), task(3, "job C")],
                [("boss", "worker", "job B", 3)],
            ),
        ],
    )
    info = StoredSession("f1", "boss", 2.0, "s1", seq, seq)
    store.fork("s1", seq, info)
    forked = store.load("f1")
    assert shape(forked)[1:] == shape(store.load("s1").at(seq))[1:]
    assert (forked.info.parent, forked.info.fork_seq, forked.info.last_seq) == ("s1", seq, seq)
    with pytest.raises(StoreError, match="already exists"):
        store.fork("s1", seq, info)
    store.commit("f1", [Step(seq + 1, [event(seq + 1, "run_finished")], [write(seq + 1, 9)])])
    assert [m.n for m in store.load("s1").messages] == [1, 2, 3, 4]


def test_a_fork_of_an_unknown_session_names_the_ids_and_adds_nothing(store: Store) -> None:
    if not isinstance(store, ForkingStore):
        pytest.skip("fork is optional (ForkingStore)")
    new(store, "s1", 1.0)
    info = StoredSession("f1", "boss", 2.0, "zz", 1, 1)
    with pytest.raises(StoreError, match=r"no session 'zz' .*\(sessions there: s1\)"):
        store.fork("zz", 1, info)
    assert [s.id for s in store.sessions()] == ["s1"]


def test_commit_plain_keeps_what_commit_keeps(store: Store) -> None:
    """The optional `commit_plain` of steps as plain tuples keeps exactly what `commit` of the
    same steps keeps (a plain event's fields made JSON), and refuses what it refuses."""
    if not isinstance(store, PlainCommitStore):
        pytest.skip("commit_plain is optional (PlainCommitStore)")
    fields = {"type": "text_delta", "path": "boss", "seq": 2, "text": TEXTS[1]}
    plain = [
        (
            [(1, 1, "model_request", "boss", event(1).body)],
            [("boss", "llm", 1, write(1, 1, 2).messages, False)],
            [("boss", "state", 1, node(1, status="running").body)],
            [task(1).values()],
            [],
        ),
        (
            [(2, 1, "text_delta", "boss", fields)],
            [("boss", "llm", 2, write(2, 3).messages, True)],
            [],
            [task(2, status="done", settled=2).values()],
            [("boss", "worker", "job A", 2)],
        ),
    ]
    reference = MemoryStore()
    for target in (store, reference):
        new(target)
    store.commit_plain("s1", plain)  # type: ignore[arg-type]
    reference.commit("s1", [Step.from_plain(seq, step) for seq, step in enumerate(plain, 1)])  # type: ignore[arg-type]
    assert shape(store.load("s1")) == shape(reference.load("s1"))
    assert json.loads(store.load("s1").events[1].body) == fields
    with pytest.raises(StoreError, match="already has events"):
        store.commit_plain("s1", plain[:1])  # type: ignore[arg-type]
    assert shape(store.load("s1")) == shape(reference.load("s1"))


def test_commit_group_keeps_what_create_and_commit_keep(store: Store) -> None:
    """The optional `commit_group` of several sessions' creations and steps keeps what `create`
    and `commit_plain` of each keep; a refusal of any one of them writes none of them."""
    if not isinstance(store, GroupCommitStore):
        pytest.skip("commit_group is optional (GroupCommitStore)")
    first = ([(1, 1, "model_request", "boss", event(1).body)], [], [], [task(1).values()], [])
    answer = "La réponse est 42 : 答案 🤖 " * 40  # long: kept once in a file store's texts
    then = (
        [(2, 1, "run_finished", "boss", body(type="run_finished", text=answer))],
        [("boss", "llm", 2, [(1, body(role="assistant", content=answer))], False)],
        [("boss", "state", 2, node(2, status="done").body)],
        [],
        [],
    )
    fresh = SessionRows(
        StoredSession("s2", "boss", 2.0), nodes=[node(0, status="new")], events=[event(0)]
    )
    reference = MemoryStore()
    for target in (store, reference):
        new(target)
    store.commit_group([(None, "s1", [first, then]), (fresh, "s2", [first])])  # type: ignore[list-item]
    reference.commit("s1", [Step.from_plain(1, first), Step.from_plain(2, then)])  # type: ignore[arg-type]
    reference.create(fresh)
    reference.commit("s2", [Step.from_plain(1, first)])  # type: ignore[arg-type]
    for sid in ("s1", "s2"):
        assert shape(store.load(sid)) == shape(reference.load(sid))
    assert [s.id for s in store.sessions()] == ["s1", "s2"]

    refused = SessionRows(StoredSession("s3", "boss", 3.0))
    with pytest.raises(StoreError, match="already has events"):
        store.commit_group([(refused, "s3", [first]), (None, "s1", [first])])  # type: ignore[list-item]
    assert [s.id for s in store.sessions()] == ["s1", "s2"]
    assert shape(store.load("s1")) == shape(reference.load("s1"))


# copies and closing


def test_reads_and_writes_are_copies(store: Store) -> None:
    new(store)
    step = Step(1, [event(1)], [write(1, 1)], [node(1, status="x")], [task(1)])
    store.commit("s1", [step])
    step.events[0].body = step.nodes[0].body = "changed"
    step.messages[0].messages[0] = (1, "changed")
    step.tasks[0].status = "changed"
    loaded = store.load("s1")
    loaded.events[0].body = loaded.messages[0].body = loaded.nodes[0].body = "changed"
    loaded.tasks[0].child = "changed"
    again = store.load("s1")
    assert "changed" not in {again.events[0].body, again.messages[0].body, again.nodes[0].body}
    assert (again.tasks[0].child, again.tasks[0].status) == ("boss/worker.1", None)


def test_a_closed_store_refuses_to_be_used(store: Store) -> None:
    new(store)
    store.close()
    store.close()  # closing twice is fine
    for use in (
        lambda: store.load("s1"),
        store.sessions,
        lambda: new(store, "s2"),
        lambda: store.commit("s1", [Step(1, [event(1)])]),
    ):
        with pytest.raises(StoreError, match="closed"):
            use()


# the same writes, the same rows: every store against SQLite, on arbitrary histories

KEYS = ["job A", "job B", "job C"]
PATHS = ["boss", "boss/worker.1"]


@st.composite
def histories(draw: st.DrawFn) -> list[list[Step]]:
    """Commits as a journal makes them: every commit starts with a new event, rows are
    stamped with the last event, tasks are added, settled once, or retired (then re-added)."""
    seq = number = 0
    live: dict[str, tuple[str, bool]] = {}  # prompt -> (child, settled)
    commits = []
    for _ in range(draw(st.integers(1, 6))):
        steps = []
        for index in range(draw(st.integers(1, 3))):
            events = []
            for _ in range(draw(st.integers(1 if index == 0 else 0, 3))):
                seq += 1
                events.append(event(seq, draw(st.sampled_from(["model_request", "tool_call"]))))
            writes = []
            for _ in range(draw(st.integers(0, 2))):
                count = draw(st.integers(0, 3))
                writes.append(
                    write(
                        seq,
                        *range(number + 1, number + 1 + count),
                        path=draw(st.sampled_from(PATHS)),
                        transcript=draw(st.sampled_from(["llm", "display"])),
                        swap=draw(st.booleans()),
                    )
                )
                number += count
            nodes = [
                node(seq, draw(st.sampled_from(PATHS)), part, turns=draw(st.integers(0, 9)))
                for part in draw(st.lists(st.sampled_from(["state", "kind"]), max_size=2))
            ]
            tasks, retired = [], []
            for prompt in draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True)):
                if prompt in live and draw(st.booleans()):
                    retired.append(("boss", "worker", prompt, seq))
                    del live[prompt]
                if prompt not in live:
                    child = f"boss/worker.{seq}"
                    tasks.append(task(seq, prompt, child=child))
                    live[prompt] = (child, False)
                elif not live[prompt][1]:
                    child = live[prompt][0]
                    tasks.append(task(seq, prompt, child=child, status="done", settled=seq))
                    live[prompt] = (child, True)
            steps.append(Step(seq, events, writes, nodes, tasks, retired))
        commits.append(steps)
    return commits


@pytest.fixture(scope="module", params=[k for k in KINDS if not k.startswith("sqlite")])
def other_kind(request: pytest.FixtureRequest) -> Callable[[], Store]:
    """What makes a new store of each kind but SQLite's (the file's writes are the same SQL)."""
    kind = request.param
    return lambda: make_store(kind, Path(), request)


@settings(max_examples=60, deadline=None)
@given(histories())
def test_every_store_keeps_the_rows_sqlite_keeps(
    other_kind: Callable[[], Store], commits: list[list[Step]]
) -> None:
    """Each other store against SQLite in memory, after every commit of an arbitrary history."""
    stores = [make_store("sqlite-memory", Path()), other_kind()]
    try:
        loads: list[list[SessionRows]] = [[] for _ in stores]
        for made, loaded in zip(stores, loads, strict=True):
            new(made)
            for steps in commits:
                made.commit("s1", steps)
                loaded.append(made.load("s1"))
        assert [shape(rows) for rows in loads[1]] == [shape(rows) for rows in loads[0]]
        # every row is stamped with the event it follows: a fork at an earlier commit's last
        # event reads the same rows now as it did then
        final = loads[0][-1]
        for then in loads[0]:
            last = then.info.last_seq
            assert shape(final.at(last))[1:] == shape(then.at(last))[1:]
    finally:
        for made in stores:
            made.close()
