"""Kinds as the seed means them (issue 18 items 5-8): Realtime's single slot, Resident's light
relevance view and destroy, Main's cold storage that follows the question."""

from __future__ import annotations

import asyncio
import json

import sagents_nb as sn


def test_realtime_keeps_one_input_waiting_and_a_newer_one_replaces_it() -> None:
    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[
                        sn.call("task", agent="live", prompt=p) for p in ("one", "two", "three")
                    ]
                )
            return " | ".join(req.tool_results)
        return f"heard {req.last_user}"

    live = sn.Agent("live", does="streams", kind=sn.kinds.Realtime())
    result = sn.Agent("boss", team=[live]).run_sync("go", llm=sn.mock_llm(handler))
    first, second, third = result.text.split(" | ")
    assert (first, third) == ("heard one", "heard three")
    assert second.startswith("[incomplete]") and "took a newer input" in second
    assert [c.id for c in result.tree.children] == ["boss/live.1"]


def test_destroying_a_resident_stops_its_task_in_flight_and_it_stays_destroyed() -> None:
    async def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[
                        sn.call("task", agent="keeper", prompt="a long job"),
                        sn.call("resident_agents", action="destroy", id="boss/keeper.1"),
                    ]
                )
            return " | ".join(req.tool_results)
        await asyncio.sleep(60)  # the resident's model never answers in time
        return "finished the long job"

    keeper = sn.Agent("keeper", does="remembers", kind=sn.kinds.Resident())
    result = sn.Agent("boss", team=[keeper]).run_sync("go", llm=sn.mock_llm(handler))
    task_answer, destroy_note = result.text.split(" | ")
    assert task_answer == "[cancelled] boss/keeper.1 was destroyed"
    assert "1 task(s) in flight stopped" in destroy_note
    child = result.tree.children[0]
    assert child.status == "destroyed"
    statuses = [
        e.status for e in result.events if e.type == "status_changed" and e.path == child.id
    ]
    assert statuses[-1] == "destroyed" and "done" not in statuses


def test_a_resident_sees_recent_work_and_older_work_that_matches_the_task() -> None:
    views: list[str] = []

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            if req.messages[-1]["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt=req.last_user)])
            return "ok"
        views.append(json.dumps(req.messages, ensure_ascii=False))
        return f"noted: {req.last_user}"

    keeper = sn.Agent("keeper", does="remembers", kind=sn.kinds.Resident(keep_recent=2))
    session = sn.Session(sn.Agent("boss", team=[keeper]), llm=sn.mock_llm(handler))
    for topic in [
        "giraffe height is 5 m",
        "tax forms are due",
        "volcano ash is grey",
        "river fish",
    ]:
        session.send(topic).result()
    result = session.send("what was the giraffe height?").result()
    last = views[-1]
    assert "giraffe height is 5 m" in last  # old, but it matches the task
    assert "river fish" in last  # recent: always in view
    assert "tax forms are due" not in last and "volcano ash" not in last  # old and unrelated
    assert len(session.node("boss/keeper.1").history) == 10  # storage keeps everything
    shown = [e for e in result.events if e.type == "relevance_view"]
    # tax and volcano, each asked and answered: an input and its answer are one group
    assert shown and shown[-1].left_out == 2


def test_main_brings_back_what_the_new_question_needs_and_recall_returns_only_matches() -> None:
    @sn.tool
    def note(text: str) -> str:
        return f"noted {text}"

    topics = iter(["tax forms", "giraffe height", "volcano ash", "river fish"])
    recalls: list[str] = []
    views: list[str] = []

    def handler(req: sn.ChatRequest):
        views.append(json.dumps(req.messages))
        if req.last_user.startswith("tell"):
            topic = next(topics, None)
            if topic is not None:
                return sn.reply(tool_calls=[sn.call("note", text=topic)])
            return "all noted"
        if "recall" in req.tools and not recalls:
            recalls.append("asked")
            return sn.reply(
                tool_calls=[
                    sn.call("recall", query="volcano"),
                    sn.call("recall", query="spaceship"),
                ]
            )
        return "answered"

    agent = sn.Agent("main", tools=[note], kind=sn.kinds.Main(top_k=1, recent=1))
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    session.send("tell me about tax forms").result()
    result = session.send("and the giraffe height?").result()
    restored = [e for e in result.events if e.type == "cold_restore"]
    assert restored and "giraffe" in " ".join(restored[0].previews)
    assert "giraffe height" in views[-2]  # back in view for the question that needs it
    answers = [e.result for e in result.events if e.type == "tool_call_finished"]
    assert "volcano ash" in answers[0] and "giraffe" not in answers[0]
    assert answers[1].startswith("nothing in cold storage matches 'spaceship'")
