"""The fault suite at the wire: loopback servers and clients that misbehave on purpose.

Every case has a hard time limit; each misbehaving client or server ends within it, and no
thread a case started outlives it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Any

import httpx
import pytest

import sagents_nb as sn
from tests.loopback import Answer, LoopbackServer

pytestmark = [pytest.mark.timeout(30), pytest.mark.isolated(120)]


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


# sn.MockServer against clients that misbehave, on raw sockets

CHAT = "/v1/chat/completions"
QUESTION = "Quelle heure est-il à 東京 ? 🎌 `x = {1: 2}`"


def mock_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sagents_nb-mock-")]


@pytest.fixture
def served(capfd: pytest.CaptureFixture[str]):
    """A served mock echoing the question; afterwards no thread of it is left, nothing was
    printed (no traceback), and every exchange holds no planted key."""
    seen: list[sn.ChatRequest] = []

    def echo(req: sn.ChatRequest) -> str:
        seen.append(req)
        return f"echo: {req.last_user}"

    server = sn.MockServer(sn.mock_llm(echo), read_timeout=5)
    server.seen = seen  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.close()
        assert not mock_threads(), mock_threads()
        err = capfd.readouterr().err
        assert "Traceback" not in err and "Exception" not in err, err


def raw_exchange(port: int, request: bytes, *, send_all: bool = True) -> tuple[int, dict, bytes]:
    """Send `request` bytes as they are (and then end the request, unless not `send_all`: then
    the connection stays open, silent); the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        if send_all:
            with contextlib.suppress(OSError):  # the server may close first (a refused body)
                sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body[: int(headers.get("content-length", 0))]


def post(path: str, headers: dict[str, str | None], body: bytes = b"") -> bytes:
    """A raw request; a `None` header value is the body's length."""
    headers = {"Host": "127.0.0.1", **headers}
    head = "".join(f"{k}: {len(body) if v is None else v}\r\n" for k, v in headers.items())
    return f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + body


def chat_body(text: str = QUESTION) -> bytes:
    return json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": text}]}, ensure_ascii=False
    ).encode()


def reply_text(body: bytes) -> str:
    return json.loads(body)["choices"][0]["message"]["content"]


def chunked(data: bytes, size: int) -> bytes:
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    coded = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces)
    return coded + b"0\r\nX-Trailer: fin\r\n\r\n"


def test_a_chunked_request_body_is_read_whole(served: sn.MockServer) -> None:
    # pieces of 5 bytes: some end inside a multi-byte character
    request = post(CHAT, {"Transfer-Encoding": "chunked"}, chunked(chat_body(), 5))
    status, _, body = raw_exchange(served.port, request)
    assert (status, reply_text(body)) == (200, f"echo: {QUESTION}")
    # and as a real client sends one (httpx streams a generator's pieces chunked)
    pieces = (chat_body()[i : i + 7] for i in range(0, len(chat_body()), 7))
    answer = httpx.post(served.base_url + CHAT, content=pieces)
    assert answer.request.headers["transfer-encoding"] == "chunked"
    assert reply_text(answer.content) == f"echo: {QUESTION}"
    assert [req.last_user for req in served.seen] == [QUESTION, QUESTION]  # type: ignore[attr-defined]


