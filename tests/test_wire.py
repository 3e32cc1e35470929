"""The OpenAI-compatible wire: request bodies, replies, usage, streaming, errors, retries, keys."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._endpoints.openai import StreamAssembler, retry_after_seconds
from sagents_nb._endpoints.sse import SSEDecoder
from tests.conftest import add, usage

SECRET = "sk-test-SECRET-0123456789"


def _llm(handler, **options) -> sn.LLM:  # a "real" endpoint on a MockTransport
    return sn.LLM(
        "https://api.example.test/v1",
        api_key=SECRET,
        model="gpt-test",
        transport=httpx.MockTransport(handler),
        **options,
    )


def test_two_turn_tool_loop_text_turns_and_summed_usage(calc_agent: sn.Agent) -> None:
    def handler(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("add", a=2, b=3)], usage=usage(30, 10))
        return sn.reply(f"The sum is {req.tool_results[0]}", usage=usage(50, 5))

    llm = sn.mock_llm(handler)
    result = calc_agent.run_sync("2+3?", llm=llm)
    assert (result.text, result.status, result.turns) == ("The sum is 5", "done", 2)
    assert result.usage.model_dump() == usage(80, 15)
    first = llm.exchanges[0].request
    assert first["tools"] == [add.to_wire()]
    assert first["tools"][0]["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert first["messages"] == [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "2+3?"},
    ]
    second = llm.exchanges[1].request["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "add"
    assert second[3] == {
        "role": "tool",
        "tool_call_id": second[2]["tool_calls"][0]["id"],
        "content": "5",
    }


def test_requests_carry_bearer_key_and_path() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["auth"] = request.headers["authorization"]
        seen["url"] = str(request.url)
        seen["type"] = request.headers["content-type"]
        seen["agent"] = request.headers["user-agent"].split("/")[0]
        seen["timeout"] = request.extensions["timeout"]["read"]
        return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})

    result = sn.Agent("a").run_sync("x", llm=_llm(handler, timeout=7.0))
    assert result.text == "hi"
    assert seen == {
        "auth": f"Bearer {SECRET}",
        "url": "https://api.example.test/v1/chat/completions",
        "type": "application/json",
        "agent": "python-httpx",
        "timeout": 7.0,
    }


def test_401_is_a_clear_error_without_the_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": f"Incorrect API key {SECRET}"}})

    llm = _llm(handler)
    session = sn.Session(sn.Agent("a"), llm=llm)
    result = session.send("x").result()
    assert result.status == "error"
    assert "HTTP 401" in result.text and "check the API key" in result.text
    assert "api.example.test" in result.text
    everywhere = [result.text, repr(llm), repr(session), repr(result)]
    everywhere += [e.model_dump_json() for e in session.events]
    everywhere += [json.dumps(x.to_dict()) for x in llm.exchanges]
    assert not any(SECRET in text for text in everywhere)


def test_no_endpoint_configured_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(sn.ConfigurationError, match=r"llm=sn.mock_llm"):
        sn.Agent("a").run_sync("x")


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    llm = sn.LLM()
    assert llm.base_url == "http://127.0.0.1:9/v1"
    assert SECRET not in repr(llm)


def test_streaming_assembles_text_and_tool_call_deltas(calc_agent: sn.Agent) -> None:
    def handler(req: sn.ChatRequest):
        assert req.stream
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("add", a=1, b=1)])
        return sn.reply("one plus one is two")

    calc_agent.kind = sn.kinds.Realtime()
    result = calc_agent.run_sync("1+1", llm=sn.mock_llm(handler))
    assert result.text == "one plus one is two"
    deltas = [e.text for e in result.events if e.type == "text_delta"]
    assert "".join(deltas) == "one plus one is two" and len(deltas) == 5


def test_stream_assembler_tolerates_malformed_chunks() -> None:
    body = (
        b"data: {not json\n\n"
        b'data: {"choices":[{"delta":{"content":"ok"}}]}\n\n'
        b": keepalive\n\n"
        b"data: [DONE]\n\n"
    )
    assembler = StreamAssembler()
    for event in SSEDecoder().feed(body):
        assembler.feed(event.data)
    completion = assembler.completion()
    assert completion.message.content == "ok"
    assert completion.malformed_chunks == 1 and not completion.truncated


def test_malformed_replies_give_clear_errors() -> None:
    cases = [
        (
            httpx.Response(200, text="<html>oops</html>", headers={"content-type": "text/html"}),
            "not JSON",
        ),
        (httpx.Response(200, json={"choices": []}), "without choices"),
        (httpx.Response(200, json={"choices": [{"index": 0}]}), "without a message"),
    ]
    for response, expected in cases:
        session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(lambda req, r=response: r))
        result = session.send("x").result()
        assert result.status == "error" and expected in result.text


def test_transient_errors_are_retried_with_events() -> None:
    attempts = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        if len(attempts) < 3:
            return httpx.Response(503, text="busy", headers={"retry-after": "0"})
        return httpx.Response(200, json={"choices": [{"message": {"content": "fine"}}]})

    result = sn.Agent("a").run_sync("x", llm=_llm(handler, retries=3))
    assert result.text == "fine" and len(attempts) == 3
    retries = [e for e in result.events if e.type == "retry"]
    assert [(r.attempt, r.status) for r in retries] == [(1, 503), (2, 503)]


def test_client_errors_are_not_retried() -> None:
    attempts = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        return httpx.Response(400, json={"error": {"message": "bad model"}})

    result = sn.Agent("a").run_sync("x", llm=_llm(handler, retries=3))
    assert result.status == "error" and len(attempts) == 1


def test_connection_refused_is_a_transport_error() -> None:
    llm = sn.LLM("http://127.0.0.1:9/v1", api_key=SECRET, retries=0, timeout=2)
    result = sn.Agent("a").run_sync("x", llm=llm)
    assert result.status == "error" and "could not reach http://127.0.0.1:9/v1" in result.text


def test_endpoint_is_usable_from_several_event_loops() -> None:
    llm = sn.mock_llm(lambda req: "pong")

    async def once() -> str:
        from sagents_nb._base.messages import user

        completion = await llm.complete({"model": "m", "messages": [user("ping").to_wire()]})
        return completion.message.content or ""

    assert asyncio.run(once()) == "pong"
    assert asyncio.run(once()) == "pong"


def test_retry_after_is_read_as_seconds_or_as_an_http_date() -> None:
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    assert retry_after_seconds("7", now) == 7.0
    assert retry_after_seconds(" 1.5 ", now) == 1.5
    assert retry_after_seconds("Tue, 14 Nov 2023 22:13:50 GMT", now) == 30.0
    assert retry_after_seconds("Tue, 14 Nov 2023 22:13:50 -0000", now) == 30.0
    assert retry_after_seconds("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0.0  # past: at once
    for unusable in (None, "", "soon", "nan", "inf", "-1e999", "Tue, 99 Foo 2023"):
        assert retry_after_seconds(unusable, now) in (None, 0.0), unusable
    assert retry_after_seconds("-5", now) == 0.0


def test_an_http_date_retry_after_is_honoured() -> None:
    answers = iter(
        [
            httpx.Response(429, text="slow down", headers={"retry-after": RETRY_PAST}),
            httpx.Response(200, json={"choices": [{"message": {"content": "fine"}}]}),
        ]
    )
    result = sn.Agent("a").run_sync("x", llm=_llm(lambda request: next(answers)))
    assert result.text == "fine"
    assert [(e.status, e.delay) for e in result.events if e.type == "retry"] == [(429, 0.0)]

    attempts = []

    def far(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        return httpx.Response(503, text="maintenance", headers={"retry-after": RETRY_FUTURE})

    result = sn.Agent("a").run_sync("x", llm=_llm(far, retries=3, max_retry_time=30))
    # asked to wait longer than max_retry_time: raised at once, not retried after a backoff
    assert result.status == "error" and "HTTP 503" in result.text and len(attempts) == 1


RETRY_PAST = "Wed, 21 Oct 2015 07:28:00 GMT"
RETRY_FUTURE = "Fri, 01 Jan 2100 00:00:00 GMT"


def test_a_long_stream_keeps_a_bounded_wire_log() -> None:
    piece = "汉字 and ascii, " * 4
    pieces = 40_000  # ~2.4 MB of text in 40,000 chunks
    body = "".join(
        f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n"
        for _ in range(pieces)
    )
    body += "data: [DONE]\n\n"
    llm = sn.mock_llm(
        lambda req: httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    )
    result = sn.Agent("a", kind=sn.kinds.Realtime()).run_sync("x", llm=llm)
    assert result.text == piece * pieces
    logged = llm.exchanges[-1].response
    assert logged["chunk_count"] == pieces and logged["omitted_chunks"] == pieces - 40
    assert len(logged["chunks"]) == 32 and len(logged["last_chunks"]) == 8
    assert len(json.dumps(llm.exchanges[-1].to_dict())) < 20_000


class _Kept(httpx.AsyncBaseTransport):
    """A transport of an endpoint's own that keeps what it is sent and how often it is closed."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.closed = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = {"choices": [{"message": {"role": "assistant", "content": "東京 ✓"}}]}
        return httpx.Response(200, json=body)

    async def aclose(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("key", [SECRET, ""])
def test_a_request_through_the_endpoints_own_transport_carries_an_http_clients_headers(
    key: str,
) -> None:
    kept = _Kept()
    llm = sn.LLM("https://api.example.test/v1", api_key=key, transport=kept, read_timeout=7)
    body = {"model": "m", "messages": [{"role": "user", "content": "Bonjour, ça va ? 你好"}]}
    completion = asyncio.run(llm.complete(body))
    assert completion.message.content == "東京 ✓"
    sent = kept.requests[0]
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    client = httpx.AsyncClient(headers=headers, timeout=7)
    expected = client.build_request("POST", llm._url, content=sent.content)
    assert sent.headers.multi_items() == expected.headers.multi_items()
    assert sent.extensions["timeout"] == expected.extensions["timeout"]
    assert str(sent.url) == str(expected.url)


def test_aclose_closes_the_endpoints_own_transport_once_it_was_used() -> None:
    kept = _Kept()
    llm = sn.LLM("http://local.test/v1", transport=kept)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    async def scenario() -> list[int]:
        closed = []
        await llm.aclose()  # never used: nothing to close
        closed.append(kept.closed)
        await llm.complete(body)
        await llm.complete(body)
        await llm.aclose()
        await llm.aclose()  # closed already
        closed.append(kept.closed)
        await llm.complete(body)  # opened again
        await llm.aclose()
        closed.append(kept.closed)
        return closed

    assert asyncio.run(scenario()) == [0, 1, 2]
