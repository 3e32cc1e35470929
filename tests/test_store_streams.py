"""Streamed text is stored as one row a stream (store schema 4), not a row a chunk: a streamed
answer's file grows by about its text, and every chunk reads back as the event it was, to the
bit, through reopen, fork (inside a stream too), export and import, in French, Chinese,
Japanese, emoji and code."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb._store.text import body_text
from sagents_nb.store import (
    EventRow,
    MemoryStore,
    SessionRows,
    SQLiteStore,
    Step,
    StoredSession,
    StoreError,
)

from .settled import settled

pytestmark = pytest.mark.timeout(120)

PIECES = [
    "Le rapport est prêt : « déjà vérifié », à l'œil nu. ",
    "报告已经准备好了，数据已核实。",
    "報告の準備ができました。東京の事務所で確認済みです。",
    "🚀✨👩🏽‍💻🎉 ",
    'def f(x):\n\treturn {"key": x, "path": "C:\\\\temp"}  # 注释\n',
]
ANSWER = "".join(PIECES) * 100
"""~15,000 characters of answer, streamed as a few thousand chunks."""


def streaming() -> sn.Agent:
    return sn.Agent("writer", kind=sn.kinds.Realtime())


def stream_llm(text: str = ANSWER) -> sn.MockLLM:
    return sn.mock_llm(lambda req: sn.reply(text, stream=True))


def size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def dumped(session: sn.Session) -> list[dict[str, object]]:
    return [e.model_dump() for e in session.events]


def test_a_streamed_answer_grows_the_file_by_about_its_text(tmp_path: Path) -> None:
    """Was ~20x: each chunk of a few characters took a row of its own."""
    db = tmp_path / "runs.db"
    sn.SQLiteStore(db).close()
    before = size(db)
    session = sn.Session(streaming(), llm=stream_llm(), store=db)
    session.send("écris le rapport").result()
    chunks = [e for e in session.events if e.type == "text_delta"]
    assert len(chunks) > 1000 and "".join(e.text for e in chunks) == ANSWER  # type: ignore[attr-defined]
    session.store.close()
    grew = size(db) - before
    assert grew <= 2 * len(ANSWER.encode()), (grew, len(ANSWER.encode()))


def test_every_chunk_reads_back_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(streaming(), llm=stream_llm(), store=db)
    session.send("écris le rapport").result()
    session.send("encore une fois, 再来一次").result()
    reopened = sn.Session.open(db, session.id, agent=streaming(), llm=stream_llm())
    assert dumped(reopened) == dumped(session)  # times to the bit, seqs, texts
    assert reopened.export_jsonl(tmp_path / "b.jsonl").read_bytes() == (
        session.export_jsonl(tmp_path / "a.jsonl").read_bytes()
    )
    with sqlite3.connect(settled(db)) as con:  # two answers, two stream rows, no chunk rows
        assert con.execute("SELECT count(*) FROM streams").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM events WHERE type = 'text_delta'").fetchone() == (
            0,
        )
    other = tmp_path / "other.db"
    sn.Session.import_jsonl(tmp_path / "a.jsonl", other, agent=streaming())
    with sqlite3.connect(settled(other)) as con:  # an import packs them again
        assert con.execute("SELECT count(*) FROM streams").fetchone() == (2,)
    again = sn.Session.open(other, session.id, agent=streaming())
    assert dumped(again) == dumped(session)


def test_a_fork_inside_a_stream_keeps_the_chunks_before_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(streaming(), llm=stream_llm(), store=db)
    session.send("écris le rapport").result()
    chunks = [e for e in session.events if e.type == "text_delta"]
    middle = chunks[len(chunks) // 2].seq
    for seq in (chunks[0].seq, chunks[1].seq, middle, chunks[-1].seq):
        fork = session.fork(at=seq)
        assert dumped(fork) == [e.model_dump() for e in session.events if e.seq <= seq]
        again = sn.Session.open(db, fork.id, agent=streaming(), llm=stream_llm())
        assert dumped(again) == dumped(fork)
        fork.send("la suite / 続き").result()  # it goes on
        assert sn.Session.open(db, fork.id, agent=streaming(), llm=stream_llm()).events[
            -1
        ].type == ("run_finished")
    assert dumped(sn.Session.open(db, session.id, agent=streaming())) == dumped(session)


def test_children_streaming_at_once_are_stored_a_stream_each(tmp_path: Path) -> None:
    texts = {"a": "".join(PIECES) * 20, "b": "".join(reversed(PIECES)) * 20}

    def handler(req: sn.ChatRequest) -> object:
        if "task" in req.tools:
            if not req.tool_results:
                return sn.reply(tool_calls=[sn.call("task", agent=f"w{p}", prompt=p) for p in "ab"])
            return "fait / 完了"
        return sn.reply(texts[req.last_user], stream=True)

    team = [sn.Agent(f"w{p}", does="writes", kind=sn.kinds.Realtime()) for p in "ab"]
    lead = sn.Agent("lead", does="plans", team=team)
    db = tmp_path / "runs.db"
    session = sn.Session(lead, llm=sn.mock_llm(handler), store=db)
    session.send("deux parties").result()
    chunks = [e for e in session.events if e.type == "text_delta"]
    assert {e.path for e in chunks} == {"lead", "lead/wa.1", "lead/wb.1"}
    with sqlite3.connect(settled(db)) as con:  # the lead's one chunk stays a row
        rows = con.execute("SELECT path FROM streams ORDER BY path").fetchall()
    assert rows == [("lead/wa.1",), ("lead/wb.1",)]
    reopened = sn.Session.open(db, session.id, agent=lead)
    assert dumped(reopened) == dumped(session)


def test_another_writer_behind_a_stream_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    store.create(SessionRows(StoredSession("s1", "boss", 1.0)))
    store.commit("s1", [Step(3, [chunk(1), chunk(2), chunk(3)])])
    for taken in (2, 3):
        with pytest.raises(StoreError, match="already has events with these numbers"):
            store.commit("s1", [Step(taken, [EventRow(taken, 1, "tool_call", "boss", "{}")])])
    store.commit("s1", [Step(4, [EventRow(4, 1, "tool_call", "boss", "{}")])])
    assert [e.seq for e in store.load("s1").events] == [1, 2, 3, 4]
    store.close()


def test_a_chunk_whose_row_is_not_the_usual_one_stays_a_row(tmp_path: Path) -> None:
    """Rows a store was given come back as given: a chunk with another field, another JSON
    (not ASCII, other spacing) or an escaped lone surrogate is not packed."""
    odd = [
        json.dumps(
            {"type": "text_delta", "seq": 3, "ts": 1.5, "path": "boss", "run": 1, "text": "é"},
            ensure_ascii=False,
        ),
        body_text(
            {
                "type": "text_delta",
                "seq": 4,
                "ts": 1.5,
                "path": "boss",
                "run": 1,
                "text": "x",
                "more": 1,
            }
        ),
        body_text(
            {"type": "text_delta", "seq": 5, "ts": 1.5, "path": "boss", "run": 1, "text": "\ud800"}
        ),
        body_text({"type": "text_delta", "seq": 6, "ts": 1, "path": "boss", "run": 1, "text": "x"}),
    ]
    rows = [chunk(1), chunk(2)] + [
        EventRow(n, 1, "text_delta", "boss", b) for n, b in enumerate(odd, 3)
    ]
    rows += [chunk(7), chunk(8, text="y" * 600)]
    for store in (SQLiteStore(tmp_path / "runs.db"), MemoryStore()):
        store.create(SessionRows(StoredSession("s1", "boss", 1.0)))
        store.commit("s1", [Step(8, rows)])
        assert store.load("s1").events == rows
        store.close()
    with sqlite3.connect(settled(tmp_path / "runs.db")) as con:
        assert con.execute("SELECT first, last FROM streams ORDER BY last").fetchall() == [
            (1, 2),
            (7, 8),
        ]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_the_writer_writes_any_text_as_the_utf8_form_reads_it_back(text: str) -> None:
    """A journal's chunk is stored as its fields, whose row the writer makes with pydantic
    (`body_text`), and read back with `json`'s UTF-8 string encoder (`FORMS`): the two must
    write every text alike (control characters, quotes, U+2028, emoji...)."""
    from json.encoder import encode_basestring

    from pydantic_core import to_json

    assert to_json(text).decode() == encode_basestring(text)


# against the reference store, on arbitrary interleavings

PATHS = ["boss", "boss/writer.1", "boss/writer.2"]


def fields(
    seq: int, path: str = "boss", run: int = 1, text: str | None = None, ts: float | None = None
) -> dict[str, object]:
    """A `text_delta` event's fields, as the journal hands a plain event to the store."""
    return {
        "type": "text_delta",
        "seq": seq,
        "ts": 1_764_600_000.0 + seq / 7 if ts is None else ts,
        "path": path,
        "run": run,
        "text": PIECES[seq % len(PIECES)][: 1 + seq % 9] if text is None else text,
    }