BAD_BODIES = {
    "negative length": ({"Content-Length": "-5"}, b"{}", 400, "not a number of bytes"),
    "textual length": ({"Content-Length": "douze"}, b"{}", 400, "not a number of bytes"),
    "float length": ({"Content-Length": "1e3"}, b"{}", 400, "not a number of bytes"),
    "conflicting lengths": ({"Content-Length": "2\r\nContent-Length: 3"}, b"{}", 400,
                            "conflicting Content-Length"),
    "absurd length": ({"Content-Length": "9" * 40}, b"{}", 413, "larger than this mock server"),
    "too large": ({"Content-Length": str(2**40)}, b"{}", 413, "max_body=..."),
    "cut short": ({"Content-Length": "100"}, b'{"model": "m"', 400, "ended after 13 of its 100"),
    "chunk size not hex": ({"Transfer-Encoding": "chunked"}, b"zz\r\n{}\r\n0\r\n\r\n", 400,
                           "not a hexadecimal number"),
    "chunks never end": ({"Transfer-Encoding": "chunked"}, b"2\r\n{}\r\n", 400,
                         "ended before its last chunk"),
    "unknown coding": ({"Transfer-Encoding": "gzip, chunked"}, b"", 501, "not supported"),
    "not json": ({"Content-Length": None}, b"{not json", 400, "not JSON"),
    "deep json": ({"Content-Length": None}, b"[" * 100_000 + b"]" * 100_000, 400,
                  "nested too deeply"),
    "deep object": ({"Content-Length": None}, b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
                    400, "nested too deeply"),
    "a json array": ({"Content-Length": None}, b"[]", 400, "not an object"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_a_body_that_cannot_be_read_is_answered_400_with_the_reason(
    served: sn.MockServer, name: str
) -> None:
    headers, body, expected, reason = BAD_BODIES[name]
    status, answer_headers, content = raw_exchange(served.port, post(CHAT, headers, body))
    assert status == expected, content
    assert reason in json.loads(content)["error"]["message"]
    assert not served.seen  # type: ignore[attr-defined]
    assert served.exchanges[-1].status == expected
    if expected != 400 or "length" in name or "chunk" in name:
        assert answer_headers.get("connection") == "close"  # the rest of the body is unread
    # the server goes on answering
    assert reply_text(httpx.post(served.base_url + CHAT, content=chat_body()).content).startswith(
        "echo: "
    )


class Custom(BaseException):
    """A `BaseException` of the handler's own."""


RAISED = {
    "SystemExit": lambda: SystemExit(3),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "Custom": lambda: Custom("à l'aide 東京"),
}


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("name", sorted(RAISED))
def test_a_handler_raising_a_base_exception_is_answered_500_naming_it(
    capfd: pytest.CaptureFixture[str], name: str, flavour: str
) -> None:
    make = RAISED[name]

    def handler(req: sn.ChatRequest) -> str:
        if req.last_user == "raise":
            raise make()
        return "still here"

    async def async_handler(req: sn.ChatRequest) -> str:
        return handler(req)

    with sn.MockServer(handler if flavour == "sync" else async_handler) as server:
        url = server.openai_base_url + "/chat/completions"
        crashed = httpx.post(url, content=chat_body("raise"))
        assert crashed.status_code == 500
        assert f"the mock handler raised {name}" in crashed.json()["error"]["message"]
        assert server.exchanges[-1].error.startswith(name)
        assert reply_text(httpx.post(url, content=chat_body("again")).content) == "still here"
    assert not mock_threads()
    assert "Traceback" not in capfd.readouterr().err


WRONG_SHAPES = {
    "messages a string": (CHAT, {"messages": "bonjour"}, "messages is a string, not an array"),
    "messages missing": (CHAT, {"model": "m"}, "messages is missing"),
    "a message a number": (CHAT, {"messages": [1]}, "messages[0] is a number, not an object"),
    "a role a number": (CHAT, {"messages": [{"role": 5}]}, "messages[0].role is a number"),
    "content a number": (CHAT, {"messages": [{"role": "user", "content": 7}]},
                         "messages[0].content is a number"),
    "a tool without function": (CHAT, {"messages": [], "tools": [{"type": "function"}]},
                                "tools[0].function is missing"),
    "a tool call without name": (CHAT, {"messages": [{"role": "assistant", "tool_calls": [
        {"function": {"arguments": "{}"}}]}]}, "messages[0].tool_calls[0].function.name"),
    "model a number": (CHAT, {"model": 4, "messages": []}, "model is a number, not a string"),
    "stream a string": (CHAT, {"stream": "yes", "messages": []}, "stream is a string"),
    "anthropic content a number": ("/v1/messages", {"messages": [{"role": "user", "content": 3}]},
                                   "Anthropic Messages request's messages[0].content"),
    "anthropic system a number": ("/v1/messages", {"system": 1, "messages": []}, "system is"),
    "responses input a number": ("/v1/responses", {"input": 5}, "Responses request's input is"),
    "responses tools an object": ("/v1/responses", {"input": "x", "tools": {"a": 1}},
                                  "tools is an object, not an array"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRONG_SHAPES))
def test_a_body_of_the_wrong_shape_is_answered_400_naming_what_is_wrong(
    served: sn.MockServer, name: str
) -> None:
    path, body, reason = WRONG_SHAPES[name]
    answer = httpx.post(served.base_url + path, json=body)
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert reason in message and "mock handler" not in message
    assert not served.seen  # type: ignore[attr-defined]


def test_large_bodies_are_kept_bounded_in_the_exchanges(served: sn.MockServer) -> None:
    big = "été 東京 🎉 " * 400_000  # about 6 MB as UTF-8
    for i in range(5):
        answer = httpx.post(served.base_url + CHAT, content=chat_body(f"{i} {big}"), timeout=60)
        assert answer.status_code == 200
        assert reply_text(answer.content) == f"echo: {i} {big}"  # the handler saw it whole
    assert [req.size for req in served.seen] == [len(chat_body(f"{i} {big}")) for i in range(5)]  # type: ignore[attr-defined]
    kept = [json.dumps(e.to_dict(), ensure_ascii=False) for e in served.exchanges]
    assert len(kept) == 5 and all(len(text) < 200_000 for text in kept), [len(t) for t in kept]
    request = served.exchanges[0].request
    assert request["model"] == "m" and request["messages"][0]["role"] == "user"
    content = request["messages"][0]["content"]
    assert content.startswith("0 été 東京") and "characters left out" in content
    # a small body is kept whole
    httpx.post(served.base_url + CHAT, content=chat_body("petit"))
    assert served.exchanges[-1].request["messages"][0]["content"] == "petit"


def test_close_ends_every_connection_even_slow_loris_ones() -> None:
    server = sn.MockServer(sn.mock_llm(lambda req: "hi"), read_timeout=60)
    stalled = [
        b"",  # connected, says nothing
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n",  # headers never finished
        post(CHAT, {"Content-Length": "1000"}, b'{"model": '),  # body never finished
        post(CHAT, {"Transfer-Encoding": "chunked"}, b"10\r\n{"),  # a chunk never finished
    ]
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in stalled]
    try:
        for sock, data in zip(sockets, stalled, strict=True):
            sock.sendall(data)
        deadline = time.monotonic() + 5
        while len(mock_threads()) < 1 + len(stalled) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(mock_threads()) == 1 + len(stalled)  # the server's and one per connection
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 5
        assert not mock_threads(), mock_threads()
        for sock in sockets:  # each connection was ended by the server
            assert sock.recv(100) == b""
    finally:
        for sock in sockets:
            sock.close()


def test_a_silent_connection_is_closed_after_the_read_timeout() -> None:
    with sn.MockServer(sn.mock_llm(lambda req: "hi"), read_timeout=0.3) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            assert sock.recv(100) == b""  # the server hung up
            assert time.monotonic() - started < 5
        # a body that stops arriving is answered 408, saying so
        request = post(CHAT, {"Content-Length": "99"})
        status, _, body = raw_exchange(server.port, request, send_all=False)
        assert status == 408 and "read_timeout" in json.loads(body)["error"]["message"]
        assert server.exchanges[-1].status == 408
        # an idle keep-alive connection too, after a request was answered
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(post(CHAT, {"Content-Length": None}, chat_body()))
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            assert data.startswith(b"HTTP/1.1 200")
        deadline = time.monotonic() + 5
        while len(mock_threads()) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [t.name for t in mock_threads()] == [f"sagents_nb-mock-server-{server.port}"]


# Planted keys: in a request's path, and in the userinfo of sn.LLM's base_url

PLANTED = "sk-planted-0123456789abcdefXYZ"


def test_a_key_in_a_request_path_is_masked_in_the_exchange(served: sn.MockServer) -> None:
    with_header = httpx.post(
        f"{served.base_url}/proxy/{PLANTED}/v1/chat/completions",
        content=chat_body(f"le mot de passe est {PLANTED}"),
        headers={"Authorization": f"Bearer {PLANTED}"},
    )
    other_key = "ghp1234567890abcdefABCDEF0987"  # key-shaped, named by no header
    without_header = httpx.post(f"{served.base_url}/{other_key}{CHAT}", content=chat_body())
    assert with_header.status_code == without_header.status_code == 404
    assert PLANTED not in with_header.text and other_key not in without_header.text
    # a routed request whose body holds the header's key keeps it out of the exchange too
    routed = httpx.post(
        served.base_url + CHAT,
        content=chat_body(f"le mot de passe est {PLANTED}"),
        headers={"x-api-key": PLANTED},
    )
    assert reply_text(routed.content) == f"echo: le mot de passe est {PLANTED}"  # to the handler
    # and a large one, cut down in the exchange, with the key where the cut falls
    large = "é" * 790 + PLANTED + "東" * 2**20
    httpx.post(served.base_url + CHAT, content=chat_body(large), headers={"x-api-key": PLANTED})
    assert "characters left out" in served.exchanges[-1].request["messages"][0]["content"]
    urls = [e.url for e in served.exchanges]
    assert urls[0] == f"{served.base_url}/proxy/***/v1/chat/completions"
    assert urls[1] == f"{served.base_url}/***{CHAT}"
    dumped = json.dumps([e.to_dict() for e in served.exchanges], ensure_ascii=False)
    assert PLANTED not in dumped and PLANTED[:12] not in dumped and other_key not in dumped


def test_a_key_in_the_base_url_userinfo_is_never_shown(tmp_path, caplog) -> None:
    with sn.MockServer(sn.mock_llm(lambda req: "bonjour 東京")) as server:
        url = f"http://user:{PLANTED}@127.0.0.1:{server.port}/v1"
        llm = sn.LLM(url, api_key="sk-other-key-abcdef", retries=0)
        assert llm.base_url == f"http://***@127.0.0.1:{server.port}/v1"
        session = sn.Session(sn.Agent("a"), llm=sn.record(llm, tmp_path / "c.jsonl"))
        result = session.send("salut").result(timeout=20)
        assert result.text == "bonjour 東京"
        assert server.exchanges[-1].headers == {"authorization": "***"}  # the key was sent
        token_only = sn.LLM(f"http://{PLANTED}@127.0.0.1:{server.port}/v1", retries=0)
        token_run = sn.Agent("b").run_sync("x", llm=token_only)
        assert token_run.text == "bonjour 東京"
        served = json.dumps([e.to_dict() for e in server.exchanges])
    unreachable = sn.LLM(f"http://user:{PLANTED}@127.0.0.1:{server.port}/v1", retries=0)
    failed = sn.Agent("a").run_sync("x", llm=unreachable)
    assert failed.status == "error" and "could not reach http://***@127.0.0.1" in failed.text
    places = [
        repr(llm),
        llm.label,
        repr(token_only),
        token_only.label,
        repr(session.llm),
        session.llm.label,
        failed.text,
        served,
        (tmp_path / "c.jsonl").read_text(),
        caplog.text,
        *(e.model_dump_json() for run in (result, token_run, failed) for e in run.events),
        *(json.dumps(x.to_dict()) for x in (*llm.exchanges, *session.llm.exchanges)),
        *(json.dumps(x.to_dict()) for x in (*token_only.exchanges, *unreachable.exchanges)),
    ]
    leaks = [place[:80] for place in places if PLANTED in place or PLANTED[:12] in place]
    assert not leaks
    assert any("***@127.0.0.1" in place for place in places[:6])


def test_closing_waits_for_a_connection_thread_that_is_ending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connection's thread leaves the server's list as its connection closes, a little
    before it ends: `close()` waits for it too (under load it was still alive after `close()`)."""
    from sagents_nb._endpoints import mock_server

    closing_up = mock_server._Server.shutdown_request

    def slow_to_end(server: Any, request: Any) -> None:
        closing_up(server, request)
        time.sleep(0.3)  # the thread's last moments, widened

    monkeypatch.setattr(mock_server._Server, "shutdown_request", slow_to_end)
    with sn.MockServer(lambda req: "oui ✅") as server:
        answer = httpx.post(server.openai_base_url + "/chat/completions", content=chat_body("?"))
        assert reply_text(answer.content) == "oui ✅"
    assert not mock_threads()
