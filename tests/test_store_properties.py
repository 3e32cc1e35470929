"""The store under arbitrary text and under cancellation: what was written reads back the same."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import tempfile
import threading
import typing
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb._runtime.restore import _Stored
from sagents_nb._runtime.snapshot import NodeSnapshot
from sagents_nb._store.text import body_text, safe_json
from sagents_nb._store.writer import StepWriter
from sagents_nb.events import Event, event_fields, parse_event
from sagents_nb.store import SessionRows, Store, StoredSession

from .strategies import events, models
from .test_store_contract import KINDS, make_store


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
    from sagents_nb._store.sqlite.writes import insert_rows

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (session TEXT, a INTEGER, b TEXT)")
    insert_rows(db, "INSERT INTO t", "s1", [(i, f"row {i}") for i in range(count)])
    assert db.execute("SELECT session, a, b FROM t ORDER BY rowid").fetchall() == [
        ("s1", i, f"row {i}") for i in range(count)
    ]


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_events_shipped_as_their_fields_read_back_the_same(data: st.DataObject) -> None:
    """Events whose fields are all plain values may reach the store thread as their fields
    (`event_fields`, as a stream's chunk does) and get their JSON there: it must parse back to
    the same event."""
    from sagents_nb._runtime.journal import plain_events
    from sagents_nb._store.text import body_text

    event = data.draw(events(plain_events()))
    assert parse_event(body_text(event_fields(event))) == event


def _constant(annotation: object) -> bool:
    """A `Literal` (or an optional one): one of the class's own constants, not text data."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return bool(args) and all(a is type(None) or _constant(a) for a in args)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_a_lone_surrogate_in_any_text_of_a_plain_event_is_repaired(data: st.DataObject) -> None:
    """The journal looks for lone surrogates only in a plain event's text fields, learnt from
    its class (`text_fields`): one put in any field holding text, or a list of texts, is found
    and stored as U+FFFD, and said."""
    from sagents_nb._runtime.journal import plain_events

    event = data.draw(events(plain_events()))
    fields = type(event).model_fields
    texts = [
        name
        for name, value in event_fields(event).items()
        if not _constant(fields[name].annotation)
        and (type(value) is str or (type(value) is list and value and type(value[0]) is str))
    ]
    if not texts:
        return
    name = data.draw(st.sampled_from(texts))
    value = getattr(event, name)
    setattr(event, name, ["x\ud800", *value[1:]] if type(value) is list else value + "\udc80")
    said: list[int] = []
    body = PendingStep(0, [], [], Numbering(), report=said.append)._event_body(event)
    assert said == [1]
    stored = parse_event(body_text(body))
    assert "\ufffd" in str(getattr(stored, name))


@pytest.fixture(scope="module", params=KINDS)
def any_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    store = make_store(request.param, tmp_path_factory.mktemp("store"), request)
    yield store
    store.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(events(), min_size=1, max_size=6))
def test_any_event_is_stored_and_read_back(any_store: Store, drawn: list[Event]) -> None:
    """Any registered event, encoded by the journal and committed by its writer (the writer
    process for a file), loads back equal from every store (the strategy draws every class in
    the registry)."""
    numbered = [event.model_copy(update={"seq": n}) for n, event in enumerate(drawn, 1)]
    sid = f"s{next(_ids)}"
    writer = StepWriter(any_store, sid, create=SessionRows(StoredSession(sid, "a", 0.0)))
    writer.put(PendingStep(len(numbered), numbered, [], Numbering()))
    writer.drain()
    assert _Stored(any_store.load(sid)).events() == numbered


_ids = itertools.count()


@settings(max_examples=150, deadline=None)
@given(models(sn.Message))
def test_a_message_row_holds_its_fields_but_their_defaults(message: sn.Message) -> None:
    """The journal writes a message's row by hand (`stored_fields`, on every stored message):
    the form pydantic's `exclude_defaults` gave, which reads back to the same message."""
    from sagents_nb._store.rows import stored_fields

    assert stored_fields(message) == message.model_dump(exclude_defaults=True)
    assert sn.Message.model_validate(stored_fields(message)) == message


@settings(max_examples=150, deadline=None)
@given(models(sn.Message))
def test_a_message_rows_json_is_its_stored_fields(message: sn.Message) -> None:
    """A message's row is written by msgspec from a struct that leaves defaults out
    (`message_json`): the bytes of `stored_fields`' JSON, or its repaired form."""
    from sagents_nb._store.rows import message_json, stored_fields

    data = stored_fields(message)
    expected = safe_json(lambda: msgspec.json.encode(data), lambda: data, None)
    assert message_json(message) == expected


_SNAPSHOT = NodeSnapshot(
    "worker",
    "worker",
    "parent",
    0,
    "running",
    1,
    1,
    1,
    79,
    (78, 1, 79),
    (("worker", 1),),
    (("helper", "parent/helper"),),
    0,
    "p0",
    "Running worker",
    0,
    (),
    (),
    None,
)
_OTHER = NodeSnapshot(
    "solo",
    "main",
    None,
    2,
    "done",
    3,
    2,
    5,
    211,
    (209, 2, 211),
    (),
    (),
    1,
    "é 你好 🎉",
    None,
    1,
    ("shell",),
    ("cut",),
    ("done", "ok"),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=len(_SNAPSHOT), max_size=len(_SNAPSHOT)))
def test_a_state_row_holds_exactly_the_fields_that_changed(flags: list[bool]) -> None:
    """`changes` (a picker made once for each set of changed fields) is the part of `row()`
    whose fields differ, in field order, mappings as objects; again from the cache."""
    changed = NodeSnapshot(
        *(b if f else a for a, b, f in zip(_SNAPSHOT, _OTHER, flags, strict=True))
    )  # every field of the two differs
    want = {k: v for (k, v), f in zip(changed.row().items(), flags, strict=True) if f}
    for _ in range(2):
        got = changed.changes(_SNAPSHOT)
        assert list(got.items()) == list(want.items())
