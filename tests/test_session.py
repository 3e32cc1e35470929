"""Sessions: preprocessors, two transcripts, pause/approve/reject/edit/step/resume, queueing,
cancel and recovery."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

import sagents_nb as sn

DOCS = {"Spec": "The spec says: widgets must escape text.", "Plan": "Ship on Friday."}


def echo_llm() -> sn.LLM:
    return sn.mock_llm(lambda req: f"echo: {req.last_user}")


def test_mentions_expand_for_the_llm_while_display_keeps_the_mention() -> None:
    llm = echo_llm()
    session = sn.Session(sn.Agent("a"), llm=llm, preprocessor=sn.Mentions(DOCS))
    session.send("Summarise @Spec please").result()
    assert session.display_messages[0].content == "Summarise @Spec please"
    assert "widgets must escape text" in session.llm_messages[0].content
    sent = llm.exchanges[0].request["messages"][-1]["content"]
    assert sent.startswith("Summarise @Spec please") and '<document name="Spec">' in sent
    event = next(e for e in session.events if e.type == "message_preprocessed")
    assert event.display.content != event.llm.content


def test_async_preprocessor_with_scope_and_context() -> None:
    seen = {}

    class Tagger:
        name = "tagger"

        async def preprocess(self, scope, message, context):
            seen.update(scope=scope, agent=context.agent_id, conv=context.conversation_id)
            await asyncio.sleep(0)
            return message, message.model_copy(update={"content": f"[{scope}] {message.content}"})

    session = sn.Session(sn.Agent("a"), llm=echo_llm(), scope="team-x", preprocessor=Tagger())
    assert session.send("hi").result().text == "echo: [team-x] hi"
    assert seen == {"scope": "team-x", "agent": "a", "conv": session.id}


def test_rejected_message_adds_nothing_and_the_session_still_works() -> None:
    class NoSecrets:
        def preprocess(self, scope, message, context):
            if "password" in message.content:
                raise sn.Rejected("messages may not contain passwords")
            return message, message

    session = sn.Session(sn.Agent("a"), llm=echo_llm(), preprocessor=NoSecrets())
    before = len(session.events)
    with pytest.raises(sn.Rejected, match="passwords"):
        session.send("my password is hunter2")
    assert session.display_messages == [] and session.llm_messages == []
    assert session.runs == []
    # the refusal is on record (for the live view), the refused text is not: it may be a secret
    (refused,) = session.events[before:]
    assert (
        refused.type == "message_refused" and refused.reason == "messages may not contain passwords"
    )
    assert refused.preprocessor == "NoSecrets" and "hunter2" not in refused.model_dump_json()
    assert session.send("hello").result().text == "echo: hello"


def test_a_crashing_preprocessor_is_a_clear_rejection() -> None:
    def broken(scope, message, context):
        raise KeyError("oops")

    session = sn.Session(sn.Agent("a"), llm=echo_llm(), preprocessor=broken)
    with pytest.raises(sn.Rejected, match=r"failed .KeyError"):
        session.send("x")
    session.preprocessor = None
    assert session.send("y").result().status == "done"


def test_swapping_the_preprocessor_changes_the_next_message_and_is_recorded() -> None:
    session = sn.Session(sn.Agent("a"), llm=echo_llm())
    session.send("see @Plan").result()
    session.preprocessor = sn.Mentions(DOCS)
    session.send("see @Plan").result()
    first, second = (m.content for m in session.llm_messages if m.role == "user")
    assert first == "see @Plan" and "Ship on Friday" in second
    swap = next(e for e in session.events if e.type == "preprocessor_swapped")
    assert (swap.old, swap.new) == ("none", "mentions")


@sn.tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def tool_then_answer(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("weather", city="Oslo")])
    return f"answer: {req.tool_results[-1]}"


def weather_session() -> sn.Session:
    return sn.Session(sn.Agent("a", tools=[weather]), llm=sn.mock_llm(tool_then_answer))


def test_pause_before_a_tool_shows_the_pending_call_then_approve() -> None:
    session = weather_session()
    run = session.send("weather?", pause_on={"tool"})
    assert run.wait(timeout=10) == "paused"
    pending = run.paused_at
    assert (pending.action, pending.name, pending.arguments) == (
        "tool",
        "weather",
        {"city": "Oslo"},
    )
    with pytest.raises(sn.RunPaused, match="approve"):
        run.result()
    run.approve()
    assert run.result().text == "answer: sunny in Oslo"
    types = [e.type for e in run.events]
    assert types.index("paused") < types.index("resumed") < types.index("tool_call_finished")


def test_reject_tells_the_model_why() -> None:
    session = weather_session()
    run = session.send("weather?", pause_on={"tool"})
    run.wait()
    run.reject("no network today")
    result = run.result()
    assert result.text == "answer: the user rejected this call: no network today"
    finished = next(e for e in result.events if e.type == "tool_call_finished")
    assert finished.status == "denied"


def test_edit_changes_the_tool_arguments() -> None:
    session = weather_session()
    run = session.send("weather?", pause_on={"tool"})
    run.wait()
    run.edit(city="Lima")
    assert run.result().text == "answer: sunny in Lima"


def test_pause_before_the_model_shows_the_view_and_edit_replaces_the_reply() -> None:
    llm = sn.mock_llm(tool_then_answer)
    session = sn.Session(sn.Agent("a", instructions="Be brief.", tools=[weather]), llm=llm)
    run = session.send("weather?", pause_on={"model"})
    run.wait()
    pending = run.paused_at
    assert pending.action == "model"
    assert [m.content for m in pending.messages] == ["Be brief.", "weather?"]
    run.edit(reply="I will not check.")
    assert run.result().text == "I will not check."
    assert len(llm.exchanges) == 0


def test_step_advances_one_action_and_resume_runs_to_the_end() -> None:
    session = weather_session()
    run = session.send("weather?", pause_on={"model"})
    run.wait()
    run.step()
    assert run.wait() == "paused" and run.paused_at.action == "tool"
    run.step()
    assert run.wait() == "paused" and run.paused_at.action == "model"
    run.resume()
    assert run.result().text == "answer: sunny in Oslo"


def test_pauses_work_inside_children() -> None:
    helper = sn.Agent("helper", does="checks weather", tools=[weather])

    def handler(req: sn.ChatRequest):
        if "task" in req.tools:
            return (
                sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="Oslo?")])
                if not req.tool_results
                else req.tool_results[0]
            )
        return tool_then_answer(req)

    session = sn.Session(sn.Agent("boss", team=[helper]), llm=sn.mock_llm(handler))
    run = session.send("go", pause_on={"tool"})
    run.wait()
    assert run.paused_at.path == "boss/helper.1" and run.paused_at.name == "weather"
    assert session.tree.children[0].status == "paused"
    run.edit(arguments={"city": "Quito"})
    assert run.result().text == "answer: sunny in Quito"


def test_task_pause_and_per_agent_pause_points() -> None:
    helper = sn.Agent("helper", does="h")

    def handler(req: sn.ChatRequest):
        if "task" not in req.tools:
            return "ok"
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt="p")])
        return req.tool_results[0]

    boss = sn.Agent("boss", team=[helper], pause_on={"task"})
    session = sn.Session(boss, llm=sn.mock_llm(handler))
    run = session.send("go")
    run.wait()
    assert run.paused_at.action == "task" and run.paused_at.arguments["agent"] == "helper"
    run.reject("not now")
    assert "rejected this call: not now" in run.result().text


def test_two_quick_sends_both_run_in_order() -> None:
    async def slow(req: sn.ChatRequest):
        await asyncio.sleep(0.05)
        return f"echo: {req.last_user}"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(slow))
    first, second = session.send("one"), session.send("two")
    assert second.status in ("queued", "running")
    assert first.result().text == "echo: one" and second.result().text == "echo: two"
    users = [m.content for m in session.llm_messages if m.role == "user"]
    assert users == ["one", "two"]


def test_cancel_leaves_every_tool_call_answered_and_the_next_send_works() -> None:
    started = threading.Event()

    @sn.tool
    async def hang(n: int) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    helper = sn.Agent("helper", does="h", tools=[hang])

    def handler(req: sn.ChatRequest):
        if "task" in req.tools and not req.tool_results and req.last_user == "go":
            return sn.reply(
                tool_calls=[
                    sn.call("hang", n=1),
                    sn.call("task", agent="helper", prompt="hang too"),
                ]
            )
        if "hang" in req.tools and "task" not in req.tools and not req.tool_results:
            return sn.reply(tool_calls=[sn.call("hang", n=2)])
        return "fine"

    session = sn.Session(sn.Agent("boss", tools=[hang], team=[helper]), llm=sn.mock_llm(handler))
    run = session.send("go")
    assert started.wait(5)
    time.sleep(0.1)
    run.cancel()
    assert run.wait(5) == "cancelled"
    assert run.result().status == "cancelled"
    for node in session.root.walk():
        calls = {c.id for m in node.history for c in m.tool_calls or ()}
        answered = {m.tool_call_id for m in node.history if m.role == "tool"}
        assert calls == answered, node.path
    assert session.tree.children[0].status == "cancelled"
    assert session.send("next").result().text == "fine"


def test_endpoint_error_ends_in_error_then_the_next_send_and_retry_work() -> None:
    def failing(req: sn.ChatRequest):
        return httpx.Response(400, json={"error": {"message": "context too long"}})

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(failing))
    result = session.send("hello").result()
    assert result.status == "error" and "context too long" in result.text
    assert [m.content for m in session.display_messages] == ["hello"]
    session.llm = echo_llm()
    assert session.retry().result().text == "echo: hello"
    assert session.send("again").result().text == "echo: again"
    assert any(e.type == "llm_swapped" for e in session.events)


def test_awaitable_run_and_control_from_another_thread() -> None:
    async def main() -> str:
        session = weather_session()
        run = await session.send_async("weather?", pause_on={"tool"})
        assert await run.wait_async() == "paused"
        threading.Thread(target=run.resume).start()
        return (await run).text

    assert asyncio.run(main()) == "answer: sunny in Oslo"


def test_agent_run_refuses_to_hang_on_a_pause() -> None:
    agent = sn.Agent("a", tools=[weather], pause_on={"tool"})
    with pytest.raises(sn.RunPaused, match=r"use sn\.Session"):
        agent.run_sync("x", llm=sn.mock_llm(tool_then_answer))


def test_pause_on_is_checked() -> None:
    with pytest.raises(sn.ConfigurationError, match="pause_on"):
        weather_session().send("x", pause_on={"everything"})


def _two_calls_at_once(request: sn.ChatRequest) -> Any:
    if not request.tool_results:
        return sn.reply(
            tool_calls=[sn.call("weather", city="Paris"), sn.call("weather", city="東京")]
        )
    return "two forecasts"


def _pause_ends(session: sn.Session) -> tuple[set[int], dict[int, str]]:
    paused = {e.pause_id for e in session.events if e.type == "paused"}
    ended = {e.pause_id: e.decision for e in session.events if e.type == "resumed"}
    return paused, ended


def test_resume_with_several_pauses_pending_ends_each_in_the_event_stream() -> None:
    session = sn.Session(sn.Agent("a", tools=[weather]), llm=sn.mock_llm(_two_calls_at_once))
    run = session.send("weather?", pause_on={"tool"})
    assert run.wait(10) == "paused"
    deadline = time.monotonic() + 10
    while len(run.pending) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(run.pending) == 2
    run.resume()
    assert run.result(timeout=10).text == "two forecasts"
    paused, ended = _pause_ends(session)
    assert len(paused) == 2 and set(ended) == paused
    assert set(ended.values()) == {"approve"}


def test_cancel_at_a_pause_ends_the_pause_in_the_event_stream() -> None:
    session = sn.Session(sn.Agent("a", tools=[weather]), llm=sn.mock_llm(_two_calls_at_once))
    run = session.send("weather?", pause_on={"tool"})
    assert run.wait(10) == "paused"
    deadline = time.monotonic() + 10
    while len(run.pending) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(run.pending) == 2
    run.cancel()
    assert run.result(timeout=10).status == "cancelled"
    paused, ended = _pause_ends(session)
    assert len(paused) == 2 and ended == {pause_id: "cancelled" for pause_id in paused}
    assert run.pending == []


def test_a_pending_call_reads_in_its_own_script() -> None:
    llm = sn.mock_llm(
        lambda req: (
            sn.reply(tool_calls=[sn.call("weather", city="Zürich 🥝 東京")])
            if req.last["role"] == "user"
            else "done"
        )
    )
    run = sn.Session(sn.Agent("a", tools=[weather]), llm=llm).send("x", pause_on={"tool"})
    assert run.wait(10) == "paused"
    assert 'weather({"city": "Zürich 🥝 東京"})' in str(run.pending[0])
    run.cancel()
