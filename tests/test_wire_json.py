"""A request body is compact UTF-8 JSON made by msgspec, read back by msgspec in the mock: the
bytes are the standard library's compact JSON (but for an exponent's "+"), a handler sees the values sent, what msgspec
refuses is read (or refused) by `json` as before, and a cassette recorded when bodies were
`json.dumps`'s spaced JSON still replays."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._endpoints.cassette import CassetteLLM
from sagents_nb._endpoints.mock import parsed_body
from sagents_nb._endpoints.openai import request_json
from tests.fixtures.make_cassette_spaced import AGENT, CASSETTE, PROMPTS

TEXTS = {
    "French": "Où est la bibliothèque ? À côté de l'église, s'il vous plaît.",
    "Chinese": "我们明天在东京见面吧",
    "Japanese": "東京駅で待ち合わせましょう。よろしくお願いします",
    "emoji": "🎉 done 👩‍💻 ✅",
    "code": 'print("héllo")\n\tif x < 3 && y > 2: "\\u00e9" \x00\x1f\x7f \u2028',
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "look",
            "description": "Regarder — 調べる 🔍",
            "parameters": {
                "type": "object",
                "properties": {
                    "scale": {"type": "number", "default": 0.1, "maximum": 1e16},
                    "n": {"type": "integer", "default": 2**70, "minimum": -(2**63) - 1},
                    "small": {"type": "number", "default": 5e-324, "exclusiveMinimum": -0.0},
                },
            },
        },
    }
]


def bodies() -> list[dict[str, Any]]:
    return [
        {
            "model": "mock",
            "messages": [
                {"role": "system", "content": "Tu es « guide »."},
                {"role": "user", "content": text},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "look", "arguments": json.dumps({"q": text})},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": text},
            ],
            "tools": TOOLS,
            "tool_choice": "auto",
        }
        for text in TEXTS.values()
    ]


def sent(llm: sn.LLM, body: dict[str, Any]) -> None:
    async def send() -> None:
        try:
            await llm.complete(body)
        finally:
            await llm.aclose()

    asyncio.run(send())


@pytest.mark.parametrize("body", bodies(), ids=list(TEXTS))
def test_a_body_is_the_standard_librarys_compact_json_in_utf8(body: dict[str, Any]) -> None:
    contents: list[bytes] = []

    def server(request: httpx.Request) -> httpx.Response:
        contents.append(request.content)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    sent(sn.LLM("http://x.test/v1", api_key="", transport=httpx.MockTransport(server)), body)
    compact = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    # but that an exponent has no "+": 1e16 (the same float)
    assert contents == [compact.replace(b"1e+16", b"1e16")] == [request_json(body)]
    assert json.loads(contents[0]) == body


@pytest.mark.parametrize("body", bodies(), ids=list(TEXTS))
def test_a_mock_handler_sees_the_values_sent_and_the_bodys_size(body: dict[str, Any]) -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest) -> str:
        seen.append(req)
        return "ok"

    sent(sn.mock_llm(handler), body)
    (req,) = seen
    assert req.body == body and req.messages == body["messages"]
    assert req.last == body["messages"][-1] and req.system == "Tu es « guide »."
    assert req.tools == ["look"] and req.tool_results == [body["messages"][-1]["content"]]
    scale = req.body["tools"][0]["function"]["parameters"]["properties"]["scale"]
    assert type(scale["default"]) is float and type(scale["maximum"]) is float
    assert req.size == len(request_json(body))


def test_a_float_json_cannot_write_is_sent_as_null() -> None:
    """`json.dumps` wrote `NaN`, which is not JSON: a real server refused the request."""
    seen: list[dict[str, Any]] = []

    def handler(req: sn.ChatRequest) -> str:
        seen.append(req.body)
        return "ok"

    body = {"model": "mock", "messages": [], "temperature": float("nan"), "top_p": float("inf")}
    sent(sn.mock_llm(handler), body)
    assert seen == [{"model": "mock", "messages": [], "temperature": None, "top_p": None}]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "\\ud800 \\udc80x"}',  # escaped lone surrogates
        b'{"a": NaN, "b": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": "\\u00e9 \\ud83c\\udf89", "b": [1, 2.5, -0.0, 123456789012345678901234567890]}',
        b'{"a": "\xff"}',  # not UTF-8
        b'{"a": ',
        b"{'a': 1}",
        b"",
    ],
)
def test_what_msgspec_refuses_is_read_or_refused_by_json_as_before(raw: bytes) -> None:
    try:
        expected: Any = json.loads(raw.decode())
    except ValueError as exc:
        with pytest.raises(type(exc)):
            parsed_body(raw)
        return
    got = parsed_body(raw)
    assert repr(got) == repr(expected)  # NaN too, and the types of numbers


def test_a_cassette_recorded_with_spaced_bodies_still_replays() -> None:
    """Recorded by the code before (tests/fixtures/make_cassette_spaced.py): requests match by
    their parsed JSON, so the compact bodies sent now match the spaced ones it holds."""
    assert '"messages": [{"role": "user"' in CASSETTE.read_text(encoding="utf-8")
    lines = CASSETTE.read_text(encoding="utf-8").split("\n")[1:]
    recorded = [json.loads(line) for line in lines if line]
    replayed = sn.replay(CASSETTE)
    assert isinstance(replayed, CassetteLLM)
    session = sn.Session(AGENT, llm=replayed)
    texts = [session.send(prompt).result().text for prompt in PROMPTS]
    assert texts == [f"réponse : trouvé « {p[:12]} » 東京 ✓" for p in PROMPTS]
    assert all(replayed.cassette.played) and len(replayed.cassette.played) == 2 * len(PROMPTS)
    assert [x.request for x in replayed.exchanges] == [e["request"] for e in recorded]


def test_a_new_cassette_holds_the_same_requests_as_one_recorded_before(tmp_path: Path) -> None:
    from tests.fixtures.make_cassette_spaced import model

    path = tmp_path / "again.jsonl"
    session = sn.Session(AGENT, llm=sn.record(sn.mock_llm(model), path, mode="all"))
    for prompt in PROMPTS:
        session.send(prompt).result()

    def requests(file: Path) -> list[Any]:
        lines = file.read_text(encoding="utf-8").split("\n")[1:]
        return [json.loads(line)["request"] for line in lines if line]

    assert requests(path) == requests(CASSETTE)
