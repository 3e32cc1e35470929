"""A Claude Code child's own sub-agents (its Agent tool) as nodes below it, from recorded streams.

The fake CLI replays Claude Code 2.1.332's real stream-json (`recorded/`), and for the MCP call
the sub-agent made, calls the kernel's tool as Claude Code does (its tool-use id in `_meta`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb.notebook import token_rollup
from sagents_nb.notebook._projector import Projector

pytestmark = pytest.mark.timeout(60)

RECORDED = Path(__file__).with_name("recorded")
FOREGROUND = RECORDED / "claude_2.1.332_agent_foreground.jsonl"
BACKGROUND = RECORDED / "claude_2.1.332_agent_background.jsonl"
CODER = "boss/coder.1"
SUB = f"{CODER}/general-purpose.1"


@sn.tool
def lookup(key: str) -> str:
    """Look a key up in the kernel's table."""
    return f"value of {key}: 42"


def delegate_once(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="look up beta")])
    return "parent is done"


def replaying(fake_cli, stream: Path, calls: dict | None = None, gate: bool = False) -> sn.Agent:
    env = fake_cli.env(
        "replay", FAKE_CLI_REPLAY=str(stream), FAKE_CLI_CALLS=json.dumps(calls or {})
    )
    driver = sn.harness.ClaudeCode(executable=fake_cli.path, gate_builtin_tools=gate)
    kind = sn.kinds.Native(driver, env=env)
    return sn.Agent("coder", does="looks things up", tools=[lookup], kind=kind)


def run(
    fake_cli, stream: Path, calls: dict | None = None, gate: bool = False, **session
) -> sn.Session:
    boss = sn.Agent("boss", team=[replaying(fake_cli, stream, calls, gate)])
    return sn.Session(boss, llm=sn.mock_llm(delegate_once), **session)


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def harness(result: sn.Result, path: str) -> list[dict]:
    return [e.event for e in result.events if e.type == "harness_event" and e.path == path]


def test_a_foreground_sub_agent_is_a_grandchild_with_its_text_tools_and_tokens(fake_cli) -> None:
    seen: list[str] = []

    class Audit:
        def before_tool(self, call: sn.ToolCallInfo):
            seen.append(f"{call.path}:{call.name}")

    calls = {"call_3": ["lookup", {"key": "beta"}]}
    result = run(fake_cli, FOREGROUND, calls, hooks=[Audit()]).send("go").result()
    assert result.status == "done"
    (coder,) = result.tree.children
    (sub,) = coder.children
    assert (sub.id, sub.agent, sub.kind, sub.status) == (
        SUB,
        "general-purpose",
        "cli_agent",
        "done",
    )
    assert sub.display_text == "look up beta"
    # the sub-agent's MCP call ran on its node, through the hooks
    assert seen[1:] == [f"{SUB}:lookup"]
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [(e.path, e.status, e.result) for e in finished] == [(SUB, "ok", "value of beta: 42")]
    spawned = [e for e in result.events if e.type == "task_spawned" and e.child == SUB]
    assert [(e.path, e.agent, e.prompt, e.kind, e.call_id) for e in spawned] == [
        (CODER, "general-purpose", "SUB: look up beta", "cli_agent", "call_1")
    ]
    # its lines are its own: the child keeps none of them
    assert not [e for e in harness(result, CODER) if e.get("subagent")]
    mine = harness(result, SUB)
    assert [e["type"] for e in mine] == ["tool_call", "tool_result", "done"]
    assert mine[-1]["content"] == "sub says: value of beta: 42"
    ended = [e for e in result.events if e.type == "task_finished" and e.child == SUB]
    assert [(e.path, e.status, e.text, e.turns) for e in ended] == [
        (CODER, "done", "sub says: value of beta: 42", 2)
    ]
    # tokens: its two requests (the last one's from the Agent call's result), the child's own
    # from `result.usage` (the main thread's); nothing counted twice
    assert (sub.usage.prompt_tokens, sub.usage.completion_tokens) == (15470 + 15952, 7)
    own = coder.usage.prompt_tokens - sub.usage.prompt_tokens
    assert own == lines_of(FOREGROUND)[-1]["usage"]["input_tokens"] == 39323
    assert result.tree.usage.total_tokens == result.usage.total_tokens
    # the Agent call's card leads to the sub-agent, with the CLI's result
    projector = Projector()
    for event in result.events:
        projector.fold(event)
    card = projector.nodes[CODER].cards["call_1"]
    assert card.child == SUB and card.status == "ok" and "sub says" in (card.result or "")
    assert projector.nodes[SUB].cards["call_3"].result == "value of beta: 42"
    said = [(e.type, getattr(e, "prompt", None)) for e in projector.nodes[SUB].transcript]
    assert said == [
        ("task_spawned", "SUB: look up beta"),
        ("tool_call_finished", None),  # the lookup the kernel ran for it
        ("harness_event", None),  # its answer
    ]
    rows = {row.path: row for row in token_rollup(result)}
    assert (rows[SUB].prompt_tokens, rows[SUB].completion_tokens) == (31422, 7)
    assert rows[CODER].subtree_prompt_tokens == coder.usage.prompt_tokens


