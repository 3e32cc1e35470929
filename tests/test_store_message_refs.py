"""Events name stored messages by number: the number an event holds must be the row its message
had as of that event, whatever later writes of the same step did (issue 29, item 2). A Resident
child compacting several times within one commit step stores a message again under a new
number; an event before the compaction must keep naming the first row, which a fork before
the compaction has (and whose number the fork never gives to a message of its own)."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb._runtime.journal import DURABILITY
from sagents_nb.store import MemoryStore

from .settled import settled

pytestmark = pytest.mark.timeout(240)


@sn.tool
def lookup(left: int) -> str:
    """Look something up.

    Args:
        left: how many lookups are left after this one.
    """
    return f"valeur — 値 🔎 « déjà vu » {'lorem ipsum ' * 8}; left={left}"


def memo_agent(window: int = 250) -> sn.Agent:
    memo = sn.Agent(
        "memo",
        does="remembers",
        tools=[lookup],
        kind=sn.kinds.Resident(window_tokens=window, keep_recent=2, max_turns=20),
    )
    return sn.Agent("chief", does="leads", team=[memo])


def handler(req: sn.ChatRequest) -> sn.Reply | str:
    """The chief hands each input to memo; memo looks up as many times as its input says (the
    number after `#`), then answers; a request without tools is a summary's."""
    if "task" in req.tools:
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="memo", prompt=req.last_user)])
        return f"chief : {req.tool_results[-1]}"
    if not req.tools:
        return f"résumé — 要約 of {len(req.messages)} messages"
    if req.last["role"] == "user":
        left = int(req.last_user.rpartition("#")[2] or 0)
    else:
        left = int(req.tool_results[-1].rpartition("left=")[2]) - 1
    if left >= 0:
        return sn.reply(tool_calls=[sn.call("lookup", left=left)])
    return f"memo a fini ✅ after {len(req.messages)} messages"


def dumped(session: sn.Session) -> list[dict[str, Any]]:
    return [event.model_dump() for event in session.events]


def compactions(session: sn.Session) -> int:
    return sum(event.type == "compaction" for event in session.events)


def make_store(where: str, tmp_path: Path) -> Any:
    return MemoryStore() if where == "memory" else tmp_path / "runs.db"


@pytest.mark.parametrize("where", ["file", "memory"])
@pytest.mark.parametrize("durability", DURABILITY)
def test_a_fork_at_any_event_has_the_sources_events(
    tmp_path: Path, durability: str, where: str
) -> None:
    store = make_store(where, tmp_path)
    session = sn.Session(memo_agent(), llm=sn.mock_llm(handler), store=store, durability=durability)
    session.send("cherche — 探して #6").result()
    assert compactions(session) >= 3  # with "exit" and "async", within one step
    source = dumped(session)
    for k in range(1, len(source) + 1):
        fork = session.fork(at=k)
        assert dumped(fork) == source[:k], f"fork at event {k} ({source[k - 1]['type']})"


@pytest.mark.parametrize("where", ["file", "memory"])
@pytest.mark.parametrize("durability", ["exit", "turn"])
def test_a_send_on_a_fork_leaves_its_first_events_as_they_were(
    tmp_path: Path, durability: str, where: str
) -> None:
    store = make_store(where, tmp_path)
    agent = memo_agent()
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=store, durability=durability)
    session.send("cherche — 探して #5").result()
    source = dumped(session)
    replies = [e["seq"] for e in source if e["type"] == "model_response" and e["path"] != "chief"]
    for k in replies:
        fork = session.fork(at=k)
        fork.resume().result(timeout=30)
        fork.send("encore 🔁 #2").result(timeout=30)
        live = dumped(fork)
        assert live[:k] == source[:k], f"fork at event {k}, after a send"
        again = sn.Session.open(store, fork.id, agent=agent, llm=sn.mock_llm(handler))
        assert dumped(again) == live, f"fork at event {k}, reopened"
        assert again.llm_messages == fork.llm_messages


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_child_spawned_again_on_a_fork_does_not_inherit_an_unsealed_childs_messages(
    tmp_path: Path, where: str
) -> None:
    """A fork cut after a child's first message was stored and before its node's state row
    (sealed at its first model request) has the message row and no node: a child the fork
    spawns at the same path starts with its own storage, live and reopened."""
    store = make_store(where, tmp_path)
    agent = memo_agent()
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=store)
    session.send("tâche 0 — 任務 #0").result()
    spawned = next(e for e in session.events if e.path == "chief/memo.1")
    fork = session.fork(at=spawned.seq)
    fork.flush()
    stored = fork.store.load(fork.id)
    assert fork.node("chief/memo.1") is None
    assert [m.path for m in stored.messages].count("chief/memo.1") == 1
    fork.send("tâche 1 — 任務 #0").result(timeout=30)
    memo = fork.node("chief/memo.1")
    assert memo is not None and memo.history[0].content == "tâche 1 — 任務 #0"
    again = sn.Session.open(store, fork.id, agent=agent)
    assert {n.path: n.history for n in again.root.walk()} == {
        n.path: n.history for n in fork.root.walk()
    }
    assert dumped(again) == dumped(fork)


