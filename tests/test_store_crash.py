"""A session killed with SIGKILL mid-run reopens with what had committed, and resume() finishes
without redoing finished tool calls, model turns or settled children."""

from __future__ import annotations

import os
import runpy
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn

from .settled import settled

pytestmark = pytest.mark.timeout(60)

# The script both processes share: the killed one runs it, the test loads its definitions.
SCRIPT = '''
import asyncio
import sys
import time

import sagents_nb as sn

LOG = sys.argv[2] if len(sys.argv) > 2 else None
BLOCK = {"blocking": False}


def note(line):
    with open(LOG, "a") as file:
        file.write(line + "\\n")


@sn.tool
def lookup(x: int) -> str:
    """Look a number up.

    Args:
        x: the number.
    """
    note(f"lookup {x}")
    return f"value-{x}"


@sn.tool
async def slow(x: int) -> str:
    """A slow tool.

    Args:
        x: the number.
    """
    if BLOCK["blocking"]:
        await asyncio.sleep(3600)
    note(f"slow {x}")
    return f"slow-{x}"


WORKER = sn.Agent("worker", does="does one job", tools=[lookup])
BOSS = sn.Agent("boss", does="delegates", tools=[lookup, slow], team=[WORKER])


async def delegating(req):
    """Boss: lookup, then two jobs in parallel, then answer. Job A answers at once; job B looks
    up, then its second model call hangs while BLOCK is set."""
    if "task" in req.tools:
        done = len(req.tool_results)
        if done == 0:
            return sn.reply(tool_calls=[sn.call("lookup", x=1)])
        if done == 1:
            return sn.reply(tool_calls=[
                sn.call("task", agent="worker", prompt="job A"),
                sn.call("task", agent="worker", prompt="job B"),
            ])
        return "boss done: " + " | ".join(req.tool_results)
    if req.last_user == "job A":
        return "A done"
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", x=2)])
    if BLOCK["blocking"]:
        await asyncio.sleep(3600)
    return "B done"


async def two_tools(req):
    """Boss: one reply with a fast and a slow call, then answer."""
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", x=7), sn.call("slow", x=8)])
    return "tools done: " + " | ".join(req.tool_results)


def sequential(req):
    """A sync handler: two lookups, then a third call that blocks the whole loop while BLOCK
    is set (time.sleep, not await), then the answer."""
    done = len(req.tool_results)
    if done < 2:
        return sn.reply(tool_calls=[sn.call("lookup", x=done + 1)])
    if BLOCK["blocking"]:
        time.sleep(3600)
    return "sequential done: " + " | ".join(req.tool_results)


def child_tool(req):
    """Boss: one task; its worker calls lookup, then answers."""
    if "task" in req.tools:
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt="job C")])
        return "boss done: " + req.tool_results[-1]
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", x=3)])
    return "C done: " + req.tool_results[-1]


LEAF = sn.Agent("leaf", does="looks things up", tools=[lookup])
MID = sn.Agent("mid", does="delegates to leaf", team=[LEAF])
TOP = sn.Agent("top", does="delegates to mid", team=[MID])


def deep(req):
    """top -> mid -> leaf; the leaf calls lookup (gated), then every level answers."""
    tools = [t["function"] for t in req.body.get("tools", [])]
    task = next((t for t in tools if t["name"] == "task"), None)
    below = task["parameters"]["properties"]["agent"]["enum"][0] if task else None
    if req.tool_results:
        return f"{below}: {req.tool_results[-1]}" if below else f"found {req.tool_results[-1]}"
    if below is None:
        return sn.reply(tool_calls=[sn.call("lookup", x=4)])
    return sn.reply(tool_calls=[sn.call("task", agent=below, prompt=f"ask {below}")])


HANDLERS = {
    "child_tool": child_tool,
    "deep": deep,
    "delegating": delegating,
    "two_tools": two_tools,
    "sequential": sequential,
    "paused": two_tools,
}


if __name__ == "__main__":
    BLOCK["blocking"] = True
    agent = TOP if sys.argv[3] == "deep" else BOSS
    session = sn.Session(agent, llm=sn.mock_llm(HANDLERS[sys.argv[3]]), store=sys.argv[1])
    print(session.id, flush=True)
    pause_on = {"tool"} if sys.argv[3] in ("paused", "child_tool", "deep") else ()
    session.send("go", pause_on=pause_on).wait()
    time.sleep(3600)  # paused: the kernel dies while someone looks
'''


