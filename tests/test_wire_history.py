"""A request's messages taken from the node's kept wire dicts (`Node.wire_history`) where the
kind said its view ends with the whole of storage: the body equals the view's own messages
turned into dicts, for every kind, over compaction, a fork and a reopen; an edit at the pause
gate is sent exactly as edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.messages import Message
from sagents_nb._runtime import turns
from sagents_nb.kinds import View

PROMPTS = ["Ada aime le thé à Paris", "東京で寿司を食べた 🍣", "note: `x = [1, 2]` 🚀", "再来一次"]


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    return f"noté {text} " * 3


def handler(req: sn.ChatRequest) -> Any:
    if req.system.startswith("You compress"):
        return "RÉSUMÉ : Ada aime le thé 🍵"
    if "task" in req.tools:
        done = len(req.tool_results)
        if done < 4 * len(PROMPTS):
            agent = ["worker", "resident", "realtime", "main"][done % 4]
            prompt = PROMPTS[done // 4]
            return sn.reply(tool_calls=[sn.call("task", agent=agent, prompt=prompt)])
        return "fini ✅"
    if req.messages[-1]["role"] == "user":
        return sn.reply(tool_calls=[sn.call("note", text=req.last_user)])
    return sn.reply(f"vu {req.last_user}", usage={"prompt_tokens": 600, "completion_tokens": 10})


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each turn's messages are checked against the view's own, converted; counts the turns
    whose storage came from the kept dicts."""
    taken: list[int] = []
    wire = turns.wire_messages

    def checked(view: View, node: Any) -> list[dict[str, Any]]:
        before = list(node._wires)
        messages = wire(view, node)
        assert messages == list(map(Message.to_wire, view))
        assert all(a is b.to_wire() for a, b in zip(messages, view, strict=True))
        if node._wires and node._wires[: len(before)] == before and view.runs:
            taken.append(len(view))
        return messages

    monkeypatch.setattr(turns, "wire_messages", checked)
    return taken


def test_every_kinds_body_equals_its_view_over_compaction_a_fork_and_a_reopen(
    tmp_path: Path, kept: list[int]
) -> None:
    team = [
        sn.Agent("worker", does="w", tools=[note], kind=sn.kinds.Worker()),
        sn.Agent(
            "resident",
            does="r",
            tools=[note],
            kind=sn.kinds.Resident(window_tokens=500, keep_recent=1),
        ),
        sn.Agent("realtime", does="rt", tools=[note], kind=sn.kinds.Realtime(window=2)),
        sn.Agent("main", does="m", tools=[note], kind=sn.kinds.Main(top_k=1, recent=2)),
    ]
    boss = sn.Agent("boss", instructions="sois bref", team=team, kind=sn.kinds.Main(top_k=None))
    store = tmp_path / "runs.db"
    session = sn.Session(boss, llm=sn.mock_llm(handler), store=store)
    result = session.send("commence").result()
    assert any(e.type == "compaction" for e in result.events)
    fork = session.fork()
    fork.send("encore une fois 🌸").result()
    reopened = sn.Session.open(store, session.id, agent=boss, llm=sn.mock_llm(handler))
    reopened.send("et après ?").result()
    assert len(kept) > 20


def test_a_storage_replaced_or_read_again_starts_the_kept_dicts_anew() -> None:
    kind = sn.kinds.Worker()
    agent = sn.Agent("solo", instructions="sois bref", kind=kind)
    node = sn.Session(agent, llm=sn.mock_llm(lambda req: "ok")).root
    node.append(*(Message(role="user", content=f"message {i} 🌸 東京") for i in range(4)))
    view = kind.build_context(node, "")
    assert turns.wire_messages(view, node) == list(map(Message.to_wire, view))
    summary = Message(role="system", content="RÉSUMÉ", meta={"summary": True})
    node.replace_history([summary, *view[2:]])  # as long as before, other messages
    assert turns.wire_messages(view, node) == list(map(Message.to_wire, view))
    again = kind.build_context(node, "")
    assert turns.wire_messages(again, node) == list(map(Message.to_wire, again))
    assert node.wire_history() == list(map(Message.to_wire, node.history))
    node.restore_history(lambda: list(view[1:3]))
    assert node.wire_history() == list(map(Message.to_wire, view[1:3]))


