"""A sweep's finished runs leave no reference cycles: each run's session, nodes, journal and
endpoint are freed by reference counting when the sweep drops them, not by the cycle collector
(issue 32 item 2; benchmarks/README.md, "Sweeps at eval scale")."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator

import pytest

import sagents_nb as sn
from sagents_nb._runtime.session import _LIVE


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cycle collector off: what is freed meanwhile was freed by reference counting."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def delegating(req: sn.ChatRequest):
    """The boss hands each item to its helper once, then answers; the helper answers."""
    if "task" not in req.tools:
        return f"vu : {req.last_user} 🙂"
    if req.messages[-1]["role"] == "user":
        return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt=req.last_user)])
    return f"vu : {req.last_user} 🙂"


def team() -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("helper", does="répond")])


def freed(ids: set[str], seconds: float = 5.0) -> set[str]:
    """The sessions of `ids` still alive after `seconds` (a journal's last timers hold theirs a
    few milliseconds), with no collection meanwhile."""
    deadline = time.monotonic() + seconds
    while ids & set(_LIVE.keys()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return ids & set(_LIVE.keys())


@pytest.mark.parametrize("stored", [True, False])
def test_a_sweeps_sessions_are_freed_without_the_cycle_collector(
    stored: bool, no_collector: None, tmp_path
) -> None:
    before = set(_LIVE.keys())
    items = ["Bonjour", ["你好", "もう一度"], "ok"]
    kinds = {"worker": {}, "resident": {"helper": sn.kinds.Resident()}}
    cmp = sn.sweep(
        team(),
        items,
        kinds,
        llm=sn.mock_llm(delegating),
        store=tmp_path / "s.db" if stored else None,
        progress=False,
    )
    assert [r["status"] for r in cmp.rows] == ["done"] * 6
    assert {r["answer"] for r in cmp.rows} >= {"vu : Bonjour 🙂", "vu : もう一度 🙂"}
    made = set(_LIVE.keys()) - before
    if stored:
        made |= {r.session_id for r in cmp.records if r.session_id is not None}
        assert len({r.session_id for r in cmp.records}) == 6
    assert freed(made) == set()
    assert cmp.record("resident", 1).events[-1].type == "run_finished"  # the record keeps them
    if stored:
        again = cmp.open("resident", 1)
        assert [m.content for m in again.display_messages if m.role == "user"] == [
            "你好",
            "もう一度",
        ]


def test_a_mock_endpoint_is_freed_without_the_cycle_collector(no_collector: None) -> None:
    endpoint = sn.mock_llm(lambda req: "42")
    copy = endpoint.fresh()
    gone = weakref.ref(endpoint), weakref.ref(copy)
    del endpoint, copy
    assert [ref() for ref in gone] == [None, None]


def test_a_released_session_is_freed_without_the_cycle_collector_and_its_nodes_say_so(
    no_collector: None, tmp_path
) -> None:
    session = sn.Session(
        sn.Agent("solo"), llm=sn.mock_llm(lambda req: "d'accord ✓"), store=tmp_path / "s.db"
    )
    assert session.send("salut").result(timeout=30).text == "d'accord ✓"
    root, gone = session.root, weakref.ref(session)
    session.release()
    del session
    deadline = time.monotonic() + 5  # the journal's last timer holds it a few milliseconds
    while gone() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone() is None
    with pytest.raises(RuntimeError, match="'solo' was released with its session"):
        root.session  # noqa: B018


def test_a_session_with_a_run_in_flight_is_not_released() -> None:
    @sn.tool
    def météo(ville: str) -> str:
        """La météo d'une ville."""
        return f"{ville} : 晴れ"

    def model(req: sn.ChatRequest):
        if req.tool_results:
            return req.tool_results[-1]
        return sn.reply(tool_calls=[sn.call("météo", ville="Oslo")])

    session = sn.Session(sn.Agent("a", tools=[météo]), llm=sn.mock_llm(model))
    run = session.send("x", pause_on="tool")
    assert run.wait(10) == "paused"
    session.release()  # a paused run: nothing released
    assert session.runs == [run] and session.root.session is session
    run.approve()
    assert run.result(timeout=30).text == "Oslo : 晴れ"