def test_background_sub_agents_and_their_own_show_as_deep_as_the_stream_tells(fake_cli) -> None:
    result = run(fake_cli, BACKGROUND).send("go").result()
    nodes = {node.id: node for node in result.tree.walk()}
    deep = f"{SUB}/general-purpose.1"
    deeper = f"{deep}/general-purpose.1"
    assert [nodes[p].status for p in (SUB, deep, deeper)] == ["done", "done", "done"]
    assert {nodes[p].kind for p in (SUB, deep, deeper)} == {"cli_agent"}
    # depth 1 writes its lines (its text, its Agent call, two requests' tokens); the ones below
    # appear only as task lines: started, and ended with their summary
    first = harness(result, SUB)
    assert [e["type"] for e in first] == ["tool_call", "tool_result", "text", "done"]
    assert nodes[SUB].usage.prompt_tokens == 12965 + 13917
    assert harness(result, deeper)[-1]["content"] == "sub says: value of beta: 42"
    assert nodes[deeper].usage.total_tokens == 0
    spawned = {e.child: e for e in result.events if e.type == "task_spawned"}
    assert (spawned[deep].path, spawned[deep].call_id) == (SUB, "call_4")
    assert (spawned[deeper].path, spawned[deeper].call_id) == (deep, "call_6")


def test_a_sub_agent_the_cli_never_ends_is_incomplete_when_the_cli_is_done(
    fake_cli, tmp_path
) -> None:
    lines = FOREGROUND.read_text().splitlines()
    cut = [line for line in lines if '"task_notification"' not in line]
    stream = tmp_path / "cut.jsonl"
    stream.write_text("\n".join(cut) + "\n")
    result = run(fake_cli, stream).send("go").result()
    (sub,) = result.tree.children[0].children
    assert sub.status == "incomplete"
    ended = [e for e in result.events if e.type == "task_finished" and e.child == SUB]
    assert [e.text for e in ended] == ["Claude Code ended before this sub-agent did"]


def test_a_sub_agent_in_a_store_is_reopened_and_forked_with_its_events(fake_cli, tmp_path) -> None:
    """Non-English text survives: the prompt and the answer, in the tree and the store."""
    said = "SUB: cherche « bêta » — 日本語の答え 🎉"
    stream = tmp_path / "words.jsonl"
    stream.write_text(FOREGROUND.read_text().replace("SUB: look up beta", said))
    db = tmp_path / "runs.db"
    session = run(fake_cli, stream, store=db)
    result = session.send("go").result()
    boss = sn.Agent("boss", team=[replaying(fake_cli, stream)])
    reopened = sn.Session.open(db, session.id, agent=boss)
    shape = [(n.id, n.kind, n.status, n.turns, n.usage) for n in result.tree.walk()]
    assert [(n.id, n.kind, n.status, n.turns, n.usage) for n in reopened.tree.walk()] == shape
    assert [e.model_dump() for e in reopened.events] == [e.model_dump() for e in session.events]
    node = reopened.root.find(SUB)
    assert (
        node is not None and node.kind.name == "cli_agent" and node.agent.name == "general-purpose"
    )
    assert [m.content for m in node.history] == [said, "sub says: value of beta: 42"]
    spawned = next(e for e in session.events if e.type == "task_spawned" and e.child == SUB)
    assert spawned.prompt == said
    fork, before = session.fork(), session.fork(at=spawned.seq - 1)
    forked = fork.root.find(SUB)
    assert forked is not None and forked.status == "done" and forked.history == node.history
    assert before.root.find(SUB) is None
    for opened in (session, reopened, fork, before):
        opened.store.close()


