"""The view at pauses: one card per pending pause, each decided by its id; the request a model
pause stands before, in the Context tab; an edit of its messages in the Decisions tab."""

from __future__ import annotations

import json
import time

import sagents_nb as sn
from sagents_nb.notebook import view
from sagents_nb.notebook._decision_pane import decision_lines, decisions_pane
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector

from ..test_pending_pauses import _two_paused, weather
from .conftest import wait_until
from .test_view import click, notice


def test_each_pause_in_the_view_is_decided_by_its_own_id() -> None:
    session, run = _two_paused([])
    widget = view(session)
    wait_until(lambda: len(widget.header["pending"]) == 2, what="both cards")
    first, second = widget.header["pending"]
    assert first["path"] != second["path"]
    click(widget, action="edit", pause_id=second["pause_id"], text='{"city": "Zürich"}')
    wait_until(lambda: len(run.pending) == 1, what="the second pause to be decided")
    assert run.pending[0].id == first["pause_id"]
    click(widget, action="approve", pause_id=second["pause_id"])  # stale: already decided
    wait_until(lambda: "already decided" in notice(widget), what="the stale notice")
    assert widget.header["notice"]["error"] and run.pending[0].id == first["pause_id"]
    time.sleep(0.1)
    assert run.status == "paused", "a stale id decides nothing, not the other pause either"
    click(widget, action="reject", pause_id=first["pause_id"], reason="non")
    assert run.result(timeout=10).text == "both scouts answered"
    ended = [(e.path, e.decision) for e in session.events if e.type == "resumed"]
    assert ended == [(second["path"], "edit"), (first["path"], "reject")]
    ran = [e for e in session.events if e.type == "tool_call_started" and e.name == "weather"]
    assert [(e.path, json.loads(e.arguments)) for e in ran] == [
        (second["path"], {"city": "Zürich"})
    ]
    widget.close()


def _projected(session: sn.Session) -> Projector:
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def test_the_context_tab_at_a_model_pause_shows_the_request_about_to_be_sent() -> None:
    session = sn.Session(
        sn.Agent("boss", instructions="bref", tools=[weather]), llm=sn.mock_llm(lambda r: "ok")
    )
    run = session.send("quel temps à 東京 ?", pause_on={"model"})
    assert run.wait(10) == "paused"
    pane = pane_state(_projected(session), Focus(node="boss", tab="context"), None, {})
    shown = pane["about_to_send"]
    request = run.paused_at.request
    assert (shown["model"], shown["endpoint"], shown["tools"]) == (
        "mock",
        request.endpoint,
        ["weather"],
    )
    assert shown["tokens"] == request.tokens and shown["count"] == 2
    assert [m["text"] for m in shown["messages"]] == ["bref", "quel temps à 東京 ?"]
    run.approve()
    run.result(timeout=10)
    pane = pane_state(_projected(session), Focus(node="boss", tab="context"), None, {})
    assert pane["about_to_send"] is None


def test_an_edit_of_the_messages_shows_which_messages_changed_in_decisions() -> None:
    session = sn.Session(
        sn.Agent("boss", instructions="bref"), llm=sn.mock_llm(lambda r: f"vu {r.last_user}")
    )
    run = session.send("avant", pause_on={"model"})
    assert run.wait(10) == "paused"
    prompt, _ = run.paused_at.messages
    run.paused_at.edit(messages=[prompt, sn.Message(role="user", content="après ✍")])
    assert run.result(timeout=10).text == "vu après ✍"
    log = _projected(session).decisions
    [entry] = decisions_pane(log)["decisions"]
    assert entry["decision"] == "edited" and entry["reply"] is None
    assert entry["messages_diff"] == [["#2", "changed", "user: avant", "user: après ✍"]]
    assert "messages sent instead: #2 changed" in decision_lines(log)[0]

    again = session.send("encore", pause_on={"model"})
    assert again.wait(10) == "paused"
    again.edit(reply="à la main")
    assert again.result(timeout=10).text == "à la main"
    entry = decisions_pane(_projected(session).decisions)["decisions"][-1]
    assert (entry["reply"], entry["messages_diff"]) == ("à la main", None)


def test_a_live_model_pauses_card_sends_edited_messages() -> None:
    """The card of a pause in a live run edits the request's messages as a stored pause's does
    (the same card, `_widget._pending`): the model gets them, Decisions diffs them."""
    session = sn.Session(
        sn.Agent("boss", instructions="bref"), llm=sn.mock_llm(lambda r: f"vu {r.last_user}")
    )
    run = session.send("<b>avant</b> 東京", pause_on={"model"})
    widget = view(session)
    wait_until(lambda: len(widget.header["pending"]) == 1, what="the live card")
    [card] = widget.header["pending"]
    assert not card["stored"] and [m["index"] for m in card["messages"]] == [0, 1]
    assert json.loads(card["messages"][1]["text"]) == {
        "role": "user",
        "content": "<b>avant</b> 東京",
    }
    edited = json.dumps({"role": "user", "content": "après ✍ 🎉"}, ensure_ascii=False)
    click(widget, action="edit", pause_id=card["pause_id"], messages=[{"index": 1, "text": edited}])
    assert run.result(timeout=10).text == "vu après ✍ 🎉"
    [entry] = decisions_pane(_projected(session).decisions)["decisions"]
    assert entry["messages_diff"] == [
        ["#2", "changed", "user: <b>avant</b> 東京", "user: après ✍ 🎉"]
    ]
    widget.close()
