"""When a call returns, what it reports is durable: a process SIGKILLed (or a kernel restarted)
right after `result()`, `wait()` at a pause, `agent.run_sync` or `Session(...)` returned loses
none of what it reported."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb.store import MemoryStore

pytestmark = pytest.mark.timeout(180)

# Prints what the call reported (as one JSON line), then kills its own process at once.
SCRIPT = """
import json, os, signal, sys
import sagents_nb as sn

path, case, sid = sys.argv[1], sys.argv[2], sys.argv[3]


@sn.tool
def lookup(x: int) -> str:
    '''Look a number up.

    Args:
        x: the number.
    '''
    return f"value-{x}"


def handler(req):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", x=len(req.messages))])
    return "answer " + req.tool_results[-1]


agent = sn.Agent("a", tools=[lookup], pause_on={"tool"} if case == "pause" else ())
llm = sn.mock_llm(handler)
report = {}
if case == "create":  # a generated id (a chosen one was always created at once)
    session = sn.Session(agent, llm=llm, store=path)
    report = {"id": session.id}
elif case == "run_sync":
    result = agent.run_sync("hello", llm=llm, store=path, session_id=sid)
    report = {"text": result.text, "seq": result.events[-1].seq}
else:
    session = sn.Session(agent, llm=llm, store=path, session_id=sid)
    if case == "later":
        session.send("first").result()
    run = session.send("second" if case == "later" else "first")
    if case == "pause":
        assert run.wait() == "paused"
        report = {"seq": session.events[-1].seq, "paused": True}
    else:
        result = run.result()
        report = {"text": result.text, "seq": result.events[-1].seq}
sys.stdout.write(json.dumps(report) + "\\n")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""

CASES = ["create", "first", "later", "pause", "run_sync"]


def _agent() -> sn.Agent:
    return sn.Agent("a")


def _check(path: Path, sid: str, report: dict[str, object]) -> None:
    stored = {s.id: s for s in sn.Session.list_stored(path)}
    assert sid in stored, f"session {sid} was not stored"
    session = sn.Session.open(path, sid, agent=_agent())
    if "seq" in report:
        assert session.events and session.events[-1].seq >= report["seq"]
    if "text" in report:
        finished = [e for e in session.events if e.type == "run_finished"]
        assert finished and finished[-1].text == report["text"]
    if report.get("paused"):
        assert any(e.type == "paused" for e in session.events)
    session.store.close()


