"""Property tests: parsers and serialisers take any input and give a result or a typed error."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb._endpoints.openai import StreamAssembler, parse_completion
from sagents_nb._endpoints.sse import SSEDecoder
from sagents_nb._tools.tool import parse_arguments
from sagents_nb.events import parse_event

from .strategies import events, json_values

texts = st.text(max_size=200)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(texts, json_values.map(lambda v: "data: " + json.dumps(v))), max_size=20))
def test_sse_assembler_folds_or_raises_malformed_reply(lines: list[str]) -> None:
    assembler = StreamAssembler()
    try:
        for event in SSEDecoder().feed("".join(f"{line}\n\n" for line in lines).encode()):
            assembler.feed(event.data)
    except sn.MalformedReply as exc:
        assert "streamed a chunk whose" in str(exc)
        return
    completion = assembler.completion()
    assert completion.message.role == "assistant"


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, json_values.map(json.dumps)))
def test_tool_arguments_parse_or_raise_value_error(raw: str) -> None:
    try:
        parsed = parse_arguments(raw)
    except ValueError as exc:
        assert "arguments" in str(exc)
    else:
        assert isinstance(parsed, dict)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_completion_parsing_gives_a_completion_or_malformed_reply(data: object) -> None:
    payload = data if isinstance(data, dict) else {"choices": [data]}
    try:
        completion = parse_completion(payload)
    except sn.MalformedReply:
        return
    assert completion.message.role == "assistant"


@settings(max_examples=300, deadline=None)
@given(events())
def test_events_round_trip_through_json(event: sn.events.Event) -> None:
    assert parse_event(event.model_dump_json()) == event
    assert parse_event(json.loads(event.model_dump_json())) == event