def test_a_sub_agent_is_an_agent_span_below_its_cli_child(fake_cli) -> None:
    pytest.importorskip(
        "opentelemetry.sdk", reason="the otel extra: pip install 'sagents_nb[otel]'"
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import sagents_nb.otel

    calls = {"call_3": ["lookup", {"key": "beta"}]}
    session = run(fake_cli, FOREGROUND, calls)
    session.send("go").result()
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sagents_nb.otel.export(session, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    names = {span.context.span_id: span.name for span in spans}
    sub = next(s for s in spans if s.name == "invoke_agent general-purpose")
    assert sub.parent is not None and names[sub.parent.span_id] == "invoke_agent coder"
    assert sub.attributes["gen_ai.usage.input_tokens"] == 31422
    tool = next(s for s in spans if s.name == "execute_tool lookup")
    assert tool.parent is not None and tool.parent.span_id == sub.context.span_id


def test_a_sub_agents_tool_call_pauses_on_its_node_and_the_tree_waits_above(fake_cli) -> None:
    calls = {"call_3": ["lookup", {"key": "beta"}]}
    session = run(fake_cli, FOREGROUND, calls)
    run_ = session.send("go", pause_on=[sn.when(tool="lookup")])
    assert run_.wait() == "paused"
    (pending,) = run_.pending
    assert (pending.path, pending.name) == (SUB, "lookup")
    statuses = {node.id: node.status for node in session.tree.walk()}
    assert (statuses[CODER], statuses[SUB]) == ("waiting", "paused")
    run_.reject("not today")
    result = run_.result()
    finished = [e for e in result.events if e.type == "tool_call_finished" and e.name == "lookup"]
    assert [(e.path, e.status) for e in finished] == [(SUB, "denied")]


def test_cancelling_the_run_at_a_sub_agents_pause_ends_it_cancelled(fake_cli) -> None:
    calls = {"call_3": ["lookup", {"key": "beta"}]}
    session = run(fake_cli, FOREGROUND, calls)
    run_ = session.send("go", pause_on=[sn.when(tool="lookup")])
    assert run_.wait() == "paused"
    run_.cancel()
    assert run_.wait() == "cancelled"
    ended = [e for e in session.events if e.type == "task_finished" and e.child == SUB]
    assert [(e.path, e.status) for e in ended] == [(CODER, "cancelled")]
    assert session.tree.find(SUB).status == "cancelled"


def test_a_permission_question_about_a_sub_agents_own_tool_is_asked_on_its_node(fake_cli) -> None:
    """With `gate_builtin_tools=True` Claude Code asks the injected server before a sub-agent's
    Bash runs, naming the call (seen with the real CLI): the gate is the sub-agent's."""
    seen: list[str] = []

    class Audit:
        def before_tool(self, call: sn.ToolCallInfo):
            seen.append(f"{call.path}:{call.name}")

    question = {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "call_3"}
    calls = {"call_3": [sn.harness.PERMISSION_TOOL, question]}
    result = run(fake_cli, FOREGROUND, calls, gate=True, hooks=[Audit()]).send("go").result()
    assert result.status == "done"
    assert seen[1:] == [f"{SUB}:Bash"]
