"""The rows a durable session stores stay the same when the write path is made faster: a fixed
mix of sessions (a depth-3 tree with pauses, a kind swap and a queued input; long texts kept
apart; a lone surrogate repaired; French, Japanese, Chinese and emoji; a streamed answer; a
compaction; a fork that goes on) recorded into one SQLite file, under a clock that makes every
row's bytes repeatable, hashes table by table to what main's code (8dd4189, before issue 32
item 3) stored. A fork at every event holds the origin's rows as of that event, and the
reopened session equals the live one.

A deliberate change of what is stored (a new event field, another row format) changes these
hashes: print the new ones with `python tests/test_store_rows_unchanged.py` and say why in the
commit; old stores must still open."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
import sagents_nb._runtime.bus as bus_module
import sagents_nb._runtime.journal as journal_module
import sagents_nb._runtime.restore as restore_module
import sagents_nb._runtime.toolcalls as toolcalls_module
import sagents_nb._runtime.turns as turns_module
import sagents_nb._store.writer as writer_module
from sagents_nb._base.outcome import Outcome
from sagents_nb._store.text import repaired
from sagents_nb.kinds import Realtime, Resident, Worker
from sagents_nb.store import StoredSession

from .settled import settled

pytestmark = pytest.mark.timeout(120)

STORED = {
    "sessions": "ced714cb6d08f839987be59269eeb6d22776cc51574912c41e3e230216e95b5f",
    "events": "dca130ec489bd6ed04e0b68b66473551d669f831cc91fad39932a68e29d1fd4d",
    "messages": "55e72356fe91b0da8b84d69cbfedc4398949844f6d6be56bffe8c2a7989df063",
    "nodes": "101bf277545259d9cc5550784f43ab0beadbbe2df29c63f17b70ac9d3b124cc5",
    "tasks": "66861b397fb337dd9c2a9b6db90efcd7ff763c86a2edcde0323fffdf3e34c5a6",
    "texts": "cbdd1e61c4cad3757e275f4ea718cf4fabfbbe72e11df6fc04062745b3c95fca",
    "streams": "8c3a5bbf5153860dfd65204494149ba3aad23b15dd2ab0b49187556166092663",
}
"""SHA-256 of each table's rows as `dump` lists them, as main's code stored them. Events since
the lazy reopen: the same rows but for `ts` (a reopen reads the clock fewer times); since the
fork's storage is counted once (branch turncost): the same rows but for the `view_tokens` /
`storage_tokens` of the fork's `context_built` events, which counted a message written to a
restored node before its first count twice."""

LONG = "Le rapport « déjà vérifié » — 報告の準備ができました 🚀 " * 20
BAD = "fichier " + b"\xff\xfe".decode("utf-8", "surrogateescape")


class _Clock:
    """`time` with a wall clock that advances by 1/1024 s at each reading."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def time(self) -> float:
        return 1.8e9 + next(self._ticks) / 1024


