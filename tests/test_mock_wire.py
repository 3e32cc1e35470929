"""A mock endpoint's own requests skip its httpx transport: what a user sees is the same as
through it (the wire log, errors, retries, the deadline, streams, text in any script)."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import sagents_nb as sn
from sagents_nb._endpoints.mock import MockLLM
from sagents_nb._endpoints.openai import Completion, RetryNotice

TEXTS = {
    "French": "Où est la bibliothèque ? À côté de l'église, s'il vous plaît.",
    "Chinese": "我们明天在东京见面吧",
    "Japanese": "東京駅で待ち合わせましょう。よろしくお願いします",
    "emoji": "🎉 done 👩‍💻 ✅",
    "code": 'print("héllo")\n\tif x < 3 && y > 2: "\\u00e9"',
}
PATHS = ["direct", "transport"]
"""A mock's own path, and the path through an httpx transport it had before (now taken when
something else is its transport, e.g. one a user set)."""


def endpoint(handler: Callable[[sn.ChatRequest], Any], path: str, **options: Any) -> MockLLM:
    llm = sn.mock_llm(handler, **options)
    if path == "transport":
        llm._transport = httpx.MockTransport(llm._transport.handler)  # type: ignore[union-attr]
    return llm


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "mock", "messages": [{"role": "user", "content": text}], **extra}


def compact(body: dict[str, Any]) -> bytes:
    """The body as sent: compact JSON in UTF-8, text as itself."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def complete(llm: sn.LLM, *bodies: dict[str, Any], **options: Any) -> list[Completion]:
    async def send() -> list[Completion]:
        try:
            return [await llm.complete(b, **options) for b in bodies]
        finally:
            await llm.aclose()

    return asyncio.run(send())


def wire_log(llm: sn.LLM) -> list[dict[str, Any]]:
    """The exchanges without their times."""
    return [
        {k: v for k, v in x.to_dict().items() if k not in ("ts", "duration")} for x in llm.exchanges
    ]


def echo(req: sn.ChatRequest) -> Any:
    text = req.last_user
    if text.startswith("call"):
        return sn.reply(
            tool_calls=[sn.call("look", q=text, where="東京")], usage={"prompt_tokens": 7}
        )
    return f"{text} ({req.size} bytes)"


def test_the_wire_log_and_replies_are_the_same_on_both_paths() -> None:
    bodies = [body(text) for text in TEXTS.values()]
    bodies += [body("call me"), body("asked: 東京 🎉", stream=True)]
    seen = {}
    for path in PATHS:
        llm = endpoint(echo, path)
        deltas: list[str] = []
        completions = complete(llm, *bodies, on_delta=deltas.append)
        seen[path] = (wire_log(llm), completions, deltas)
    assert seen["direct"] == seen["transport"]
    log, completions, _ = seen["direct"]
    assert [c.message.content for c in completions[: len(TEXTS)]] == [
        f"{text} ({len(compact(b))} bytes)"
        for text, b in zip(TEXTS.values(), bodies[: len(TEXTS)], strict=True)
    ]
    assert log[0]["url"] == "http://mock.local/v1/chat/completions" and log[0]["status"] == 200
    assert log[0]["request"] is not None and log[0]["headers"] == {}
    assert log[0]["response"]["choices"][0]["message"]["content"].startswith(TEXTS["French"])
    (call,) = completions[len(TEXTS)].message.tool_calls or ()
    assert call.arguments == json.dumps({"q": "call me", "where": "東京"}, ensure_ascii=False)
    assert log[-1]["response"]["chunk_count"] > 2  # streamed, as asked


def test_the_request_size_is_its_utf8_byte_length() -> None:
    sizes: list[int] = []

    def handler(req: sn.ChatRequest) -> str:
        sizes.append(req.size)
        return "ok"

    sent = [body(text) for text in TEXTS.values()]
    for path in PATHS:
        sizes.clear()
        complete(endpoint(handler, path), *sent)
        assert sizes == [len(compact(b)) for b in sent]
        assert all(size > len(compact(b).decode()) for size, b in zip(sizes, sent, strict=True))


@pytest.mark.parametrize("path", PATHS)
def test_a_lone_surrogate_round_trips_as_before(path: str) -> None:
    seen: list[str] = []

    def handler(req: sn.ChatRequest) -> str:
        seen.append(req.last_user)
        return "réponse \udc80 終"

    (completion,) = complete(endpoint(handler, path), body("tool output \ud800 東京"))
    assert seen == ["tool output \ufffd 東京"]  # a request has no lone surrogate on the wire
    assert completion.message.content == "réponse \udc80 終"  # a reply escapes it, still JSON


