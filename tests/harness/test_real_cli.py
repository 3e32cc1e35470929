"""The real Claude Code and Codex from npm as children, offline: their model is a served inline mock.

Each test runs the CLI in a fresh home with a trap proxy, so any request beyond loopback fails the
test. The CLIs come from `.ci/cli` (see `.ci/run`); missing, the tests skip, or fail in CI.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time

import httpx
import pytest

import sagents_nb as sn
from tests.harness.real_cli_support import find_cli, isolated_env, trap  # noqa: F401
from tests.settled import settled

pytestmark = [pytest.mark.cli, pytest.mark.timeout(120)]

PROMPT = "--look up alpha; 日本語 🎉"
"""Starts like a flag, and is not English: it must reach the CLI's model as the one user prompt."""


@sn.tool
def lookup(key: str) -> str:
    """Look a key up in the kernel's table."""
    if key == "boom":
        raise ValueError("no such key: boom")
    return f"value of {key}: 42"


def parent(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt=PROMPT)])
    return f"parent got: {req.tool_results[0]}"


def calling(key: str):
    """A child model that calls the injected `lookup` once with `key`, then reports the result."""
    seen: list[sn.ChatRequest] = []

    def model(req: sn.ChatRequest):
        seen.append(req)
        if not req.tool_results:
            names = [t for t in req.tools if t.endswith("lookup")]
            if not names:  # say so plainly rather than fail with a 500 the CLI retries
                return f"no lookup tool among {req.tools}"
            return sn.reply(tool_calls=[sn.call(names[0], key=key)])
        return f"the tool said: {req.tool_results[-1]}"

    model.seen = seen
    return model


CLIS = ["claude", "codex"]


def child(cli: str, server: sn.MockServer, tmp_path, trap, **options) -> sn.Agent:  # noqa: F811
    """The `coder` agent as a native child running the real `cli` against `server`."""
    env = isolated_env(tmp_path / "home", trap, **options.pop("env", {}))
    if cli == "claude":
        driver = sn.harness.ClaudeCode(
            executable=find_cli("claude"), base_url=server.base_url, api_key="sk-ant-test-key"
        )
        extra: list[str] = []
        model = None
    else:
        driver = sn.harness.Codex(
            executable=find_cli("codex"), base_url=server.openai_base_url, api_key="sk-test-key"
        )
        # Outside its catalogue a model gets plain function tools, not Codex's JavaScript mode.
        model = "mock-model"
        extra = ["--skip-git-repo-check", *options.pop("codex_args", [])]
    kind = sn.kinds.Native(driver, env=env, extra_args=extra, cwd=str(tmp_path), **options)
    return sn.Agent("coder", does="looks things up", tools=[lookup], model=model, kind=kind)


def harness_events(result: sn.Result, path: str | None = None) -> list[dict]:
    """The CLI's events (those of the node at `path` only, when given)."""
    events = (e for e in result.events if e.type == "harness_event")
    return [e.event for e in events if path is None or e.path == path]


@pytest.mark.parametrize("cli", CLIS)
def test_the_cli_calls_a_kernel_tool_through_the_hooks_and_answers_the_parent(
    cli,
    tmp_path,
    trap,  # noqa: F811
):
    seen_by_hook: list[str] = []

    class Audit:
        def before_tool(self, call: sn.ToolCallInfo):
            seen_by_hook.append(f"{call.path}:{call.name}:{call.arguments}")

    model = calling("alpha")
    llm = sn.mock_llm(model)
    with sn.MockServer(llm) as server:
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap)])
        result = sn.Session(boss, llm=sn.mock_llm(parent), hooks=[Audit()]).send("go").result()
    assert result.status == "done", result.text
    assert result.text.startswith("parent got: the tool said:")
    assert "value of alpha: 42" in result.text
    assert seen_by_hook == ["boss:task:" + str({"agent": "coder", "prompt": PROMPT}),
                            "boss/coder.1:lookup:{'key': 'alpha'}"]  # fmt: skip
    assert model.seen[0].last_user == PROMPT
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [(e.path, e.status) for e in finished] == [("boss/coder.1", "ok")]
    calls = [e for e in harness_events(result) if e["type"] == "tool_call"]
    expected = "mcp__sagents__lookup" if cli == "claude" else "sagents/lookup"
    assert [c["name"] for c in calls] == [expected]
    done = harness_events(result)[-1]
    assert done["type"] == "done" and done["session_id"]
    api = "anthropic_messages" if cli == "claude" else "responses"
    assert {e.request.get("model") is not None for e in llm.exchanges} == {True}
    assert {e.url.rsplit("/", 1)[-1] for e in llm.exchanges} == {
        "messages" if cli == "claude" else "responses"
    }
    assert model.seen[0].api == api
    wire = json.dumps([e.to_dict() for e in llm.exchanges])
    assert "sk-ant-test-key" not in wire and "sk-test-key" not in wire


