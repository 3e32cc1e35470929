"""Every breakpoint kind survives SIGKILL at depth 3 (boss -> mid -> audit): after
`Session.open` the stopped node reads `paused` and `session.pending` names the decision;
`resume()` presents it again before anything it guards runs (the transfer tool writes a file
when it runs). A decision made before the kill (an edited `task` call) stands as decided."""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn

pytestmark = pytest.mark.timeout(90)

SCRIPT = '''
import re
import sys
import time

import sagents_nb as sn

LOG = sys.argv[2]


@sn.tool
def transfer(to: str, amount: int) -> str:
    """Send money.

    Args:
        to: to whom.
        amount: how much.
    """
    with open(LOG, "a", encoding="utf-8") as file:
        file.write(f"transfer {amount} {to}\\n")
    return f"envoyé {amount} à {to}"


AUDIT = sn.Agent("audit", does="pays after checking", tools=[transfer])
MID = sn.Agent("mid", does="hands payments to audit", team=[AUDIT])
BOSS = sn.Agent("boss", does="delegates payments", team=[MID])


def bank(req):
    """boss -> mid -> audit; audit pays what its prompt says, each level reports up."""
    task = next(
        (t["function"] for t in req.body.get("tools", []) if t["function"]["name"] == "task"),
        None,
    )
    if task is not None:
        below = task["parameters"]["properties"]["agent"]["enum"][0]
        if not req.tool_results:
            prompt = req.last_user if below == "audit" else "payer 1000 à Mallory 🦹"
            return sn.reply(tool_calls=[sn.call("task", agent=below, prompt=prompt)])
        return f"{below} a dit : {req.tool_results[-1]}"
    if not req.tool_results:
        amount, to = re.match(r"payer (\\d+) à (.+)", req.last_user).groups()
        return sn.reply(tool_calls=[sn.call("transfer", to=to, amount=int(amount))])
    return "audit : " + req.tool_results[-1]


def big(arguments):
    return arguments["amount"] > 100


def breakpoints(scenario):
    """The run's `pause_on` in each scenario."""
    if scenario == "predicate":
        return sn.when(path="boss/*/audit.*", tool="transfer", args=big)
    return {"step": "task", "edited": "task"}.get(scenario, scenario)


def drive(run, scenario):
    """Decide until the run waits at the pause the scenario is about."""
    run.wait(20)
    if scenario == "edited":  # the user pays Alice 10 instead of Mallory 1000
        run.edit(arguments={"agent": "mid", "prompt": "payer 10 à Alice"})
        run.wait(20)
    while scenario in ("model", "task") and run.paused_at.path.count("/") < 2 - (
        scenario == "task"
    ):
        run.approve()
        run.wait(20)
    while scenario == "step" and run.paused_at.action != "tool":
        run.step()
        run.wait(20)


if __name__ == "__main__":
    scenario = sys.argv[3]
    session = sn.Session(BOSS, llm=sn.mock_llm(bank), store=sys.argv[1])
    drive(session.send("go", pause_on=breakpoints(scenario)), scenario)
    print(session.id, flush=True)
    time.sleep(3600)  # paused: the kernel dies while someone looks
'''

WAITING = {  # scenario: the decision pending at the kill (path, action, name, arguments)
    "model": ("boss/mid.1/audit.1", "model", None, None),
    "tool": ("boss/mid.1/audit.1", "tool", "transfer", {"to": "Mallory 🦹", "amount": 1000}),
    "task": ("boss/mid.1", "task", "task", {"agent": "audit", "prompt": "payer 1000 à Mallory 🦹"}),
    "reply": (
        "boss/mid.1/audit.1",
        "reply",
        "audit",
        {"reply": "audit : envoyé 1000 à Mallory 🦹", "status": "done"},
    ),
    "predicate": ("boss/mid.1/audit.1", "tool", "transfer", {"to": "Mallory 🦹", "amount": 1000}),
    "step": ("boss/mid.1/audit.1", "tool", "transfer", {"to": "Mallory 🦹", "amount": 1000}),
    "edited": ("boss/mid.1", "task", "task", {"agent": "audit", "prompt": "payer 10 à Alice"}),
}


def killed_at(tmp_path: Path, scenario: str) -> tuple[str, Path, Path, dict[str, Any]]:
    """Run the scenario in a child process, SIGKILL it at its pause (committed by then:
    `run.wait()` returns after the commit); return its session id, the db, the log and the
    script's definitions loaded here."""
    script, db, log = tmp_path / "bank.py", tmp_path / "runs.db", tmp_path / "transfers.log"
    script.write_text(SCRIPT, encoding="utf-8")
    log.write_text("", encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(log), scenario],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        session_id = child.stdout.readline().strip()
        assert session_id, "the child process ended before it paused"
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    argv, sys.argv = sys.argv, ["bank.py", "unused.db", str(log)]
    try:
        definitions = runpy.run_path(str(script), run_name="definitions")
    finally:
        sys.argv = argv
    return session_id, db, log, definitions


