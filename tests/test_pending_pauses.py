"""Every pause decidable by itself (`run.pending[i].approve()` ...), and the whole model request
at a pause (`PendingAction.request`), edited messages included."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

import sagents_nb as sn

PLANTED = "sk-planted-9f8e7d6c5b4a"


@sn.tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _tree_mock(seen: list[sn.ChatRequest]) -> sn.LLM:
    def handler(req: sn.ChatRequest) -> Any:
        seen.append(req)
        if req.node == "boss":
            if not req.tool_results:
                return sn.reply(
                    tool_calls=[
                        sn.call("task", agent="scout", prompt="météo à Paris"),
                        sn.call("task", agent="scout", prompt="東京の天気"),
                    ]
                )
            return "both scouts answered"
        if not req.tool_results:
            city = "Paris" if "Paris" in req.last_user else "東京"
            return sn.reply(tool_calls=[sn.call("weather", city=city)])
        return f"scout: {req.tool_results[-1]}"

    return sn.mock_llm(handler)


def _two_paused(seen: list[sn.ChatRequest]) -> tuple[sn.Session, sn.Run]:
    scout = sn.Agent("scout", does="checks the weather", tools=[weather], pause_on={"tool"})
    session = sn.Session(sn.Agent("boss", team=[scout]), llm=_tree_mock(seen))
    run = session.send("quel temps fait-il ? 🌦")
    deadline = time.monotonic() + 10
    while len(run.pending) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(run.pending) == 2, run.pending
    return session, run


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_two_parallel_pauses_are_decided_by_id_in_the_other_order() -> None:
    session, run = _two_paused([])
    first, second = run.pending
    assert first.id != second.id and first.path != second.path
    assert [(p.action, p.name) for p in run.pending] == [("tool", "weather")] * 2
    assert run.paused_at is first
    second.edit(city="Zürich 🥝")
    _wait_for(lambda: second not in run.pending, "the second pause to be decided")
    assert run.pending == [first] and run.status == "paused"
    with pytest.raises(sn.ConfigurationError, match="already decided"):
        second.approve()  # stale: nothing is decided twice, nor the other pause instead
    assert run.pending == [first]
    first.reject("pas aujourd'hui")
    result = run.result(timeout=10)
    assert result.text == "both scouts answered"
    ended = [(e.pause_id, e.decision) for e in session.events if e.type == "resumed"]
    assert ended == [(second.id, "edit"), (first.id, "reject")]
    ran = [e for e in session.events if e.type == "tool_call_finished" and e.name == "weather"]
    assert [(e.path, e.status) for e in ran] == [(second.path, "ok"), (first.path, "denied")]
    assert json.loads(ran[0].arguments) == {"city": "Zürich 🥝"}


def test_run_controls_keep_deciding_the_first_pause() -> None:
    _, run = _two_paused([])
    first, second = run.pending
    run.approve()
    _wait_for(lambda: first not in run.pending, "the first pause to be decided")
    assert run.paused_at is second
    second.step()
    _wait_for(lambda: second not in run.pending, "the second pause to be decided")
    assert run.mode == "step"
    run.resume()
    assert run.result(timeout=10).status == "done"


def test_the_request_at_a_model_pause_is_what_the_handler_receives() -> None:
    seen: list[sn.ChatRequest] = []
    session = sn.Session(
        sn.Agent("boss", instructions="réponds brièvement", tools=[weather]),
        llm=sn.mock_llm(lambda req: seen.append(req) or "d'accord 👍"),
    )
    run = session.send("bonjour, 東京?", pause_on={"model"})
    assert run.wait(10) == "paused"
    pending = run.paused_at
    request = pending.request
    assert request is not None and pending.messages is request.messages
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.model == "mock" and request.endpoint == session.llm.label
    assert [t["function"]["name"] for t in request.tools] == ["weather"]
    assert request.tool_choice is None and request.tokens > 0
    run.approve()
    assert run.result(timeout=10).text == "d'accord 👍"
    (sent,) = seen
    assert sent.body == request.body()
    assert sent.model == request.model and sent.messages == [m.to_wire() for m in request.messages]
    assert sent.body["tools"] == request.tools
    paused = next(e for e in session.events if e.type == "paused")
    assert paused.request.messages == request.messages and paused.request.tools == ["weather"]
    built = next(e for e in session.events if e.type == "context_built")
    assert (paused.request.tokens, paused.request.endpoint) == (built.view_tokens, "mock:<lambda>")


def test_edited_messages_are_sent_instead_and_recorded() -> None:
    seen: list[sn.ChatRequest] = []
    session = sn.Session(
        sn.Agent("boss", instructions="sois bref"),
        llm=sn.mock_llm(lambda req: seen.append(req) or f"vu: {req.last_user}"),
    )
    run = session.send("première version", pause_on={"model"})
    assert run.wait(10) == "paused"
    system_prompt, _ = run.paused_at.messages
    run.paused_at.edit(messages=[system_prompt, {"role": "user", "content": "version éditée ✍"}])
    assert run.result(timeout=10).text == "vu: version éditée ✍"
    assert seen[0].messages == [
        {"role": "system", "content": "sois bref"},
        {"role": "user", "content": "version éditée ✍"},
    ]
    resumed = next(e for e in session.events if e.type == "resumed")
    assert (resumed.decision, resumed.changed) == ("edit", ["messages"])


def test_an_edit_with_messages_that_are_not_messages_is_refused_and_the_run_stays_paused() -> None:
    session = sn.Session(sn.Agent("boss"), llm=sn.mock_llm(lambda req: "ok"))
    run = session.send("x", pause_on={"model"})
    assert run.wait(10) == "paused"
    with pytest.raises(sn.ConfigurationError, match=r"list of sn\.Message"):
        run.paused_at.edit(messages="just text")
    with pytest.raises(sn.ConfigurationError, match=r"list of sn\.Message"):
        run.edit(messages=[{"role": "wizard", "content": "x"}])
    assert run.status == "paused" and len(run.pending) == 1
    run.edit(reply="une réponse à la main")
    assert run.result(timeout=10).text == "une réponse à la main"


def test_the_endpoint_key_never_appears_in_the_request_or_the_events() -> None:
    llm = sn.LLM(base_url="http://127.0.0.1:9/v1", api_key=PLANTED, model="m")
    session = sn.Session(sn.Agent("boss", instructions="clé ?"), llm=llm)
    run = session.send("montre-moi la clé", pause_on={"model"})
    assert run.wait(10) == "paused"
    request = run.paused_at.request
    assert PLANTED not in repr(request) and PLANTED not in json.dumps(request.body())
    assert PLANTED not in repr(run.pending) and request.endpoint == "http://127.0.0.1:9/v1"
    run.reject("no call")
    run.result(timeout=10)
    for event in session.events:
        assert PLANTED not in event.model_dump_json()


def test_the_request_at_a_pause_is_stored_with_its_event(tmp_path: Any) -> None:
    agent = sn.Agent("boss", instructions="garde-le 📦")
    path = str(tmp_path / "runs.db")
    session = sn.Session(agent, llm=sn.mock_llm(lambda req: "ok"), store=path)
    run = session.send("à garder", pause_on={"model"})
    assert run.wait(10) == "paused"
    run.cancel()
    run.result(timeout=10)
    reopened = sn.Session.open(path, session.id, agent=agent)
    paused = next(e for e in reopened.events if e.type == "paused")
    assert [m.content for m in paused.request.messages] == ["garde-le 📦", "à garder"]
    assert paused.request.endpoint == session.llm.label


def test_the_salvage_request_at_a_pause_says_its_tool_choice() -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest) -> Any:
        seen.append(req)
        if req.body.get("tool_choice") == "none":
            return "résumé : pas fini"
        return sn.reply(tool_calls=[sn.call("weather", city="Lyon")])

    agent = sn.Agent("solo", tools=[weather], max_turns=1, kind=sn.kinds.Worker())
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    run = session.send("météo ?", pause_on={"model"})
    assert run.wait(10) == "paused"
    run.approve()
    _wait_for(lambda: run.paused_at is not None and run.paused_at.id == 2, "the salvage pause")
    request = run.paused_at.request
    assert request.tool_choice == "none" and request.messages[-1].role == "user"
    run.approve()
    assert "pas fini" in run.result(timeout=10).text
    assert seen[-1].body == request.body()


def test_two_pauses_decided_back_to_back_leave_the_wait_to_the_end() -> None:
    # both decisions sent before the loop handles the first: the wait must not wake between them
    for _ in range(10):
        _, run = _two_paused([])
        first, second = run.pending
        second.edit(city="Zürich 🥝")
        first.approve()
        assert run.result(timeout=10).text == "both scouts answered"


def test_a_pause_approved_as_it_is_announced_does_not_wake_the_wait() -> None:
    """Found by benchmarks/soak.py: a pause decided from another thread as soon as it was in
    `run.pending`, before the run had said it was paused, still woke `run.wait()`, which then
    returned "running" (neither paused nor finished) while the run went on."""

    @sn.tool
    def slow(x: int) -> str:
        """A tool that takes a while.

        Args:
            x: a number.
        """
        time.sleep(0.5)
        return f"slow {x}"

    def handler(req: sn.ChatRequest) -> Any:
        return "done" if req.tool_results else sn.reply(tool_calls=[sn.call("slow", x=1)])

    session = sn.Session(sn.Agent("a", tools=[slow]), llm=sn.mock_llm(handler))

    def approve_at_once(event: sn.events.Event) -> None:
        """On the loop, while the pause is announced: approved from another thread now."""
        if event.type == "paused":
            (pending,) = session.runs[-1].pending
            approver = threading.Thread(target=pending.approve)
            approver.start()
            approver.join()

    session.bus.subscribe(approve_at_once)
    run = session.send("go", pause_on={"tool"})
    assert run.wait(timeout=10) == "done"
    assert run.result().text == "done"


def test_a_session_dropped_at_a_pause_goes_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """Its run and children's tasks wait on futures only the session holds: collected with it,
    they say nothing (asyncio's "Task was destroyed but it is pending!" meant nothing to do)."""
    import gc
    import weakref

    session, run = _two_paused([])
    gone = weakref.ref(session)
    queued = session.send("et demain ?")  # a second run, queued behind the paused one
    assert queued.status == "queued"
    del session, run, queued
    with caplog.at_level("ERROR", logger="asyncio"):
        deadline = time.monotonic() + 10
        while gone() is not None and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.01)
        gc.collect()
    assert gone() is None
    assert not [r for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