def test_a_forks_inherited_event_naming_one_of_its_own_messages_says_it_was_not_kept(
    tmp_path: Path,
) -> None:
    """A file written before events named each message as of the event may hold, in a fork,
    an inherited event naming a number the fork gave to a message of its own: it reads as
    not stored, never as the fork's message."""
    db = tmp_path / "runs.db"
    agent = sn.Agent("solo")
    session = sn.Session(agent, llm=sn.script("un", "deux", "trois"), store=db)
    session.send("premier — 一").result()
    reply = next(e for e in session.events if e.type == "model_response")
    fork = session.fork()
    fork.send("second — 二").result()
    fork.flush()
    own = max(row.n for row in fork.store.load(fork.id).messages)
    with sqlite3.connect(settled(db)) as file:
        (body,) = file.execute(
            "SELECT body FROM events WHERE session = ? AND seq = ?", (fork.id, reply.seq)
        ).fetchone()
        data = json.loads(body)
        assert isinstance(data["message"], int)  # named by number
        data["message"] = own  # as an older sagents_nb could leave it
        file.execute(
            "UPDATE events SET body = ? WHERE session = ? AND seq = ?",
            (json.dumps(data), fork.id, reply.seq),
        )
    again = sn.Session.open(db, fork.id, agent=agent)
    stored = again.events[reply.seq - 1]
    assert isinstance(stored, sn.events.ModelResponse)
    assert stored.message.content == "[this message of the view was not stored]"
    assert again.llm_messages == fork.llm_messages


Program = list[tuple[str, int]]
"""What a drawn program does, in order: ("send", lookups), ("fork", where: an index into the
current session's events), ("reopen", 0), ("resume", 0): the run a fork cut, if any."""

programs: st.SearchStrategy[Program] = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 5)),
        st.tuples(st.just("fork"), st.integers(0, 10**6)),
        st.tuples(st.just("reopen"), st.just(0)),
        st.tuples(st.just("resume"), st.just(0)),
    ),
    min_size=1,
    max_size=6,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("programs")


_files = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    programs,
    st.sampled_from(DURABILITY),
    st.sampled_from(["file", "memory"]),
    st.integers(150, 600),
)
def test_any_program_reads_back_as_it_ran(
    folder: Path, program: Program, durability: str, where: str, window: int
) -> None:
    """Sends, forks anywhere and reopens, drawn at random, on a Resident that compacts: every
    session reopened from the store has the events and storage it had live, and a fork begins
    with its source's events."""
    store: Any = MemoryStore() if where == "memory" else folder / f"p{next(_files)}.db"
    agent = memo_agent(window)
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=store, durability=durability)
    made = {session.id: session}  # the newest object of each stored session
    for n, (what, value) in enumerate(program):
        if what == "send":
            session.send(f"tâche {n} — 任務 #{value}").result(timeout=30)
        elif what == "fork" and session.events:
            source = dumped(session)
            k = 1 + value % len(source)
            session = session.fork(at=k)
            assert dumped(session) == source[:k], f"step {n}: fork at {k}"
            made[session.id] = session
        elif what == "resume" and session.runs and session.runs[-1].status == "incomplete":
            session.resume().result(timeout=30)
        elif what == "reopen":
            session.flush()
            session = sn.Session.open(store, session.id, agent=agent, llm=sn.mock_llm(handler))
            made[session.id] = session
    for live in made.values():
        live.flush()
        again = sn.Session.open(store, live.id, agent=agent)
        assert dumped(again) == dumped(live), f"session {live.id} reopened"
        assert {n.path: n.history for n in again.root.walk()} == {
            n.path: n.history for n in live.root.walk()
        }