def test_an_edit_keeping_the_first_and_last_messages_is_sent_exactly() -> None:
    seen: list[sn.ChatRequest] = []

    def answer(req: sn.ChatRequest) -> Any:
        seen.append(req)
        if len(seen) <= 3:
            return sn.reply(tool_calls=[sn.call("note", text=f"étape {len(seen)}")])
        return "fini"

    agent = sn.Agent("solo", instructions="sois bref", tools=[note], kind=sn.kinds.Worker())
    session = sn.Session(agent, llm=sn.mock_llm(answer))
    run = session.send("東京 🎉", pause_on={"model"})
    for _ in range(3):
        assert run.wait(10) == "paused"
        run.approve()
    assert run.wait(10) == "paused"
    pending = run.paused_at
    assert pending is not None and pending.messages is not None
    shown = list(pending.messages)
    edited = [shown[0], shown[1], *shown[4:]]  # a middle turn left out
    pending.edit(messages=edited)
    assert run.result(timeout=10).text == "fini"
    assert seen[-1].messages == [m.to_wire() for m in edited]
    assert len(seen[-1].messages) == len(shown) - 2


def test_a_body_read_at_a_pause_and_changed_changes_no_request() -> None:
    seen: list[sn.ChatRequest] = []

    def answer(req: sn.ChatRequest) -> Any:
        seen.append(req)
        return sn.reply(tool_calls=[sn.call("note", text="東京")]) if len(seen) == 1 else "fini"

    agent = sn.Agent("solo", instructions="sois bref", tools=[note], kind=sn.kinds.Worker())
    session = sn.Session(agent, llm=sn.mock_llm(answer))
    run = session.send("première 🎉", pause_on={"model"})
    assert run.wait(10) == "paused"
    pending = run.paused_at
    assert pending is not None and pending.request is not None
    body = pending.request.body()
    body["messages"][-1]["content"] = "changée"
    body["tools"][0]["function"]["description"] = "autre"
    run.approve()
    assert run.wait(10) == "paused"
    run.approve()
    assert run.result(timeout=10).text == "fini"
    assert [req.last_user for req in seen] == ["première 🎉", "première 🎉"]
    assert [req.body["tools"][0]["function"]["description"] for req in seen] == ["Keep a note."] * 2


def test_a_main_view_with_cold_storage_is_taken_run_by_run_from_the_kept_dicts() -> None:
    def answer(req: sn.ChatRequest) -> Any:
        done = len(req.tool_results)
        return "vu" if done >= 6 else sn.reply(tool_calls=[sn.call("note", text=f"東京 {done} 🍣")])

    kind = sn.kinds.Main(top_k=2, recent=2)
    agent = sn.Agent("solo", instructions="sois bref", tools=[note], kind=kind)
    session = sn.Session(agent, llm=sn.mock_llm(answer))
    session.send("Ada aime le thé à Paris").result()
    node = session.root
    view = kind.build_context(node, "Ada")
    runs = view.runs
    assert runs is not None and len(runs) >= 6  # storage in several runs, cold items between
    messages = turns.wire_messages(view, node)
    assert messages == list(map(Message.to_wire, view))
    kept = node.wire_history()
    for i in range(0, len(runs), 3):
        where, start, count = runs[i : i + 3]
        taken = zip(messages[where : where + count], kept[start : start + count], strict=True)
        assert all(a is b for a, b in taken)


def test_runs_that_do_not_name_the_stored_messages_are_not_trusted() -> None:
    node = sn.Session(sn.Agent("solo"), llm=sn.mock_llm(lambda req: "ok")).root
    stored = [Message(role="user", content=f"message {i} 🌸") for i in range(4)]
    node.append(*stored)
    other = Message(role="user", content="autre 東京")
    for view_messages, runs in (
        ([stored[0], other, stored[2], stored[3]], [0, 0, 4]),  # all of storage but one
        ([stored[0], other, stored[2]], [0, 0, 3]),  # the second is not storage's second
        ([other, stored[1]], [0, 0, 2]),  # the first is not storage's first
        ([stored[0], stored[1]], [0, 0, 5]),  # longer than storage
        ([stored[2], stored[0]], [1, 0, 1, 0, 2, 1]),  # runs out of order
    ):
        view = View(view_messages)
        view.runs = runs
        assert turns.wire_messages(view, node) == list(map(Message.to_wire, view_messages))
