"""One bad character must not stop storage: text with a lone surrogate (a model's broken
escape, bytes decoded with `surrogateescape`) is stored with U+FFFD in its place, an `error`
event says so, and every later step is stored as usual."""

from __future__ import annotations

from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb.events import RunFinished
from sagents_nb.store import MemoryStore

from .settled import settled


@sn.tool
def read(name: str) -> str:
    """Read a file.

    Args:
        name: the file.
    """
    return (
        "fichier " + "é 東京 😀 ".encode().decode() + b"\xff\xfe".decode("utf-8", "surrogateescape")
    )


def handler(req: sn.ChatRequest) -> object:
    if req.last_user == "again":
        return "encore une fois: ça marche, 日本語も 😀"
    if not req.tool_results:
        return sn.reply("je regarde \ud83d", tool_calls=[sn.call("read", name="x")])
    return "résumé \udc80 fin: " + req.tool_results[-1]


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_a_lone_surrogate_in_a_reply_or_a_tool_result_is_stored_as_replacement(
    tmp_path: Path, kind: str
) -> None:
    store = sn.SQLiteStore(tmp_path / "runs.db") if kind == "file" else MemoryStore()
    agent = sn.Agent("a", tools=[read])
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=store)
    result = session.send("go").result()
    assert result.status == "done"
    assert "\udc80" in result.text  # the session in memory keeps the text as it came
    assert session.send("again").result().text.startswith("encore")
    session.flush()

    again = sn.Session.open(store, session.id, agent=agent)
    assert len(again.events) == len(session.events)  # nothing after the bad text was lost
    notes = [e for e in again.events if e.type == "error"]
    assert notes and all("U+FFFD" in e.message for e in notes)
    finished = [e.text for e in again.events if e.type == "run_finished"]
    assert finished[0].startswith("résumé \ufffd fin: fichier é 東京 😀 ")
    assert finished[1] == "encore une fois: ça marche, 日本語も 😀"
    tool_results = [m.content for m in again.llm_messages if m.role == "tool"]
    assert tool_results == ["fichier é 東京 😀 \ufffd\ufffd"]
    replies = [m.content for m in again.llm_messages if m.role == "assistant"]
    assert replies[0] == "je regarde \ufffd"
    store.close()


def test_a_fork_shares_its_sources_messages_but_takes_repaired_ones_from_the_store(
    tmp_path: Path,
) -> None:
    agent = sn.Agent("a", tools=[read])
    session = sn.Session(agent, llm=sn.mock_llm(handler), store=tmp_path / "runs.db")
    session.send("go").result()
    forked = session.fork()
    pairs = list(zip(session.llm_messages, forked.llm_messages, strict=True))
    assert next(b.content for _, b in pairs if b.role == "assistant") == "je regarde \ufffd"
    for source, branch in pairs:
        clean = not any("\ud800" <= c <= "\udfff" for c in str(source.content))
        assert (branch is source) == clean  # immutable: shared, unless stored repaired
        assert branch == source if clean else branch.content != source.content
    assert forked.send("again").result().text.startswith("encore")
    session.store.close()


def test_a_state_row_with_an_escaped_lone_surrogate_reads_back(tmp_path: Path) -> None:
    """Another program (or an older sagents_nb) may store one escaped: pydantic's parser, which
    reads the rows, refuses it, and `json`'s reads it as it was written."""
    import sqlite3

    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("solo"), llm=sn.mock_llm(lambda req: "oui ✅"), store=db)
    session.send("bonjour").result()
    session.store.close()
    with sqlite3.connect(settled(db)) as conn:
        (seq,) = conn.execute("SELECT max(seq) FROM nodes WHERE part = 'state'").fetchone()
        conn.execute(
            "UPDATE nodes SET body = ? WHERE part = 'state' AND seq = ?",
            ('{"input_text":"à \\ud800 東京","status":"done"}', seq),
        )
    reopened = sn.Session.open(db, session.id, agent=sn.Agent("solo"))
    assert reopened.root.input_text == "à \ud800 東京" and reopened.root.status == "done"
    reopened.store.close()


def test_an_event_made_json_by_its_class_has_its_lone_surrogate_repaired_and_reported() -> None:
    event = RunFinished(
        seq=3, ts=1.0, path="a", run="r", status="ok", text="fin \ud800 猫 🐱", turns=1, usage=None
    )
    said: list[int] = []
    body = PendingStep(0, [], [], Numbering(), report=said.append)._event_body(event)
    assert body == (
        '{"type":"run_finished","seq":3,"ts":1.0,"path":"a","run":"r","status":"ok",'
        '"text":"fin \ufffd 猫 🐱","turns":1,"usage":null}'
    )
    assert said == [1]
