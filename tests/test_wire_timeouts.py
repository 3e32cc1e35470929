"""`sn.LLM(timeout=...)` bounds a whole request, against a real server on a loopback socket."""

from __future__ import annotations

import json

import pytest

import sagents_nb as sn
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.timeout(60)

SSE_HEAD = {"content-type": "text/event-stream", "cache-control": "no-store"}


def keep_alive_forever(body: bytes, answer: Answer) -> None:
    answer.head(200, SSE_HEAD)
    while answer.write(b": keep-alive\n\n") and answer.pause(0.5):
        pass


def trickle_json(body: bytes, answer: Answer) -> None:
    reply = json.dumps({"choices": [{"message": {"content": "x" * 4000}}]}).encode()
    answer.head(200, {"content-type": "application/json", "content-length": str(len(reply))})
    for i in range(len(reply)):
        if not (answer.write(reply[i : i + 1]) and answer.pause(0.4)):
            return


def trickle_stream_after_some_text(body: bytes, answer: Answer) -> None:
    answer.head(200, SSE_HEAD)
    first = {"choices": [{"delta": {"content": "début de réponse"}}]}
    answer.write(f"data: {json.dumps(first, ensure_ascii=False)}\n\n".encode())
    rest = b'data: {"choices": [{"delta": {"content": "' + b"z" * 4000
    for i in range(len(rest)):
        if not (answer.write(rest[i : i + 1]) and answer.pause(0.4)):
            return


def run_against(respond, *, stream: bool) -> tuple[str, sn.Result]:
    """The run's status while the server still answers, and its result."""
    with LoopbackServer(respond) as server:
        llm = sn.LLM(server.url, api_key="sk-loop", timeout=1.5, retries=0)
        kind = sn.kinds.Realtime() if stream else None
        run = sn.Session(sn.Agent("a", kind=kind), llm=llm).send("bonjour")
        # the timeout ends it; a bound on each read alone never would (it stays "running")
        status = run.wait(30)
    return status, run.result(timeout=30)


def test_keep_alive_comments_without_data_do_not_hold_a_stream_open_forever() -> None:
    status, result = run_against(keep_alive_forever, stream=True)
    assert status == "error"
    assert "did not finish answering within 1.5 s" in result.text
    assert "sn.LLM(timeout=...)" in result.text


def test_a_body_trickled_a_byte_at_a_time_is_cut_off() -> None:
    status, result = run_against(trickle_json, stream=False)
    assert status == "error"
    assert "did not finish answering within 1.5 s" in result.text


def test_a_stream_cut_off_by_the_timeout_keeps_its_partial_text() -> None:
    status, result = run_against(trickle_stream_after_some_text, stream=True)
    assert status == "incomplete"
    assert result.text == "début de réponse [truncated]"
    errors = [e.message for e in result.events if e.type == "error"]
    assert errors == [
        "the stream did not finish within 1.5 s (sn.LLM(timeout=...)); the partial reply was kept"
    ]


def test_read_timeout_bounds_silence_and_timeout_bounds_the_whole() -> None:
    llm = sn.LLM("http://127.0.0.1:9/v1", timeout=5, read_timeout=60)
    assert (llm.timeout, llm.read_timeout) == (5, 60)
    doc = sn.LLM.__doc__ or ""
    assert "a stream included" in doc and "the longest silence" in doc


def test_cancel_during_a_kept_alive_stream_is_a_cancel_not_a_timeout() -> None:
    with LoopbackServer(keep_alive_forever) as server:
        llm = sn.LLM(server.url, api_key="sk-loop", timeout=60, retries=0)
        session = sn.Session(sn.Agent("a", kind=sn.kinds.Realtime()), llm=llm)
        run = session.send("bonjour")
        run.wait(timeout=0.5)
        run.cancel()
        assert run.wait(10) == "cancelled"