@pytest.mark.parametrize("cli", CLIS)
def test_a_tool_that_raises_reaches_the_cli_as_an_error(cli, tmp_path, trap):  # noqa: F811
    model = calling("boom")
    with sn.MockServer(sn.mock_llm(model)) as server:
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap)])
        result = boss.run_sync("go", llm=sn.mock_llm(parent))
    assert result.status == "done"
    assert "ValueError: no such key: boom" in result.text
    answer = [m for m in model.seen[-1].messages if m["role"] == "tool"][-1]
    if cli == "claude":
        assert answer["is_error"] is True
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [e.status for e in finished] == ["error"]


@pytest.mark.parametrize("cli", CLIS)
def test_a_call_the_kernel_denies_never_runs_and_the_cli_hears_why(cli, tmp_path, trap):  # noqa: F811
    ran: list[str] = []

    class Guard:
        def before_tool(self, call: sn.ToolCallInfo):
            if call.name == "lookup":
                ran.append(call.name)
                return sn.Deny("lookups are closed today")

    model = calling("alpha")
    with sn.MockServer(sn.mock_llm(model)) as server:
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap)])
        result = sn.Session(boss, llm=sn.mock_llm(parent), hooks=[Guard()]).send("go").result()
    assert ran == ["lookup"]
    assert "lookups are closed today" in result.text and "value of alpha" not in result.text
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [e.status for e in finished] == ["denied"]
    if cli == "claude":
        answer = [m for m in model.seen[-1].messages if m["role"] == "tool"][-1]
        assert answer["is_error"] is True


def failing(status: int):
    def model(req: sn.ChatRequest) -> httpx.Response:
        body = {"type": "error", "error": {"type": "api_error", "message": f"mock {status}"}}
        return httpx.Response(status, json=body)

    return model


NO_RETRIES = {
    "claude": {"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}},
    "codex": {
        "codex_args": [
            "-c", "model_providers.sagents_endpoint.request_max_retries=0",
            "-c", "model_providers.sagents_endpoint.stream_max_retries=0",
        ]
    },
}  # fmt: skip


@pytest.mark.parametrize("status", [500, 401])
@pytest.mark.parametrize("cli", CLIS)
def test_a_model_error_ends_the_child_in_error_naming_the_status(cli, status, tmp_path, trap):  # noqa: F811
    llm = sn.mock_llm(failing(status))
    with sn.MockServer(llm) as server:
        coder = child(cli, server, tmp_path, trap, **NO_RETRIES[cli])
        result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(parent))
    (node,) = result.tree.children
    assert node.status == "error"
    assert "[error]" in result.text
    if (cli, status) != ("codex", 500):  # Codex words a 500 as "experiencing high demand"
        assert str(status) in result.text
    assert {e.status for e in llm.exchanges} == {status}
    if cli == "claude":
        # The CLI's made-up "assistant" message about the failure is not the child's answer.
        texts = [e for e in harness_events(result) if e["type"] == "text"]
        assert texts == []
    assert result.text.count("stderr") <= 1


def failing_then_hanging(status: int, times: int, release: threading.Event):
    """`status` for the first `times` requests, then a request that never answers: the CLI is
    stopped while retrying whatever its own backoff and give-up times are on a loaded machine."""
    answered: list[int] = []

    def model(req: sn.ChatRequest) -> httpx.Response:
        answered.append(status)
        if len(answered) > times:
            release.wait(60)
        return failing(status)(req)

    return model


def test_claude_retries_show_as_events_and_name_the_cause_when_it_is_stopped(tmp_path, trap):  # noqa: F811
    release = threading.Event()
    try:
        with sn.MockServer(sn.mock_llm(failing_then_hanging(500, 2, release))) as server:
            coder = child("claude", server, tmp_path, trap, inactivity_timeout=6)
            result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(parent))
    finally:
        release.set()
    retries = [e for e in harness_events(result) if e["type"] == "retry"]
    assert retries and {r["status"] for r in retries} == {500}
    assert "while retrying its model request" in result.text and "HTTP 500" in result.text