def chunk(seq: int, path: str = "boss", run: int = 1, **more: object) -> EventRow:
    body = body_text(fields(seq, path, run, **more))  # type: ignore[arg-type]
    return EventRow(seq, run, "text_delta", path, str(body))


Commit = list[tuple[Step, list[object]]]
"""A commit's steps, each with the bodies the SQLite store is given: JSON or plain fields."""


@st.composite
def interleavings(draw: st.DrawFn) -> list[Commit]:
    """Commits of chunks from several nodes and runs, between other events of theirs; a chunk
    comes as JSON (ASCII as the writer makes it, or UTF-8 as an import does) or as fields."""
    seq, run, commits = 0, 1, []
    for _ in range(draw(st.integers(1, 5))):
        steps = []
        for _ in range(draw(st.integers(1, 3))):
            events, given = [], []
            for _ in range(draw(st.integers(1, 12))):
                seq += 1
                path = draw(st.sampled_from(PATHS))
                what = draw(st.sampled_from(["chunk", "chunk", "chunk", "other", "run"]))
                if what == "run":
                    run += 1
                if what == "other":
                    events.append(EventRow(seq, run, "tool_call", path, '{"n":1}'))
                    given.append(events[-1].body)
                    continue
                text = draw(st.text(max_size=8)) if draw(st.booleans()) else None
                ts = draw(st.floats()) if draw(st.booleans()) else None
                plain = fields(seq, path, run, text, ts)
                how = draw(st.sampled_from(["ascii", "utf-8", "fields"]))
                body = (
                    json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
                    if how == "utf-8"
                    else str(body_text(plain))
                )
                events.append(EventRow(seq, run, "text_delta", path, body))
                given.append(plain if how == "fields" else body)
            steps.append((Step(seq, events), given))
        commits.append(steps)
    return commits