@pytest.mark.parametrize("path", PATHS)
def test_an_async_handler_that_hangs_meets_the_timeout(path: str) -> None:
    async def hangs(req: sn.ChatRequest) -> str:
        await asyncio.sleep(30)
        return "too late"

    llm = endpoint(hangs, path, timeout=0.2, retries=0)
    with pytest.raises(sn.TransportError, match=r"did not finish answering within 0\.2 s"):
        complete(llm, body("bonjour"))
    assert llm.exchanges[-1].error == "no complete answer within 0.2 s"
    assert llm.exchanges[-1].status is None


@pytest.mark.parametrize("path", PATHS)
def test_a_handlers_own_429_and_500_are_retried(path: str) -> None:
    answers: list[Any] = [
        httpx.Response(
            429, json={"error": {"message": "slow down, 東京"}}, headers={"Retry-After": "0"}
        ),
        httpx.Response(500, text="oops"),
        "enfin 🎉",
    ]
    kept: list[Any] = []

    def handler(req: sn.ChatRequest) -> Any:
        kept.append(answers[len(kept)])
        return kept[-1]

    notices: list[RetryNotice] = []
    llm = endpoint(handler, path, retries=2, backoff=0.001)
    (completion,) = complete(llm, body("x"), on_retry=notices.append)
    assert completion.message.content == "enfin 🎉"
    assert (notices[0].attempt, notices[0].status, notices[0].delay) == (1, 429, 0.0)
    assert [n.status for n in notices] == [429, 500]
    assert "slow down, 東京" in notices[0].error
    assert [x.status for x in llm.exchanges] == [429, 500, 200]
    # the handler's responses carry the request they answered, as a transport sets it
    assert str(kept[0].request.url) == "http://mock.local/v1/chat/completions"
    assert kept[0].request.headers["content-type"] == "application/json"
    assert json.loads(kept[0].request.content) == body("x")


def test_a_handlers_own_response_sees_the_same_request_on_both_paths() -> None:
    requests = {}
    for path in PATHS:
        kept: list[httpx.Response] = []

        def handler(req: sn.ChatRequest, kept: list[httpx.Response] = kept) -> httpx.Response:
            kept.append(httpx.Response(200, json={"choices": [{"message": {"content": "à"}}]}))
            return kept[-1]

        complete(endpoint(handler, path), body("x"))
        request = kept[0].request
        requests[path] = (
            request.method,
            str(request.url),
            list(request.headers.items()),
            request.content,
            request.extensions,
        )
    assert requests["direct"] == requests["transport"]


@pytest.mark.parametrize("path", PATHS)
def test_a_malformed_body_and_a_wrong_answer_fail_as_before(path: str) -> None:
    llm = endpoint(lambda req: httpx.Response(200, content=b"<html>nope</html>"), path)
    with pytest.raises(sn.MalformedReply, match="answered with unknown content type, not JSON"):
        complete(llm, body("x"))
    llm = endpoint(lambda req: 42, path, retries=0)
    with pytest.raises(sn.EndpointError, match="mock handler returned int") as raised:
        complete(llm, body("x"))
    assert raised.value.status == 500 and llm.exchanges[-1].status == 500


@pytest.mark.parametrize("path", PATHS)
def test_a_stream_answers_as_before(path: str) -> None:
    deltas: list[str] = []
    llm = endpoint(lambda req: "Il était une fois 東京 🎉", path)
    (completion,) = complete(llm, body("x", stream=True), on_delta=deltas.append)
    assert completion.message.content == "Il était une fois 東京 🎉" and len(deltas) > 1
    assert llm.exchanges[-1].response["truncated"] is False


def copied(req: sn.ChatRequest) -> str:
    return f"copie: {req.last_user}"


def test_copies_answer_on_their_own_path() -> None:
    llm = sn.mock_llm(copied)
    for copy in (llm.fresh(), pickle.loads(pickle.dumps(llm))):
        assert copy._transport is copy._own_transport
        assert copy._transport is not llm._transport
        (completion,) = complete(copy, body("東京"))
        assert completion.message.content == "copie: 東京"
        assert len(copy.exchanges) == 1 and not llm.exchanges


def test_a_recording_of_a_mock_goes_through_its_transport(tmp_path: Any) -> None:
    mock = sn.mock_llm(lambda req: f"enregistré: {req.last_user}")
    recorder = sn.record(mock, tmp_path / "c.jsonl", mode="all")
    (completion,) = complete(recorder, body("日本語 🎉"))
    assert completion.message.content == "enregistré: 日本語 🎉"
    replayed = sn.replay(tmp_path / "c.jsonl")
    (again,) = complete(replayed, body("日本語 🎉"))
    assert again.message.content == "enregistré: 日本語 🎉"
