"""A request body written by joining its messages' kept JSON (`WireMessages`, `joined_json`) is
the body's own JSON to the byte: every request of a fixed mix of runs (a `Main` view that sinks
to cold storage, brings a group back and offers `recall`, which the model calls; a `Main` and a
`Worker` view of the whole history; French, Chinese, Japanese, emoji, code, a lone surrogate)
hashes to what main's code (af95977, which wrote each body from its dicts) sent, and equals its
dicts written whole. A body an override of `complete` could change, or a list changed after it
was made, is written from its dicts.

A deliberate change of what is sent (another note, another tool schema) changes the hash:
print the new one with `python tests/test_wire_parts.py` and say why in the commit."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.messages import Message
from sagents_nb._endpoints import mock
from sagents_nb._endpoints.mock import MockLLM
from sagents_nb._endpoints.openai import WireMessages, joined_json, request_json
from sagents_nb._runtime import turns

SENT = (88, "4eba6779a94143248e141e8db25a1d3fdd3f17a97c971843f333e15b5e2a53e9")
"""How many requests the mix sends, and the SHA-256 of their bodies, as main's code sent them."""

PROMPTS = [
    "Ada aime le thé à Paris",
    "東京で寿司を食べた 🍣",
    "note: `x = [1, 2]` 🚀",
    "再来一次 thé",
]


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    return f"noté « {text} » \ud800 " * 2


def handler(req: sn.ChatRequest) -> Any:
    done = (req.turn or 1) - 1
    if done == 4 and "recall" in req.tools:
        return sn.reply(tool_calls=[sn.call("recall", query="thé Paris")])
    if done < 7:
        text = f"{req.last_user} {done} 😀 def f(x): return {{'a': x}}"
        return sn.reply(tool_calls=[sn.call("note", text=text)])
    return f"fini {req.last_user} ✅"


def sent_bodies() -> tuple[list[bytes], list[MockLLM], list[list[str]]]:
    """Every body the mix sends, its endpoints (their wire logs) and each session's event types."""
    raws: list[bytes] = []
    parsed = mock.parsed_body

    def recorded(raw: bytes) -> Any:
        raws.append(raw)
        return parsed(raw)

    mock.parsed_body = recorded
    endpoints: list[MockLLM] = []
    events: list[list[str]] = []
    try:
        kinds = (sn.kinds.Main(top_k=2, recent=2), sn.kinds.Main(top_k=None), sn.kinds.Worker())
        for kind in kinds:
            agent = sn.Agent("solo", instructions="sois bref, 简洁", tools=[note], kind=kind)
            llm = sn.mock_llm(handler)
            session = sn.Session(agent, llm=llm)
            for prompt in PROMPTS:
                session.send(prompt).result()
            endpoints.append(llm)
            events.append([e.type for e in session.events])
    finally:
        mock.parsed_body = parsed
    return raws, endpoints, events


@pytest.mark.parametrize("joined_from", [1, turns.JOINED_FROM])
def test_every_body_is_the_one_main_sent_and_its_dicts_written_whole(
    joined_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns, "JOINED_FROM", joined_from)  # 1: every view joined, short ones too
    raws, endpoints, events = sent_bodies()
    assert (len(raws), hashlib.sha256(b"\n".join(raws)).hexdigest()) == SENT
    main_events = events[0]
    assert {"cold_sink", "cold_restore"} <= set(main_events)
    assert any(b'"name":"recall"' in raw and b'"role":"tool"' in raw for raw in raws)
    bodies = [exchange.request for llm in endpoints for exchange in llm.exchanges]
    assert len(bodies) == len(raws)
    joined = [body for body in bodies if type(body["messages"]) is WireMessages]
    long = [body for body in bodies if len(body["messages"]) >= joined_from]
    assert len(joined) == len(long) > 10  # every kind here names its runs of storage
    for raw, body in zip(raws, bodies, strict=True):
        assert raw == request_json(body)  # the parts are used once: now written from the dicts
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        assert raw == re.sub("[\ud800-\udfff]", "\ufffd", text).encode()


def test_a_list_changed_after_it_was_made_is_written_from_its_dicts() -> None:
    stored = [Message(role="user", content="thé 東京 🍣"), Message(role="tool", content="ok")]
    dicts = [m.to_wire() for m in stored]
    kept = bytearray(b",".join(map(request_json, dicts)) + b",")
    second = (len(request_json(dicts[0])) + 1, len(kept) - 1)  # a span of the kept JSON
    for change in (lambda messages: messages.append(dicts[0]), lambda messages: messages.pop()):
        messages = WireMessages([request_json(dicts[0]), second], kept)
        messages += dicts
        messages.length = len(messages)
        body = {"model": "m", "messages": messages, "stream": True}
        assert joined_json(dict(body), True) == request_json(body)  # as made: joined
        messages.parts = [request_json(dicts[0]), second]
        messages.source = kept
        change(messages)
        assert joined_json(body, True) == request_json(body)
        assert messages.parts is None and messages.source is None  # used once


def test_a_body_an_override_of_complete_changes_is_sent_as_changed() -> None:
    class Redacting(MockLLM):
        async def complete(self, body: dict[str, Any], **options: Any) -> Any:
            for message in body["messages"]:
                if message["role"] == "user":
                    message["content"] = "[caché]"
            return await super().complete(body, **options)

    seen: list[str] = []

    def answer(req: sn.ChatRequest) -> Any:
        seen.append(req.last_user)
        if len(seen) == 1:
            return sn.reply(tool_calls=[sn.call("note", text="é")])
        return "ok"

    agent = sn.Agent("solo", tools=[note], kind=sn.kinds.Main(top_k=None))
    sn.Session(agent, llm=Redacting(answer)).send("secret 東京").result()
    assert seen == ["[caché]", "[caché]"]


if __name__ == "__main__":
    sent = sent_bodies()[0]
    print(len(sent), hashlib.sha256(b"\n".join(sent)).hexdigest())