def start(tmp_path: Path, scenario: str) -> tuple[subprocess.Popen[str], str, Path, Path]:
    """Run the script in a child process; return it, its session id, the db and the log."""
    script, db, log = tmp_path / "crashing.py", tmp_path / "runs.db", tmp_path / "calls.log"
    script.write_text(SCRIPT)
    log.write_text("")
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(log), scenario],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip(), db, log


def kill_when(child: subprocess.Popen[str], db: Path, ready: Callable[[sqlite3.Connection], bool]):
    """SIGKILL the child once `ready(connection)` sees the progress committed to `db` (and in
    any case before returning: a failed wait leaves no process behind)."""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert child.poll() is None, "the child process ended before it was killed"
            if db.exists():
                with sqlite3.connect(f"file:{settled(db)}?mode=ro", uri=True) as con:
                    try:
                        if ready(con):
                            return
                    except sqlite3.OperationalError:  # the schema is not written yet
                        pass
            time.sleep(0.02)
        pytest.fail("the child never committed the expected progress")
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(10)


def count(con: sqlite3.Connection, sql: str) -> int:
    return int(con.execute(sql).fetchone()[0])


def definitions(tmp_path: Path, log: Path) -> dict[str, Any]:
    """The script's agents and handlers, loaded in this process (not blocking)."""
    sys_argv = sys.argv
    sys.argv = ["crashing.py", "unused.db", str(log)]
    try:
        return runpy.run_path(str(tmp_path / "crashing.py"), run_name="definitions")
    finally:
        sys.argv = sys_argv


def test_killed_mid_delegation_reopens_and_resumes_without_redoing_work(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "delegating")
    kill_when(
        child,
        db,
        lambda con: (
            count(
                con,
                "SELECT count(*) FROM events WHERE type = 'model_request' AND path = 'boss/worker.2' "
                "AND body LIKE '%\"turn\":2%'",
            )
            == 1
            and count(con, "SELECT count(*) FROM events WHERE type = 'task_finished'") == 1
        ),
    )
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert log.read_text().split("\n")[:2] == ["lookup 1", "lookup 2"]

    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["delegating"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)

    # everything that had committed is back
    assert [(m.role, m.content) for m in session.llm_messages[:3]] == [
        ("user", "go"),
        ("assistant", None),
        ("tool", "value-1"),
    ]
    delegation = session.llm_messages[3]
    assert [c.name for c in delegation.tool_calls or ()] == ["task", "task"]
    assert len(session.llm_messages) == 4  # the task calls had no results yet
    finished = [e for e in session.events if e.type == "task_finished"]
    assert [(e.child, e.text) for e in finished] == [("boss/worker.1", "A done")]
    tree = session.tree
    assert tree.find("boss/worker.1").status == "done"
    assert tree.find("boss/worker.2").status == "incomplete"  # cut mid-task; nothing runs now
    worker_b = session.node("boss/worker.2")
    assert [m.content for m in worker_b.history if m.role == "tool"] == ["value-2"]
    assert [r.status for r in session.runs] == ["incomplete"]

    result = session.resume().result(timeout=20)
    assert result.text == "boss done: value-1 | A done | B done"
    assert len(llm.exchanges) == 2  # worker B's second turn and the boss's answer, nothing else
    assert log.read_text().split() == ["lookup", "1", "lookup", "2"]  # no tool ran again
    resumed = [e for e in session.events if e.run == 1 and e.seq > finished[0].seq]
    assert not [e for e in resumed if e.type == "task_spawned"]  # no child was spawned again
    reattached = [(e.child, e.state) for e in resumed if e.type == "task_reattached"]
    # job A's committed result is reused (or reattached by key); job B goes on where it stopped
    assert ("boss/worker.2", "resumed") in reattached
    assert set(reattached) <= {("boss/worker.1", "settled"), ("boss/worker.2", "resumed")}
    assert [r.status for r in session.runs] == ["done"]

    again = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    assert again.runs[-1].result().text == result.text
    assert again.tree.find("boss/worker.2").status == "done"


