"""Cancelling a queued run keeps the queue's order: the runs behind it wait for the run in flight
to end, with or without a store, across a SIGKILL, and for `retry()` as for `send()`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import sagents_nb as sn

pytestmark = pytest.mark.timeout(60)


@sn.tool
async def slow(step: int) -> str:
    """A slow step.

    Args:
        step: which step.
    """
    await asyncio.sleep(0.15)
    return f"étape {step} 完了"


def three_slow_turns(req: sn.ChatRequest) -> sn.Reply | str:
    """'A' takes three slow tool turns; every other message is answered at once."""
    if req.last_user == "A" and len(req.tool_results) < 3:
        return sn.reply(tool_calls=[sn.call("slow", step=len(req.tool_results) + 1)])
    return f"answer to {req.last_user} ✓"


def session(store: object = None) -> sn.Session:
    return sn.Session(sn.Agent("a", tools=[slow]), llm=sn.mock_llm(three_slow_turns), store=store)


def finished_runs(s: sn.Session) -> list[tuple[int, str]]:
    return [(e.run, e.status) for e in s.events if e.type == "run_finished"]


@pytest.mark.parametrize("stored", [False, True], ids=["memory only", "sqlite file"])
def test_cancelling_the_middle_run_keeps_the_last_one_behind_the_first(
    tmp_path: Path, stored: bool
) -> None:
    s = session(tmp_path / "runs.db" if stored else None)
    a, b, c = s.send("A"), s.send("B"), s.send("C")
    b.cancel()
    assert b.wait(5) == "cancelled"
    assert c.wait(timeout=0.2) == "queued"  # A still runs: C waits behind it
    assert a.result(timeout=20).text == "answer to A ✓"
    assert c.result(timeout=20).text == "answer to C ✓"
    assert finished_runs(s) == [(1, "done"), (3, "done")]
    assert {e.run for e in a.result().events} == {1}
    assert [m.content for m in s.display_messages if m.role == "user"] == ["A", "C"]


def test_cancelling_two_queued_runs_keeps_the_last_one_behind_the_first() -> None:
    s = session()
    a, b, c, d = s.send("A"), s.send("B"), s.send("C"), s.send("D")
    c.cancel()
    b.cancel()
    assert b.wait(5) == "cancelled" and c.wait(5) == "cancelled"
    assert d.wait(timeout=0.2) == "queued"
    assert a.result(timeout=20).status == "done"
    assert d.result(timeout=20).text == "answer to D ✓"
    assert finished_runs(s) == [(1, "done"), (4, "done")]


def test_cancelling_the_last_queued_run_leaves_the_first_alone() -> None:
    s = session()
    a, b = s.send("A"), s.send("B")
    b.cancel()
    assert b.wait(5) == "cancelled"
    assert a.result(timeout=20).text == "answer to A ✓"
    assert finished_runs(s) == [(1, "done")]
    assert s.send("after").result(timeout=20).text == "answer to after ✓"


def test_a_cancelled_queued_retry_keeps_the_next_run_behind_the_first() -> None:
    s = session()
    a = s.send("A")
    b = s.retry()
    c = s.send("C")
    b.cancel()
    assert b.wait(5) == "cancelled"
    assert c.wait(timeout=0.2) == "queued"
    assert a.result(timeout=20).status == "done"
    assert c.result(timeout=20).text == "answer to C ✓"
    assert finished_runs(s) == [(1, "done"), (3, "done")]


KILLED = """
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[2])
from test_queue_cancel import session

s = session(sys.argv[1])
a, b, c = s.send("A"), s.send("B"), s.send("C")
b.cancel()
assert b.wait(5) == "cancelled"
time.sleep(0.2)  # A is on its first slow tool turn
s.flush()
sys.stdout.write(json.dumps({"id": s.id, "c": c.status}) + "\\n")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sigkill_after_a_queued_run_was_cancelled_leaves_the_first_to_resume(
    tmp_path: Path,
) -> None:
    script, db = tmp_path / "killed.py", tmp_path / "runs.db"
    script.write_text(KILLED)
    done = subprocess.run(
        [sys.executable, str(script), str(db), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -9, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["c"] == "queued"
    reopened = sn.Session.open(db, seen["id"], agent=sn.Agent("a", tools=[slow]))
    reopened.llm = sn.mock_llm(three_slow_turns)
    assert [entry["display"]["content"] for entry in reopened.stored_queue] == ["C"]
    first = reopened.resume()
    assert first.number == 1
    assert first.result(timeout=20).text == "answer to A ✓"
    last = reopened.runs[-1]
    assert last.number == 3 and last.result(timeout=20).text == "answer to C ✓"
    assert [m.content for m in reopened.display_messages if m.role == "user"] == ["A", "C"]
    reopened.store.close()
