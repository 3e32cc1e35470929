"""The turn loop: concurrency, turn caps, sync use inside a running loop, live event subscription."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

import sagents_nb as sn


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
    result = sn.Agent("a", tools=[nested]).run_sync("x", llm=llm)
    assert "would deadlock" in result.text and "await" in result.text


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
