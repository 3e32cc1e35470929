"""Durable sessions: what a store keeps, and reopening it (transcripts, events, tree, kinds)."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import sagents_nb as sn
from sagents_nb.store import MemoryStore

from .settled import settled

pytestmark = pytest.mark.timeout(30)


@sn.tool
def lookup(x: int) -> str:
    """Look a number up.

    Args:
        x: the number.
    """
    return f"value-{x}"


WORKER = sn.Agent("worker", does="does one job", tools=[lookup])
BOSS = sn.Agent("boss", does="delegates", tools=[lookup], team=[WORKER])


def boss_handler(req: sn.ChatRequest) -> sn.Reply | str:
    """The boss looks something up, delegates two jobs (then one again: a reattach), answers;
    workers look up once, then answer."""
    if "task" in req.tools:
        done = len(req.tool_results)
        if done == 0:
            return sn.reply(tool_calls=[sn.call("lookup", x=1)])
        if done == 1:
            return sn.reply(
                tool_calls=[
                    sn.call("task", agent="worker", prompt="job A"),
                    sn.call("task", agent="worker", prompt="job B"),
                ]
            )
        if done == 3:
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt="job A")])
        return "boss done: " + " | ".join(req.tool_results)
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", x=len(req.last_user))])
    return f"{req.last_user} -> {req.tool_results[-1]}"


def dumps(messages: list[sn.Message]) -> list[dict[str, object]]:
    return [m.model_dump() for m in messages]


def test_reopen_restores_transcripts_events_tree_and_tasks(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    result = session.send("go").result()
    assert result.status == "done"

    again = sn.Session.open(db, session.id, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert again.id == session.id
    assert dumps(again.llm_messages) == dumps(session.llm_messages)
    assert dumps(again.display_messages) == dumps(session.display_messages)
    assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]
    assert again.tree.to_dict() == session.tree.to_dict()
    child = again.node("boss/worker.1")
    assert child is not None
    assert dumps(child.history) == dumps(session.node("boss/worker.1").history)
    entry = again.root.tasks[("worker", "job A")]
    assert entry.child is child
    assert entry.outcome is not None and entry.outcome.text == "job A -> value-5"
    assert [r.status for r in again.runs] == ["done"]
    assert again.runs[0].result().text == result.text


def test_a_stores_event_rows_are_not_tracked_by_the_cycle_collector(tmp_path: Path) -> None:
    """A reopened session holds a row for each of its events until each is first read (a tree
    of 10,000 nodes: 160,000); rows of numbers and text can be in no cycle, so the collector's
    full passes need not walk them (a third fewer tracked objects for such a tree)."""
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    memory = MemoryStore()
    memory.create(session.store.load(session.id))
    for store in (session.store, memory):
        rows = store.load(session.id).events
        assert rows and not any(map(gc.is_tracked, rows))


def test_a_reopened_session_goes_on_and_keeps_recording(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    llm = sn.mock_llm(lambda req: "second answer")
    again = sn.Session.open(db, session.id, agent=BOSS, llm=llm)
    second = again.send("and now?").result()
    assert second.text == "second answer" and second.run == 2
    # the new run saw the whole restored transcript
    assert llm.exchanges[0].request["messages"][0]["content"] == "go"
    third = sn.Session.open(db, session.id, agent=BOSS, llm=llm)
    assert [r.status for r in third.runs] == ["done", "done"]
    assert third.llm_messages[-1].content == "second answer"
    seqs = [e.seq for e in third.events]
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_settled_task_reattaches_after_reopening(tmp_path: Path) -> None:
    # reattach="session": a repeated task returns its result for the session's life, reopened too
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db, reattach="session")
    session.send("go").result()
    llm = sn.mock_llm(
        lambda req: (
            sn.reply(tool_calls=[sn.call("task", agent="worker", prompt="job B")])
            if req.last["role"] == "user"
            else f"again: {req.tool_results[-1]}"
        )
    )
    again = sn.Session.open(db, session.id, agent=BOSS, llm=llm, reattach="session")
    result = again.send("job B once more").result()
    assert result.text == "again: job B -> value-5"
    assert len(llm.exchanges) == 2  # the worker was not asked again
    reattached = [e for e in again.events if e.type == "task_reattached" and e.run == 2]
    assert [(e.child, e.state) for e in reattached] == [("boss/worker.2", "settled")]


def test_main_cold_storage_and_resident_compaction_are_restored(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    memo = sn.Agent(
        "memo",
        does="remembers",
        kind=sn.kinds.Resident(window_tokens=60, keep_recent=1),
    )
    chief = sn.Agent("chief", does="leads", team=[memo], kind=sn.kinds.Main(top_k=1, recent=1))

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if req.system.startswith("You compress"):
            return "summary of the memo's past"
        if "task" in req.tools and req.last["role"] == "user":
            return sn.reply(
                tool_calls=[sn.call("task", agent="memo", prompt=f"note {req.last_user}")]
            )
        if "task" in req.tools:
            return f"noted {req.last_user}"
        return f"memo keeps {req.last_user} " + "x" * 120

    session = sn.Session(chief, llm=sn.mock_llm(handler), store=db)
    for word in ("alpha", "bravo", "charlie", "delta"):
        assert session.send(word).result().status == "done"
    root, resident = session.root, session.node("chief/memo.1")
    assert resident is not None
    cold = chief.kind.cold_messages(root)
    assert cold, "the scenario should sink something to cold storage"
    assert any(e.type == "compaction" for e in session.events)

    again = sn.Session.open(db, session.id, agent=chief, llm=sn.mock_llm(handler))
    assert dumps(chief.kind.cold_messages(again.root)) == dumps(cold)
    restored = again.node("chief/memo.1")
    assert restored is not None and again.root.persistent["memo"] is restored
    assert dumps(restored.history) == dumps(resident.history)
    assert restored.history[0].meta == {"summary": True}
    kept = ("compactions", "context_full", "messages", "status")
    assert {k: memo.kind.describe(restored)[k] for k in kept} == {
        k: memo.kind.describe(resident)[k] for k in kept
    }


def test_the_api_key_is_never_written(tmp_path: Path) -> None:
    secret = "sk-planted-secret-4f1d9c"

    def serve(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {secret}"
        return httpx.Response(
            200,
            json={
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "hello"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
        )

    llm = sn.LLM("http://keyed.local/v1", api_key=secret, transport=httpx.MockTransport(serve))
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("a"), llm=llm, store=db)
    assert session.send("hi").result().text == "hello"
    session.llm = sn.mock_llm(lambda req: "swapped")
    session.send("again").result()
    exported = session.export_jsonl(tmp_path / "session.jsonl")
    session.flush()
    for path in [*tmp_path.iterdir(), exported]:
        assert secret.encode() not in path.read_bytes(), path.name


def test_list_stored_names_sessions_and_forks(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    first.send("go").result()
    second = sn.Session(sn.Agent("solo"), llm=sn.mock_llm(lambda req: "ok"), store=db)
    second.send("hi").result()
    fork = first.fork(at=10)
    stored = {s.id: s for s in sn.Session.list_stored(db)}
    assert set(stored) == {first.id, second.id, fork.id}
    assert stored[first.id].agent == "boss" and stored[first.id].parent is None
    assert stored[second.id].agent == "solo"
    assert (stored[fork.id].parent, stored[fork.id].fork_seq) == (first.id, 10)
    assert stored[fork.id].last_seq == 10
    assert stored[first.id].last_seq == first.events[-1].seq


def test_a_new_session_is_stored_before_it_runs(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    fresh = sn.Session(sn.Agent("solo"), llm=sn.mock_llm(lambda req: "ok"), store=db)
    named = sn.Session(
        sn.Agent("solo"), llm=sn.mock_llm(lambda req: "ok"), store=db, session_id="mine"
    )
    deadline = time.monotonic() + 5  # another process sees it once the store thread wrote it
    while time.monotonic() < deadline:
        with sqlite3.connect(settled(db)) as con:
            ids = {r[0] for r in con.execute("SELECT id FROM sessions")}
        if fresh.id in ids:
            break
        time.sleep(0.01)
    assert ids == {fresh.id, named.id}
    assert {s.id for s in sn.Session.list_stored(db)} == {fresh.id, "mine"}
    with pytest.raises(sn.StoreError, match="already exists"):  # a chosen id is checked at once
        sn.Session(sn.Agent("solo"), llm=sn.mock_llm(lambda req: "ok"), store=db, session_id="mine")


def test_steps_are_written_in_transactions_of_the_store_file(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=str(db))
    session.send("go").result()
    session.flush()
    with sqlite3.connect(settled(db)) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        count = con.execute("SELECT count(*) FROM events WHERE session = ?", (session.id,))
        assert count.fetchone()[0] == len(session.events)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_in_memory_store_forks_and_exports(tmp_path: Path) -> None:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=":memory:")
    session.send("go").result()
    fork = session.fork()
    assert [e.model_dump() for e in fork.events] == [e.model_dump() for e in session.events]
    assert session.export_jsonl(tmp_path / "s.jsonl").exists()


def test_reopening_to_look_needs_no_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    looking = sn.Session.open(db, session.id, agent=BOSS)
    assert looking.tree.to_dict() == session.tree.to_dict()
    assert "http://no-endpoint.invalid/v1" in repr(looking.llm)
    result = looking.send("more").result()
    assert result.status == "error"
    assert "reopened without an endpoint; set session.llm" in result.text


def test_reopening_to_look_loads_no_http_client(tmp_path: Path) -> None:
    """Opening a stored session without an endpoint imported httpx (~90 ms) for the endpoint
    that refuses, which is made at its first request now."""
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    session.store.close()
    code = (
        "import sys, sagents_nb as sn\n"
        f"looking = sn.Session.open({str(db)!r}, {session.id!r}, agent=sn.Agent('boss'))\n"
        "print(len(looking.events), 'httpx' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(session.events)), "False"]


def test_run_numbers_stay_unique_after_a_queued_run_was_cancelled(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    llm = sn.mock_llm(lambda req: f"re: {req.last_user}")
    session = sn.Session(sn.Agent("a"), llm=llm, store=db)
    first = session.send("first", pause_on={"model"})
    assert first.wait() == "paused"
    queued = session.send("second")
    queued.cancel()
    assert queued.wait() == "cancelled"
    first.resume()
    assert first.result().text == "re: first"
    assert session.send("third").result().run == 3
    again = sn.Session.open(db, session.id, agent=sn.Agent("a"), llm=llm)
    assert [r.status for r in again.runs] == ["done", "cancelled", "done"]
    assert again.send("fourth").result().run == 4


def test_new_session_ids_sort_by_creation_and_do_not_repeat() -> None:
    """Generated ids lead with the time, so a store's rows for new sessions go in at the end
    of its indexes; 36 random bits follow."""
    from sagents_nb._runtime.session import new_session_id

    many = [new_session_id() for _ in range(20_000)]
    assert len(set(many)) == len(many)
    earlier = new_session_id()
    time.sleep(0.002)
    assert earlier < new_session_id()
    assert all(len(i) == 16 and i.isalnum() and i.islower() for i in many)


def test_built_in_kinds_store_the_shapes_older_stores_hold(tmp_path: Path) -> None:
    """Main, Resident and Realtime dump their state in the shapes stores written before
    `dump_state` hold, so those stores reopen with it."""
    db = tmp_path / "runs.db"
    memo = sn.Agent("memo", does="remembers", kind=sn.kinds.Resident(60, keep_recent=1))
    live = sn.Agent("live", does="chats", kind=sn.kinds.Realtime(window=1))
    chief = sn.Agent("chief", team=[memo, live], kind=sn.kinds.Main(top_k=1, recent=1))

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if req.system.startswith("You compress"):
            return "summary"
        if "task" in req.tools and req.last["role"] == "user":
            return sn.reply(
                tool_calls=[
                    sn.call("task", agent="memo", prompt=f"note {req.last_user}"),
                    sn.call("task", agent="live", prompt=f"say {req.last_user}"),
                ]
            )
        return f"{req.last_user} " + "x" * 120

    session = sn.Session(chief, llm=sn.mock_llm(handler), store=db)
    for word in ("alpha", "bravo", "charlie"):
        session.send(word).result()
    session.flush()
    with sqlite3.connect(settled(db)) as con:
        rows = con.execute("SELECT path, body FROM nodes WHERE part = 'kind'").fetchall()
    shapes = {
        (path, kind["kind"], tuple(kind["state"]))
        for path, kind in ((p, json.loads(b)) for p, b in rows)
    }
    assert shapes == {
        ("chief", "main", ("cold",)),
        ("chief/memo.1", "resident", ("latched", "compactions")),
        ("chief/live.1", "realtime", ("dropped",)),
    }
    cold = next(json.loads(b)["state"]["cold"] for p, b in reversed(rows) if p == "chief")
    assert cold and all(len(span) == 2 and span[0] < span[1] for span in cold)


@pytest.mark.parametrize("prompts", [("job A", "job A"), ("job A", "job B")])
def test_a_kind_swap_retires_the_forgotten_task_and_stores_the_next(
    prompts: tuple[str, str], tmp_path: Path
) -> None:
    """A kind swap forgets the tasks settled under the old kind; the task delegated after it
    in the same step (as many entries as before, under the same key or another) is stored,
    and reopening finds it, not the forgotten one."""
    worker = sn.Agent("worker", does="does one job", kind=sn.kinds.Resident())
    boss = sn.Agent("boss", does="delegates", team=[worker])
    asked = iter(prompts)

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if "task" not in req.tools:
            return f"fait : {req.last_user} ✓"
        if req.messages[-1]["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="worker", prompt=next(asked))])
        return "boss done: " + req.tool_results[-1]

    session = sn.Session(boss, llm=sn.mock_llm(handler), store=tmp_path / "runs.db")
    session.send("go").result()
    worker.kind = sn.kinds.Worker()
    session.send("encore, 再来").result()
    session.flush()
    rows = session.store.load(session.id).tasks
    assert [(t.prompt, t.child, t.retired is not None) for t in rows] == [
        (prompts[0], "boss/worker.1", True),
        (prompts[1], "boss/worker.2", False),
    ]
    again = sn.Session.open(tmp_path / "runs.db", session.id, agent=boss)
    assert {key: e.child.path for key, e in again.root.tasks.items()} == {
        ("worker", prompts[1]): "boss/worker.2"
    }
    session.store.close()
