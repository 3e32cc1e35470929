"""Breakpoints as predicates (`sn.when`, callables) at any depth, a `reply` breakpoint after a
child's answer, `run.step(pause_on=...)`, and how predicates are stored with a run."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._runtime.breakpoints import restored, stored

from .test_breakpoints_crash import SCRIPT

pytestmark = pytest.mark.timeout(60)


def _bank() -> dict[str, Any]:
    """The crash tests' script, run here: its agents (boss -> mid -> audit) and mock."""
    namespace: dict[str, Any] = {"__name__": "bank"}
    argv, sys.argv = sys.argv, ["bank.py", "unused.db", os.devnull]
    try:
        exec(compile(SCRIPT, "bank.py", "exec"), namespace)
    finally:
        sys.argv = argv
    return namespace


BANK = _bank()
BOSS, bank, transfer = BANK["BOSS"], BANK["bank"], BANK["transfer"]


@pytest.fixture(autouse=True)
def _ledger(tmp_path: Path) -> None:
    BANK["LOG"] = str(tmp_path / "transfers.log")  # where the transfer tool writes


def paid() -> list[str]:
    """The transfers that ran, as the tool wrote them down."""
    log = Path(BANK["LOG"])
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def session(**options: object) -> sn.Session:
    return sn.Session(BOSS, llm=sn.mock_llm(bank), **options)  # type: ignore[arg-type]


def test_when_pauses_at_a_grandchild_call_its_arguments_match() -> None:
    big = sn.when(path="boss/*/audit.*", tool="transfer", args=lambda a: a["amount"] > 100)
    run = session().send("go", pause_on=big)
    assert run.wait(timeout=10) == "paused"
    pending = run.paused_at
    assert pending is not None and (pending.path, pending.name) == (
        "boss/mid.1/audit.1",
        "transfer",
    )
    assert paid() == []
    run.edit(amount=10, to="Alice")
    assert run.result(timeout=10).text == "mid a dit : audit a dit : audit : envoyé 10 à Alice"
    assert paid() == ["transfer 10 Alice"]


def test_a_predicate_that_never_matches_never_pauses() -> None:
    small = sn.when(tool="transfer", args=lambda a: a["amount"] < 5)
    nobody = sn.when(path="boss/*/nobody.*")
    run = session().send("go", pause_on={small, nobody, lambda p: p.path == "elsewhere"})
    assert run.result(timeout=10).status == "done"
    assert not [e for e in run.events if e.type == "paused"]


def test_an_agent_takes_a_callable_breakpoint() -> None:
    audit = sn.Agent(
        "audit",
        does="pays",
        tools=[transfer],
        pause_on=lambda p: p.action == "tool" and p.arguments["to"].startswith("Mall"),
    )
    boss = sn.Agent("boss", team=[sn.Agent("mid", team=[audit])])
    run = sn.Session(boss, llm=sn.mock_llm(bank)).send("go")
    assert run.wait(timeout=10) == "paused"
    assert run.paused_at is not None and run.paused_at.path == "boss/mid.1/audit.1"
    run.reject("pas à Mallory")
    assert "the user rejected this call: pas à Mallory" in run.result(timeout=10).text
    assert paid() == []


def test_a_predicate_that_raises_pauses_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    run = session().send("go", pause_on=sn.when(args=lambda a: a["montant"] > 1))
    with caplog.at_level(logging.WARNING, logger="sagents_nb"):
        assert run.wait(timeout=10) == "paused"
    assert (
        run.paused_at is not None and run.paused_at.path == "boss"
    )  # its task call has no montant
    assert "KeyError" in caplog.text and "paused there to be safe" in caplog.text
    run.resume()
    assert run.result(timeout=10).status == "done"