def hanging(release: threading.Event, entered: threading.Event):
    def model(req: sn.ChatRequest):
        entered.set()
        release.wait(60)
        return "too late"

    return model


@pytest.mark.parametrize("cli", CLIS)
def test_a_hung_model_is_stopped_after_the_inactivity_timeout(cli, tmp_path, trap):  # noqa: F811
    release, entered = threading.Event(), threading.Event()
    try:
        with sn.MockServer(sn.mock_llm(hanging(release, entered))) as server:
            coder = child(cli, server, tmp_path, trap, inactivity_timeout=6)
            result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(parent))
    finally:
        release.set()
    assert entered.is_set()
    assert "wrote no output for 6 s" in result.text
    assert result.tree.children[0].status == "error"


@pytest.mark.parametrize("cli", CLIS)
def test_cancel_stops_the_cli_while_its_model_is_thinking(cli, tmp_path, trap):  # noqa: F811
    release, entered = threading.Event(), threading.Event()
    try:
        with sn.MockServer(sn.mock_llm(hanging(release, entered))) as server:
            boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap)])
            run = sn.Session(boss, llm=sn.mock_llm(parent)).send("go")
            assert entered.wait(60), "the CLI never called its model"
            started = time.monotonic()
            run.cancel()
            run.wait()
            assert run.status == "cancelled"
            assert time.monotonic() - started < 15
    finally:
        release.set()
    # The harness conftest checks that no CLI process is left behind.


@pytest.mark.parametrize("cli", CLIS)
def test_a_second_task_resumes_the_cli_session(cli, tmp_path, trap):  # noqa: F811
    seen: list[sn.ChatRequest] = []

    def model(req: sn.ChatRequest):
        seen.append(req)
        return f"answer {len(seen)}"

    def boss_model(req: sn.ChatRequest):
        if len(req.tool_results) == 0:
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="remember: kiwi")])
        if len(req.tool_results) == 1:
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="what fruit?")])
        return "ok"

    with sn.MockServer(sn.mock_llm(model)) as server:
        coder = child(cli, server, tmp_path, trap, resume=True)
        result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(boss_model))
    assert result.status == "done"
    assert [c.id for c in result.tree.children] == ["boss/coder.1"]
    first, second = seen[0], seen[-1]
    assert first.last_user == "remember: kiwi" and second.last_user == "what fruit?"
    said = [m["content"] for m in second.messages if m["role"] in ("user", "assistant")]
    assert "remember: kiwi" in said and "answer 1" in said


@pytest.mark.parametrize("cli", CLIS)
def test_a_reopened_session_resumes_the_cli_session(cli, tmp_path, trap):  # noqa: F811
    seen: list[sn.ChatRequest] = []

    def model(req: sn.ChatRequest):
        seen.append(req)
        return f"answer {len(seen)}"

    def boss_model(req: sn.ChatRequest):
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt=req.last_user)])
        return "ok"

    store = tmp_path / "runs.db"
    with sn.MockServer(sn.mock_llm(model)) as server:
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap, resume=True)])
        first = sn.Session(boss, llm=sn.mock_llm(boss_model), store=store)
        assert first.send("remember: kiwi 🥝").result().status == "done"
        # a new kind instance, as after a kernel restart: the CLI session comes from the store
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap, resume=True)])
        again = sn.Session.open(store, first.id, agent=boss, llm=sn.mock_llm(boss_model))
        answer = again.send("what fruit?").result()
        first.store.close()
        again.store.close()
    assert answer.status == "done"
    assert [c.id for c in answer.tree.children] == ["boss/coder.1"]
    said = [m["content"] for m in seen[-1].messages if m["role"] in ("user", "assistant")]
    assert seen[-1].last_user == "what fruit?"
    assert "remember: kiwi 🥝" in said and "answer 1" in said


