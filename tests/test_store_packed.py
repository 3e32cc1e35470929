"""A step packed as one msgpack blob (`PendingStep.packed`) reads back (`_store.packed.unpack`)
into exactly the rows `PendingStep.plain` gives: the same message numbers, the same JSON bytes,
a stream's chunks as their fields. Every step of real sessions on the mock endpoint is checked
against a twin step (the same objects, the numbering as it stood) encoded alone; a step that
cannot be packed (a lone surrogate) says so, and its rows are then made as before, with the
numbers packing gave."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

import sagents_nb as sn
from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb._store.packed import unpack
from sagents_nb._store.protocol import PlainStep
from sagents_nb._tools.hooks import ToolCallInfo
from sagents_nb.events import (
    Event,
    ModelRequest,
    ModelResponse,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    event_fields,
)
from sagents_nb.kinds import Main, Realtime

from .strategies import events as any_event
from .strategies import models
from .test_event_registry import BudgetWarning
from .test_store_rows_unchanged import record, repeatable

if TYPE_CHECKING:
    from sagents_nb._runtime.journal import MessageWrites

pytestmark = pytest.mark.timeout(120)

TEXT = "été « déjà » · 猫が好き · 你好世界 · 🚀🐈 · `def f(x):\n    return {x: [1, 2]}`"
PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2))


class Chunk(TextDelta):
    """A variant of a stream's chunk (its `type`, another class): its row is its JSON."""

    source: str = ""


class Stamped(RunFinished):
    """A variant whose field msgpack would give back otherwise (an aware datetime in UTC)."""

    at: datetime.datetime | None = None


Check = tuple[bytes | None, PlainStep, PlainStep]
"""A step's blob, its twin's rows and its own rows (made after packing)."""


def copied(numbering: Numbering) -> Numbering:
    twin = Numbering()
    twin.texts, twin.held, twin.next = dict(numbering.texts), list(numbering.held), numbering.next
    return twin


def twin(step: PendingStep) -> PendingStep:
    """The same step, its numbering as it stands, telling no one of repairs."""
    return dataclasses.replace(step, numbering=copied(step.numbering), report=None)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Check]]:
    """Each step a durable session packs (the file store's writer packs first); beside it, its
    twin's rows and its own rows made after packing."""
    found: list[Check] = []
    plain, packed = PendingStep.plain, PendingStep.packed

    def checked(step: PendingStep) -> bytes | None:
        if step._numbers is None:
            alone = plain(twin(step))
            found.append((packed(step), alone, plain(step)))
        return packed(step)

    monkeypatch.setattr(PendingStep, "packed", checked)
    yield found


def faithful(checks: list[Check]) -> list[PlainStep]:
    """Assert that each step's rows are its twin's, and that its blob unpacks to them; returns
    the rows of the steps packed."""
    packed = []
    for blob, alone, rows in checks:
        assert rows == alone
        if blob is not None:
            assert unpack(blob) == [alone]
            packed.append(alone)
    return packed


def types(steps: list[PlainStep]) -> set[str]:
    return {event[2] for step in steps for event in step[0]}


def test_a_mix_of_sessions_packs_and_unpacks_to_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checks: list[Check]
) -> None:
    """A tree with pauses, a kind swap (its tasks retired) and a queued input; long texts; a
    lone surrogate; French, Japanese, Chinese and emoji; a streamed answer (`Realtime`); a
    `Resident`'s compaction; a fork that goes on."""
    repeatable(monkeypatch.setattr)
    record(tmp_path / "runs.db").store.close()
    packed = faithful(checks)
    assert 0 < len(packed) < len(checks)  # the steps with the lone surrogate are not packed
    assert {
        "text_delta",
        "compaction",
        "kind_swapped",
        "paused",
        "resumed",
        "task_finished",
        "model_request",
        "model_response",
    } <= types(packed)
    assert any(step[4] for step in packed)  # retired tasks
    assert any(task[5] is not None for step in packed for task in step[3])  # settled ones


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    return f"noté : {text} — {TEXT}"


