"""Fork here in the live view: the fork gets a live view of its own, shown below, and reads as
what it is (a run cut mid-way, continued by Resume), not as a run still going."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb.notebook import LiveView, view
from sagents_nb.notebook._export import static_view

from ..test_store_fork import bank_model, transfer
from .conftest import wait_until
from .test_view import click, notice, run_status

pytestmark = pytest.mark.timeout(30)


def paused_bank() -> tuple[sn.Session, sn.Run]:
    session = sn.Session(
        sn.Agent("bank", tools=[transfer]), llm=sn.mock_llm(bank_model), store=":memory:"
    )
    run = session.send("payer — 支払い", pause_on={"tool"})
    assert run.wait(timeout=10) == "paused"
    return session, run


def test_fork_here_at_a_pause_shows_a_cut_fork_that_resume_continues() -> None:
    session, run = paused_bank()
    widget = view(session)
    paused = next(e for e in session.events if e.type == "paused")
    click(widget, action="fork", seq=paused.seq)
    [forked] = widget.forks
    [fork_view] = widget.fork_views
    assert isinstance(fork_view, LiveView) and fork_view.target.session is forked
    wait_until(lambda: widget.header["forks"], what="the fork in the header")
    [ref] = widget.header["forks"]
    assert ref == {
        "model": fork_view.model_id,
        "id": forked.id,
        "seq": paused.seq,
        "index": 0,
        "diff": None,
    }
    wait_until(lambda: "shown below" in notice(widget), what="the fork's notice")
    assert "this view's .forks[0]" in notice(widget)

    # the fork's own view: its run cut at the pause, its node waiting there for resume()
    assert run_status(fork_view) == "incomplete"
    [stored] = fork_view.header["pending"]  # shown before resume(), marked as waiting for it
    assert stored["stored"] and stored["name"] == "transfer"
    assert fork_view.header["resumable"] is True
    assert fork_view.tree["status"] == "paused"
    assert forked.pending == [("bank", "tool", "transfer", {"amount": 1000, "to": "Mallory 🦹"})]
    assert "forked from session" in fork_view.header["run"]["text"]
    assert run_status(widget) == "paused" and widget.header["resumable"] is False

    click(fork_view, action="resume")  # goes on from the cut, pausing where it paused
    wait_until(
        lambda: [p for p in fork_view.header["pending"] if not p["stored"]],
        what="the fork to pause again",
    )
    wait_until(lambda: "continues from where it was cut" in notice(fork_view), what="notice")
    assert fork_view.header["resumable"] is False and run_status(fork_view) == "paused"
    click(fork_view, action="approve", pause_id=fork_view.header["pending"][0]["pause_id"])
    wait_until(lambda: run_status(fork_view) == "done", what="the fork to finish")
    assert forked.runs[-1].result().text == "Résultat : envoyé 1000 à Mallory 🦹"
    assert run.status == "paused"  # the original still waits
    widget.close()
    assert fork_view.comm is None  # closed with the view that showed it
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"


def test_a_reopened_session_cut_mid_run_is_incomplete_and_resumable() -> None:
    session, run = paused_bank()
    assert session.store is not None
    cut = session.fork()  # stored cut at the pause, as a crash there would leave it
    reopened = sn.Session.open(
        session.store, cut.id, agent=session.agent, llm=sn.mock_llm(bank_model)
    )
    widget = view(reopened)
    assert run_status(widget) == "incomplete"
    assert [p["stored"] for p in widget.header["pending"]] == [True]
    assert widget.header["resumable"] is True
    click(widget, action="step")
    wait_until(
        lambda: [p for p in widget.header["pending"] if not p["stored"]],
        what="the reopened run to pause",
    )
    wait_until(lambda: "pause before its next action" in notice(widget), what="the notice")
    widget.close()
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"


def test_the_static_rendering_includes_each_fork_below() -> None:
    session, run = paused_bank()
    widget = view(session)
    paused = next(e for e in session.events if e.type == "paused")
    click(widget, action="fork", seq=paused.seq)
    static = static_view(widget)
    text, page = static["text/plain"], static["text/html"]
    forked = widget.forks[0]
    assert f"fork 0 (this view's .forks[0]), branched at event {paused.seq}" in text
    assert f"  sagents_nb · session {forked.id} · bank" in text
    assert "  run 1 incomplete" in text and "waiting for session.resume()" in text
    assert f"session {forked.id}" in page and "Mallory 🦹" in page
    assert "waiting for session.resume()" in page
    widget.close()
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"


def test_compare_with_origin_shows_the_diff_of_a_fork_below_its_title() -> None:
    session, run = paused_bank()
    widget = view(session)
    paused = next(e for e in session.events if e.type == "paused")
    click(widget, action="fork", seq=paused.seq)
    resumed = widget.forks[0].resume()
    assert resumed.wait(timeout=10) == "paused"
    resumed.edit(amount=10, to="Alice <b>アリス</b>")
    assert resumed.result(timeout=10).status == "done"
    click(widget, action="compare", index=0)
    wait_until(lambda: widget.header["forks"][0]["diff"], what="the diff in the fork's ref")
    found = widget.header["forks"][0]["diff"]
    assert found["fork_seq"] == paused.seq and "first diverging event" in found["divergence"]
    [bank] = found["nodes"]
    assert bank["a"]["status"] == "paused" and bank["b"]["status"] == "done"
    assert bank["b"]["answer"] == "Résultat : envoyé 10 à Alice <b>アリス</b>"
    click(widget, action="compare", index=3)
    wait_until(lambda: "no fork 3" in notice(widget), what="the refusal")
    widget.close()
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"
