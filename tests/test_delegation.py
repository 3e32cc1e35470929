"""Delegation: the task tool, team scoping, refusals, reattach, parallel children, limits, Task classes."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import sagents_nb as sn
from sagents_nb._runtime.delegation import TASK_DESCRIPTION


def is_parent(req: sn.ChatRequest) -> bool:
    return "task" in req.tools


def test_team_gives_a_task_tool_with_the_exact_schema_and_description() -> None:
    explore = sn.Agent("explore", does="reads files")
    build = sn.Agent("build", does="compiles things")
    llm = sn.script("ok")
    sn.Agent("boss", team=[explore, build]).run_sync("x", llm=llm)
    (spec,) = llm.exchanges[0].request["tools"]
    function = spec["function"]
    assert function["name"] == "task"
    assert function["description"] == (
        TASK_DESCRIPTION + "build: compiles things; explore: reads files"
    )
    assert function["description"].startswith(
        "Delegate a subtask to an isolated subagent. Available agents — "
    )
    params = function["parameters"]
    assert params["required"] == ["agent", "prompt"]
    assert params["properties"]["agent"]["enum"] == ["build", "explore"]
    assert params["properties"]["prompt"]["type"] == "string"


def test_teamless_agent_gets_no_task_tool_and_team_is_read_each_turn() -> None:
    llm = sn.script("one", "two")
    agent = sn.Agent("solo")
    session = sn.Session(agent, llm=llm)
    session.send("x").result()
    agent.team.append(sn.Agent("helper", does="helps"))
    session.send("y").result()
    assert "tools" not in llm.exchanges[0].request
    assert [t["function"]["name"] for t in llm.exchanges[1].request["tools"]] == ["task"]


def test_out_of_team_call_is_refused_with_the_team_named() -> None:
    llm = sn.mock_llm(
        lambda req: (
            sn.reply(tool_calls=[sn.call("task", agent="stranger", prompt="hi")])
            if not req.tool_results
            else req.tool_results[0]
        )
    )
    boss = sn.Agent("boss", team=[sn.Agent("explore", does="x")])
    result = boss.run_sync("go", llm=llm)
    assert result.text == (
        'error: agent "stranger" is not in this agent\'s team (available: explore)'
    )
    refused = [e for e in result.events if e.type == "task_refused"]
    assert len(refused) == 1 and refused[0].agent == "stranger"
    assert not any(e.type == "task_spawned" for e in result.events)
    assert result.tree.children == [] and result.tree.refused


def test_children_are_isolated_numbered_and_run_in_parallel_in_call_order() -> None:
    spans: dict[str, list[float]] = {}

    async def handler(req: sn.ChatRequest):
        if is_parent(req):
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[
                        sn.call("task", agent="explore", prompt="A"),
                        sn.call("task", agent="explore", prompt="B"),
                    ]
                )
            return " + ".join(req.tool_results)
        spans.setdefault(req.last_user, []).append(time.perf_counter())
        await asyncio.sleep(0.2)
        spans[req.last_user].append(time.perf_counter())
        assert [m["role"] for m in req.messages] == ["user"]  # isolated: only its prompt
        return f"result {req.last_user}"

    boss = sn.Agent("boss", team=[sn.Agent("explore", does="x")])
    result = boss.run_sync("go", llm=sn.mock_llm(handler))
    assert result.text == "result A + result B"
    (a0, a1), (b0, b1) = spans["A"], spans["B"]
    assert b0 < a1 and a0 < b1  # overlapped in time
    assert [c.id for c in result.tree.children] == ["boss/explore.1", "boss/explore.2"]
    child_events = [e for e in result.events if e.path == "boss/explore.1"]
    assert {e.type for e in child_events} >= {"model_request", "model_response", "status_changed"}


def test_child_inherits_model_and_non_done_child_returns_status_prefix() -> None:
    @sn.tool
    def again() -> str:
        return "more"

    worker = sn.Agent("w", does="loops", tools=[again], kind=sn.kinds.Worker(max_turns=1))

    def handler(req: sn.ChatRequest):
        if is_parent(req):
            return (
                sn.reply(tool_calls=[sn.call("task", agent="w", prompt="loop")])
                if not req.tool_results
                else req.tool_results[0]
            )
        if req.body.get("tool_choice") == "none":
            return "I looped once"
        return sn.reply(tool_calls=[sn.call("again")])

    llm = sn.mock_llm(handler)
    result = sn.Agent("boss", model="big-model", team=[worker]).run_sync("go", llm=llm)
    assert {x.request["model"] for x in llm.exchanges} == {"big-model"}
    assert result.text.startswith("[incomplete] hit maxTurns (1) without a final answer")


def test_repeated_call_reattaches_without_calling_the_child_again() -> None:
    child_calls: list[str] = []

    def handler(req: sn.ChatRequest):
        if is_parent(req):
            n = len(req.tool_results)
            if n < 3:
                # identical calls: two in one reply, then one more in the next turn
                calls = [sn.call("task", agent="explore", prompt="same")] * (2 if n == 0 else 1)
                return sn.reply(tool_calls=calls)
            return "|".join(req.tool_results)
        child_calls.append(req.last_user)
        return "found it"

    boss = sn.Agent("boss", team=[sn.Agent("explore", does="x")])
    result = boss.run_sync("go", llm=sn.mock_llm(handler))
    assert child_calls == ["same"]
    assert result.text == "found it|found it|found it"
    states = [e.state for e in result.events if e.type == "task_reattached"]
    assert states == ["running", "settled"]
    assert result.tree.children[0].reattached == 2


def test_depth_limit_stops_a_six_level_chain_loudly() -> None:
    agents = [sn.Agent(f"level{i}", does=f"level {i}") for i in range(6)]
    for upper, lower in itertools.pairwise(agents):
        upper.team.append(lower)

    def handler(req: sn.ChatRequest):
        if req.tool_results:
            return f"up: {req.tool_results[-1]}"
        if "task" in req.tools:
            target = req.body["tools"][0]["function"]["parameters"]["properties"]["agent"]["enum"][
                0
            ]
            return sn.reply(tool_calls=[sn.call("task", agent=target, prompt="deeper")])
        return "bottom"

    result = agents[0].run_sync("go", llm=sn.mock_llm(handler))
    assert "depth limit (3) reached" in result.text
    assert "level0/level1.1/level2.1/level3.1 is at depth 3" in result.text
    deepest = result.tree.find("level0/level1.1/level2.1/level3.1")
    assert deepest is not None and deepest.children == []
    assert any(e.type == "task_refused" and "depth limit" in e.reason for e in result.events)


def test_budgets_stop_a_child_loudly() -> None:
    @sn.tool
    def dig() -> str:
        return "dirt"

    digger = sn.Agent("digger", does="digs", tools=[dig], tool_call_budget=2)

    def handler(req: sn.ChatRequest):
        if is_parent(req):
            return (
                sn.reply(tool_calls=[sn.call("task", agent="digger", prompt="dig")])
                if not req.tool_results
                else req.tool_results[0]
            )
        return sn.reply("digging", tool_calls=[sn.call("dig")])

    result = sn.Agent("boss", team=[digger]).run_sync("go", llm=sn.mock_llm(handler))
    assert result.text.startswith(
        "[incomplete] budget exhausted (tool calls); partial work preserved: digging"
    )


def test_usage_rolls_up_to_the_root() -> None:
    def handler(req: sn.ChatRequest):
        if is_parent(req):
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[
                        sn.call("task", agent="a", prompt="1"),
                        sn.call("task", agent="b", prompt="2"),
                    ],
                    usage={"prompt_tokens": 10, "completion_tokens": 1},
                )
            return sn.reply("end", usage={"prompt_tokens": 20, "completion_tokens": 2})
        return sn.reply("child", usage={"prompt_tokens": 5, "completion_tokens": 3})

    boss = sn.Agent("boss", team=[sn.Agent("a", does="a"), sn.Agent("b", does="b")])
    llm = sn.mock_llm(handler)
    result = boss.run_sync("go", llm=llm)
    total = sum(x.response["usage"]["total_tokens"] for x in llm.exchanges)
    assert result.usage.total_tokens == total == 11 + 22 + 8 + 8
    assert result.tree.usage.total_tokens == total
    assert [c.usage.total_tokens for c in result.tree.children] == [8, 8]


class Research(sn.Task):
    task_name = "research"
    description = "finds sources"
    instructions = "Search carefully."
    use_instructions = "Give research one narrow question at a time."
    display_text = "Researching…"
    model_override = "research-model"


def test_task_class_compiles_to_a_child_with_boilerplate_and_lazy_instructions() -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        seen.append(req)
        if req.model == "research-model":
            return "three sources"
        n = len(req.tool_results)
        if n == 0:
            return sn.reply(tool_calls=[sn.call("get_task_instructions", agent="research")])
        if n == 1:
            return sn.reply(tool_calls=[sn.call("task", agent="research", prompt="cats?")])
        return req.tool_results[-1]

    result = sn.Agent("boss", team=[Research]).run_sync("go", llm=sn.mock_llm(handler))
    assert result.text == "three sources"
    first = json.dumps(seen[0].body)
    assert "Give research one narrow question" not in first
    assert sorted(seen[0].tools) == ["get_task_instructions", "task"]
    assert seen[1].tool_results == ["Give research one narrow question at a time."]
    child = seen[2]
    assert child.model == "research-model"
    assert child.system.startswith("You are a sub-agent handling one bounded task")
    assert child.system.endswith("\n\nSearch carefully.")
    spawned = next(e for e in result.events if e.type == "task_spawned")
    assert spawned.display_text == "Researching…"
    started = [e for e in result.events if e.type == "tool_call_started" and e.name == "task"]
    assert started[0].display_text == "Researching…"


def test_no_instructions_tool_without_use_instructions() -> None:
    llm = sn.script("ok")
    sn.Agent("boss", team=[sn.Agent("x", does="y")]).run_sync("go", llm=llm)
    assert [t["function"]["name"] for t in llm.exchanges[0].request["tools"]] == ["task"]


def test_parallel_children_are_capped() -> None:
    running = {"now": 0, "max": 0}

    async def handler(req: sn.ChatRequest):
        if is_parent(req):
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[sn.call("task", agent="w", prompt=str(i)) for i in range(6)]
                )
            return "done"
        running["now"] += 1
        running["max"] = max(running["max"], running["now"])
        await asyncio.sleep(0.05)
        running["now"] -= 1
        return "ok"

    session = sn.Session(
        sn.Agent("boss", team=[sn.Agent("w", does="w")]), llm=sn.mock_llm(handler), max_parallel=2
    )
    assert session.send("go").result().text == "done"
    assert running["max"] == 2


def test_a_subscriber_sees_child_events_live() -> None:
    gate = {"child_seen_before_end": False}

    async def handler(req: sn.ChatRequest):
        if is_parent(req):
            return (
                sn.reply(tool_calls=[sn.call("task", agent="w", prompt="p")])
                if not req.tool_results
                else "end"
            )
        await asyncio.sleep(0.1)
        return "child"

    session = sn.Session(sn.Agent("boss", team=[sn.Agent("w", does="w")]), llm=sn.mock_llm(handler))
    seen: list[str] = []

    def on_event(event: sn.events.Event) -> None:
        seen.append(event.path)
        if event.path == "boss/w.1" and event.type == "model_request":
            gate["child_seen_before_end"] = session.last_run.status == "running"

    session.subscribe(on_event)
    session.send("go").result()
    assert gate["child_seen_before_end"]


def test_a_task_cancelled_before_it_settled_runs_again_on_the_next_call() -> None:
    async def handler(req: sn.ChatRequest):
        if is_parent(req):
            if req.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="w", prompt="same")])
            return "parent: " + req.tool_results[-1]
        await asyncio.sleep(0.3 if req.last_user == "same" and handler.calls == 0 else 0)
        handler.calls += 1
        return "child"

    handler.calls = 0
    session = sn.Session(sn.Agent("boss", team=[sn.Agent("w", does="w")]), llm=sn.mock_llm(handler))
    first = session.send("go")
    time.sleep(0.1)
    first.cancel()
    assert first.wait(5) == "cancelled"
    assert session.send("again").result().text == "parent: child"
    assert [c.status for c in session.tree.children] == ["cancelled", "done"]
