"""A user's `session.subscribe` callback runs off the run's path: a slow or stuck one never holds
up generation, falls behind by a bounded queue (the newest dropped, counted), and a run's wait
returns once it was handed the run's events."""

from __future__ import annotations

import logging
import threading
import time

import pytest

import sagents_nb as sn
from sagents_nb._runtime import bus

pytestmark = pytest.mark.timeout(60)


def streamed_child_session() -> sn.Session:
    def handler(req: sn.ChatRequest):
        if req.model == "boss" and not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="rédacteur", prompt="écris")])
        if req.model == "boss":
            return "fini : " + req.tool_results[-1]
        return sn.reply("東京の天気は晴れ 🌞 — c'est " + "très " * 40 + "beau", stream=True)

    writer = sn.Agent("rédacteur", does="writes", model="writer", kind=sn.kinds.Realtime())
    boss = sn.Agent("boss", model="boss", team=[writer])
    return sn.Session(boss, llm=sn.mock_llm(handler))


def test_a_stuck_subscriber_does_not_hold_up_the_run() -> None:
    session = streamed_child_session()
    release = threading.Event()
    seen: list[sn.events.Event] = []

    def stuck(event: sn.events.Event) -> None:
        release.wait(30)  # until the run has ended: on the old code, the run never does
        seen.append(event)

    session.subscribe(stuck)
    run = session.send("go")
    finished = threading.Event()
    threading.Thread(target=lambda: (run._stop.wait(20), finished.set()), daemon=True).start()
    assert finished.wait(20), "the run waited for its subscriber"
    assert run.status == "done" and run._result is not None
    assert run._result.text.startswith("fini : 東京")
    release.set()
    run.result()  # returns once the callback was handed every event of the run
    assert [e.seq for e in seen if e.seq] == [e.seq for e in session.events]
    assert seen[-1].type == "run_finished"


def test_a_subscriber_that_falls_too_far_behind_drops_the_newest_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(bus, "QUEUE_LIMIT", 5)
    session = streamed_child_session()
    release = threading.Event()
    seen: list[int] = []
    session.subscribe(lambda event: (release.wait(30), seen.append(event.seq)))
    with caplog.at_level(logging.WARNING, logger="sagents_nb"):
        run = session.send("go")
        run._stop.wait(20)
        assert run.status == "done"
        release.set()
        run.result()
    (delivery,) = session.bus.deliveries
    events = [e.seq for e in session.events]
    # what it was handed came in order, the first events first; the rest were dropped, counted
    assert seen == sorted(seen) and set(seen) <= set(events) and seen[:5] == events[:5]
    assert delivery.dropped == len(events) - len(seen) > 0
    assert "events behind" in caplog.text and "dropped" in caplog.text


def test_a_failing_subscriber_stays_subscribed_and_others_see_everything() -> None:
    session = streamed_child_session()
    good: list[str] = []

    def bad(event: sn.events.Event) -> None:
        raise SystemExit("a subscriber that exits")

    session.subscribe(bad)
    unsubscribe = session.subscribe(lambda e: good.append(e.type))
    session.send("go").result()
    assert good[-1] == "run_finished"
    unsubscribe()
    count = len(good)
    session.send("encore").result()
    assert len(good) == count  # unsubscribed: its thread has ended
    assert len(session.bus.deliveries) == 1


def test_an_idle_subscriber_holds_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bus, "IDLE_SECONDS", 0.1)
    session = streamed_child_session()
    seen: list[str] = []
    session.subscribe(lambda e: seen.append(e.type))
    session.send("go").result()
    (delivery,) = session.bus.deliveries
    deadline = time.monotonic() + 10
    while delivery._thread is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert delivery._thread is None
    session.send("encore").result()  # the next event starts it again
    assert seen.count("run_finished") == 2
