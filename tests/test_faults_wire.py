"""The fault suite at the wire: loopback servers and clients that misbehave on purpose.

Every case has a hard time limit; each misbehaving client or server ends within it, and no
thread a case started outlives it.
"""

from __future__ import annotations

import json

import pytest

import sagents_nb as sn
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.timeout(30)


# A server that speaks another wire format is named, not read as a truncated chat completion

ANTHROPIC_STREAM = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude",
        "stop_reason": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "Bonjour, 東京 🎉"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": 5}}),
    ("message_stop", {"type": "message_stop"}),
]  # fmt: skip
RESPONSES_STREAM = [
    ("response.created", {"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                                    "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                    "delta": "Bonjour, 東京 🎉"}),
    ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": {
        "id": "resp_1", "object": "response", "status": "completed", "output": []}}),
]  # fmt: skip
ANTHROPIC_BODY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
    "content": [{"type": "text", "text": "Bonjour, 東京 🎉"}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 9, "output_tokens": 5},
}  # fmt: skip
RESPONSES_BODY = {
    "id": "resp_1", "object": "response", "status": "completed", "model": "gpt",
    "output": [{"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Bonjour, 東京 🎉"}]}],
}  # fmt: skip


def serving(events: list | None = None, body: dict | None = None):
    """A `respond` that answers every request with `events` (as SSE) or `body` (as JSON)."""

    def respond(request: bytes, answer: Answer) -> None:
        if events is not None:
            kind = "text/event-stream"
            content = "".join(
                f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
                for name, data in events
            ).encode()
        else:
            kind, content = "application/json", json.dumps(body, ensure_ascii=False).encode()
        answer.head(200, {"content-type": kind, "content-length": str(len(content))})
        answer.write(content)

    return respond


FOREIGN = {
    "anthropic stream": (serving(events=ANTHROPIC_STREAM), True, "Anthropic Messages"),
    "responses stream": (serving(events=RESPONSES_STREAM), True, "OpenAI Responses"),
    "anthropic body": (serving(body=ANTHROPIC_BODY), False, "Anthropic Messages"),
    "responses body": (serving(body=RESPONSES_BODY), False, "OpenAI Responses"),
    "anthropic body to a stream request": (serving(body=ANTHROPIC_BODY), True, "Anthropic"),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_a_server_speaking_another_wire_format_is_named(name: str) -> None:
    respond, stream, format_name = FOREIGN[name]
    with LoopbackServer(respond) as server:
        llm = sn.LLM(server.url, api_key="sk-loop", retries=0)
        session = sn.Session(sn.Agent("a", kind=sn.kinds.Realtime() if stream else None), llm=llm)
        result = session.send("bonjour").result(timeout=20)
    assert result.status == "error", (result.status, result.text)
    assert format_name in result.text and "not OpenAI chat completions" in result.text
    assert "point base_url at an OpenAI-compatible chat-completions endpoint" in result.text
    assert "[truncated]" not in result.text
    (error,) = [e for e in result.events if e.type == "error"]
    assert format_name in error.message
