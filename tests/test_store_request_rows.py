"""A model request's and a model response's rows: their JSON is made without the message field
(`msgspec.structs.replace`), which is then written after the rest. The row must be the bytes the
event's fields give, whatever text its other fields hold (a field's text shaped like the cut
field, quotes, backslashes, non-English text)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from msgspec.json import encode

import sagents_nb as sn
from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb._store.rows import message_json
from sagents_nb.events import ModelRequest, ModelResponse, event_fields

TRICKY = [
    ',"messages":[]',
    ',"message":null',
    '\\",\\"messages\\":[],\\"',
    "x,",
    "\\",
    "modèle « été » 東京 😀",
    'déjà "vu"',
]
texts = st.one_of(st.sampled_from(TRICKY), st.text(st.characters(exclude_categories=("Cs",))))


def row_body(event: ModelRequest | ModelResponse) -> str:
    step = PendingStep(event.seq, [event], [], Numbering())
    return str(step.plain()[0][0][4])


def fields_json(event: ModelRequest | ModelResponse, name: str) -> str:
    """The event's JSON without field `name`, from the dict of its fields."""
    fields = event_fields(event)
    del fields[name]
    return encode(fields).decode()


@given(model=texts, path=texts, tool=texts, content=texts)
def test_a_requests_row_is_its_fields_with_its_messages_last(
    model: str, path: str, tool: str, content: str
) -> None:
    messages = [sn.Message(role="user", content=content), sn.Message(role="user", content=model)]
    event = ModelRequest(
        seq=3, path=path, run=1, turn=2, model=model, messages=messages, tools=[tool]
    )
    parts = ",".join(message_json(message) for message in messages)
    body = row_body(event)
    assert body == f'{fields_json(event, "messages")[:-1]},"messages":[{parts}]}}'
    assert json.loads(body)["model"] == model


@given(path=texts, reason=texts, content=texts)
def test_a_responses_row_is_its_fields_with_its_message_last(
    path: str, reason: str, content: str
) -> None:
    message = sn.Message(role="assistant", content=content)
    event = ModelResponse(
        seq=4, path=path, run=1, turn=2, message=message, finish_reason=reason, duration=0.25
    )
    body = row_body(event)
    assert body == f'{fields_json(event, "message")[:-1]},"message":{message_json(message)}}}'
    assert json.loads(body)["finish_reason"] == reason
