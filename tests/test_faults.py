"""Fault injection: misbehaving endpoints, tools, children and preprocessors each end in a clear
error or a recovery, with transcripts intact and the session usable afterwards."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest

import sagents_nb as sn
from sagents_nb.kinds import BaseKind


def sse(*lines: str) -> httpx.Response:
    return httpx.Response(
        200,
        content="".join(f"{line}\n\n" for line in lines),
        headers={"content-type": "text/event-stream"},
    )


def data(payload: object) -> str:
    return "data: " + json.dumps(payload)


def chunk(text: str) -> str:
    return data({"choices": [{"delta": {"content": text}}]})


def call_chunk(call: object) -> str:
    return data({"choices": [{"delta": {"tool_calls": [call]}}]})


FAULTS = {
    "html instead of json": (
        httpx.Response(
            200, text="<html>502 Bad Gateway</html>", headers={"content-type": "text/html"}
        ),
        "not JSON",
    ),
    "empty choices": (httpx.Response(200, json={"choices": []}), "without choices"),
    "missing message": (
        httpx.Response(200, json={"choices": [{"finish_reason": "stop"}]}),
        "without a message",
    ),
    "json array": (httpx.Response(200, json=[1, 2]), "not a chat completion"),
    "truncated json": (
        httpx.Response(
            200,
            text='{"choices": [{"message": {"content": "hi',
            headers={"content-type": "application/json"},
        ),
        "not JSON",
    ),
    "tool call without name": (
        httpx.Response(
            200,
            json={
                "choices": [
                    {"message": {"tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]}}
                ]
            },
        ),
        "without a function",
    ),
    "only malformed chunks": (sse("data: {nope", "data: [DONE]"), "malformed chunk"),
    "tool_calls a number": (
        httpx.Response(200, json={"choices": [{"message": {"content": "", "tool_calls": 7}}]}),
        "tool_calls that are int, not a list",
    ),
    "finish_reason an object": (
        httpx.Response(
            200, json={"choices": [{"message": {"content": "hi"}, "finish_reason": {}}]}
        ),
        "a finish_reason that is dict, not a string",
    ),
    "chunk choices a number": (sse(data({"choices": 5}), "data: [DONE]"), "choices is int"),
    "chunk tool-call index a string": (
        sse(call_chunk({"index": "1", "function": {"name": "t"}}), "data: [DONE]"),
        "tool-call index is str, not an integer",
    ),
    "chunk tool-call index a list": (
        sse(call_chunk({"index": [1], "function": {"name": "t"}}), "data: [DONE]"),
        "tool-call index is list, not an integer",
    ),
    "chunk function name a number": (
        sse(call_chunk({"index": 0, "function": {"name": 5}}), "data: [DONE]"),
        "tool-call function.name is int, not a string",
    ),
    "chunk delta tool_calls a number": (
        sse(data({"choices": [{"delta": {"tool_calls": 7}}]}), "data: [DONE]"),
        "delta.tool_calls is int, not a list",
    ),
    "chunk finish_reason an object": (
        sse(data({"choices": [{"delta": {}, "finish_reason": {}}]}), "data: [DONE]"),
        "finish_reason is dict, not a string",
    ),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_bad_replies_end_in_a_clear_error_and_the_session_recovers(name: str) -> None:
    response, expected = FAULTS[name]
    replies = iter([response])
    session = sn.Session(
        sn.Agent("a", kind=sn.kinds.Realtime() if "chunk" in name else None),
        llm=sn.mock_llm(lambda req: next(replies, "recovered")),
    )
    result = session.send("hello").result()
    assert result.status == "error" and expected in result.text, result.text
    assert len(result.text) < 600  # a short excerpt, not the whole reply
    assert any(e.type == "error" for e in result.events)
    assert [m.content for m in session.display_messages] == ["hello"]
    assert session.send("again").result().text == "recovered"


def test_stream_cut_before_done_keeps_partial_text_and_says_so() -> None:
    session = sn.Session(
        sn.Agent("a", kind=sn.kinds.Realtime()),
        llm=sn.mock_llm(lambda req: sse(chunk("half an "), chunk("answer"))),
    )
    result = session.send("x").result()
    assert result.status == "incomplete" and result.text == "half an answer [truncated]"
    assert session.llm_messages[-1].meta == {"truncated": True}
    response = next(e for e in result.events if e.type == "model_response")
    assert response.truncated is True
    assert any(e.type == "error" and "before [DONE]" in e.message for e in result.events)


def test_stream_with_some_malformed_chunks_keeps_the_good_ones() -> None:
    body = sse(chunk("good "), "data: {broken", chunk("text"), "data: [DONE]")
    result = sn.Agent("a", kind=sn.kinds.Realtime()).run_sync(
        "x", llm=sn.mock_llm(lambda req: body)
    )
    assert (result.status, result.text) == ("done", "good text")


def test_a_ten_megabyte_reply_is_handled() -> None:
    big = "x" * (10 * 1024 * 1024)
    result = sn.Agent("a").run_sync("x", llm=sn.script(big))
    assert result.status == "done" and len(result.text) == len(big)


def test_duplicate_tool_call_ids_are_made_unique_and_all_answered() -> None:
    @sn.tool
    def ping(n: int) -> str:
        return f"pong {n}"

    def handler(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("ping", "same", n=1), sn.call("ping", "same", n=2)])
        return " ".join(req.tool_results)

    llm = sn.mock_llm(handler)
    result = sn.Agent("a", tools=[ping]).run_sync("x", llm=llm)
    assert result.text == "pong 1 pong 2"
    messages = llm.exchanges[-1].request["messages"]
    ids = [c["id"] for c in messages[1]["tool_calls"]]
    assert len(set(ids)) == 2 and [m["tool_call_id"] for m in messages[2:]] == ids


def test_a_hanging_tool_times_out() -> None:
    @sn.tool(timeout=0.1)
    async def hang() -> str:
        await asyncio.sleep(30)
        return "never"

    result = sn.Agent("a", tools=[hang]).run_sync(
        "x",
        llm=sn.mock_llm(
            lambda req: (
                sn.reply(tool_calls=[sn.call("hang")])
                if not req.tool_results
                else req.tool_results[0]
            )
        ),
    )
    assert result.text == "error: tool hang timed out after 0.1 s"


def test_a_child_that_raises_returns_an_error_to_its_parent() -> None:
    class Broken(BaseKind):
        name = "broken"

        def build_context(self, child, input):
            raise RuntimeError("kind exploded")

    def handler(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="bad", prompt="p")])
        return req.tool_results[0]

    session = sn.Session(
        sn.Agent("boss", team=[sn.Agent("bad", does="b", kind=Broken())]), llm=sn.mock_llm(handler)
    )
    result = session.send("go").result()
    assert result.status == "done"
    assert result.text == "[error] RuntimeError: kind exploded"
    assert result.tree.children[0].status == "error"
    assert session.send("again").result().status == "done"


def test_a_hook_that_raises_is_an_error_result_not_a_crash() -> None:
    class BadHook:
        def before_tool(self, call):
            raise ValueError("hook bug")

    @sn.tool
    def t() -> str:
        return "ok"

    session = sn.Session(
        sn.Agent("a", tools=[t]),
        hooks=[BadHook()],
        llm=sn.mock_llm(
            lambda req: sn.reply(tool_calls=[sn.call("t")]) if not req.tool_results else "end"
        ),
    )
    result = session.send("x").result()
    assert result.status == "error" and "hook bug" in result.text
    for node in session.root.walk():
        calls = {c.id for m in node.history for c in m.tool_calls or ()}
        assert calls == {m.tool_call_id for m in node.history if m.role == "tool"}
    session.hooks.clear()
    assert session.send("y").result().status == "done"


def test_cancel_during_a_model_call() -> None:
    async def slow(req: sn.ChatRequest):
        await asyncio.sleep(30)
        return "late"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(slow))
    run = session.send("x")
    run.wait(timeout=0.3)
    run.cancel()
    assert run.wait(5) == "cancelled"
    session.llm = sn.script("next works")
    assert session.send("y").result().text == "next works"


def test_a_tool_call_cancelled_mid_call_ends_in_the_event_stream() -> None:
    started = threading.Event()

    @sn.tool
    async def slow() -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    session = sn.Session(
        sn.Agent("a", tools=[slow]),
        llm=sn.mock_llm(
            lambda req: sn.reply(tool_calls=[sn.call("slow")]) if not req.tool_results else "end"
        ),
    )
    run = session.send("x")
    assert started.wait(5)
    run.cancel()
    assert run.wait(5) == "cancelled"
    types = [e.type for e in session.events]
    finished = [e for e in session.events if e.type == "tool_call_finished"]
    assert [e.status for e in finished] == ["cancelled"]
    assert types.index("tool_call_finished") < types.index("run_finished")
    assert session.send("y").result().text == "end"


def test_cancel_a_queued_run_never_runs_it() -> None:
    async def slow(req: sn.ChatRequest):
        await asyncio.sleep(0.2)
        return "first"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(slow))
    first, second = session.send("one"), session.send("two")
    second.cancel()
    assert first.result().text == "first"
    assert second.wait(5) == "cancelled"
    assert [m.content for m in session.llm_messages if m.role == "user"] == ["one"]


def test_cancel_reaches_a_run_whose_mock_and_tools_never_suspend() -> None:
    @sn.tool
    def spin() -> str:
        return "again"

    llm = sn.mock_llm(lambda req: sn.reply(tool_calls=[sn.call("spin")]))
    session = sn.Session(
        sn.Agent("a", tools=[spin], max_turns=100_000), llm=llm, max_model_calls=None
    )
    run = session.send("loop forever")
    run.wait(timeout=0.3)
    run.cancel()
    assert run.wait(10) == "cancelled"
    assert len(llm.exchanges) < 100_000


def test_cancel_a_paused_run() -> None:
    @sn.tool
    def t() -> str:
        return "ok"

    session = sn.Session(
        sn.Agent("a", tools=[t]),
        llm=sn.mock_llm(
            lambda req: sn.reply(tool_calls=[sn.call("t")]) if req.last["role"] == "user" else "end"
        ),
    )
    run = session.send("x", pause_on={"tool"})
    assert run.wait(5) == "paused"
    run.cancel()
    assert run.result(timeout=5).status == "cancelled"
    assert session.send("y").result().text == "end"


def test_a_json_answer_to_a_stream_request_is_a_completion() -> None:
    @sn.tool
    def t(n: int) -> str:
        return f"n={n}"

    def handler(req: sn.ChatRequest):
        assert req.stream
        if not req.tool_results:
            return httpx.Response(
                200,
                json={
                    "choices": [
                        {
                            "message": {
                                "tool_calls": [
                                    {"id": "c1", "function": {"name": "t", "arguments": '{"n": 2}'}}
                                ]
                            }
                        }
                    ]
                },
            )
        return httpx.Response(
            200,
            json={"choices": [{"message": {"content": f"réponse {req.tool_results[0]}"}}]},
            headers={"content-type": "application/json; charset=utf-8"},
        )

    llm = sn.mock_llm(handler)
    result = sn.Agent("a", tools=[t], kind=sn.kinds.Realtime()).run_sync("x", llm=llm)
    assert (result.status, result.text) == ("done", "réponse n=2")
    assert [e.text for e in result.events if e.type == "text_delta"] == ["réponse n=2"]
    assert llm.exchanges[-1].response["choices"][0]["message"]["content"] == "réponse n=2"


def raw_sse(*payloads: object, end: str = "\n", between: str = "") -> httpx.Response:
    """An event stream whose JSON keeps non-ASCII characters raw, as many servers send it."""
    events = [f"data: {json.dumps(p, ensure_ascii=False)}{end}{end}{between}" for p in payloads]
    return httpx.Response(
        200,
        content="".join(events) + f"data: [DONE]{end}{end}",
        headers={"content-type": "text/event-stream; charset=utf-8"},
    )


def deltas(*texts: str) -> list[dict]:
    return [{"choices": [{"delta": {"content": t}}]} for t in texts]


RECOVERIES = {
    "raw U+2028 and U+0085 in streamed text": (
        raw_sse(*deltas("ligne\u2028suivante ", "next\u0085line ", "段落\u2029終わり")),
        "ligne\u2028suivante next\u0085line 段落\u2029終わり",
    ),
    "CRLF line endings": (raw_sse(*deltas("crlf ", "ok 👍"), end="\r\n"), "crlf ok 👍"),
    "CR line endings": (raw_sse(*deltas("cr ", "ok"), end="\r"), "cr ok"),
    "keep-alive comments between chunks": (
        raw_sse(*deltas("kept ", "alive"), between=": keep-alive\n\n"),
        "kept alive",
    ),
    "a JSON answer to a stream request": (
        httpx.Response(200, json={"choices": [{"message": {"content": "un seul bloc"}}]}),
        "un seul bloc",
    ),
}


@pytest.mark.parametrize("name", sorted(RECOVERIES))
def test_odd_but_valid_streams_are_read_whole(name: str) -> None:
    response, expected = RECOVERIES[name]
    session = sn.Session(
        sn.Agent("a", kind=sn.kinds.Realtime()), llm=sn.mock_llm(lambda req: response)
    )
    result = session.send("x").result()
    assert (result.status, result.text) == ("done", expected)
    assert "".join(e.text for e in result.events if e.type == "text_delta") == expected


# BaseExceptions from user code: the call fails, the library's loop thread lives on

BASE_EXCEPTIONS = {
    "SystemExit": lambda: SystemExit(2),  # an argparse helper given bad input
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
}


def _calls_then_echo(name: str):
    return lambda req: (
        sn.reply(tool_calls=[sn.call(name)]) if not req.tool_results else req.tool_results[0]
    )


def _loop_thread_alive() -> bool:
    import threading

    return any(t.name == "sagents_nb-loop" and t.is_alive() for t in threading.enumerate())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("flavour", ["sync", "async", "sync on the loop"])
@pytest.mark.parametrize("exc", sorted(BASE_EXCEPTIONS))
def test_a_tool_raising_a_base_exception_is_an_error_result(exc: str, flavour: str) -> None:
    make = BASE_EXCEPTIONS[exc]
    if flavour == "async":

        async def argparse_helper() -> str:
            raise make()
    else:

        def argparse_helper() -> str:
            raise make()

    tool = (
        sn.tool(argparse_helper, thread=False) if flavour == "sync on the loop" else argparse_helper
    )
    bystander = sn.Session(sn.Agent("b"), llm=sn.mock_llm(lambda req: "bystander fine"))
    session = sn.Session(
        sn.Agent("a", tools=[tool]), llm=sn.mock_llm(_calls_then_echo("argparse_helper"))
    )
    result = session.send("x").result(timeout=10)
    assert result.status == "done"
    assert result.text.startswith(f"error: tool argparse_helper failed: {exc}"), result.text
    assert _loop_thread_alive()
    assert bystander.send("y").result(timeout=10).text == "bystander fine"
    assert session.send("again").result(timeout=10).status == "done"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("exc", sorted(BASE_EXCEPTIONS))
def test_a_preprocessor_raising_a_base_exception_is_rejected(exc: str) -> None:
    make = BASE_EXCEPTIONS[exc]

    def preprocess(scope, message, context):
        raise make()

    session = sn.Session(sn.Agent("a"), llm=sn.script("fine"), preprocessor=preprocess)
    with pytest.raises(sn.Rejected, match=exc):
        session.send("x")
    assert _loop_thread_alive() and session.display_messages == []
    session.preprocessor = None
    assert session.send("y").result(timeout=10).text == "fine"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("exc", sorted(BASE_EXCEPTIONS))
def test_a_hook_raising_a_base_exception_ends_the_run_in_error(exc: str) -> None:
    make = BASE_EXCEPTIONS[exc]

    class Hook:
        def before_tool(self, call):
            raise make()

    @sn.tool
    def t() -> str:
        return "ok"

    session = sn.Session(
        sn.Agent("a", tools=[t]), hooks=[Hook()], llm=sn.mock_llm(_calls_then_echo("t"))
    )
    result = session.send("x").result(timeout=10)
    assert result.status == "error" and exc in result.text
    assert _loop_thread_alive()
    session.hooks.clear()
    assert session.send("y").result(timeout=10).status == "done"


@pytest.mark.timeout(30)
def test_a_failing_hook_among_parallel_calls_cancels_its_siblings() -> None:
    finished: list[str] = []

    @sn.tool
    async def slow() -> str:
        await asyncio.sleep(0.5)
        finished.append("slow")
        return "slow done"

    @sn.tool
    def bad() -> str:
        return "never"

    class Hook:
        def before_tool(self, call):
            if call.name == "bad":
                raise ValueError("hook bug")

    session = sn.Session(
        sn.Agent("a", tools=[slow, bad]),
        hooks=[Hook()],
        llm=sn.mock_llm(
            lambda req: (
                sn.reply(tool_calls=[sn.call("slow"), sn.call("bad"), sn.call("slow")])
                if not req.tool_results
                else "end"
            )
        ),
    )
    result = session.send("x").result(timeout=10)
    assert result.status == "error" and "hook bug" in result.text
    time.sleep(0.8)  # the slow calls would have ended by now
    assert finished == []
    assert session.events[-1].type == "run_finished"
    answered = [m.content for m in session.llm_messages if m.role == "tool"]
    assert len(answered) == 3 and all(a.startswith("[cancelled]") for a in answered)
    session.hooks.clear()
    assert session.send("y").result(timeout=10).status == "done"


def test_a_stopped_loop_thread_is_restarted_and_says_so() -> None:
    from sagents_nb._base.loop import library_loop

    async def slow(req: sn.ChatRequest):
        await asyncio.sleep(30)
        return "never"

    lost = sn.Session(sn.Agent("a"), llm=sn.mock_llm(slow)).send("x")
    loop = library_loop()
    loop.call_soon_threadsafe(loop.stop)
    deadline = time.monotonic() + 5
    while _loop_thread_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(sn.SagentsError, match="loop thread stopped while it was running"):
        lost.wait(5)
    with pytest.warns(RuntimeWarning, match="loop thread had stopped"):
        result = sn.Agent("a").run_sync("x", llm=sn.script("after a restart"))
    assert result.text == "after a restart"