def described(pending: sn.PendingAction) -> tuple[Any, ...]:
    return (pending.path, pending.action, pending.name, pending.arguments)


def reopened_at_the_pause(tmp_path: Path, scenario: str) -> tuple[sn.Session, sn.Run, Path]:
    """Kill at the scenario's pause, reopen: the node reads paused and the decision is named;
    resume: it is presented again, first."""
    session_id, db, log, script = killed_at(tmp_path, scenario)
    before = log.read_text(encoding="utf-8")
    llm = sn.mock_llm(script["bank"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    path = WAITING[scenario][0]
    assert [described(p) for p in session.pending] == [WAITING[scenario]]
    assert session.node(path).status == "paused" and session.bus.statuses[path] == "paused"
    assert session.root.status == "incomplete"  # cut without a pause of its own
    assert [r.status for r in session.runs] == ["incomplete"]
    run = session.resume()
    assert run.wait(timeout=20) == "paused"
    assert [described(p) for p in run.pending] == [WAITING[scenario]]
    assert len(llm.exchanges) == 0  # nothing was asked of the model before the decision
    assert log.read_text(encoding="utf-8") == before  # nothing it guards ran
    return session, run, log


@pytest.mark.parametrize("scenario", ["model", "tool", "task", "predicate", "step"])
def test_a_breakpoint_at_depth_3_survives_a_kill(tmp_path: Path, scenario: str) -> None:
    session, run, log = reopened_at_the_pause(tmp_path, scenario)
    assert log.read_text(encoding="utf-8") == ""  # the transfer did not run unapproved
    if scenario == "step":
        assert run.mode == "step"  # the run still steps: its mode was stored with its decisions
    run.resume()
    assert run.result(timeout=20).text == (
        "mid a dit : audit a dit : audit : envoyé 1000 à Mallory 🦹"
    )
    assert log.read_text(encoding="utf-8") == "transfer 1000 Mallory 🦹\n"
    assert [n.id for n in session.tree.walk()] == ["boss", "boss/mid.1", "boss/mid.1/audit.1"]


def test_a_reply_breakpoint_survives_a_kill_and_its_edit_is_what_the_parent_reads(
    tmp_path: Path,
) -> None:
    session, run, log = reopened_at_the_pause(tmp_path, "reply")
    assert log.read_text(encoding="utf-8") == "transfer 1000 Mallory 🦹\n"  # before the pause
    run.edit(reply="audit : rien à signaler — 問題なし")
    assert run.wait(timeout=20) == "paused"  # mid's own answer, before boss reads it
    assert run.paused_at is not None and run.paused_at.path == "boss/mid.1"
    assert run.paused_at.arguments == {
        "reply": "audit a dit : audit : rien à signaler — 問題なし",
        "status": "done",
    }
    run.approve()
    assert run.result(timeout=20).text == (
        "mid a dit : audit a dit : audit : rien à signaler — 問題なし"
    )
    edited = [e for e in session.events if e.type == "task_finished" and e.replaced]
    assert [(e.child, e.replaced, e.text) for e in edited] == [
        (
            "boss/mid.1/audit.1",
            "audit : envoyé 1000 à Mallory 🦹",
            "audit : rien à signaler — 問題なし",
        )
    ]
    assert log.read_text(encoding="utf-8") == "transfer 1000 Mallory 🦹\n"  # not paid twice


def test_an_edited_task_call_stands_after_a_kill(tmp_path: Path) -> None:
    """The reported bug: the boss's `task` call was edited (10 to Alice instead of the model's
    1000 to Mallory) and approved; the kill came before it finished. resume() asks about the
    edited child's own call, never again about the boss's, and spawns no second child."""
    session, run, log = reopened_at_the_pause(tmp_path, "edited")
    run.resume()
    assert run.result(timeout=20).text == "mid a dit : audit a dit : audit : envoyé 10 à Alice"
    assert log.read_text(encoding="utf-8") == "transfer 10 Alice\n"
    assert [n.id for n in session.tree.walk()] == ["boss", "boss/mid.1", "boss/mid.1/audit.1"]
    assert all(n.status == "done" for n in session.tree.walk())
    asked = [e for e in session.events if e.type == "paused" and e.path == "boss"]
    assert len(asked) == 1  # the boss's call was asked about once, before the kill