def test_killed_while_a_tool_runs_reuses_the_calls_that_had_finished(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "two_tools")
    kill_when(
        child,
        db,
        lambda con: (
            count(
                con,
                "SELECT count(*) FROM events WHERE type = 'tool_call_finished' "
                'AND body LIKE \'%"name":"lookup"%\'',
            )
            == 1
        ),
    )
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert log.read_text().split() == ["lookup", "7"]

    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["two_tools"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    assert [m.role for m in session.llm_messages] == ["user", "assistant"]
    result = session.resume().result(timeout=20)
    assert result.text == "tools done: value-7 | slow-8"
    assert len(llm.exchanges) == 1  # only the final answer
    # the two calls run at once: either may log first
    assert sorted(log.read_text().splitlines()) == [
        "lookup 7",
        "slow 8",
    ]  # lookup did not run again


def test_killed_inside_a_blocking_sync_model_call(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "sequential")
    kill_when(
        child,
        db,
        lambda con: (
            count(
                con,
                "SELECT count(*) FROM events WHERE type = 'model_request' "
                "AND body LIKE '%\"turn\":3%'",
            )
            == 1
        ),
    )
    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["sequential"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    assert [m.content for m in session.llm_messages if m.role == "tool"] == ["value-1", "value-2"]
    result = session.resume().result(timeout=20)
    assert result.text == "sequential done: value-1 | value-2"
    assert len(llm.exchanges) == 1
    assert log.read_text().split() == ["lookup", "1", "lookup", "2"]


def test_killed_while_paused_resumes_from_the_pause(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "paused")
    kill_when(  # both calls of the reply wait at their pause
        child, db, lambda con: count(con, "SELECT count(*) FROM events WHERE type = 'paused'") == 2
    )
    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["two_tools"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    assert session.events[-1].type == "paused"
    assert [r.status for r in session.runs] == ["incomplete"]
    run = session.resume(pause_on={"tool"})
    assert run.wait(timeout=20) == "paused"
    assert {p.name for p in run.pending} == {"lookup", "slow"}
    run.resume()
    assert run.result(timeout=20).text == "tools done: value-7 | slow-8"
    assert len(llm.exchanges) == 1  # the reply with the calls was not asked again
    # the two calls run at once: either may log first
    assert sorted(log.read_text().splitlines()) == ["lookup 7", "slow 8"]


def test_an_approval_pending_in_a_child_survives_a_kill_and_is_asked_again(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "child_tool")
    kill_when(  # the worker waits for approval of its lookup when the process dies
        child, db, lambda con: count(con, "SELECT count(*) FROM events WHERE type = 'paused'") == 1
    )
    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["child_tool"])
    session = sn.Session.open(db, session_id, agent=script["BOSS"], llm=llm)
    run = session.resume()  # no pause_on given again: the run's own pause points were stored
    assert run.wait(timeout=20) == "paused"
    assert (run.paused_at.path, run.paused_at.name) == ("boss/worker.1", "lookup")
    assert log.read_text() == ""  # the gated tool did not run unapproved
    run.approve()
    assert run.result(timeout=20).text == "boss done: C done: value-3"
    assert log.read_text().split("\n")[:1] == ["lookup 3"]


def test_every_level_parked_above_a_pause_resumes_after_a_kill(tmp_path: Path) -> None:
    child, session_id, db, log = start(tmp_path, "deep")
    kill_when(
        child, db, lambda con: count(con, "SELECT count(*) FROM events WHERE type = 'paused'") == 1
    )
    script = definitions(tmp_path, log)
    llm = sn.mock_llm(script["deep"])
    session = sn.Session.open(db, session_id, agent=script["TOP"], llm=llm)
    assert [n.id for n in [session.tree, *session.tree.children]] == ["top", "top/mid.1"]
    run = session.resume()
    assert run.wait(timeout=20) == "paused"
    assert run.paused_at.path == "top/mid.1/leaf.1"
    assert session.root.status == "waiting" and session.node("top/mid.1").status == "waiting"
    run.approve()
    assert run.result(timeout=20).text == "mid: leaf: found value-4"
    assert len(llm.exchanges) == 3  # each level answered once; no delegation was asked again
    assert log.read_text().split("\n")[:1] == ["lookup 4"]
