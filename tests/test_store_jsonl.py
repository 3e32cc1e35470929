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
