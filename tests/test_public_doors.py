"""Every public door refuses a wrong-typed argument at the call, naming it, and takes what users
naturally pass (issue 29 item 8, issue 30 item 11).

The table has a row for every public callable of `sagents_nb`, `sn.kinds`, `sn.store` and
`sn.harness` (a new one without a row fails `test_every_public_callable_has_a_row`), and for
the methods a notebook calls with arguments of its own.
"""

from __future__ import annotations

import asyncio
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pydantic
import pytest

import sagents_nb as sn
import sagents_nb.store as sn_store
from sagents_nb.harness import ClaudeCode, HarnessConfig


class Doors:
    """What the rows call methods on: an agent, a durable session with one finished run."""

    @cached_property
    def agent(self) -> sn.Agent:
        return sn.Agent("boss")

    @cached_property
    def session(self) -> sn.Session:
        return sn.Session(self.agent, llm=sn.script("fine"), store=":memory:")

    @cached_property
    def run(self) -> sn.Run:
        run = self.session.send("bonjour, ça va ? 你好")
        assert run.wait(timeout=30) == "done"
        return run


@dataclass(frozen=True)
class Row:
    door: str
    """The public name: `sn.Agent`, `sn.kinds.Main`, `Session.fork`..."""
    argument: str
    """The argument the error must name."""
    got: str
    """The wrong value's type, which the error must name too."""
    call: Callable[[Doors], Any]


def _serve(tools: Any, call_tool: Any) -> None:
    async def enter() -> None:
        async with sn.harness.serve_tools(tools, call_tool):
            pass

    asyncio.run(enter())


def _run_harness(driver: Any, config: Any) -> None:
    asyncio.run(sn.harness.run_harness(driver, config))


def _task_class(**fields: Any) -> type[sn.Task]:
    return type("Bad", (sn.Task,), {"task_name": "bad", **fields})


def _handler(request: sn.ChatRequest) -> str:
    return "ok"


def _comparison() -> Any:
    return sn.compare(sn.Agent("solo"), "salut — やあ", {"a": {}}, llm=sn.script("ok"))


def _save_html(obj: Any, path: Any) -> Any:
    from sagents_nb.notebook import save_html

    return save_html(obj, path)


def lookup(word: str) -> str:
    """Look a word up."""
    return word


