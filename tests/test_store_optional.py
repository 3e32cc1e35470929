"""A store opts in to the optional methods through the protocol (`ForkingStore`,
`PlainCommitStore`), as a second backend would; a store with only the five methods gets every
row through `commit`, repaired as the file store gets it, and the journal needs no SQLite."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._store.protocol import PlainStep
from sagents_nb.store import (
    ForkingStore,
    GroupCommitStore,
    MemoryStore,
    PlainCommitStore,
    SessionRows,
    Step,
    StoredSession,
)

from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(30)


class TextOnlyStore(MemoryStore):
    """The five methods only, refusing text UTF-8 cannot encode (as PostgreSQL's `text` does)."""

    def __init__(self) -> None:
        super().__init__()
        self.commits = 0

    def create(self, rows: SessionRows) -> None:
        _encodable([e.body for e in rows.events], [m.body for m in rows.messages])
        _encodable([n.body for n in rows.nodes], [t.values() for t in rows.tasks])
        super().create(rows)

    def commit(self, session_id: str, steps: Sequence[Step]) -> None:
        for step in steps:
            _encodable([e.body for e in step.events], [m.messages for m in step.messages])
            _encodable([n.body for n in step.nodes], [t.values() for t in step.tasks])
            _encodable(step.retired)
        self.commits += 1
        super().commit(session_id, steps)


# methods blocked: not a ForkingStore, nor a PlainCommitStore
TextOnlyStore.fork = TextOnlyStore.commit_plain = None  # type: ignore[assignment]


def _encodable(*values: object) -> None:
    """Refuse text with a lone surrogate anywhere in `values` (lists and tuples walked)."""
    for value in values:
        if isinstance(value, list | tuple):
            _encodable(*value)
        elif isinstance(value, str):
            try:
                value.encode()
            except UnicodeEncodeError as exc:
                raise sn.StoreError(f"text cannot be stored: {exc}") from exc


class PlainMemoryStore(MemoryStore):
    """A second backend that takes the plain steps (by having `commit_plain`)."""

    def __init__(self) -> None:
        super().__init__()
        self.plain_commits = 0

    def commit_plain(self, session_id: str, steps: list[PlainStep]) -> None:
        self.plain_commits += 1
        self.commit(session_id, [Step.from_plain(0, step) for step in steps])


def test_a_store_opts_in_by_having_the_method() -> None:
    assert isinstance(MemoryStore(), ForkingStore | PlainCommitStore)
    assert not isinstance(MemoryStore(), GroupCommitStore)
    assert not isinstance(TextOnlyStore(), PlainCommitStore)
    assert isinstance(sn.SQLiteStore(":memory:"), ForkingStore | PlainCommitStore)
    assert isinstance(PlainMemoryStore(), PlainCommitStore)
    assert not isinstance(TextOnlyStore(), ForkingStore)


def test_the_writer_hands_plain_steps_to_a_store_that_takes_them() -> None:
    store = PlainMemoryStore()
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    assert session.send("va, 东京 🤖").result().status == "done"
    session.flush()
    assert store.plain_commits > 0
    again = sn.Session.open(store, session.id, agent=BOSS)
    assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]


def test_a_store_without_fork_forks_through_create() -> None:
    store = TextOnlyStore()
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    request = next(e for e in session.events if e.type == "model_request")
    forked = session.fork(at=request.seq)
    assert forked.store is store and len(forked.events) == request.seq
    assert [s.parent for s in store.sessions()] == [None, session.id]


SURROGATE = "\udc80"


def surrogate_boss(req: sn.ChatRequest) -> sn.Reply | str:
    """The boss delegates a prompt with a lone surrogate; the worker's answer has one too."""
    if "task" in req.tools:
        if req.messages[-1]["role"] == "user":  # each message of the user: one task
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=f"job {SURROGATE}")])
        return "boss done: " + req.tool_results[-1]
    return f"réponse {SURROGATE} 東京"


def test_task_rows_reach_a_five_method_store_repaired() -> None:
    """A task's prompt and answer with a lone surrogate reach a store without `commit_plain`
    with U+FFFD in its place, as the file store keeps them (they reached it as they came, and
    a store that refuses such text refused every later commit of the session)."""
    store = TextOnlyStore()
    session = sn.Session(BOSS, llm=sn.mock_llm(surrogate_boss), store=store)
    assert session.send("go").result().status == "done"
    session.flush()
    tasks = store.load(session.id).tasks
    assert [(t.prompt, t.text) for t in tasks] == [("job \ufffd", "réponse \ufffd 東京")]
    assert store.commits > 0


def test_a_durable_session_on_another_store_loads_no_sqlite() -> None:
    code = (
        "import sys, sagents_nb as sn\n"
        "from sagents_nb.store import MemoryStore\n"
        "s = sn.Session(sn.Agent('a'), llm=sn.mock_llm(lambda r: 'ok'), store=MemoryStore())\n"
        "s.send('go').result()\n"
        "print('sqlite3' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_plain_step_is_the_step_it_holds() -> None:
    plain = (
        [(1, 1, "text_delta", "a", {"type": "text_delta", "seq": 1, "path": "a", "text": "日本"})],
        [("a", "llm", 1, [(1, '{"role":"user","content":"où ?"}')], False)],
        [("a", "state", 1, '{"status":"running"}')],
        [("a", "b", "p", "a/b.1", 1, None, None, None, None)],
        [("a", "b", "q", 1)],
    )
    step = Step.from_plain(1, plain)  # type: ignore[arg-type]
    assert step.events[0].body == '{"type":"text_delta","seq":1,"path":"a","text":"日本"}'
    assert step.messages[0].messages == [(1, '{"role":"user","content":"où ?"}')]
    assert (step.nodes[0].part, step.tasks[0].child, step.retired) == (
        "state",
        "a/b.1",
        [("a", "b", "q", 1)],
    )
    store = MemoryStore()
    store.create(SessionRows(StoredSession("s", "a", 1.0)))
    store.commit("s", [step])
    assert store.load("s").info.last_seq == 1


@pytest.mark.parametrize("kind", ["file", "text-only"])
def test_a_forgotten_task_with_a_lone_surrogate_is_retired_by_its_stored_key(
    kind: str, tmp_path: Path
) -> None:
    """A kind swap retires the tasks settled under the old kind, by the key the store holds:
    the prompt repaired, as its row was (the file store refused the raw key: no later step of
    the session could be written)."""
    store = sn.SQLiteStore(tmp_path / "runs.db") if kind == "file" else TextOnlyStore()
    worker = sn.Agent("worker", does="does one job", kind=sn.kinds.Resident())
    boss = sn.Agent("boss", does="delegates", team=[worker])
    session = sn.Session(boss, llm=sn.mock_llm(surrogate_boss), store=store)
    assert session.send("go").result().status == "done"
    worker.kind = sn.kinds.Worker()
    assert session.send("again, 再来 🤖").result().status == "done"
    session.flush()
    tasks = store.load(session.id).tasks
    assert [(t.prompt, t.retired is not None) for t in tasks] == [
        ("job \ufffd", True),
        ("job \ufffd", False),
    ]
    again = sn.Session.open(store, session.id, agent=boss)
    told = [e.type for e in session.events if e.type != "error"]  # the repair's notice may be
    assert [e.type for e in again.events if e.type != "error"] == told  # after the last commit
    store.close()
