"""The view of a session reopened after SIGKILL shows the pauses its cut run was waiting at, one
card each, before `resume()`; a decision on such a card resumes the run, which asks that pause
again and decides it so. A model pause's card edits the request's messages (`edit(messages=)`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb.notebook import view
from sagents_nb.notebook._decision_pane import decisions_pane
from sagents_nb.notebook._widget import LiveView

from ..test_breakpoints_crash import WAITING, killed_at
from .conftest import wait_until
from .test_view import click, notice

pytestmark = pytest.mark.timeout(90)


def _reopened(tmp_path: Path, scenario: str) -> tuple[sn.Session, sn.LLM, Path, LiveView]:
    session_id, db, log, script = killed_at(tmp_path, scenario)
    llm = sn.mock_llm(script["bank"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    return session, llm, log, view(session)


def test_a_reopened_sessions_stored_pause_is_a_card_and_approving_it_resumes(
    tmp_path: Path,
) -> None:
    session, _, log, widget = _reopened(tmp_path, "tool")
    path, action, name, arguments = WAITING["tool"]
    [card] = widget.header["pending"]
    assert (card["path"], card["action"], card["name"]) == (path, action, name)
    assert json.loads(card["arguments"]) == arguments and card["stored"] is True
    assert widget.tree and session.runs[-1].status == "incomplete"
    assert log.read_text(encoding="utf-8") == ""  # nothing ran before the decision
    click(widget, action="approve", pause_id=card["pause_id"])
    run = session.runs[-1]
    assert run.result(timeout=20).status == "done"
    assert log.read_text(encoding="utf-8") == "transfer 1000 Mallory 🦹\n"
    wait_until(lambda: "continues from where it was cut" in notice(widget), what="the notice")
    asked = [e for e in session.events if e.type == "paused" and e.path == path]
    ended = [e for e in session.events if e.type == "resumed" and e.path == path]
    assert len(asked) == 2, "asked before the kill, and again by resume()"
    assert ended[-1].pause_id == asked[-1].pause_id and ended[-1].decision == "approve"
    wait_until(lambda: not widget.header["pending"], what="the card to go")
    widget.close()


def test_rejecting_a_stored_card_refuses_the_call_and_nothing_runs(tmp_path: Path) -> None:
    session, _, log, widget = _reopened(tmp_path, "tool")
    [card] = widget.header["pending"]
    click(widget, action="reject", pause_id=card["pause_id"], reason="pas à Mallory")
    assert session.runs[-1].result(timeout=20).status == "done"
    assert log.read_text(encoding="utf-8") == ""
    refused = [e for e in session.events if e.type == "resumed" and e.decision == "reject"]
    assert [e.reason for e in refused] == ["pas à Mallory"]
    click(widget, action="approve", pause_id=card["pause_id"])  # stale: decided already
    wait_until(lambda: widget.header["notice"]["error"], what="the stale notice")
    widget.close()


def test_a_stored_model_pause_shows_its_request_and_its_messages_are_editable(
    tmp_path: Path,
) -> None:
    session, llm, log, widget = _reopened(tmp_path, "model")
    [card] = widget.header["pending"]
    assert card["stored"] and card["action"] == "model"
    texts = [json.loads(m["text"]) for m in card["messages"]]
    assert texts[-1] == {"role": "user", "content": "payer 1000 à Mallory 🦹"}
    last = card["messages"][-1]
    edited = json.dumps({"role": "user", "content": "payer 10 à Alice 👩"}, ensure_ascii=False)
    click(
        widget,
        action="edit",
        pause_id=card["pause_id"],
        messages=[{"index": last["index"], "text": edited}],
    )
    run = session.runs[-1]
    while run.wait(timeout=20) == "paused":  # the run pauses at each model call, as before
        run.approve()
    assert run.status == "done"
    assert log.read_text(encoding="utf-8") == "transfer 10 Alice 👩\n"
    first = llm.exchanges[0].request["messages"]
    assert first[-1] == {"role": "user", "content": "payer 10 à Alice 👩"}
    assert [m["content"] for m in first[:-1]] == [
        json.loads(m["text"]).get("content") for m in card["messages"][:-1]
    ]
    widget.flush()
    decided = decisions_pane(widget.projector.decisions)["decisions"]
    [diff] = [entry["messages_diff"] for entry in decided if entry["decision"] == "edited"]
    assert diff == [
        [
            f"#{last['index'] + 1}",
            "changed",
            "user: payer 1000 à Mallory 🦹",
            "user: payer 10 à Alice 👩",
        ]
    ]
    widget.close()


def test_a_live_model_pause_takes_edited_messages_from_its_card() -> None:
    seen: list[sn.ChatRequest] = []

    def answer(req: sn.ChatRequest) -> str:
        seen.append(req)
        return f"vu {req.last_user}"

    session = sn.Session(sn.Agent("boss", instructions="bref"), llm=sn.mock_llm(answer))
    run = session.send("<b>avant</b> & 東京", pause_on={"model"})
    assert run.wait(10) == "paused"
    widget = view(session)
    wait_until(lambda: widget.header["pending"], what="the card")
    [card] = widget.header["pending"]
    assert card["stored"] is False and card["messages_total"] == 2
    _, user = card["messages"]
    assert json.loads(user["text"]) == {"role": "user", "content": "<b>avant</b> & 東京"}
    click(widget, action="edit", pause_id=card["pause_id"], messages=[user])  # unchanged
    wait_until(lambda: "unchanged" in notice(widget), what="the unchanged notice")
    click(widget, action="edit", pause_id=card["pause_id"], messages=[{"index": 1, "text": "{"}])
    wait_until(lambda: "not a message as JSON" in notice(widget), what="the bad JSON notice")
    assert run.status == "paused" and not seen
    edited = json.dumps({"role": "user", "content": "après ✍ 🎉 `code`"}, ensure_ascii=False)
    click(widget, action="edit", pause_id=card["pause_id"], messages=[{"index": 1, "text": edited}])
    assert run.result(timeout=10).text == "vu après ✍ 🎉 `code`"
    assert [m["content"] for m in seen[0].messages] == ["bref", "après ✍ 🎉 `code`"]
    widget.flush()
    [entry] = decisions_pane(widget.projector.decisions)["decisions"]
    assert entry["decision"] == "edited"
    assert entry["messages_diff"] == [
        ["#2", "changed", "user: <b>avant</b> & 東京", "user: après ✍ 🎉 `code`"]
    ]
    widget.close()