ROWS = [
    # the reported cases (issue 29 item 8) first, then the rest of each door
    Row("sn.Agent", "kind", "int", lambda d: sn.Agent("a", kind=5)),
    Row("sn.Agent", "token_budget", "str", lambda d: sn.Agent("a", token_budget="100")),
    Row("sn.Agent", "team", "str", lambda d: sn.Agent("a", team="kid")),
    Row("sn.Agent", "name", "int", lambda d: sn.Agent(5)),
    Row("sn.Agent", "tools[0]", "int", lambda d: sn.Agent("a", tools=[5])),
    Row("sn.Agent", "hooks", "int", lambda d: sn.Agent("a", hooks=5)),
    Row("sn.Agent", "model", "int", lambda d: sn.Agent("a", model=5)),
    Row("sn.Agent", "max_turns", "str", lambda d: sn.Agent("a", max_turns="3")),
    Row("sn.Agent", "tool_call_budget", "float", lambda d: sn.Agent("a", tool_call_budget=1.5)),
    Row("sn.Agent", "does", "int", lambda d: sn.Agent("a", does=5)),
    Row("sn.Agent", "instructions", "list", lambda d: sn.Agent("a", instructions=["x"])),
    Row("Agent.kind", "kind", "int", lambda d: setattr(sn.Agent("a"), "kind", 5)),
    Row("Agent.kind", "kind", "str", lambda d: setattr(sn.Agent("a"), "kind", "residnet")),
    Row("Agent.model", "model", "float", lambda d: setattr(sn.Agent("a"), "model", 4.0)),
    Row("sn.Task", "model_override", "int", lambda d: _task_class(model_override=42)),
    Row("sn.Task", "kind", "int", lambda d: _task_class(kind=5)),
    Row("sn.Task", "tools[0]", "int", lambda d: _task_class(tools=[5])),
    Row("sn.Session", "agent", "str", lambda d: sn.Session("a", llm=sn.script())),
    Row("sn.Session", "llm", "int", lambda d: sn.Session(d.agent, llm=5)),
    Row("sn.Session", "llm", "str", lambda d: sn.Session(d.agent, llm="localhost")),
    Row("sn.Session", "token_counter", "int", lambda d: sn.Session(d.agent, llm=sn.script(), token_counter=5)),
    Row("sn.Session", "hooks[0]", "int", lambda d: sn.Session(d.agent, llm=sn.script(), hooks=[5])),
    Row("sn.Session", "state", "list", lambda d: sn.Session(d.agent, llm=sn.script(), state=[])),
    Row("sn.Session", "tool_context", "str", lambda d: sn.Session(d.agent, llm=sn.script(), tool_context="x")),
    Row("sn.Session", "durability", "str", lambda d: sn.Session(d.agent, llm=sn.script(), durability="never")),
    Row("Session.llm", "llm", "int", lambda d: setattr(d.session, "llm", 5)),
    Row("Session.send", "text", "int", lambda d: d.session.send(5)),
    Row("Session.fork", "at", "str", lambda d: (d.run, d.session.fork(at="3"))),
    Row("Session.fork", "at", "float", lambda d: (d.run, d.session.fork(at=1.5))),
    Row("Session.subscribe", "callback", "int", lambda d: d.session.subscribe(5)),
    Row("Session.export_jsonl", "path", "int", lambda d: d.session.export_jsonl(5)),
    Row("Session.save_html", "path", "int", lambda d: d.session.save_html(5)),
    Row("Result.save_html", "path", "int", lambda d: d.run.result().save_html(5)),
    Row("Comparison.save_html", "path", "int", lambda d: _comparison().save_html(5)),
    Row("notebook.save_html", "path", "int", lambda d: _save_html(d.session, 5)),
    Row("Session.import_jsonl", "path", "int", lambda d: sn.Session.import_jsonl(5, ":memory:", agent=d.agent)),
    Row("Run.wait", "timeout", "str", lambda d: d.run.wait(timeout="1")),
    Row("Run.result", "timeout", "str", lambda d: d.run.result(timeout="1")),
    Row("Run.reject", "reason", "int", lambda d: d.run.reject(5)),
    Row("sn.LLM", "timeout", "str", lambda d: sn.LLM("http://127.0.0.1:9/v1", timeout="5")),
    Row("sn.LLM", "base_url", "int", lambda d: sn.LLM(base_url=5)),
    Row("sn.LLM", "api_key", "bytes", lambda d: sn.LLM("http://127.0.0.1:9/v1", api_key=b"k")),
    Row("sn.LLM", "retries", "str", lambda d: sn.LLM("http://127.0.0.1:9/v1", retries="2")),
    Row("sn.LLM", "transport", "int", lambda d: sn.LLM("http://127.0.0.1:9/v1", transport=5)),
    Row("sn.LLM", "model", "int", lambda d: sn.LLM("http://127.0.0.1:9/v1", model=5)),
    Row("sn.mock_llm", "handler", "int", lambda d: sn.mock_llm(5)),
    Row("sn.mock_llm", "model", "int", lambda d: sn.mock_llm(_handler, model=5)),
    Row("sn.call", "name", "int", lambda d: sn.call(5)),
    Row("sn.call", "_id", "int", lambda d: sn.call("search", 5)),
    Row("sn.reply", "tool_calls", "int", lambda d: sn.reply(tool_calls=5)),
    Row("sn.reply", "tool_calls[0]", "str", lambda d: sn.reply(tool_calls=["search"])),
    Row("sn.reply", "text", "int", lambda d: sn.reply(5)),
    Row("sn.reply", "usage", "int", lambda d: sn.reply("x", usage=5)),
    Row("sn.reply", "stream", "str", lambda d: sn.reply("x", stream="yes")),
    Row("sn.script", "replies[1]", "int", lambda d: sn.script("x", 5)),
    Row("sn.when", "path", "int", lambda d: sn.when(path=5)),
    Row("sn.when", "action", "int", lambda d: sn.when(action=5)),
    Row("sn.when", "tool", "list", lambda d: sn.when(tool=["transfer"])),
    Row("sn.when", "args", "str", lambda d: sn.when(args="amount > 100")),
    Row("sn.MockServer", "llm", "int", lambda d: sn.MockServer(5)),
    Row("sn.MockServer", "port", "str", lambda d: sn.MockServer(_handler, port="x")),
    Row("sn.MockServer", "max_body", "str", lambda d: sn.MockServer(_handler, max_body="1")),
    Row("sn.MockServer", "read_timeout", "str", lambda d: sn.MockServer(_handler, read_timeout="1")),
    Row("sn.tool", "fn", "int", lambda d: sn.tool(5)),
    Row("sn.tool", "name", "int", lambda d: sn.tool(name=5)(_handler)),
    Row("sn.tool", "timeout", "str", lambda d: sn.tool(_handler, timeout="1")),
    Row("sn.Tool", "fn", "str", lambda d: sn.Tool("search")),
    Row("sn.Tool", "thread", "str", lambda d: sn.Tool(_handler, thread="yes")),
    Row("sn.Mentions", "documents", "int", lambda d: sn.Mentions(5)),
    Row("sn.Mentions", "strict", "str", lambda d: sn.Mentions({}, strict="yes")),
    Row("sn.Deny", "reason", "int", lambda d: sn.Deny(5)),
    Row("sn.record", "endpoint", "int", lambda d: sn.record(5, "p.jsonl")),
    Row("sn.record", "path", "int", lambda d: sn.record(sn.script(), 5)),
    Row("sn.record", "mode", "list", lambda d: sn.record(sn.script(), "p.jsonl", mode=["once"])),
    Row("sn.record", "match_on", "int", lambda d: sn.record(sn.script(), "p.jsonl", match_on=5)),
    Row("sn.replay", "path", "int", lambda d: sn.replay(5)),
    Row("sn.compare", "agent", "int", lambda d: sn.compare(5, "x")),
    Row("sn.diff", "b", "str", lambda d: sn.diff(sn.Session(d.agent, llm=sn.script()), "x")),
    Row("sn.sweep", "agent", "int", lambda d: sn.sweep(5, "x")),
    Row("sn.sweep", "id", "list", lambda d: sn.sweep(d.agent, [{"prompt": "x", "id": [1]}], llm=sn.script())),
    Row("sn.SQLiteStore", "path", "int", lambda d: sn.SQLiteStore(5)),
    Row("sn.SQLiteStore", "create", "str", lambda d: sn.SQLiteStore(":memory:", create="yes")),
    Row("sn.Message", "role", "int", lambda d: sn.Message(role=5)),
    Row("sn.ToolCall", "name", "int", lambda d: sn.ToolCall(id="1", name=5)),
    Row("sn.Usage", "prompt_tokens", "str", lambda d: sn.Usage(prompt_tokens="x")),
    Row("sn.kinds.Main", "top_k", "str", lambda d: sn.kinds.Main(top_k="x")),
    Row("sn.kinds.Main", "recent", "str", lambda d: sn.kinds.Main(recent="x")),
    Row("sn.kinds.Main", "scorer", "int", lambda d: sn.kinds.Main(scorer=5)),
    Row("sn.kinds.Native", "driver", "int", lambda d: sn.kinds.Native(5)),
    Row("sn.kinds.Native", "inactivity_timeout", "str", lambda d: sn.kinds.Native(ClaudeCode(), inactivity_timeout="1")),
    Row("sn.kinds.Native", "extra_args", "str", lambda d: sn.kinds.Native(ClaudeCode(), extra_args="-v")),
    Row("sn.kinds.Native", "cwd", "int", lambda d: sn.kinds.Native(ClaudeCode(), cwd=5)),
    Row("sn.kinds.Realtime", "window", "str", lambda d: sn.kinds.Realtime(window="x")),
    Row("sn.kinds.Resident", "window_tokens", "str", lambda d: sn.kinds.Resident(window_tokens="x")),
    Row("sn.kinds.Resident", "relevance", "str", lambda d: sn.kinds.Resident(relevance="no")),
    Row("sn.kinds.Resident", "window_tokens", "str", lambda d: sn.kinds.Resident().configured(window_tokens="x")),
    Row("sn.kinds.Worker", "max_turns", "str", lambda d: sn.kinds.Worker("3")),
    Row("sn.kinds.register", "name", "int", lambda d: sn.kinds.register(5, sn.kinds.Worker)),
    Row("sn.kinds.register", "factory", "int", lambda d: sn.kinds.register("mine", 5)),
    Row("sn.kinds.kind_name", "kind", "int", lambda d: sn.kinds.kind_name(5)),
    Row("sn.store.SQLiteStore", "path", "NoneType", lambda d: sn_store.SQLiteStore(None)),
    Row("sn.store.PostgresStore", "conninfo", "int", lambda d: sn_store.PostgresStore(5)),
    Row("sn.harness.ClaudeCode", "executable", "int", lambda d: ClaudeCode(executable=5)),
    Row("sn.harness.ClaudeCode", "permission_mode", "str", lambda d: ClaudeCode(permission_mode="yolo")),
    Row("sn.harness.ClaudeCode", "stream_text", "str", lambda d: ClaudeCode(stream_text="yes")),
    Row("sn.harness.Codex", "sandbox", "int", lambda d: sn.harness.Codex(sandbox=1)),
    Row("sn.harness.CursorAgent", "executable", "NoneType", lambda d: sn.harness.CursorAgent(executable=None)),
    Row("sn.harness.Grok", "base_url", "int", lambda d: sn.harness.Grok(base_url=3)),
    Row("sn.harness.HarnessConfig", "prompt", "int", lambda d: HarnessConfig(5)),
    Row("sn.harness.HarnessConfig", "extra_args", "str", lambda d: HarnessConfig("p", extra_args="-v")),
    Row("sn.harness.ToolAnswer", "text", "int", lambda d: sn.harness.ToolAnswer(5)),
    Row("sn.harness.ToolAnswer", "is_error", "str", lambda d: sn.harness.ToolAnswer("x", "no")),
    Row("sn.harness.available", "driver", "int", lambda d: sn.harness.available(5)),
    Row("sn.harness.run_harness", "driver", "int", lambda d: _run_harness(5, HarnessConfig("p"))),
    Row("sn.harness.run_harness", "config", "str", lambda d: _run_harness(ClaudeCode(), "p")),
    Row("sn.harness.serve_tools", "tools", "int", lambda d: _serve(5, _handler)),
    Row("sn.harness.serve_tools", "call_tool", "int", lambda d: _serve([], 5)),
    Row("sn.harness.HarnessDone", "content", "int", lambda d: sn.harness.HarnessDone(content=5)),
    Row("sn.harness.HarnessError", "message", "int", lambda d: sn.harness.HarnessError(message=5)),
    Row("sn.harness.HarnessPermissionDenied", "name", "int", lambda d: sn.harness.HarnessPermissionDenied(name=5)),
    Row("sn.harness.HarnessReasoning", "text", "int", lambda d: sn.harness.HarnessReasoning(text=5)),
    Row("sn.harness.HarnessRetry", "attempt", "str", lambda d: sn.harness.HarnessRetry(attempt="x")),
    Row("sn.harness.HarnessSession", "session_id", "int", lambda d: sn.harness.HarnessSession(session_id=5)),
    Row("sn.harness.HarnessText", "text", "int", lambda d: sn.harness.HarnessText(text=5)),
    Row("sn.harness.HarnessToolCall", "name", "int", lambda d: sn.harness.HarnessToolCall(name=5)),
    Row("sn.harness.HarnessUsage", "input_tokens", "str", lambda d: sn.harness.HarnessUsage(input_tokens="x")),
    Row("sn.harness.HarnessOutcome", "status", "int", lambda d: sn.harness.HarnessOutcome(status=5)),
    Row("sn.harness.HarnessToolResult", "id", "int", lambda d: sn.harness.HarnessToolResult(id=5)),
    Row("sn.harness.HarnessModelCall", "id", "int", lambda d: sn.harness.HarnessModelCall(id=5)),
    Row("sn.harness.HarnessSubagent", "status", "str", lambda d: sn.harness.HarnessSubagent(id="a", status="paused")),
]  # fmt: skip

