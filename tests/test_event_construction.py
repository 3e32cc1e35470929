"""The events and messages as `msgspec` structs: their pydantic-style surface, what a
`Message` refuses at construction, user-defined events, and JSON both ways."""

from __future__ import annotations

import pickle
from typing import Any, Literal

import msgspec
import pydantic
import pytest

import sagents_nb as sn
from sagents_nb._base.messages import ToolCall, estimate_tokens
from sagents_nb.events import Event, ModelRequest, event_adapter, parse_event

TEXTS = [
    "déjà vu, très bien",
    "东京的天气",
    "東京は晴れ",
    "🙂 ok ✓",
    "def f():\n    return {'a': 1}",
]

# one of each shape the runtime makes on every turn, with text in several scripts
EVENTS: list[Event] = [
    sn.events.StatusChanged(status="running", detail=None),
    sn.events.ContextBuilt(
        turn=2,
        kind="main",
        view_messages=3,
        storage_messages=3,
        view_tokens=40,
        storage_tokens=40,
        from_storage=[0, 0, 3],
    ),
    ModelRequest(
        turn=1,
        model="m",
        messages=[sn.Message(role="user", content=t) for t in TEXTS],
        tools=["noop"],
        tool_choice="auto",
    ),
    sn.events.ModelResponse(
        turn=1,
        message=sn.Message(
            role="assistant", content="東京 ✓", tool_calls=(ToolCall(id="c", name="n"),)
        ),
        usage=sn.Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3),
        duration=0.25,
    ),
    sn.events.ToolCallFinished(
        call_id="c1", name="noop", result="déjà vu", status="denied", duration=0.5
    ),
    sn.events.TaskFinished(child="p/w.1", agent="w", status="done", text="t", turns=2),
    sn.events.RunStarted(path="", agent="a", input="🙂", pause_on=["tool"], breakpoints=[{}]),
    sn.events.Paused(
        pause_id=1,
        action="model",
        request=sn.events.PausedRequest(messages=[sn.Message(role="user", content="à")], model="m"),
    ),
    sn.events.TextDelta(text="日本語"),
]


@pytest.mark.parametrize("event", EVENTS, ids=[type(e).__name__ for e in EVENTS])
def test_an_event_goes_to_json_and_back(event: Event) -> None:
    text = event.model_dump_json()
    assert text.startswith(f'{{"type":"{event.type}","seq":0,')  # the tag first, as before
    assert parse_event(text) == event and parse_event(text.encode()) == event
    assert parse_event(event.model_dump()) == event
    assert type(event).model_validate(event.model_dump()) == event
    assert pickle.loads(pickle.dumps(event)) == event
    assert repr(event).startswith(f"{type(event).__name__}(type={event.type!r}, seq=0, ts=0.0,")
    assert list(type(event).model_fields)[:5] == ["type", "seq", "ts", "path", "run"]


def test_dumps_leave_out_defaults_and_none_as_pydantic_did() -> None:
    # the forms the queue rows, resumed decisions and replays keep (written by pydantic before)
    message = sn.Message(role="assistant", tool_calls=[{"id": "c", "name": "n"}])
    assert message.model_dump(mode="json", exclude_defaults=True) == {
        "role": "assistant",
        "tool_calls": [{"id": "c", "name": "n"}],
    }
    tagged = sn.Message(role="user", content="x", meta={"a": 1})
    assert tagged.model_dump(exclude_none=True) == {
        "role": "user",
        "content": "x",
        "meta": {"a": 1},
    }
    finished = sn.events.TaskFinished(child="c", agent="a", status="s", text="t")
    assert finished.model_dump(exclude_defaults=True) == {
        "child": "c",
        "agent": "a",
        "status": "s",
        "text": "t",
    }
    assert finished.model_dump()["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
    }
    assert finished.model_dump_json(indent=1).startswith('{\n "type": "task_finished",\n "seq": 0')