def test_grok_cli_answers_over_chat_completions_with_its_own_tool(tmp_path, trap):  # noqa: F811
    seen: list[sn.ChatRequest] = []

    def model(req: sn.ChatRequest):
        seen.append(req)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("bash", command="echo 'bonjour 世界'")])
        return f"the shell said: {req.tool_results[-1]}"

    llm = sn.mock_llm(model)
    with sn.MockServer(llm) as server:
        driver = sn.harness.Grok(
            executable=find_cli("grok"), base_url=server.openai_base_url, api_key="xai-test-key"
        )
        env = isolated_env(tmp_path / "home", trap)
        kind = sn.kinds.Native(driver, env=env, cwd=str(tmp_path))
        coder = sn.Agent("coder", does="looks things up", model="mock", kind=kind)
        result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(parent))
    assert result.text == "parent got: the shell said: bonjour 世界"
    assert seen[0].api == "chat_completions" and seen[0].last_user == PROMPT
    calls = [e for e in harness_events(result) if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["bash"]
    assert not (tmp_path / "home" / ".grok" / "user-settings.json").exists() or (
        server.base_url not in (tmp_path / "home" / ".grok" / "user-settings.json").read_text()
    )


def test_claude_streams_text_as_text_delta_events(tmp_path, trap):  # noqa: F811
    """Streamed pieces are `text_delta` events only (the whole message follows as a
    `harness_event`), one after the other, so a store keeps them as one row."""
    answer = "Voilà : la réponse, 答え 🎉 in several pieces"
    db = tmp_path / "runs.db"
    with sn.MockServer(sn.mock_llm(lambda req: answer)) as server:
        coder = child("claude", server, tmp_path, trap)
        coder.kind.driver = sn.harness.ClaudeCode(
            executable=coder.kind.driver.executable,
            base_url=server.base_url,
            api_key="sk-ant-test-key",
            stream_text=True,
        )
        boss = sn.Agent("boss", team=[coder])
        session = sn.Session(boss, llm=sn.mock_llm(parent), store=db)
        result = session.send("go").result()
    deltas = [e.text for e in result.events if e.type == "text_delta" and e.path == "boss/coder.1"]
    assert len(deltas) > 1 and "".join(deltas) == answer
    assert result.text == f"parent got: {answer}"
    texts = [e for e in harness_events(result) if e["type"] == "text"]
    assert [(e["text"], e["delta"]) for e in texts] == [(answer, False)]
    with sqlite3.connect(settled(db)) as con:
        streams = con.execute("SELECT path, text FROM streams").fetchall()
    assert streams == [("boss/coder.1", answer)]
    reopened = sn.Session.open(db, session.id, agent=boss)
    assert [e.model_dump() for e in reopened.events] == [e.model_dump() for e in session.events]


@pytest.mark.parametrize("verdict", ["allow", "deny"])
def test_claudes_own_bash_calls_pass_the_kernels_hooks(verdict, tmp_path, trap):  # noqa: F811
    marker = tmp_path / "ran.txt"
    asked: list[tuple[str, str, dict]] = []

    class Gate:
        def before_tool(self, call: sn.ToolCallInfo):
            asked.append((call.path, call.name, dict(call.arguments)))
            if call.name == "Bash" and verdict == "deny":
                return sn.Deny("no shell today")

    def model(req: sn.ChatRequest):
        if not req.tool_results:
            command = f"echo gated > {marker}"
            return sn.reply(tool_calls=[sn.call("Bash", command=command, description="mark")])
        return f"bash said: {req.tool_results[-1]}"

    with sn.MockServer(sn.mock_llm(model)) as server:
        coder = child("claude", server, tmp_path, trap)
        coder.kind.driver = sn.harness.ClaudeCode(
            executable=coder.kind.driver.executable,
            base_url=server.base_url,
            api_key="sk-ant-test-key",
            gate_builtin_tools=True,
        )
        boss = sn.Agent("boss", team=[coder])
        result = sn.Session(boss, llm=sn.mock_llm(parent), hooks=[Gate()]).send("go").result()
    bash = [a for a in asked if a[1] == "Bash"]
    assert [(path, args["command"]) for path, _, args in bash] == [
        ("boss/coder.1", f"echo gated > {marker}")
    ]
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "Bash"]
    if verdict == "allow":
        assert marker.read_text().strip() == "gated"
        assert [e.status for e in finished] == ["ok"]
    else:
        assert not marker.exists()
        assert "no shell today" in result.text
        assert [e.status for e in finished] == ["denied"]