class Stamper:
    """Emits, after each tool call, a custom event and two variants of package events."""

    session: sn.Session | None = None

    def after_tool(self, call: ToolCallInfo, result: sn.ToolResult) -> None:
        assert self.session is not None
        node = self.session.root.find(call.path)
        assert node is not None
        node.emit(BudgetWarning(tokens=120, budget=100, note=TEXT))
        node.emit(Chunk(text=TEXT, source="hook"))
        node.emit(Stamped(status="done", text=TEXT, turns=1, at=datetime.datetime.now(PLUS_TWO)))


def test_main_and_realtime_kinds_custom_events_and_pauses_pack_and_unpack(
    checks: list[Check],
) -> None:
    """`Main` sinking to cold storage and recalling, a `Realtime` child streaming in a window,
    a custom event class and variants of package events, a pause approved and resumed."""
    topics = ["giraffe height", "volcano ash 火山", "tax forms", "giraffe diet"]
    turns: list[str] = []

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if req.agent == "poet":
            return sn.reply(f"vers {len(req.tool_results)} · {TEXT}", stream=True)
        turns.append(req.last_user or "")
        step = len(turns) - 1
        if step < len(topics):
            return sn.reply(tool_calls=[sn.call("note", text=topics[step])])
        if step == len(topics):
            return sn.reply(tool_calls=[sn.call("recall", query="volcano")])
        if step == len(topics) + 1:
            return sn.reply(tool_calls=[sn.call("task", agent="poet", prompt=f"un poème {TEXT}")])
        return f"fini {TEXT}"

    poet = sn.Agent("poet", does="writes verse", kind=Realtime(window=1))
    stamper = Stamper()
    main = sn.Agent(
        "main", tools=[note], team=[poet], kind=Main(top_k=1, recent=2), hooks=[stamper]
    )
    session = sn.Session(main, llm=sn.mock_llm(handler), store=sn.SQLiteStore(":memory:"))
    stamper.session = session
    run = session.send(f"giraffe facts, please · {TEXT}", pause_on={"task"})
    while run.wait(timeout=30) == "paused":
        run.approve()
    assert run.status == "done"
    session.send("encore 再来").result()
    session.flush()
    packed = faithful(checks)
    assert len(packed) == len(checks)
    assert {"cold_sink", "budget_warning", "text_delta", "paused", "resumed"} <= types(packed)


def written(seq: int, *messages: sn.Message, swap: bool = False) -> MessageWrites:
    return ("a", "llm", seq, messages, swap)


def test_a_request_names_the_row_its_message_had_then_across_a_compaction_in_the_step() -> None:
    """Messages are numbered once, in write order, each event after the writes before it: a
    request before a compaction that stores its messages again names their first rows; one
    after names the new; a message not stored, or with a `meta` msgpack would change (an
    aware datetime), is its row's JSON."""
    system = sn.Message(role="system", content=TEXT)
    hint = sn.Message(
        role="user", content="psst", meta={"at": datetime.datetime(2026, 1, 2, tzinfo=PLUS_TWO)}
    )
    first = sn.Message(
        role="user", content="bonjour 你好", meta={"at": datetime.datetime.now(PLUS_TWO)}
    )
    answer = sn.Message(role="assistant", content=TEXT)
    step = PendingStep(
        6,
        [
            ModelRequest(seq=2, path="a", run=1, turn=1, model="m", messages=[system, hint, first]),
            ModelResponse(seq=3, path="a", run=1, turn=1, message=answer),
            ModelRequest(seq=5, path="a", run=1, turn=2, model="m", messages=[first, answer]),
            ModelResponse(seq=6, path="a", run=1, turn=2, message=answer),
        ],
        [written(1, first), written(3, answer), written(4, first, answer, swap=True)],
        Numbering(),
    )
    alone = twin(step).plain()
    blob = step.packed()
    assert blob is not None and unpack(blob) == [alone] and step.plain() == alone
    bodies = [event[4] for event in alone[0]]
    system_json = f'{{"role":"system","content":"{TEXT}"}}'.replace("\n", "\\n")
    hint_json = '{"role":"user","content":"psst","meta":{"at":"2026-01-02T00:00:00+02:00"}}'
    assert bodies[0].endswith(f'"messages":[{system_json},{hint_json},1]}}')
    assert bodies[1].endswith(',"message":2}') and bodies[2].endswith('"messages":[3,4]}')
    assert bodies[3].endswith(',"message":4}')
    assert [n for write in alone[1] for n, _ in write[3]] == [1, 2, 3, 4]