def test_a_message_with_a_bad_value_is_refused_at_construction() -> None:
    bad: list[dict[str, Any]] = [
        {"role": "bogus"},
        {"role": 5},
        {"role": ["user"]},
        {"role": "user", "content": 7},
        {"role": "user", "content": b"bytes"},
        {"role": "tool", "tool_call_id": 3},
        {"role": "user", "name": 3},
        {"role": "assistant", "tool_calls": "c"},
        {"role": "assistant", "tool_calls": [3]},
        {"role": "user", "meta": []},
    ]
    for values in bad:
        with pytest.raises(sn.ConfigurationError) as caught:
            sn.Message(**values)
        assert isinstance(caught.value, TypeError)
        assert str(caught.value).startswith("sn.Message(...): ")
        field = next(iter(set(values) - {"role"}), "role")
        assert f"{field} must be" in str(caught.value)
    with pytest.raises(ValueError, match="role"):  # msgspec.ValidationError, a ValueError
        sn.Message.model_validate({"role": "bogus"})
    with pytest.raises(ValueError, match="content"):
        sn.Message.model_validate_json('{"role": "user", "content": 7}')
    with pytest.raises(sn.ConfigurationError, match="content must be"):
        sn.Message(role="user").model_copy(update={"content": 7})


def test_a_message_is_immutable_hashable_and_keeps_its_caches_apart() -> None:
    message = sn.Message(role="assistant", content="東京", tool_calls=[{"id": "c", "name": "n"}])
    assert message.tool_calls == (ToolCall(id="c", name="n"),)  # a list given: a tuple kept
    with pytest.raises(AttributeError):
        message.content = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        message.tool_calls[0].name = "x"  # type: ignore[index,misc]
    wire, tokens = message.to_wire(), estimate_tokens(message)
    assert message.to_wire() is wire and estimate_tokens(message) == tokens
    again = sn.Message(role="assistant", content="東京", tool_calls=(ToolCall(id="c", name="n"),))
    assert again == message and hash(again) == hash(message)  # the caches are not fields
    assert {message, again} == {message}
    copy = message.model_copy(update={"content": "京都"})
    assert copy.content == "京都" and copy.to_wire()["content"] == "京都"
    assert message.to_wire()["content"] == "東京"
    with_meta = sn.Message(role="user", content="hi", meta={"summary": True})
    assert "meta" not in repr(with_meta) and repr(with_meta) == (
        "Message(role='user', content='hi', tool_calls=None, tool_call_id=None, name=None)"
    )
    assert with_meta != sn.Message(role="user", content="hi")  # meta is a field all the same
    assert hash(with_meta) == hash(sn.Message(role="user", content="hi"))
    assert with_meta.text == "hi" and sn.Message(role="assistant").text == ""


def test_an_event_defined_elsewhere_registers_and_parses() -> None:
    class Noted(Event):
        type: Literal["test_noted"] = "test_noted"
        note: str
        tags: list[str] = msgspec.field(default_factory=list)
        weight: float = 1.0

    class LoudNoted(Noted):  # keeps its parent's type: a variant, not registered
        loud: bool = True

    event = Noted(note="ça va 🙂", path="a/b.1")
    assert event.type == "test_noted" and Noted.model_fields["type"].default == "test_noted"
    assert event.model_dump_json() == (
        '{"type":"test_noted","seq":0,"ts":0.0,"path":"a/b.1","run":0,'
        '"note":"ça va 🙂","tags":[],"weight":1.0}'
    )
    assert parse_event(event.model_dump_json()) == event
    assert event_adapter().validate_python({"type": "test_noted", "note": "n"}) == Noted(note="n")
    assert LoudNoted(note="x").type == "test_noted"
    assert type(parse_event(LoudNoted(note="x").model_dump_json())) is Noted
    assert Noted(note="a").tags is not Noted(note="b").tags  # a fresh list each
    with pytest.raises(TypeError, match="is taken by"):

        class Clash(Event):
            type: Literal["run_started"] = "run_started"

    with pytest.raises(TypeError, match=r"Pydantic\.tags: pydantic's Field\(\.\.\.\) does not"):

        class Pydantic(Event):
            type: Literal["test_pydantic"] = "test_pydantic"
            tags: list[str] = pydantic.Field(default_factory=list)


def test_parsing_validates_what_construction_does_not() -> None:
    with pytest.raises(msgspec.ValidationError, match="status"):
        parse_event('{"type": "status_changed", "status": 3}')
    with pytest.raises(msgspec.ValidationError, match="text"):
        parse_event({"type": "task_finished", "child": "c", "agent": "a", "status": "done"})
    with pytest.raises(msgspec.ValidationError):
        parse_event('{"type": "no_such_event"}')
    # unknown fields (from a newer sagents_nb) are left out, missing ones take their defaults
    old = parse_event(
        '{"type":"context_built","turn":1,"kind":"k","view_messages":1,'
        '"storage_messages":1,"view_tokens":1,"storage_tokens":1,"later":5}'
    )
    assert old.from_storage is None  # type: ignore[attr-defined]