def test_reply_pauses_after_a_child_answers_and_an_edit_is_what_the_parent_reads() -> None:
    run = session().send("go", pause_on=sn.when(path="boss/*/audit.*", action="reply"))
    assert run.wait(timeout=10) == "paused"
    pending = run.paused_at
    assert pending is not None and (pending.path, pending.action) == ("boss/mid.1/audit.1", "reply")
    assert pending.arguments == {"reply": "audit : envoyé 1000 à Mallory 🦹", "status": "done"}
    assert run.session.node("boss/mid.1/audit.1").status == "paused"
    assert run.session.node("boss/mid.1").status == "waiting"
    run.edit(reply="audit : 支払い保留 ⏸")
    result = run.result(timeout=10)
    assert result.text == "mid a dit : audit a dit : audit : 支払い保留 ⏸"
    finished = [e for e in result.events if e.type == "task_finished"]
    assert [(e.child, e.replaced) for e in finished] == [
        ("boss/mid.1/audit.1", "audit : envoyé 1000 à Mallory 🦹"),
        ("boss/mid.1", None),
    ]
    resumed = [e for e in result.events if e.type == "resumed"]
    assert resumed[0].decision == "edit" and resumed[0].changes == {"reply": "audit : 支払い保留 ⏸"}


def test_a_rejected_reply_reaches_the_parent_as_an_error() -> None:
    run = session().send("go", pause_on="reply")
    assert run.wait(timeout=10) == "paused"
    run.reject("trop vague")
    assert run.wait(timeout=10) == "paused"  # mid's own reply, which read the rejection
    assert run.paused_at is not None and run.paused_at.arguments == {
        "reply": "audit a dit : [error] the user rejected the answer of boss/mid.1/audit.1: "
        "trop vague",
        "status": "done",
    }
    run.approve()
    assert run.result(timeout=10).status == "done"


def test_step_does_not_stop_at_replies_unless_asked() -> None:
    run = session().send("go", pause_on="task")
    stops = []
    while run.wait(timeout=10) == "paused":
        assert run.paused_at is not None
        stops.append((run.paused_at.path, run.paused_at.action))
        run.step()
    assert "reply" not in {action for _, action in stops}
    assert stops[:3] == [("boss", "task"), ("boss/mid.1", "model"), ("boss/mid.1", "task")]


def test_step_to_a_breakpoint_skips_what_it_does_not_match() -> None:
    run = session().send("go", pause_on=sn.when(path="boss", action="task"))
    assert run.wait(timeout=10) == "paused"
    run.step(pause_on=sn.when(path="**/audit.*", action="tool"))
    assert run.wait(timeout=10) == "paused"
    assert run.paused_at is not None and (run.paused_at.path, run.paused_at.name) == (
        "boss/mid.1/audit.1",
        "transfer",
    )
    assert run.events[-1].type == "paused"
    steps = [e for e in run.events if e.type == "resumed"]
    assert steps[0].until == [{"path": "**/audit.*", "action": "tool", "tool": None, "code": False}]
    run.step(pause_on="reply")  # an action name steps to that action
    assert run.wait(timeout=10) == "paused"
    assert run.paused_at is not None and run.paused_at.action == "reply"
    run.resume()
    assert run.result(timeout=10).status == "done"


def test_pause_on_refuses_what_is_not_a_breakpoint() -> None:
    with pytest.raises(sn.ConfigurationError, match=r"sn.when\(...\) or a callable"):
        session().send("go", pause_on={"tool", 5})
    with pytest.raises(sn.ConfigurationError, match="'replies'"):
        sn.Agent("a", pause_on="replies")
    with pytest.raises(sn.ConfigurationError, match="the actions are"):
        sn.when(action="answer")
    run = session().send("go", pause_on="task")
    assert run.wait(timeout=10) == "paused"
    with pytest.raises(sn.ConfigurationError, match=r"run\.step"):
        run.step(pause_on="tools")
    run.resume()
    run.result(timeout=10)


def test_predicates_are_stored_by_their_fields_and_restored_conservatively() -> None:
    with_code = sn.when(path="boss/*", tool="transfer", args=lambda a: a["amount"] > 100)
    declared = sn.when(action="reply")
    rows = stored([with_code, declared, lambda p: True])
    assert rows == [
        {"path": "boss/*", "action": None, "tool": "transfer", "code": True},
        {"path": None, "action": "reply", "tool": None, "code": False},
        {"path": None, "action": None, "tool": None, "code": True},
    ]
    back = restored(rows)
    assert [(w.path, w.tool, w.args, w.restored) for w in back] == [
        ("boss/*", "transfer", None, True),
        (None, None, None, False),
        (None, None, None, True),
    ]
    assert "restored: pauses wherever it could match" in repr(back[0])
    # predicates given again replace every stored one that had code
    assert restored(rows, given={with_code}) == [sn.when(action="reply")]