@settings(max_examples=100, deadline=None)
@given(interleavings())
def test_streams_read_back_as_the_reference_store_keeps_them(commits: list[Commit]) -> None:
    sqlite, memory = SQLiteStore(":memory:"), MemoryStore()
    try:
        for store in (sqlite, memory):
            store.create(SessionRows(StoredSession("s1", "boss", 1.0)))
        for steps in commits:
            memory.commit("s1", [step for step, _ in steps])
            plain = [
                (
                    [
                        (e.seq, e.run, e.type, e.path, b)
                        for e, b in zip(step.events, given, strict=True)
                    ],
                    [],
                    [],
                    [],
                    [],
                )
                for step, given in steps
            ]
            sqlite.commit_plain("s1", plain)
        expected = memory.load("s1")
        assert sqlite.load("s1").events == expected.events
        assert sqlite.sessions() == memory.sessions()
        for seq in range(1, expected.info.last_seq + 1):
            sqlite.fork("s1", seq, StoredSession(f"f{seq}", "boss", 2.0, "s1", seq, seq))
            assert sqlite.load(f"f{seq}").events == expected.at(seq).events
        forks = [s for s in sqlite.sessions() if s.parent]
        assert sorted((s.fork_seq, s.last_seq) for s in forks) == [
            (seq, seq) for seq in range(1, expected.info.last_seq + 1)
        ]
    finally:
        sqlite.close()
        memory.close()
