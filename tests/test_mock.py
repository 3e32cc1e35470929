"""Inline mocks: the ChatRequest view, sync/async handlers, scripts, and record/replay cassettes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

import sagents_nb as sn
from tests.conftest import add

SECRET = "sk-cassette-SECRET-42"


def test_chat_request_exposes_the_body(calc_agent: sn.Agent) -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        seen.append(req)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("add", a=1, b=2)])
        return "3"

    calc_agent.run_sync("one plus two", llm=sn.mock_llm(handler, model="m1"))
    first, second = seen
    assert first.model == "m1" and first.tools == ["add"] and first.last_user == "one plus two"
    assert first.messages == first.body["messages"] and first.stream is False
    assert first.system == "You add."
    assert second.tool_results == ["3"]


def test_async_handler_and_http_response_passthrough() -> None:
    async def handler(req: sn.ChatRequest):
        await asyncio.sleep(0)
        return httpx.Response(200, json={"choices": [{"message": {"content": "raw"}}]})

    assert sn.Agent("a").run_sync("x", llm=sn.mock_llm(handler)).text == "raw"


def test_exchanges_are_recorded_in_order() -> None:
    llm = sn.script("one", "two")
    session = sn.Session(sn.Agent("a"), llm=llm)
    session.send("first").result()
    session.send("second").result()
    assert [x.response["choices"][0]["message"]["content"] for x in llm.exchanges] == ["one", "two"]
    assert llm.exchanges[1].request["messages"][-1] == {"role": "user", "content": "second"}


def test_script_runs_out_with_a_clear_error() -> None:
    result = sn.Agent("a").run_sync("x", llm=sn.script())
    assert result.status == "error" and "ran out of replies" in result.text


def test_script_per_model() -> None:
    helper = sn.Agent("helper", does="helps", model="small")
    boss = sn.Agent("boss", model="big", team=[helper])
    llm = sn.script(
        {
            "big": [
                sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="hi")]),
                "boss done",
            ],
            "small": ["helper done"],
        }
    )
    result = boss.run_sync("go", llm=llm)
    assert result.text == "boss done"
    assert [x.request["model"] for x in llm.exchanges] == ["big", "small", "big"]


def test_record_then_replay_offline_without_secrets(tmp_path: Path) -> None:
    def server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if not any(m["role"] == "tool" for m in body["messages"]):
            return httpx.Response(
                200,
                json={
                    "choices": [
                        {
                            "message": {
                                "content": None,
                                "tool_calls": [
                                    {
                                        "id": "c1",
                                        "type": "function",
                                        "function": {
                                            "name": "add",
                                            "arguments": '{"a": 4, "b": 5}',
                                        },
                                    }
                                ],
                            }
                        }
                    ]
                },
            )
        return httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": "nine"}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1},
            },
        )

    real = sn.LLM(
        "https://api.example.test/v1", api_key=SECRET, transport=httpx.MockTransport(server)
    )
    cassette = tmp_path / "run.jsonl"
    agent = sn.Agent("calc", tools=[add])
    recorded = agent.run_sync("4+5", llm=sn.record(real, cassette))
    assert recorded.text == "nine"
    assert SECRET not in cassette.read_text()
    assert len(cassette.read_text().splitlines()) == 3

    replayed = agent.run_sync("4+5", llm=sn.replay(cassette))
    assert (replayed.text, replayed.turns, replayed.usage.total_tokens) == ("nine", 2, 10)


def test_replay_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(sn.ConfigurationError, match="no cassette"):
        sn.replay(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "other"}\n')
    with pytest.raises(sn.ConfigurationError, match="not a sagents_nb cassette"):
        sn.replay(bad)