@pytest.mark.parametrize("trial", range(3))
@pytest.mark.parametrize("case", CASES)
def test_a_kill_right_after_a_call_returns_keeps_what_it_reported(
    tmp_path: Path, case: str, trial: int
) -> None:
    script = tmp_path / "kill.py"
    script.write_text(SCRIPT)
    path = tmp_path / "runs.db"
    sid = f"{case}-{trial}"
    done = subprocess.run(
        [sys.executable, str(script), str(path), case, sid],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -9, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    _check(path, report.get("id", sid), report)


@pytest.mark.kernel
def test_a_kernel_restart_right_after_the_cell_keeps_the_session(tmp_path: Path) -> None:
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for trial in range(3):
            path = tmp_path / f"runs-{trial}.db"
            outputs: list[str] = []
            client.execute_interactive(
                "import sagents_nb as sn\n"
                f"session = sn.Session(sn.Agent('a'), llm=sn.script('stored {trial}'), "
                f"store={str(path)!r}, session_id='k{trial}')\n"
                "r = session.send('hi').result()\n"
                "print(r.events[-1].seq)",
                timeout=60,
                output_hook=lambda m, out=outputs: out.append(m["content"].get("text", "")),
            )
            manager.restart_kernel(now=True)
            client.wait_for_ready(timeout=60)
            seq = int("".join(outputs).strip())
            _check(path, f"k{trial}", {"seq": seq, "text": f"stored {trial}"})
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _seen_by_each_request(durability: str) -> list[list[str]]:
    """The stored event types each model request of a two-turn run finds in the store."""
    store = MemoryStore()
    seen: list[list[str]] = []
    holder: dict[str, sn.Session] = {}

    @sn.tool
    def lookup(x: int) -> str:
        """Look a number up.

        Args:
            x: the number.
        """
        return f"value-{x}"

    def handler(req: sn.ChatRequest) -> object:
        seen.append([row.type for row in store.load(holder["s"].id).events])
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", x=1)])
        return "done"

    agent = sn.Agent("a", tools=[lookup])
    session = holder["s"] = sn.Session(
        agent, llm=sn.mock_llm(handler), store=store, durability=durability
    )
    assert session.send("go").result().text == "done"
    assert store.load(session.id).events[-1].type == "run_finished"  # every mode, at return
    return seen


def test_turn_durability_commits_each_turn_before_its_model_request() -> None:
    first, second = _seen_by_each_request("turn")
    assert first[-1] == "model_request"
    assert "tool_call_finished" in second and second[-1] == "model_request"


def test_exit_durability_commits_when_the_run_ends() -> None:
    first, second = _seen_by_each_request("exit")
    assert first == [] and second == []


def test_an_unknown_durability_is_refused() -> None:
    with pytest.raises(sn.ConfigurationError, match="durability must be one of"):
        sn.Session(sn.Agent("a"), llm=sn.script("x"), store=MemoryStore(), durability="sometimes")


QUEUE_SCRIPT = """
import asyncio, json, os, signal, sys
import sagents_nb as sn


async def handler(req):
    await asyncio.sleep(3600)


session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(handler), store=sys.argv[1])
first = session.send("first")
second = session.send("second (queued)")
assert second.status == "queued"
sys.stdout.write(json.dumps({"id": session.id}) + "\\n")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_message_queued_behind_a_run_survives_a_kill_and_resume_runs_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "queue.py"
    script.write_text(QUEUE_SCRIPT)
    path = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -9, done.stderr
    sid = json.loads(done.stdout.strip().splitlines()[-1])["id"]
    llm = sn.script("answer one", "answer two")
    session = sn.Session.open(path, sid, agent=_agent(), llm=llm)
    assert [entry["display"]["content"] for entry in session.stored_queue] == ["second (queued)"]
    first = session.resume()
    assert first.result(timeout=30).text == "answer one"
    second = session.runs[-1]
    assert second.number == 2 and second.result(timeout=30).text == "answer two"
    assert [m.content for m in session.display_messages if m.role == "user"] == [
        "first",
        "second (queued)",
    ]
    again = sn.Session.open(path, sid, agent=_agent())
    assert again.stored_queue == []  # both ran: nothing waits any more
    with pytest.raises(sn.ConfigurationError, match="no interrupted run"):
        again.resume()
    session.store.close()


# Many sessions on one store at once, each awaited on the library loop (a sweep's way: their
# steps are committed by the store thread, in groups); each run is reported once `await run`
# returns, and the process kills itself after `stop` reports, the others still in flight.
GROUP_SCRIPT = """
import asyncio, json, os, signal, sys
import sagents_nb as sn
from sagents_nb._base.loop import block_on, submit
from sagents_nb.store import SQLiteStore

path, stop = sys.argv[1], int(sys.argv[2])
real = SQLiteStore.commit_group


def counted(self, writes):
    real(self, writes)
    sys.stdout.write(json.dumps({"group": len(writes)}) + "\\n")


SQLiteStore.commit_group = counted


async def handler(req):
    await asyncio.sleep(0.001 * (len(req.messages[-1].content) % 7))
    return "réponse ✓ " + req.messages[-1].content


reported = 0


async def one(i):
    global reported
    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(handler), store=path, session_id=f"s{i}")
    result = await session.send_async(f"question {i} 質問")
    result = await result
    sys.stdout.write(json.dumps({"id": session.id, "seq": result.events[-1].seq, "text": result.text}) + "\\n")
    sys.stdout.flush()
    reported += 1
    if reported == stop:
        os.kill(os.getpid(), signal.SIGKILL)


