"""The store under arbitrary text and under cancellation: what was written reads back the same."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import threading
import typing
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb.events import parse_event


@sn.tool
def echo(text: str) -> str:
    """Echo text back."""
    return text


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=3), st.text(max_size=300))
def test_any_text_round_trips_through_the_store(prompts: list[str], tool_text: str) -> None:
    def handler(req: sn.ChatRequest):
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("echo", text=tool_text)])
        return req.tool_results[-1]

    agent = sn.Agent("a", tools=[echo])
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "runs.db")
        session = sn.Session(agent, llm=sn.mock_llm(handler), store=path)
        for prompt in prompts:
            assert session.send(prompt).result().text == tool_text
        session.flush()
        again = sn.Session.open(path, session.id, agent=agent)
        assert again.llm_messages == session.llm_messages
        assert again.display_messages == session.display_messages
        assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]


def test_cancel_mid_tool_leaves_the_store_consistent_and_the_session_usable(
    tmp_path: Path,
) -> None:
    started = threading.Event()

    @sn.tool
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    def handler(req: sn.ChatRequest):
        if req.last["role"] == "user" and req.last_user == "go":
            return sn.reply(tool_calls=[sn.call("slow")])
        return "fine"

    agent = sn.Agent("a", tools=[slow])
    path = tmp_path / "runs.db"
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=str(path))
    run = session.send("go")
    assert started.wait(5)
    run.cancel()
    assert run.wait(5) == "cancelled"
    session.flush()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    again = sn.Session.open(str(path), session.id, agent=agent, llm=sn.mock_llm(handler))
    history = again.llm_messages
    calls = {c.id for m in history for c in m.tool_calls or ()}
    assert calls == {m.tool_call_id for m in history if m.role == "tool"}
    assert again.send("next").result().text == "fine"


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=300))
def test_rows_are_inserted_in_order_whatever_their_count(count: int) -> None:
    from sagents_nb._store.sqlite.writer_process import insert_rows

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    insert_rows(db, "INSERT INTO t", [(i, f"row {i}") for i in range(count)])
    assert db.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == [
        (i, f"row {i}") for i in range(count)
    ]


def plain_values(annotation: object) -> st.SearchStrategy[object]:
    """Values of a plain field type (see `_store_journal.plain_events`)."""
    simple = {
        str: st.text(max_size=20),
        int: st.integers(-(10**9), 10**9),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
        type(None): st.none(),
    }
    if annotation in simple:
        return simple[annotation]  # type: ignore[index]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return st.sampled_from(args)
    if typing.get_origin(annotation) is list:
        return st.lists(st.text(max_size=10), max_size=3)
    return st.one_of(*map(plain_values, args))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_events_shipped_as_their_fields_read_back_the_same(data: st.DataObject) -> None:
    """Events whose fields are all plain values reach the writer process as their `__dict__`
    and get their JSON there: it must parse back to the same event."""
    from sagents_nb._store.journal import plain_events
    from sagents_nb._store.sqlite.writer_process import body_text

    cls = data.draw(st.sampled_from(sorted(plain_events(), key=lambda c: c.__name__)))
    fields = {
        name: data.draw(plain_values(info.annotation), label=name)
        for name, info in cls.model_fields.items()
        if name != "type"
    }
    event = cls(**fields)
    assert parse_event(body_text(event.__dict__)) == event
