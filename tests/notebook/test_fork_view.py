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


def test_fork_here_at_a_pause_shows_an_incomplete_fork_that_resume_continues() -> None:
    session, run = paused_bank()
    widget = view(session)
    paused = next(e for e in session.events if e.type == "paused")
    click(widget, action="fork", seq=paused.seq)
    [forked] = widget.forks
    [fork_view] = widget.fork_views
    assert isinstance(fork_view, LiveView) and fork_view.target.session is forked
    wait_until(lambda: widget.header["forks"], what="the fork in the header")
    [ref] = widget.header["forks"]
    assert ref == {"model": fork_view.model_id, "id": forked.id, "seq": paused.seq, "index": 0}
    wait_until(lambda: "shown below" in notice(widget), what="the fork's notice")
    assert "this view's .forks[0]" in notice(widget)

    # the fork's own view: cut at the pause, so incomplete, with no decision to take there
    assert run_status(fork_view) == "incomplete"
    assert fork_view.header["pending"] == []
    assert fork_view.header["resumable"] is True
    assert fork_view.tree["status"] == "paused"  # the node cut at its pause (forked.pending)
    assert [p.name for p in forked.pending] == ["transfer"]
    assert "forked from session" in fork_view.header["run"]["text"]
    assert run_status(widget) == "paused" and widget.header["resumable"] is False

    click(fork_view, action="resume")  # goes on from the cut, pausing where it paused
    wait_until(lambda: fork_view.header["pending"], what="the fork to pause again")
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
    assert run_status(widget) == "incomplete" and widget.header["pending"] == []
    assert widget.header["resumable"] is True
    click(widget, action="step")
    wait_until(lambda: widget.header["pending"], what="the reopened run to pause")
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
    assert "  run 1 incomplete" in text and "interrupted" in text
    assert f"session {forked.id}" in page and "Mallory 🦹" in page and "interrupted" in page
    widget.close()
    run.cancel()
    assert run.wait(timeout=10) == "cancelled"
