"""Typed tools: schema from the signature, validation, and errors that go back to the model."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

import sagents_nb as sn
from tests.conftest import add


def test_schema_comes_from_signature_and_docstring() -> None:
    assert add.name == "add"
    assert add.description == "Add two integers."
    assert add.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "the first number."},
            "b": {"type": "integer", "description": "the second number."},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_defaults_and_async_tools() -> None:
    @sn.tool
    async def greet(name: str, punctuation: str = "!") -> str:
        """Greet someone."""
        await asyncio.sleep(0)
        return f"hi {name}{punctuation}"

    assert greet.parameters["required"] == ["name"]
    assert asyncio.run(greet.invoke({"name": "Ada"})) == "hi Ada!"


def test_arguments_are_validated_before_the_call() -> None:
    calls = []

    @sn.tool
    def record(n: int) -> str:
        calls.append(n)
        return "ok"

    with pytest.raises(Exception, match="n"):
        asyncio.run(record.invoke({"n": "not a number"}))
    assert calls == []


def _one_call_then_echo(call: sn.ToolCall | sn.Reply) -> sn.LLM:
    def handler(req: sn.ChatRequest):
        if not req.tool_results:
            return call
        return f"got: {req.tool_results[-1]}"

    return sn.mock_llm(handler)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            sn.reply(tool_calls=[sn.call("add", a=1)]),
            "error: invalid arguments for add: b: Field required",
        ),
        (
            sn.reply(tool_calls=[sn.call("nope", x=1)]),
            "error: unknown tool 'nope' (available: add)",
        ),
        (sn.reply(tool_calls=[sn.call("add", a=1, b=2, c=3)]), "c: Extra inputs are not permitted"),
    ],
)
def test_bad_calls_become_error_results(
    calc_agent: sn.Agent, reply: sn.Reply, expected: str
) -> None:
    llm = _one_call_then_echo(reply)
    result = calc_agent.run_sync("go", llm=llm)
    assert result.status == "done"
    assert expected in result.text
    finished = [e for e in result.events if e.type == "tool_call_finished"]
    assert finished[0].status == "error"


def test_invalid_json_arguments_become_an_error_result(calc_agent: sn.Agent) -> None:
    bad = sn.reply(tool_calls=[sn.call("add", a=1, b=2)])
    bad = type(bad)(bad.text, bad.tool_calls, None, False, {0: '{"a": 1, "b":'})
    result = calc_agent.run_sync("go", llm=_one_call_then_echo(bad))
    assert "arguments are not valid JSON" in result.text


def test_exception_inside_a_tool_goes_back_to_the_model() -> None:
    @sn.tool
    def explode() -> str:
        raise ValueError("kaboom")

    agent = sn.Agent("a", tools=[explode])
    result = agent.run_sync(
        "go", llm=_one_call_then_echo(sn.reply(tool_calls=[sn.call("explode")]))
    )
    assert result.status == "done"
    assert "error: tool explode failed: ValueError: kaboom" in result.text


def test_async_tool_timeout_is_an_error_result() -> None:
    @sn.tool(timeout=0.05)
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    agent = sn.Agent("a", tools=[slow])
    result = agent.run_sync("go", llm=_one_call_then_echo(sn.reply(tool_calls=[sn.call("slow")])))
    assert "timed out after 0.05 s" in result.text


# sync tools run off the library's loop (a worker thread), so one that blocks freezes nothing


@pytest.mark.timeout(60)
def test_a_blocking_sync_tool_freezes_neither_other_sessions_nor_the_controls() -> None:
    release = threading.Event()

    @sn.tool
    def fetch() -> str:
        """Like a slow requests.get."""
        release.wait(10)
        return "fetched"

    blocked = sn.Session(
        sn.Agent("a", tools=[fetch]),
        llm=sn.mock_llm(
            lambda req: sn.reply(tool_calls=[sn.call("fetch")]) if not req.tool_results else "end"
        ),
    )
    try:
        run = blocked.send("x")
        while not any(e.type == "tool_call_started" for e in run.events):
            run.wait(0.01)
        other = sn.Session(sn.Agent("b"), llm=sn.script("other session fine"))
        assert other.send("y").result(timeout=5).text == "other session fine"
        run.cancel()
        assert run.wait(5) == "cancelled"
        assert blocked.llm_messages[-1].content.startswith("[cancelled]")
    finally:
        release.set()


@pytest.mark.timeout(60)
def test_timeout_is_honoured_for_a_sync_tool() -> None:
    release = threading.Event()

    @sn.tool(timeout=0.2)
    def hang() -> str:
        release.wait(10)
        return "late"

    try:
        result = sn.Agent("a", tools=[hang]).run_sync(
            "go", llm=_one_call_then_echo(sn.reply(tool_calls=[sn.call("hang")]))
        )
        assert result.text.startswith("got: error: tool hang timed out after 0.2 s")
    finally:
        release.set()


def test_sync_tools_see_the_callers_context_variables() -> None:
    current = contextvars.ContextVar("current", default="unset")

    @sn.tool
    def where() -> str:
        return current.get()

    async def main() -> str:
        current.set("set by the caller")
        result = await sn.Agent("a", tools=[where]).run(
            "go", llm=_one_call_then_echo(sn.reply(tool_calls=[sn.call("where")]))
        )
        return result.text

    assert asyncio.run(main()) == "got: set by the caller"


def test_a_timeout_that_cannot_be_enforced_is_refused() -> None:
    def quick() -> str:
        return "ok"

    with pytest.raises(sn.ConfigurationError, match="thread=False"):
        sn.tool(quick, timeout=1.0, thread=False)
    with pytest.raises(sn.ConfigurationError, match="async"):

        @sn.tool(thread=True)
        async def already_async() -> str:
            return "ok"