class _Still:
    """`time` whose `perf_counter` stands still: every duration is 0."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def perf_counter() -> float:
        return 0.0


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    if "long" in text:
        return LONG + text
    if "bad" in text:
        return BAD
    return f"noté : {text}"


def model(req: sn.ChatRequest) -> sn.Reply | str:
    if "task" in req.tools and not req.tool_results:
        member = {"chef": "lead", "lead": "aide"}[req.agent or ""]
        return sn.reply(
            tool_calls=[sn.call("task", agent=member, prompt=f"cherche « {req.last_user} » 猫")]
        )
    if req.agent == "aide" and len(req.tool_results) < 3:
        what = ["long", "bad", "trouvé 🐈"][len(req.tool_results)]
        return sn.reply(tool_calls=[sn.call("note", text=what)])
    return f"{req.agent}: {req.tool_results[-1][:40] if req.tool_results else 'rien'}"


def streaming(req: sn.ChatRequest) -> sn.Reply:
    return sn.reply("morceau « x » 東京 🎉 " * 30, stream=True)


def compacting(req: sn.ChatRequest) -> sn.Reply | str:
    if len(req.tool_results) < 6:
        return sn.reply(tool_calls=[sn.call("note", text=f"long {len(req.tool_results)}")])
    return "fini"


def repeatable(patch: Any) -> None:
    """Every row's bytes repeatable: times from a counter, durations 0, fork ids numbered, and
    steps cut only where a call that returns cuts them (pauses, ends, flushes), not by timers."""
    clock = _Clock()
    for module in (bus_module, journal_module, restore_module):
        patch(module, "time", clock)
    for module in (toolcalls_module, turns_module):
        patch(module, "time", _Still())
    forks = itertools.count(1)
    patch(restore_module, "new_session_id", lambda: f"fork{next(forks)}")
    for module, name in (
        (journal_module, "QUIET_SECONDS"),
        (journal_module, "MAX_DELAY_SECONDS"),
        (journal_module, "RESCUE_SECONDS"),
        (writer_module, "LOOK_SECONDS"),
    ):
        patch(module, name, 3600.0)


def through(session: sn.Session, run: sn.Run, finished: int) -> None:
    """Approve every pause of `run` until the session has finished `finished` runs. A call that
    returns (`wait`) cuts the step being recorded, so it is made only while nothing runs."""
    after = 0
    while True:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            events = list(session.events)
            if sum(e.type == "run_finished" for e in events) >= finished:
                break
            if events and events[-1].type == "paused" and events[-1].seq > after:
                break
            time.sleep(0.005)
        if run.wait(timeout=30) != "paused":
            return
        after = session.events[-1].seq
        run.approve()


def record(db: Path) -> sn.Session:
    """The mix of sessions; returns the richest (a tree, pauses, a swap, a queued input)."""
    aide = sn.Agent("aide", does="helps", tools=[note], kind=Worker(max_turns=7))
    lead = sn.Agent("lead", does="leads the search", team=[aide], kind=Worker(max_turns=7))
    rich = sn.Session(
        sn.Agent("chef", team=[lead]), llm=sn.mock_llm(model), store=db, session_id="rich"
    )
    through(rich, rich.send("un", pause_on={"tool"}), 1)
    lead.kind = aide.kind = Resident(window_tokens=3000)
    run = rich.send("deux — 二", pause_on={"model"})
    queued = rich.send("trois")
    through(rich, run, 3)
    queued.result()
    rich.flush()
    writer = sn.Agent("writer", kind=Realtime())
    stream = sn.Session(writer, llm=sn.mock_llm(streaming), store=db, session_id="stream")
    stream.send("écris").result()
    stream.send("encore, 再来一次").result()
    compact = sn.Agent("compact", tools=[note], kind=Resident(window_tokens=600, keep_recent=1))
    sn.Session(compact, llm=sn.mock_llm(compacting), store=db, session_id="compact").send(
        "go"
    ).result()
    fork = rich.fork(at=rich.events[len(rich.events) // 2].seq)
    fork.send("quatre").result()
    fork.flush()
    return rich


def dump(db: Path) -> dict[str, list[list[Any]]]:
    """Every table's rows, sorted (a BLOB as hex; a task without its row id)."""
    tables: dict[str, list[list[Any]]] = {}
    with sqlite3.connect(settled(db)) as con:
        for table in STORED:
            rows = [
                [v.hex() if isinstance(v, bytes) else v for v in row]
                for row in con.execute(f"SELECT * FROM {table}")
            ]
            if table == "tasks":
                rows = [row[1:] for row in rows]
            tables[table] = sorted(rows, key=lambda row: json.dumps(row, ensure_ascii=False))
    return tables


def digests(tables: dict[str, list[list[Any]]]) -> dict[str, str]:
    return {
        table: hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()
        for table, rows in tables.items()
    }


def test_the_rows_stored_are_the_ones_main_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repeatable(monkeypatch.setattr)
    db = tmp_path / "runs.db"
    rich = record(db)
    assert digests(dump(db)) == STORED

    store = rich.store
    assert isinstance(store, sn.SQLiteStore)
    rows = store.load("rich")
    for event in rows.events:  # a fork at every event holds the rows as of that event
        info = StoredSession(f"at{event.seq}", "chef", 0.0, "rich", event.seq)
        store.fork("rich", event.seq, info)
        forked, expected = store.load(info.id), rows.at(event.seq)
        assert (forked.events, forked.messages, forked.nodes, forked.tasks) == (
            expected.events,
            expected.messages,
            expected.nodes,
            expected.tasks,
        )

    again = sn.Session.open(db, "rich", agent=rich.agent, llm=sn.mock_llm(model))
    assert dumped(again.events) == stored(dumped(rich.events))
    live, reopened = list(rich.root.walk()), list(again.root.walk())
    assert [n.path for n in reopened] == [n.path for n in live]
    for a, b in zip(live, reopened, strict=True):
        assert dumped(b.history) == stored(dumped(a.history))
        assert (b.status, b.turns, b.usage) == (a.status, a.turns, a.usage)
        assert b.last_outcome == stored(a.last_outcome)
    assert dumped(again.root.display or []) == stored(dumped(rich.root.display or []))


def dumped(items: Any) -> list[dict[str, Any]]:
    return [item.model_dump() for item in items]


def stored(value: Any) -> Any:
    """`value` as the store keeps it: a lone surrogate as U+FFFD."""
    if isinstance(value, Outcome):
        return Outcome(value.status, repaired(value.text, None))
    return repaired(value, None)


if __name__ == "__main__":  # print the hashes of what this code stores
    with pytest.MonkeyPatch.context() as patches:
        repeatable(patches.setattr)
        db = Path(tempfile.mkdtemp()) / "runs.db"
        record(db)
        json.dump(digests(dump(db)), sys.stdout, indent=4)
