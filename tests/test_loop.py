"""The turn loop: concurrency, turn caps, sync use inside a running loop, live event subscription."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

import sagents_nb as sn
from tests.conftest import add


def test_tool_calls_of_one_reply_run_concurrently_and_keep_call_order() -> None:
    spans: dict[str, tuple[float, float]] = {}

    @sn.tool
    async def wait(label: str, seconds: float) -> str:
        start = time.perf_counter()
        await asyncio.sleep(seconds)
        spans[label] = (start, time.perf_counter())
        return label

    def handler(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(
                tool_calls=[
                    sn.call("wait", label="slow", seconds=0.2),
                    sn.call("wait", label="fast", seconds=0.05),
                ]
            )
        return ",".join(req.tool_results)

    result = sn.Agent("a", tools=[wait]).run_sync("go", llm=sn.mock_llm(handler))
    assert result.text == "slow,fast"
    (s1, e1), (s2, e2) = spans["slow"], spans["fast"]
    assert s2 < e1 and s1 < e2  # the two calls overlapped


def test_max_turns_is_loud() -> None:
    @sn.tool
    def again() -> str:
        return "more"

    llm = sn.mock_llm(lambda req: sn.reply(tool_calls=[sn.call("again")]))
    result = sn.Agent("a", tools=[again], max_turns=3).run_sync("loop", llm=llm)
    assert result.status == "incomplete"
    assert result.text == "hit maxTurns (3) without a final answer"
    assert result.turns == 3 and len(llm.exchanges) == 3


def test_run_sync_works_inside_a_running_event_loop() -> None:
    async def cell() -> str:
        # like a Jupyter cell: a loop is running on this thread
        return sn.Agent("a").run_sync("x", llm=sn.script("from inside a loop")).text

    assert asyncio.run(cell()) == "from inside a loop"


def test_async_run_from_a_users_loop() -> None:
    async def main() -> sn.Result:
        return await sn.Agent("a").run("x", llm=sn.script("async ok"))

    assert asyncio.run(main()).text == "async ok"


def test_sync_call_on_the_library_thread_points_to_the_async_api() -> None:
    @sn.tool
    def nested() -> str:
        return sn.Agent("inner").run_sync("x", llm=sn.script("never")).text

    llm = sn.mock_llm(
        lambda req: (
            sn.reply(tool_calls=[sn.call("nested")])
            if not req.tool_results
            else req.tool_results[0]
        )
    )
    result = sn.Agent("a", tools=[sn.tool(nested.fn, thread=False)]).run_sync("x", llm=llm)
    assert "would deadlock" in result.text and "await" in result.text
    # run in a worker thread (the default for a sync tool), the nested run just works
    assert sn.Agent("a", tools=[nested]).run_sync("x", llm=llm).text == "never"


def test_subscribers_see_events_live_and_late_ones_get_status_first() -> None:
    async def handler(req: sn.ChatRequest):
        await asyncio.sleep(0.2)
        return "done"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(handler))
    early: list[str] = []
    session.subscribe(lambda e: early.append(e.type))
    run = session.send("x")
    time.sleep(0.05)
    late: list[sn.events.Event] = []
    session.subscribe(late.append)
    run.result()
    assert early[:3] == ["run_started", "status_changed", "context_built"]
    assert late[0].type == "status_changed" and late[0].status == "running" and late[0].seq == 0
    assert early[-1] == "run_finished" and late[-1].type == "run_finished"


def test_async_iterator_follows_events() -> None:
    async def main() -> list[str]:
        session = sn.Session(sn.Agent("a"), llm=sn.script("hi"))
        seen: list[str] = []

        async def follow() -> None:
            async for event in session.stream():
                seen.append(event.type)
                if event.type == "run_finished":
                    return

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0)
        await session.send_async("x")
        await asyncio.wait_for(follower, 5)
        return seen

    seen = asyncio.run(main())
    assert seen[0] == "run_started" and seen[-1] == "run_finished"


def test_history_is_append_only_across_turns() -> None:
    llm = sn.mock_llm(
        lambda req: sn.reply(tool_calls=[sn.call("noop")]) if len(req.tool_results) < 3 else "end"
    )

    @sn.tool
    def noop() -> str:
        return "ok"

    session = sn.Session(sn.Agent("a", tools=[noop]), llm=llm)
    session.send("x").result()
    bodies = [x.request["messages"] for x in llm.exchanges]
    for earlier, later in itertools.pairwise(bodies):
        assert later[: len(earlier)] == earlier


@pytest.mark.parametrize("bad", ["", "a/b"])
def test_agent_names_are_checked(bad: str) -> None:
    with pytest.raises(ValueError, match="agent name"):
        sn.Agent(bad)


# limits: session-wide caps, wall-time waits, checked edits, unique tool names


def _self_delegating() -> tuple[sn.Agent, Any]:
    looper = sn.Agent("looper", does="delegates to itself")
    looper.team.append(looper)
    prompts = itertools.count()
    llm = sn.mock_llm(
        lambda req: sn.reply(
            tool_calls=[
                sn.call("task", agent="looper", prompt=f"p{next(prompts)}"),
                sn.call("task", agent="looper", prompt=f"p{next(prompts)}"),
            ]
        )
    )
    return looper, llm


@pytest.mark.timeout(60)
def test_a_self_delegating_team_stops_at_the_sessions_model_call_cap() -> None:
    looper, llm = _self_delegating()
    session = sn.Session(looper, llm=llm, max_depth=6, max_model_calls=40)
    result = session.send("go").result(timeout=30)
    assert result.status == "incomplete"
    assert "max_model_calls (40)" in result.text and "sn.Session(" in result.text
    assert len(llm.exchanges) == 40
    assert any(e.type == "error" and "max_model_calls" in e.message for e in result.events)
    session.llm = sn.script("the next run starts afresh")
    assert session.send("again").result(timeout=10).status == "done"


@pytest.mark.timeout(60)
def test_the_node_cap_refuses_further_children_loudly() -> None:
    looper, llm = _self_delegating()
    session = sn.Session(looper, llm=llm, max_depth=6, max_nodes=10, max_model_calls=200)
    result = session.send("go").result(timeout=30)
    assert len(session.root.walk()) == 11  # the top agent and the 10 sub-agents spawned
    refused = [e for e in result.events if e.type == "task_refused"]
    assert refused and "max_nodes (10)" in refused[0].reason


@pytest.mark.timeout(60)
def test_the_token_cap_stops_the_run() -> None:
    @sn.tool
    def again() -> str:
        return "more"

    llm = sn.mock_llm(
        lambda req: sn.reply(
            tool_calls=[sn.call("again")],
            usage={"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
        )
    )
    session = sn.Session(sn.Agent("a", tools=[again]), llm=llm, max_tokens=2500)
    result = session.send("go").result(timeout=30)
    assert result.status == "incomplete" and "max_tokens (2500)" in result.text
    assert len(llm.exchanges) == 3


def test_caps_have_sensible_defaults() -> None:
    session = sn.Session(sn.Agent("a"), llm=sn.script("x"))
    assert 1_000 < session.max_model_calls <= 10_000
    assert 100 <= session.max_nodes <= 10_000
    assert session.max_tokens is not None and session.max_tokens >= 1_000_000
    with pytest.raises(sn.ConfigurationError, match="max_model_calls"):
        sn.Session(sn.Agent("a"), llm=sn.script("x"), max_model_calls=0)


class _SlowPolls:
    """An Event whose every poll takes three times as long as asked (a loaded machine)."""

    def __init__(self, real: Any, clock: list[float]) -> None:
        self.real, self.clock, self.polls = real, clock, 0

    def wait(self, timeout: float | None = None) -> bool:
        self.polls += 1
        self.clock[0] += 3 * (timeout or 0)
        return self.real.is_set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_wait_timeout_is_wall_time_not_a_count_of_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    import sagents_nb._runtime.run as run_module

    async def slow(req: sn.ChatRequest):
        await asyncio.sleep(30)
        return "late"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(slow))
    run = session.send("x")
    clock = [0.0]
    monkeypatch.setattr(run_module, "monotonic", lambda: clock[0], raising=False)
    run._stop = slow_polls = _SlowPolls(run._stop, clock)
    assert run.wait(1.0) == "running"
    assert slow_polls.polls <= 5 and 1.0 <= clock[0] <= 1.5
    with pytest.raises(TimeoutError, match="still running"):
        run.result(timeout=0.5)
    run._stop = slow_polls.real
    run.cancel()
    assert run.wait(5) == "cancelled"


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", "7", 5, ["a"]])
def test_edit_with_bad_arguments_raises_at_the_call(bad: Any) -> None:
    session = sn.Session(
        sn.Agent("a", tools=[add]),
        llm=sn.mock_llm(
            lambda req: (
                sn.reply(tool_calls=[sn.call("add", a=1, b=2)])
                if not req.tool_results
                else req.tool_results[0]
            )
        ),
    )
    run = session.send("x", pause_on={"tool"})
    assert run.wait(5) == "paused"
    with pytest.raises(sn.ConfigurationError, match="JSON object"):
        run.edit(arguments=bad)
    assert run.wait(0.2) == "paused"
    run.edit(arguments='{"a": 40, "b": 2}')
    assert run.result(timeout=5).text == "42"


def test_duplicate_tool_names_are_a_configuration_error_never_sent() -> None:
    @sn.tool(name="add")
    def other_add(a: int, b: int) -> int:
        return a - b

    with pytest.raises(sn.ConfigurationError, match="'add'"):
        sn.Agent("a", tools=[add, other_add])

    @sn.tool
    def task(agent: str, prompt: str) -> str:
        return "mine"

    llm = sn.script("never sent")
    agent = sn.Agent("boss", tools=[task], team=[sn.Agent("helper", does="helps")])
    result = agent.run_sync("go", llm=llm)
    assert result.status == "error"
    assert "ConfigurationError" in result.text and "'task'" in result.text
    assert not llm.exchanges
    agent.tools.append(other_add)
    agent.tools.append(add)
    agent.tools.remove(task)
    result = agent.run_sync("go", llm=llm)
    assert result.status == "error" and "'add'" in result.text and not llm.exchanges