async def every():
    await asyncio.gather(*(one(i) for i in range(60)))


block_on(submit(every()), what="the script")
"""


@pytest.mark.parametrize("stop", [5, 20, 40])
def test_a_kill_amid_group_commits_keeps_every_run_reported(tmp_path: Path, stop: int) -> None:
    script = tmp_path / "group.py"
    script.write_text(GROUP_SCRIPT)
    path = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, str(script), str(path), str(stop)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -9, done.stderr
    lines = [json.loads(line) for line in done.stdout.strip().splitlines()]
    reports = [line for line in lines if "id" in line]
    assert len(reports) == stop
    assert max(line["group"] for line in lines if "group" in line) > 1  # commits were grouped
    for report in reports:
        _check(path, report["id"], report)


def test_a_flush_from_another_thread_never_splits_what_the_loop_is_doing(tmp_path: Path) -> None:
    """Found by benchmarks/soak.py: `run.wait()` returning on the main thread (its flush) while
    the queued run starts on the loop sealed the run's start without its input; the queue row,
    emptied in the same commit, held the only copy: a kill then lost the message, and resume
    answered the first one again. A flush off the loop now cuts the step on the loop, between
    its callbacks."""
    path, copy = tmp_path / "runs.db", tmp_path / "at-the-flush.db"

    async def echo(req: sn.ChatRequest) -> str:
        await asyncio.sleep(0.05)  # the second message is queued meanwhile
        return f"re: {req.last_user}"

    session = sn.Session(sn.Agent("a"), llm=sn.mock_llm(echo), store=path)

    def at_second_start(event: sn.events.Event) -> None:
        """On the loop, as run 2 starts: a flush from another thread lands now; then the
        file is copied as a kill would leave it."""
        if event.type == "run_started" and event.run == 2:
            flusher = threading.Thread(target=session.flush)
            flusher.start()
            flusher.join(0.3)
            with sqlite3.connect(path) as live, sqlite3.connect(copy) as snapshot:
                live.backup(snapshot)

    session.bus.subscribe(at_second_start)
    session.send("first")
    assert session.send("second").result(timeout=30).text == "re: second"

    reopened = sn.Session.open(copy, session.id, agent=sn.Agent("a"), llm=sn.mock_llm(echo))
    reopened.resume()
    assert [run.result(timeout=30).text for run in reopened.runs] == ["re: first", "re: second"]
    reopened.store.close()
    session.store.close()


def test_run_sync_commits_on_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agent.run_sync` waits for the run anyway: the run's last step is cut on the loop as it
    stops and committed on the caller's thread (before, the loop woke the store thread to
    commit it, which then woke the loop to return: ~0.4 ms of a 10 ms run). The timers are
    out of the way, so only that commit stores the run."""
    from sagents_nb._runtime import journal as journal_module
    from sagents_nb._store import writer as writer_module

    for module, name in (
        (journal_module, "QUIET_SECONDS"),
        (journal_module, "MAX_DELAY_SECONDS"),
        (journal_module, "RESCUE_SECONDS"),
        (writer_module, "LOOK_SECONDS"),
    ):
        monkeypatch.setattr(module, name, 3600.0)
    committers: list[threading.Thread] = []
    commit = writer_module.StepWriter._commit

    def recorded(self: writer_module.StepWriter, *args: object) -> object:
        committers.append(threading.current_thread())
        return commit(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module.StepWriter, "_commit", recorded)
    asked: list[object] = []

    def cut_for_flush(self: object) -> None:
        asked.append(self)

    monkeypatch.setattr(journal_module.Journal, "_cut_for_flush", cut_for_flush)
    path = tmp_path / "runs.db"
    result = sn.Agent("a").run_sync("go", llm=sn.script("done"), store=path, session_id="s1")

    assert result.text == "done"
    assert set(committers) == {threading.current_thread()} and asked == []
    store = sn.SQLiteStore(path)
    assert store.load("s1").events[-1].type == "run_finished"
    store.close()