def test_a_reopened_predicate_pauses_wherever_it_could_match_unless_given_again(
    tmp_path: Path,
) -> None:
    """A `when(args=...)` cannot be stored: a fork of its run pauses at every call its other
    fields match (conservative); passed again to `resume(pause_on=...)`, it tests again."""
    big = sn.when(tool="transfer", args=lambda a: a["amount"] > 100)
    origin = session(store=tmp_path / "runs.db")
    run = origin.send("go", pause_on={big, "task"})
    assert run.wait(timeout=10) == "paused"  # the boss's task call
    fork = origin.fork()
    edited = fork.resume()
    assert edited.wait(timeout=10) == "paused"
    edited.edit(arguments={"agent": "mid", "prompt": "payer 10 à Alice"})
    assert edited.wait(timeout=10) == "paused"  # mid's task call ("task" was stored as is)
    edited.approve()
    assert edited.wait(timeout=10) == "paused"  # the conservative restored `when(tool=...)`
    assert edited.paused_at is not None and edited.paused_at.arguments == {
        "to": "Alice",
        "amount": 10,
    }
    edited.resume()
    assert edited.result(timeout=10).text.endswith("envoyé 10 à Alice")

    again = origin.fork(at=run.events[-1].seq)
    given = again.resume(pause_on=big)  # the predicate again: 10 is not > 100
    assert given.wait(timeout=10) == "paused"
    given.edit(arguments={"agent": "mid", "prompt": "payer 10 à Alice"})
    assert given.wait(timeout=10) == "paused"  # mid's task call
    given.approve()
    assert given.result(timeout=10).text.endswith("envoyé 10 à Alice")
    run.resume()
    run.result(timeout=10)


def test_a_fork_after_a_decision_applies_it_and_keeps_the_step_mode(tmp_path: Path) -> None:
    """Decided before the cut, a call is never asked about again; the run's mode goes on."""
    origin = session(store=tmp_path / "runs.db")
    run = origin.send("go", pause_on="task")
    assert run.wait(timeout=10) == "paused"
    run.edit(arguments={"agent": "mid", "prompt": "payer 10 à Alice"})
    assert run.wait(timeout=10) == "paused"  # mid's task call
    decided = next(e for e in run.events if e.type == "resumed")
    fork = origin.fork(at=decided.seq)  # cut right after the edit, before the child ran
    assert fork.pending == [] and fork.tree.status == "incomplete"
    resumed = fork.resume()
    assert resumed.wait(timeout=10) == "paused"
    assert resumed.paused_at is not None and resumed.paused_at.path == "boss/mid.1"
    resumed.step()
    assert resumed.wait(timeout=10) == "paused"  # audit's first model request
    stepped = fork.fork().resume()  # cut there, in step mode
    assert stepped.wait(timeout=10) == "paused" and stepped.mode == "step"
    assert stepped.paused_at is not None and stepped.paused_at.path == "boss/mid.1/audit.1"
    stepped.step()
    assert stepped.wait(timeout=10) == "paused"  # still stepping: its transfer call
    assert stepped.paused_at is not None and stepped.paused_at.name == "transfer"
    stepped.resume()
    stepped.result(timeout=10)
    resumed.resume()
    assert resumed.result(timeout=10).text.endswith("envoyé 10 à Alice")
    assert [n.id for n in fork.tree.walk()] == ["boss", "boss/mid.1", "boss/mid.1/audit.1"]
    run.resume()
    run.result(timeout=10)


def test_a_when_that_cannot_match_is_ruled_out_by_its_fields() -> None:
    """The gate skips building a `PendingAction` (and a model call its `PendingRequest`) for a
    `When` whose action, tool or path rules the action out; one that could match is asked."""
    from sagents_nb._runtime.breakpoints import could_fire

    never = sn.when(path="x/never/*", action="tool")
    assert not could_fire(never, "model", "lead")
    assert not could_fire(never, "tool", "lead/worker.1")
    assert could_fire(never, "tool", "x/never/w.1")
    assert not could_fire(sn.when(tool="send"), "tool", "lead", "other")
    assert could_fire(sn.when(tool="send", args=lambda a: False), "tool", "lead", "send")
    assert could_fire(lambda pending: False, "model", "lead")
