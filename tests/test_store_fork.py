"""Forking a durable session at an event: the branch gets the state as of that event and today's
settings; the original stays as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn

from .test_store import BOSS, boss_handler, dumps, lookup

pytestmark = pytest.mark.timeout(30)


def snapshot(session: sn.Session) -> tuple[object, ...]:
    return (
        [e.model_dump() for e in session.events],
        dumps(session.llm_messages),
        dumps(session.display_messages),
        session.tree.to_dict(),
    )


class Shouting:
    """A preprocessor that upper-cases what the model gets."""

    name = "shouting"

    def preprocess(
        self, scope: object, message: sn.Message, context: object
    ) -> tuple[sn.Message, sn.Message]:
        return message, message.model_copy(update={"content": (message.content or "").upper()})


def test_fork_branches_while_the_original_stays_intact(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    first_end = next(e for e in session.events if e.type == "run_finished")
    session.send("again").result()
    before = snapshot(session)

    session.preprocessor = Shouting()  # today's settings go to the fork
    branch_llm = sn.mock_llm(lambda req: f"branch heard {req.last_user}")
    session.llm = branch_llm
    fork = session.fork(at=first_end.seq)
    assert fork.id != session.id
    assert fork.preprocessor is session.preprocessor and fork.llm is branch_llm
    assert [e.seq for e in fork.events] == list(range(1, first_end.seq + 1))
    assert [r.status for r in fork.runs] == ["done"]
    assert fork.display_messages[0].content == "go"
    assert fork.display_messages[-1].content == session.runs[0].result().text

    result = fork.send("what now?").result()
    assert result.text == "branch heard WHAT NOW?" and result.run == 2
    assert fork.display_messages[-2].content == "what now?"
    assert fork.llm_messages[-2].content == "WHAT NOW?"

    # the original: same events (plus the two swaps made above), same transcripts and tree
    swaps = [e.type for e in session.events[len(before[0]) :]]
    assert swaps == ["preprocessor_swapped", "llm_swapped"]
    assert snapshot(session)[1:] == before[1:]
    reopened = sn.Session.open(db, session.id, agent=BOSS, llm=branch_llm)
    assert [e.model_dump() for e in reopened.events][: len(before[0])] == before[0]
    assert snapshot(reopened)[1:] == before[1:]
    again = sn.Session.open(db, fork.id, agent=BOSS, llm=branch_llm)
    assert snapshot(again) == snapshot(fork)


def test_a_fork_taken_mid_run_resumes_on_the_branch(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    before = snapshot(session)
    second_request = [e for e in session.events if e.type == "model_request" and e.path == "boss"][
        1
    ]
    llm = sn.mock_llm(boss_handler)
    session.llm = llm
    fork = session.fork(at=second_request.seq)
    assert [r.status for r in fork.runs] == ["incomplete"]
    assert [m.role for m in fork.llm_messages] == ["user", "assistant", "tool"]

    result = fork.resume().result(timeout=10)
    assert result.status == "done"
    assert result.text == session.runs[0].result().text
    assert [r.status for r in fork.runs] == ["done"]
    assert len(llm.exchanges) == 1 + 2 * 2 + 2  # this request, two workers, two more turns
    assert snapshot(session)[1:] == before[1:]


def test_fork_needs_a_durable_session_and_an_existing_event(tmp_path: Path) -> None:
    plain = sn.Session(BOSS, llm=sn.mock_llm(boss_handler))
    plain.send("go").result()
    with pytest.raises(sn.StoreError, match=r"needs a durable session.*store="):
        plain.fork(at=3)
    durable = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "runs.db")
    durable.send("go").result()
    last = durable.events[-1].seq
    with pytest.raises(sn.StoreError, match=rf"has committed events 1\.\.{last}"):
        durable.fork(at=last + 5)


def test_resume_without_an_interrupted_run_says_so(tmp_path: Path) -> None:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "runs.db")
    session.send("go").result()
    with pytest.raises(sn.ConfigurationError, match="no interrupted run"):
        session.resume()


def test_a_resident_cut_mid_task_continues_its_own_storage(tmp_path: Path) -> None:
    memo = sn.Agent(
        "memo", does="remembers", tools=[lookup], kind=sn.kinds.Resident(window_tokens=5000)
    )
    chief = sn.Agent("chief", does="leads", team=[memo])

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if "task" in req.tools:
            if req.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="memo", prompt=req.last_user)])
            return f"chief: {req.tool_results[-1]}"
        if req.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("lookup", x=len(req.messages))])
        return f"memo saw {req.tool_results[-1]} after {len(req.messages)} messages"

    session = sn.Session(chief, llm=sn.mock_llm(handler), store=tmp_path / "runs.db")
    session.send("first").result()
    expected = session.send("second").result().text
    cut = [e for e in session.events if e.type == "model_request" and e.path == "chief/memo.1"][-1]
    llm = sn.mock_llm(handler)
    session.llm = llm
    fork = session.fork(at=cut.seq)
    resident = fork.node("chief/memo.1")
    assert resident is not None and fork.root.persistent["memo"] is resident
    assert [m.content for m in resident.history if m.role == "user"] == ["first", "second"]
    assert fork.resume().result(timeout=10).text == expected
    assert len(llm.exchanges) == 2  # the resident's last turn and the chief's answer


def test_a_fork_at_any_event_has_the_transcripts_of_that_moment(tmp_path: Path) -> None:
    """Rows are stamped with the event they follow: the state after event s is what stood
    when event s + 1 was emitted (the reply after its `model_response`, the results after
    the last `tool_call_finished`). Node states are sealed at each model request, so there
    a fork has the whole tree as it stood; between requests, the nodes sealed so far."""
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "runs.db")
    seen: dict[int, tuple[dict[str, list[str]], dict[str, object]]] = {}

    def moment() -> tuple[dict[str, list[str]], dict[str, object]]:
        return {n.path: dumps(n.history) for n in session.root.walk()}, session.tree.to_dict()

    session.bus.subscribe(lambda event: seen.__setitem__(event.seq, moment()))
    session.send("go").result()
    last = session.events[-1].seq
    seen[last + 1] = moment()
    requests = [e.seq for e in session.events if e.type == "model_request"]
    assert len(requests) == 8
    for seq in range(1, last + 1):
        fork = session.fork(at=seq)
        live = seen[seq + 1][0]  # the transcripts as event seq + 1 was emitted
        got = {node.path: dumps(node.history) for node in fork.root.walk()}
        what = f"fork at event {seq} ({session.events[seq - 1].type})"
        assert got == {path: live[path] for path in got}, what
        if seq in requests:  # the tree as the request was made
            assert got == live, what
            assert fork.tree.to_dict() == cut(seen[seq][1]), what


def cut(tree: dict[str, Any]) -> dict[str, Any]:
    """A tree as a fork cut mid-run has it: what was in flight is `incomplete`, not running."""
    active = tree["status"] in ("running", "paused", "waiting", "spawned")
    return {
        **tree,
        "status": "incomplete" if active else tree["status"],
        "children": [cut(child) for child in tree["children"]],
    }


def test_a_fork_keeps_the_sessions_settings(tmp_path: Path) -> None:
    session = sn.Session(
        sn.Agent("solo"),
        llm=sn.script("one", "two"),
        store=tmp_path / "runs.db",
        reattach="session",
        max_model_calls=None,
        max_nodes=7,
        max_tokens=1234,
        durability="turn",
    )
    session.send("hi").result()
    fork = session.fork()
    assert (fork.reattach, fork.max_model_calls, fork.max_nodes, fork.max_tokens) == (
        "session",
        None,
        7,
        1234,
    )
    assert fork.durability == "turn"


@sn.tool
def transfer(amount: int, to: str) -> str:
    """Transfer money.

    Args:
        amount: how much.
        to: to whom.
    """
    return f"envoyé {amount} à {to}"


def bank_model(req: sn.ChatRequest) -> sn.Reply | str:
    """Asks to send Mallory 1000 (a call to pause before), then reports the transfer."""
    if req.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("transfer", amount=1000, to="Mallory 🦹")])
    return f"Résultat : {req.tool_results[-1]}"


def test_a_fork_taken_at_a_pause_is_paused_until_resumed(tmp_path: Path) -> None:
    bank = sn.Agent("bank", tools=[transfer])
    session = sn.Session(bank, llm=sn.mock_llm(bank_model), store=tmp_path / "runs.db")
    run = session.send("payer — 支払い", pause_on={"tool"})
    assert run.wait(timeout=10) == "paused"
    fork = session.fork(at=session.events[-1].seq)
    # nothing runs in the fork: its run is incomplete; the node it cut at a pause is paused,
    # the decision it waits for named (as in a reopen)
    assert [r.status for r in fork.runs] == ["incomplete"]
    assert fork.runs[0].result().text.startswith(f"forked from session {session.id} at event")
    assert fork.tree.status == "paused" and fork.bus.statuses == {"bank": "paused"}
    assert [(p.path, p.action, p.name) for p in fork.pending] == [("bank", "tool", "transfer")]
    again = sn.Session.open(tmp_path / "runs.db", fork.id, agent=bank, llm=sn.mock_llm(bank_model))
    assert again.tree.status == "paused" and "forked from" in again.runs[0].result().text
    assert again.pending[0].arguments == {"amount": 1000, "to": "Mallory 🦹"}
    assert run.status == "paused" and session.tree.status == "paused"  # the original waits on

    resumed = fork.resume()
    assert resumed.wait(timeout=10) == "paused"  # where it paused: the decision is asked again
    assert resumed.paused_at is not None and resumed.paused_at.name == "transfer"
    assert fork.tree.status == "paused"
    resumed.edit(amount=10, to="Alice")
    assert resumed.result(timeout=10).text == "Résultat : envoyé 10 à Alice"
    assert fork.tree.status == "done"
    run.reject("non")
    assert "rejected" in run.result(timeout=10).text
