"""A reopened session reads each node's stored messages at the first look (`Node.history`), from
any thread: what it reads is what an eager read gave (the live session's storage), the views in
its events share those message objects, a fork at any cut and a run that goes on are the same as
from the session that never closed, and a pause is presented again after the reopen."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._runtime.node import Node

from .settled import settled
from .test_fork_faithful import note

pytestmark = pytest.mark.timeout(120)


def model(req: sn.ChatRequest) -> sn.Reply | str:
    """The chef delegates to two leads, each lead to an aide who takes a note; all answer."""
    if req.agent == "chef" and not req.tool_results:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="lead", prompt=f"cherche « {req.last_user} » 猫"),
                sn.call("task", agent="lead", prompt=f"vérifie « {req.last_user} » 東京"),
            ]
        )
    if req.agent == "lead" and not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="note-le, s'il te plaît")])
    if req.agent == "aide" and not req.tool_results:
        return sn.reply(tool_calls=[sn.call("note", text="trouvé 🐈 `x = 1`")])
    return f"{req.agent} : {req.tool_results[-1] if req.tool_results else 'rien'}"


def team() -> sn.Agent:
    aide = sn.Agent("aide", does="prend des notes", tools=[note])
    lead = sn.Agent("lead", does="cherche", team=[aide])
    return sn.Agent("chef", team=[lead], kind=sn.kinds.Worker())


def histories(session: sn.Session) -> dict[str, list[dict[str, Any]]]:
    return {n.path: [m.model_dump() for m in n.history] for n in session.root.walk()}


def texts(session: sn.Session) -> dict[str, list[tuple[str, str | None]]]:
    return {n.path: [(m.role, m.content) for m in n.history] for n in session.root.walk()}


def unread(session: sn.Session) -> list[str]:
    """The nodes whose stored messages were not read yet."""
    return [n.path for n in session.root.walk() if "history" not in vars(n)]


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, sn.Session]:
    session = sn.Session(team(), llm=sn.mock_llm(model), store=tmp_path / "runs.db")
    session.send("les chats").result()
    session.send("les trains 🚄").result()
    return tmp_path / "runs.db", session


def test_a_reopened_session_reads_each_nodes_messages_at_the_first_look(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    nodes = [n.path for n in reopened.root.walk()]
    assert len(nodes) > 5 and unread(reopened) == nodes
    assert reopened.tree == live.tree  # the tree needs none of them
    assert unread(reopened) == nodes
    aide = reopened.root.find("chef/lead.2/aide.1")
    assert isinstance(aide, Node) and aide.history_tokens > 0  # counted: read now
    assert unread(reopened) == [p for p in nodes if p != aide.path]
    assert histories(reopened) == histories(live)
    assert reopened.llm_messages == reopened.root.history
    # the views in the stored events name the very messages of the transcripts
    held = {id(m) for n in reopened.root.walk() for m in n.history}
    held.update(map(id, reopened.root.display or ()))
    views = [e for e in reopened.events if isinstance(e, sn.events.ModelRequest)]
    assert views and all(id(m) in held for e in views for m in e.messages if m.role != "system")
    reopened.store.close()


def test_the_first_look_from_many_threads_at_once_reads_one_storage(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team())
    node = reopened.root.find("chef/lead.1")
    assert node is not None and unread(reopened)
    start = threading.Barrier(8)
    seen: list[list[sn.Message]] = []

    def look() -> None:
        start.wait()
        seen.append(node.history)

    threads = [threading.Thread(target=look) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(history is node.history for history in seen)
    numbering = reopened.journal._numbering  # type: ignore[union-attr]
    numbered = numbering.numbered()
    assert all(numbered[int(numbering.texts[id(m)])] is m for m in node.history)
    reopened.store.close()


def test_a_fork_of_a_reopened_session_at_any_cut_is_the_live_sessions_fork(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    last = live.events[-1].seq
    for seq in [*random.Random(32).sample(range(1, last + 1), 8), last]:
        reopened = sn.Session.open(db, live.id, agent=team())
        forked, expected = reopened.fork(at=seq), live.fork(at=seq)
        assert unread(reopened), "the fork read the reopened session's storage"
        assert histories(forked) == histories(expected), seq
        assert forked.tree == expected.tree, seq
    live.store.close()


def test_a_run_after_the_reopen_names_the_stored_messages_by_number(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team(), llm=sn.mock_llm(model))
    result = reopened.send("encore 🦀").result()
    twin = sn.Session(team(), llm=sn.mock_llm(model))  # the same three messages, never closed
    for message in ("les chats", "les trains 🚄", "encore 🦀"):
        expected = twin.send(message).result()
    assert result.text == expected.text
    assert texts(reopened) == texts(twin)  # (the mocks number their calls each their own way)
    with sqlite3.connect(settled(db)) as conn:
        (body,) = conn.execute(
            "SELECT body FROM events WHERE session = ? AND type = 'model_request' "
            "AND path = ? ORDER BY seq DESC LIMIT 1",
            (reopened.id, reopened.root.path),
        ).fetchone()
    refs = json.loads(body)["messages"]
    assert sum(isinstance(ref, int) for ref in refs) >= len(refs) - 2  # all but the new ones
    reopened.flush()
    again = sn.Session.open(db, reopened.id, agent=team())
    assert histories(again) == histories(reopened)
    live.store.close()


def test_a_message_written_to_a_reopened_node_before_any_count_is_counted_once(
    stored: tuple[Path, sn.Session],
) -> None:
    db, live = stored
    reopened = sn.Session.open(db, live.id, agent=team(), llm=sn.mock_llm(model))
    twin = sn.Session(team(), llm=sn.mock_llm(model))
    for message in ("les chats", "les trains 🚄"):
        twin.send(message).result()
    reopened.send("encore 🦀 ここ").result()
    twin.send("encore 🦀 ここ").result()
    sizes = [
        (e.path, e.view_tokens, e.storage_tokens)
        for session in (reopened, twin)
        for e in session.events
        if isinstance(e, sn.events.ContextBuilt) and e.run == 3 and e.path == "chef"
    ]
    assert sizes[: len(sizes) // 2] == sizes[len(sizes) // 2 :]
    assert all(view == storage for _, view, storage in sizes)  # a Worker shows all it keeps
    assert reopened.root.history_tokens == twin.root.history_tokens
    live.store.close()


def finish(run: sn.Run) -> str:
    while run.wait(10) == "paused":
        run.approve()
    return run.result().text


def test_a_pause_is_presented_again_after_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(team(), llm=sn.mock_llm(model), store=db)
    run = session.send("les chats", pause_on={"tool"})
    assert run.wait(10) == "paused"
    waiting = [(p.path, p.name, p.arguments) for p in run.pending]
    session.flush()
    copy = tmp_path / "copy.db"  # as a killed process left it, while this one goes on
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    reopened = sn.Session.open(copy, session.id, agent=team(), llm=sn.mock_llm(model))
    assert [(p.path, p.name, p.arguments) for p in reopened.pending] == waiting
    assert unread(reopened)
    resumed = reopened.resume()
    assert resumed.wait(10) == "paused"
    assert [(p.path, p.name, p.arguments) for p in resumed.pending] == waiting
    assert finish(resumed) == finish(run)
    assert texts(reopened) == texts(session)
    reopened.store.close()
    session.store.close()
