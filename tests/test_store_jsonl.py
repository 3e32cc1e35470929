"""Export one durable session as JSON lines and import it into another store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sagents_nb as sn

from .test_store import BOSS, boss_handler
from .test_store_fork import snapshot

pytestmark = pytest.mark.timeout(30)


def test_export_then_import_round_trips(tmp_path: Path) -> None:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "mine.db")
    session.send("go").result()
    session.send("again").result()
    path = session.export_jsonl(tmp_path / "shared.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["format"] == "sagents_nb.session" and lines[0]["session"]["id"] == session.id
    assert {line.get("record") for line in lines[1:]} == {"event", "message", "node", "task"}

    theirs = tmp_path / "theirs.db"
    imported = sn.Session.import_jsonl(path, theirs, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert imported.id == session.id
    assert snapshot(imported) == snapshot(session)
    assert [r.result().text for r in imported.runs] == [r.result().text for r in session.runs]
    reopened = sn.Session.open(theirs, session.id, agent=BOSS)
    assert snapshot(reopened) == snapshot(session)
    # the whole history came along: forking the copy at an early event works
    first_end = next(e for e in session.events if e.type == "run_finished")
    assert snapshot(imported.fork(at=first_end.seq)) == snapshot(session.fork(at=first_end.seq))

    with pytest.raises(sn.StoreError, match=r"already exists.*another session id"):
        sn.Session.import_jsonl(path, theirs, agent=BOSS)
    copy = sn.Session.import_jsonl(path, theirs, agent=BOSS, session_id="copy")
    assert copy.id == "copy" and snapshot(copy)[0] == snapshot(session)[0]


def test_an_interrupted_session_resumes_after_import(tmp_path: Path) -> None:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "mine.db")
    session.send("go").result()
    request = [e for e in session.events if e.type == "model_request" and e.path == "boss"][1]
    cut = session.fork(at=request.seq)
    path = cut.export_jsonl(tmp_path / "cut.jsonl")
    llm = sn.mock_llm(boss_handler)
    imported = sn.Session.import_jsonl(path, tmp_path / "theirs.db", agent=BOSS, llm=llm)
    assert [r.status for r in imported.runs] == ["incomplete"]
    assert imported.resume().result(timeout=10).text == session.runs[0].result().text


def test_import_errors(tmp_path: Path) -> None:
    with pytest.raises(sn.StoreError, match=r"cannot read .*missing\.jsonl"):
        sn.Session.import_jsonl(tmp_path / "missing.jsonl", tmp_path / "x.db", agent=BOSS)
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": "world"}\n')
    with pytest.raises(sn.StoreError, match="not a sagents_nb session export"):
        sn.Session.import_jsonl(other, tmp_path / "x.db", agent=BOSS)
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=":memory:")
    session.send("go").result()
    good = session.export_jsonl(tmp_path / "good.jsonl").read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*good[:3], "{not json", *good[3:]]))
    with pytest.raises(sn.StoreError, match="line 4 is not a valid record"):
        sn.Session.import_jsonl(broken, tmp_path / "x.db", agent=BOSS)
    plain = sn.Session(BOSS, llm=sn.mock_llm(boss_handler))
    with pytest.raises(sn.StoreError, match="needs a durable session"):
        plain.export_jsonl(tmp_path / "plain.jsonl")


# every break `str.splitlines` splits at that JSON may leave raw in a string, and text in many
# scripts: an export holding them imports whole
BREAKS = "\u2028 \u2029 \x85 \x0b \x0c \x1c \x1d \x1e"
WORDS = 'Voilà, l\'été ! 東京の天気は晴れ。日本語も。🎉🚀 `print("a\\nb")` {"k": [1]}'


@pytest.mark.parametrize("store_kind", ["sqlite", "memory"])
def test_texts_with_every_line_break_round_trip(tmp_path: Path, store_kind: str) -> None:
    from sagents_nb.store import MemoryStore

    def store(name: str) -> object:
        return MemoryStore() if store_kind == "memory" else tmp_path / name

    answer = f"{WORDS} {BREAKS} fin"
    session = sn.Session(
        sn.Agent("a"),
        llm=sn.mock_llm(lambda req: f"{req.last_user} → {answer}"),
        store=store("a.db"),
    )
    assert session.send(f"question {BREAKS} {WORDS}").result().status == "done"
    path = session.export_jsonl(tmp_path / "breaks.jsonl")
    text = path.read_text(encoding="utf-8")
    # every record is one line, whichever line breaks a reader splits at
    assert len(text.splitlines()) == text.count("\n") == len(text.split("\n")) - 1
    assert "\\u2028" in text and "\u2028" not in text and "東京" in text and "🎉" in text

    imported = sn.Session.import_jsonl(path, store("b.db"), agent=sn.Agent("a"))
    assert snapshot(imported) == snapshot(session)
    assert imported.runs[0].result().text == f"question {BREAKS} {WORDS} → {answer}"

    # an export written before the breaks were escaped (them raw in its lines) imports too
    raw = text.replace("\\u2028", "\u2028").replace("\\u2029", "\u2029").replace("\\u0085", "\x85")
    assert "\u2028" in raw
    older = tmp_path / "older.jsonl"
    older.write_text(raw, encoding="utf-8")
    again = sn.Session.import_jsonl(older, store("c.db"), agent=sn.Agent("a"), session_id="c")
    assert snapshot(again)[1:] == snapshot(session)[1:]
    assert again.runs[0].result().text == imported.runs[0].result().text