MCP_REVISIONS = {
    # (cli, MCP_PROTOCOL_NEGOTIATION): the revision its tool requests speak. Claude Code
    # 2.1.332 probes `server/discover` over HTTP unless told `legacy` (its only other value).
    ("claude", None): "2026-07-28",
    ("claude", "auto"): "2026-07-28",
    ("claude", "legacy"): "2025-11-25",
    # Codex 0.171.0 offers 2025-06-18 in its `initialize` and never probes `server/discover`:
    # the 2026-07-28 round trip is tested with the official SDK's client (tests/harness/test_mcp.py).
    ("codex", None): "2025-06-18",
}


@pytest.mark.parametrize(("cli", "negotiation"), list(MCP_REVISIONS))
def test_the_cli_round_trips_the_tools_on_the_mcp_revision_it_negotiates(
    cli,
    negotiation,
    tmp_path,
    trap,  # noqa: F811
    monkeypatch,
):
    """The injected server speaks what the client asks; the server side names the revision."""
    from sagents_nb.harness import _runtime

    served: list[sn.harness.McpInjection] = []
    serve = _runtime.serve_tools

    @contextlib.asynccontextmanager
    async def recording(tools, call_tool):
        async with serve(tools, call_tool) as injection:
            served.append(injection)
            yield injection

    monkeypatch.setattr(_runtime, "serve_tools", recording)
    env = {} if negotiation is None else {"MCP_PROTOCOL_NEGOTIATION": negotiation}
    model = calling("alpha")
    with sn.MockServer(sn.mock_llm(model)) as server:
        boss = sn.Agent("boss", team=[child(cli, server, tmp_path, trap, env=env)])
        result = boss.run_sync("go", llm=sn.mock_llm(parent))
    assert "value of alpha: 42" in result.text
    assert [i.revisions for i in served] == [[MCP_REVISIONS[cli, negotiation]]]


def delegating_to_its_agent(key: str):
    """Claude Code's model: the main thread hands the lookup to a sub-agent (its Agent tool, in
    the foreground), which calls the injected `lookup`; each reports what it got."""

    def model(req: sn.ChatRequest):
        sub = any("SUB:" in str(m.get("content")) for m in req.messages if m["role"] == "user")
        if sub and not req.tool_results:
            (name,) = [t for t in req.tools if t.endswith("lookup")]
            return sn.reply(tool_calls=[sn.call(name, key=key)])
        if sub:
            return f"sub says: {req.tool_results[-1]}"
        if not req.tool_results:
            task = {"description": "look it up", "prompt": f"SUB: look up {key} 🎉"}
            task |= {"subagent_type": "general-purpose", "run_in_background": False}
            return sn.reply(tool_calls=[sn.call("Agent", **task)])
        return "main got: " + req.tool_results[-1]

    return model


def test_claudes_own_sub_agent_is_a_grandchild_whose_tool_call_runs_on_it(tmp_path, trap):  # noqa: F811
    seen: list[str] = []

    class Audit:
        def before_tool(self, call: sn.ToolCallInfo):
            seen.append(f"{call.path}:{call.name}")

    with sn.MockServer(sn.mock_llm(delegating_to_its_agent("beta"))) as server:
        boss = sn.Agent("boss", team=[child("claude", server, tmp_path, trap)])
        session = sn.Session(boss, llm=sn.mock_llm(parent), hooks=[Audit()])
        result = session.send("go").result()
    assert result.status == "done" and "sub says: value of beta: 42" in result.text
    sub = "boss/coder.1/general-purpose.1"
    node = session.tree.find(sub)
    assert node is not None and (node.kind, node.status) == ("cli_agent", "done")
    assert node.display_text == "look it up" and node.usage.prompt_tokens > 0
    assert seen[1:] == [f"{sub}:lookup"]
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [(e.path, e.status) for e in finished] == [(sub, "ok")]
    spawned = [e for e in result.events if e.type == "task_spawned" and e.child == sub]
    assert [(e.path, e.prompt) for e in spawned] == [("boss/coder.1", "SUB: look up beta 🎉")]
    said = harness_events(result, sub)
    assert [e["type"] for e in said] == ["tool_call", "tool_result", "done"]
    assert said[-1]["content"] == "sub says: value of beta: 42"
    assert not [e for e in harness_events(result, "boss/coder.1") if e.get("subagent")]
    assert result.tree.usage.total_tokens == result.usage.total_tokens