_ERRORS = "an exception class: raised, not called with a user's arguments"
_PROTOCOL = "a protocol: implemented by a class of the user's, not called"
_ALIAS = "a type alias, for annotations"
_MADE = "a record the library makes and hands out; its constructor is not a door"
_ROWS = "a store row the journal builds on the commit path and a `Store` receives"
NOT_DOORS = {
    **dict.fromkeys(
        [
            "sn.CassetteMismatch",
            "sn.ConfigurationError",
            "sn.EndpointError",
            "sn.LLMError",
            "sn.MalformedReply",
            "sn.Rejected",
            "sn.RunPaused",
            "sn.SagentsError",
            "sn.StoreError",
            "sn.ToolError",
            "sn.TransportError",
            "sn.kinds.CompactUnsupported",
            "sn.store.StoreError",
        ],
        _ERRORS,
    ),
    **dict.fromkeys(
        [
            "sn.MessagePreprocessor",
            "sn.Store",
            "sn.kinds.Child",
            "sn.kinds.ChildKind",
            "sn.store.Store",
            "sn.store.ForkingStore",
            "sn.store.PlainCommitStore",
            "sn.store.GroupCommitStore",
            "sn.store.SkimmingStore",
            "sn.store.OutliningStore",
            "sn.harness.NativeHarness",
            "sn.harness.ServedTool",
        ],
        _PROTOCOL,
    ),
    **dict.fromkeys(
        [
            "sn.kinds.DisposePolicy",
            "sn.harness.ApproveTool",
            "sn.harness.CallTool",
            "sn.harness.HarnessEvent",
            "sn.harness.OnEvent",
        ],
        _ALIAS,
    ),
    **dict.fromkeys(
        [
            "sn.ChatRequest",
            "sn.Comparison",
            "sn.SessionDiff",
            "sn.PendingAction",
            "sn.PreprocessContext",
            "sn.Result",
            "sn.Run",
            "sn.ToolCallInfo",
            "sn.ToolResult",
            "sn.TreeNode",
            "sn.StoredSession",
            "sn.store.StoredSession",
            "sn.harness.McpInjection",
            "sn.kinds.CompactionReport",
        ],
        _MADE,
    ),
    **dict.fromkeys(
        [
            "sn.store.EventRow",
            "sn.store.EventOutline",
            "sn.store.MessageRow",
            "sn.store.MessageWrite",
            "sn.store.NodeRow",
            "sn.store.SessionRows",
            "sn.store.Step",
            "sn.store.TaskRow",
        ],
        _ROWS,
    ),
    "sn.kinds.BaseKind": "a base class to subclass: the built-in kinds on it have rows",
    "sn.harness.BaseHarness": "an abstract base class: the drivers on it have rows",
    "sn.kinds.View": "what a kind's build_context returns, built at every turn (the hot path)",
    "sn.kinds.registry": "takes no arguments",
    "sn.store.MemoryStore": "takes no arguments",
    "sn.kinds.CliAgent": "takes no arguments",
    "sn.harness.cli_call_id": "takes no arguments",
}