def test_a_lone_surrogate_is_not_packed_and_its_rows_are_repaired_with_the_same_numbers() -> None:
    """`packed()` says None; `plain()` then gives the rows a step encoded alone gives, its
    text repaired and said once, numbered once: the next step goes on from there."""
    said: list[int] = []
    kept = sn.Message(role="user", content="ça va")
    bad = sn.Message(role="assistant", content="fin \udc80 猫")
    numbering = Numbering()
    step = PendingStep(
        3,
        [
            ModelRequest(seq=2, path="a", run=1, turn=1, model="m", messages=[kept]),
            ModelResponse(seq=3, path="a", run=1, turn=1, message=bad),
        ],
        [written(1, kept), written(3, bad)],
        numbering,
        report=said.append,
    )
    alone = twin(step).plain()
    assert step.packed() is None
    assert step.plain() == alone and said == [1]
    assert '"content":"fin \ufffd 猫"' in alone[1][1][3][0][1]
    assert numbering.next == 3
    later = PendingStep(
        4,
        [ModelRequest(seq=4, path="a", run=1, turn=2, model="m", messages=[kept, bad])],
        [],
        numbering,
    )
    blob = later.packed()
    assert blob is not None and unpack(blob)[0][0][0][4].endswith('"messages":[1,2]}')


@st.composite
def steps(draw: st.DrawFn) -> PendingStep:
    """A step of any events (their seqs in order), messages written among them, requests and
    responses naming some of those or messages of their own."""
    pool = draw(st.lists(models(sn.Message), max_size=5))
    drawn: list[Event] = draw(st.lists(any_event(), min_size=1, max_size=8))
    events: list[Event] = []
    for seq, event in enumerate(drawn, start=1):
        if type(event) is ModelRequest and pool:
            view = draw(st.lists(st.sampled_from(pool), max_size=4)) + event.messages
            event = replace(event, messages=view)
        elif type(event) is ModelResponse and pool and draw(st.booleans()):
            event = replace(event, message=draw(st.sampled_from(pool)))
        events.append(replace(event, seq=seq))
    seqs = sorted(draw(st.integers(0, len(events))) for _ in pool)
    writes = [
        written(seq, message, swap=draw(st.booleans()))
        for seq, message in zip(seqs, pool, strict=True)
    ]
    return PendingStep(len(events), events, writes, Numbering())


@settings(max_examples=80, deadline=None)
@given(steps())
def test_any_events_and_messages_pack_and_unpack_to_their_rows(step: PendingStep) -> None:
    """Every registered event class, fields of any value its annotation allows (text of any
    script, any floats, `Any` fields of any JSON), messages with any `meta`."""
    alone = twin(step).plain()
    blob = step.packed()
    assert blob is not None and unpack(blob) == [alone]


def test_a_value_msgpack_cannot_take_is_not_packed() -> None:
    """An integer past 64 bits (JSON takes it) in a field packed as it is: None, and the rows
    are made as before."""
    event = ToolCallFinished(
        seq=1, path="a", run=1, call_id="c", name="n", result="r", duration=2**70
    )
    step = PendingStep(1, [event], [], Numbering())
    assert step.packed() is None
    assert '"duration":1180591620717411303424' in step.plain()[0][0][4]


def test_a_stream_chunk_unpacks_to_its_fields() -> None:
    """A stream's chunk stays its fields, as `plain()` leaves it for the store."""
    chunk = TextDelta(seq=1, path="a", run=1, text=TEXT)
    step = PendingStep(1, [chunk], [], Numbering())
    blob = step.packed()
    assert blob is not None
    assert unpack(blob)[0][0] == [(1, 1, "text_delta", "a", event_fields(chunk))]