def _public_callables() -> Iterator[str]:
    for prefix, module in (
        ("sn", sn),
        ("sn.kinds", sn.kinds),
        ("sn.store", sn_store),
        ("sn.harness", sn.harness),
    ):
        for name in module.__all__:
            value = getattr(module, name)
            if callable(value) and not isinstance(value, types.ModuleType):
                yield f"{prefix}.{name}"


def test_every_public_callable_has_a_row() -> None:
    public = set(_public_callables())
    with_rows = {row.door for row in ROWS}
    assert public - with_rows - set(NOT_DOORS) == set(), "a public callable without a row"
    assert with_rows & set(NOT_DOORS) == set()
    stale = {door for door in with_rows | set(NOT_DOORS) if door.startswith("sn.")} - public
    assert stale == set(), "rows for names that are no longer public"


@pytest.fixture(scope="module")
def doors() -> Iterator[Doors]:
    yield Doors()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("row", ROWS, ids=[f"{r.door}-{r.argument}-{r.got}" for r in ROWS])
def test_a_wrong_type_is_refused_at_the_call_naming_the_argument(
    row: Row, doors: Doors, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a cassette path a row names stays in the test's folder
    with pytest.raises((TypeError, sn.ConfigurationError, pydantic.ValidationError)) as caught:
        row.call(doors)
    message = str(caught.value)
    assert re.search(rf"(?<![\w.]){re.escape(row.argument)}(?![\w])", message), message
    assert re.search(rf"\b{row.got}\b", message), message
    if not isinstance(caught.value, pydantic.ValidationError):
        assert isinstance(caught.value, TypeError) and isinstance(
            caught.value, sn.ConfigurationError
        ), "catchable as either"


def test_a_key_of_the_wrong_type_is_not_shown() -> None:
    with pytest.raises(TypeError) as caught:
        sn.LLM("http://127.0.0.1:9/v1", api_key=b"sk-secret-123")
    assert "sk-secret" not in str(caught.value)
    with pytest.raises(TypeError) as caught:
        ClaudeCode(api_key=b"sk-secret-123")
    assert "sk-secret" not in str(caught.value)


# what users naturally pass is taken, converted as sn.compare converts it


@pytest.mark.timeout(60)
def test_a_kind_name_is_a_kind_and_the_run_ends() -> None:
    # the worst case of the report: a kind's name was accepted and the run never ended
    agent = sn.Agent("boss", kind="resident")
    assert isinstance(agent.kind, sn.kinds.Resident)
    assert isinstance(sn.Agent("a", kind=sn.kinds.Realtime).kind, sn.kinds.Realtime)
    session = sn.Session(agent, llm=sn.script("très bien, 好的"))
    result = session.send("ça va ?").result(timeout=30)
    assert (result.status, result.text) == ("done", "très bien, 好的")
    assert result.tree.kind == "resident"


def test_an_unknown_kind_name_lists_the_registered_ones() -> None:
    with pytest.raises(sn.ConfigurationError, match=r"residnet.*main, realtime, resident, worker|"
                       r"main, realtime, resident, worker.*residnet"):  # fmt: skip
        sn.Agent("a", kind="residnet")


@pytest.mark.timeout(60)
def test_a_url_is_an_endpoint() -> None:
    seen: list[str] = []

    def handler(request: sn.ChatRequest) -> str:
        seen.append(request.model)
        return "servi par HTTP ✓"

    with sn.MockServer(handler) as server:
        session = sn.Session(sn.Agent("boss"), llm=server.openai_base_url)
        assert isinstance(session.llm, sn.LLM)
        assert session.llm.base_url == server.openai_base_url
        assert session.send("bonjour").result(timeout=30).text == "servi par HTTP ✓"
        agent = sn.Agent("boss", model=server.openai_base_url)
        assert isinstance(agent.model, sn.LLM)
        other = sn.Session(agent, llm=sn.script())  # the agent's own endpoint answers
        assert other.send("encore").result(timeout=30).text == "servi par HTTP ✓"
        session.llm = server.openai_base_url  # a hot swap by URL
        assert session.events[-1].type == "llm_swapped"
    assert len(seen) == 2


def test_one_tool_or_member_alone_is_a_list() -> None:
    helper = sn.Agent("helper")
    assert sn.Agent("boss", team=helper, tools=lookup).tools[0].name == "lookup"
    agent = sn.Agent("boss", team=helper, tools=sn.tool(lookup))
    assert agent.team == [helper]
    assert [t.name for t in agent.tools] == ["lookup"]


@pytest.mark.timeout(60)
def test_a_kind_set_between_cells_is_checked_and_swapped_once() -> None:
    agent = sn.Agent("boss")
    session = sn.Session(agent, llm=sn.script("un", "deux", "trois"))
    session.send("1").result(timeout=30)
    agent.kind = "realtime"
    with pytest.raises(TypeError, match="kind"):
        agent.kind = 5  # refused: the kind set before stays
    assert isinstance(agent.kind, sn.kinds.Realtime)
    session.send("2").result(timeout=30)
    agent.kind = agent.kind  # the same kind again: no swap
    session.send("3").result(timeout=30)
    swaps = [e for e in session.events if e.type == "kind_swapped"]
    assert [(e.old, e.new) for e in swaps] == [("main", "realtime")]


def test_a_task_class_kind_name_stays_one_kind() -> None:
    class Helper(sn.Task):
        task_name = "helper"
        kind = "resident"
        model_override = "gpt-4o-mini"

    # read again at each turn boundary: the same kind each time, so no swap
    first = Helper.as_agent().kind
    assert isinstance(first, sn.kinds.Resident)
    assert Helper.as_agent().kind is first
