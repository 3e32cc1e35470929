"""No amplification: a long text is stored once in a store file (the `texts` table of schema 3)
and every row that holds it refers to it; everything reads back whole, to the byte, through
reopen, fork, export and import; a schema-2 file upgrades with nothing lost."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sagents_nb as sn
from sagents_nb._store.sqlite.store import SCHEMA_VERSION
from sagents_nb._store.sqlite.texts import MIN_CHARS, Cutter, Texts, reference
from sagents_nb.store import MemoryStore

from .settled import settled

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parent / "fixtures"

PIECES = [
    "Le rapport est prêt : « déjà vérifié », à l'œil nu. ",
    "报告已经准备好了，数据已核实。",
    "報告の準備ができました。東京の事務所で確認済みです。",
    "🚀✨👩🏽‍💻🎉 ",
    'def f(x):\n\treturn {"key": x, "path": "C:\\\\temp\\\\a.txt", "nul": "\\u0000"}  # 注释\n',
]
ANSWER = "".join(PIECES) * 400
"""~60 KB of answer in French, Chinese, Japanese, emoji and code (quotes, backslashes, tabs)."""

RESULT = "".join(reversed(PIECES)) * 20


@sn.tool
def read_file(name: str) -> str:
    """Read a file.

    Args:
        name: its name.
    """
    return f"{name}: {RESULT}"


WORKER = sn.Agent("worker", does="writes one part", tools=[read_file])
LEAD = sn.Agent("lead", does="writes the report", tools=[read_file], team=[WORKER])


def handler(req: sn.ChatRequest) -> sn.Reply | str:
    if "task" in req.tools:
        done = len(req.tool_results)
        if done == 0:
            return sn.reply(tool_calls=[sn.call("read_file", name="main.py")])
        if done == 1:
            return sn.reply(
                tool_calls=[sn.call("task", agent="worker", prompt="partie 1 / 第一部")]
            )
        return ANSWER
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("read_file", name="part.py")])
    return "第一部完了 / partie 1 : " + ANSWER[:3000]


def texts_in(db: Path) -> list[str]:
    with sqlite3.connect(settled(db)) as con:
        return [row[0] for row in con.execute("SELECT text FROM texts")]


def stored_bytes(db: Path) -> int:
    """The bytes of every value the file's rows and texts hold."""
    with sqlite3.connect(settled(db)) as con:
        total = 0
        for table in ("events", "messages", "nodes", "tasks", "texts"):
            columns = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
            for column in columns:
                total += con.execute(
                    f"SELECT coalesce(sum(length(CAST({column} AS BLOB))), 0) FROM {table}"
                ).fetchone()[0]
        return total


def dumps(messages: list[sn.Message]) -> list[dict[str, object]]:
    return [m.model_dump() for m in messages]


def same_session(a: sn.Session, b: sn.Session) -> None:
    assert dumps(a.llm_messages) == dumps(b.llm_messages)
    assert dumps(a.display_messages) == dumps(b.display_messages)
    assert [e.model_dump() for e in a.events] == [e.model_dump() for e in b.events]
    assert a.tree.to_dict() == b.tree.to_dict()
    assert [r.result().text for r in a.runs] == [r.result().text for r in b.runs]


def test_a_long_answer_is_stored_once_and_reads_back_whole(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("writer"), llm=sn.script(ANSWER), store=db)
    assert session.send("écris / 書いて / 写 🙂").result().text == ANSWER
    session.flush()
    # the reply, its display copy, run_finished, the node's outcome and the text_delta: one text
    assert texts_in(db) == [ANSWER]
    assert stored_bytes(db) < 1.1 * len(ANSWER.encode())

    again = sn.Session.open(db, session.id, agent=sn.Agent("writer"))
    same_session(again, session)
    assert [e.text for e in again.events if e.type == "text_delta"] == [ANSWER]
    assert again.root.last_outcome is not None and again.root.last_outcome.text == ANSWER
    fork = again.fork()
    same_session(fork, session)
    assert texts_in(db) == [ANSWER]  # the fork's rows refer to the same text


def test_tool_results_and_a_childs_answer_are_stored_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(LEAD, llm=sn.mock_llm(handler), store=db)
    assert session.send("écris le rapport / 報告を書いて").result().text == ANSWER
    session.flush()
    child_answer = "第一部完了 / partie 1 : " + ANSWER[:3000]
    stored = texts_in(db)
    assert sorted(stored) == sorted(
        {ANSWER, child_answer, f"main.py: {RESULT}", f"part.py: {RESULT}"}
    )
    with sqlite3.connect(settled(db)) as con:  # the settled task's text is a reference
        assert con.execute("SELECT typeof(text) FROM tasks").fetchall() == [("blob",)]

    again = sn.Session.open(db, session.id, agent=LEAD, llm=sn.mock_llm(handler))
    same_session(again, session)
    entry = again.root.tasks[("worker", "partie 1 / 第一部")]
    assert entry.outcome is not None and entry.outcome.text == child_answer
    assert [e.text for e in again.events if e.type == "task_finished"] == [child_answer]
    assert again.send("encore 🙂").result().text == ANSWER  # it goes on writing
    again.flush()
    same_session(sn.Session.open(db, session.id, agent=LEAD), again)
    assert len(texts_in(db)) == len(stored)


def test_export_carries_every_text_whole_and_imports_into_either_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(LEAD, llm=sn.mock_llm(handler), store=db)
    session.send("go").result()
    exported = session.export_jsonl(tmp_path / "session.jsonl")
    text = exported.read_text(encoding="utf-8")
    assert text.count(json.dumps(ANSWER, ensure_ascii=False)) >= 4
    assert json.loads(text.splitlines()[0])["schema"] == 2  # the export's format is unchanged
    for store in (sn.SQLiteStore(tmp_path / "other.db"), MemoryStore()):
        imported = sn.Session.import_jsonl(exported, store=store, agent=LEAD, session_id="copy")
        same_session(imported, session)
        bodies = [json.loads(e.body) for e in session.store.load(session.id).events]
        assert [json.loads(e.body) for e in store.load("copy").events] == bodies
        store.close()
    assert texts_in(tmp_path / "other.db")


def test_rows_come_back_as_they_were_given_in_both_stores(tmp_path: Path) -> None:
    """The store contract holds for rows with long texts: what `create` and `commit` take,
    `load` gives back to the byte, in a file and in memory alike."""
    session = sn.Session(LEAD, llm=sn.mock_llm(handler), store=MemoryStore())
    session.send("go").result()
    session.flush()
    rows = session.store.load(session.id)
    for store in (sn.SQLiteStore(tmp_path / "rows.db"), sn.SQLiteStore(":memory:")):
        store.create(rows)
        assert store.load(session.id) == rows
        store.close()


def test_a_long_text_with_a_lone_surrogate_is_stored_repaired(tmp_path: Path) -> None:
    broken = ANSWER[:2000] + "\udc80" + ANSWER[:2000]
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("writer"), llm=sn.script(broken), store=db)
    assert session.send("go").result().text == broken
    for _ in range(500):  # the note is emitted on the loop once the step was encoded
        if any(e.type == "error" for e in session.events):
            break
        time.sleep(0.01)
    session.flush()
    repaired = broken.replace("\udc80", "\ufffd")
    assert texts_in(db) == [repaired]
    again = sn.Session.open(db, session.id, agent=sn.Agent("writer"))
    assert again.runs[0].result().text == repaired
    assert again.llm_messages[-1].content == repaired
    assert any(e.type == "error" and "U+FFFD" in e.message for e in again.events)


def test_a_text_that_looks_like_a_reference_is_kept_whole(tmp_path: Path) -> None:
    forged = reference(b"\x01" * 16).strip('"').encode().decode("unicode_escape")
    answer = ANSWER[:1000] + forged + '"' + ANSWER[:1000]
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("writer"), llm=sn.script(answer, forged * 20), store=db)
    session.send("go").result()
    session.send("again").result()
    session.flush()
    again = sn.Session.open(db, session.id, agent=sn.Agent("writer"))
    same_session(again, session)
    assert [r.result().text for r in again.runs] == [answer, forged * 20]


def test_a_missing_text_is_reported_as_damage(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("writer"), llm=sn.script(ANSWER), store=db)
    session.send("go").result()
    session.store.close()
    with sqlite3.connect(settled(db)) as con:
        con.execute("DELETE FROM texts")
    with pytest.raises(sn.StoreError, match=r"missing from the texts table.*damaged"):
        sn.Session.open(db, session.id, agent=sn.Agent("writer"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
long_texts = st.text(min_size=MIN_CHARS, max_size=MIN_CHARS + 50)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values | long_texts, min_size=1), st.booleans())
def test_any_body_is_cut_and_put_back_to_the_byte(data: dict[str, object], dumped: bool) -> None:
    """A body as JSON text (pydantic's or `json.dumps`') or as plain fields: cut and read back,
    it is the same JSON text, its long strings stored once."""
    body: str | dict[str, object] = data
    if dumped:
        body = json.dumps(data, ensure_ascii=False)
    cutter = Cutter()
    try:
        stored = cutter.body(body)
    except UnicodeEncodeError:  # hypothesis draws lone surrogates: they never reach a store
        return
    if isinstance(stored, bytes):
        db = sqlite3.connect(":memory:")
        db.execute("CREATE TABLE texts (hash BLOB PRIMARY KEY, text TEXT NOT NULL)")
        db.executemany("INSERT INTO texts VALUES (?, ?)", cutter.found.items())
        whole = Texts(db).body(stored)
        assert json.loads(whole) == json.loads(body) if dumped else json.loads(whole) == data
        if dumped:
            assert whole == body
        assert all(text not in stored.decode() for text in cutter.found.values())
    else:
        assert stored is body


def test_a_schema_2_file_upgrades_with_every_row_intact(tmp_path: Path) -> None:
    """`store_schema2.sqlite3` was written by the code before schema 3 (see
    fixtures/make_store_schema2.py), with the exports that code made of its two sessions."""
    db = tmp_path / "old.db"
    shutil.copy(FIXTURES / "store_schema2.sqlite3", db)
    store = sn.SQLiteStore(db, create=False)
    stored = store.sessions()
    assert [s.parent is None for s in stored] == [True, False]
    for number, info in enumerate(stored):
        session = sn.Session.open(store, info.id, agent=LEAD, llm=sn.mock_llm(handler))
        export = session.export_jsonl(tmp_path / f"{number}.jsonl")
        expected = (FIXTURES / f"store_schema2-{number}.jsonl").read_text(encoding="utf-8")
        assert export.read_text(encoding="utf-8") == expected  # every row, as it was
    with sqlite3.connect(settled(db)) as con:
        schema = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        assert schema == (str(SCHEMA_VERSION),)
        assert con.execute("SELECT count(*) FROM texts").fetchone() == (0,)

    old = sn.Session.open(store, stored[0].id, agent=LEAD, llm=sn.mock_llm(handler))
    outcome = old.root.last_outcome
    assert outcome is not None and outcome.text.startswith("Rapport final : les données")
    assert "東京の事務所" in outcome.text and "🚀✨👩‍💻" in outcome.text
    assert old.send("et encore / もう一度 🙂").result().text == ANSWER
    old.flush()
    assert ANSWER in texts_in(db)  # new rows keep their long texts apart, old ones as they were
    again = sn.Session.open(store, old.id, agent=LEAD)
    same_session(again, old)
    same_session(again.fork(), again)
    store.close()


def test_long_instructions_in_every_request_are_stored_once(tmp_path: Path) -> None:
    """A system prompt is in every model request's view (not a stored message): kept once."""
    instructions = "Tu es un assistant précis. あなたは正確です。你很准确。🙂\n" * 20
    agent = sn.Agent("helper", instructions=instructions, tools=[read_file])
    db = tmp_path / "runs.db"

    def reply(req: sn.ChatRequest) -> sn.Reply | str:
        if len(req.tool_results) < 3:
            return sn.reply(tool_calls=[sn.call("read_file", name=f"f{len(req.tool_results)}")])
        return "fini / 完了"

    session = sn.Session(agent, llm=sn.mock_llm(reply), store=db)
    session.send("go").result()
    session.flush()
    views = [e for e in session.events if e.type == "model_request"]
    assert len(views) == 4 and all(instructions in e.messages[0].content for e in views)
    system = views[0].messages[0].content
    assert texts_in(db).count(system) == 1
    again = sn.Session.open(db, session.id, agent=agent)
    same_session(again, session)


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE texts SET text = replace(text, '报告', '報告')",  # same length, other content
        "UPDATE texts SET text = substr(text, 1, 1000)",  # cut short
        "UPDATE texts SET text = CAST(text AS BLOB)",  # the same bytes, no longer TEXT
    ],
)
def test_a_text_altered_on_disk_is_reported_as_damage(tmp_path: Path, change: str) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(sn.Agent("writer"), llm=sn.script(ANSWER), store=db)
    session.send("go").result()
    session.store.close()
    with sqlite3.connect(settled(db)) as con:
        assert con.execute(change).rowcount > 0
    with pytest.raises(sn.StoreError) as raised:
        sn.Session.open(db, session.id, agent=sn.Agent("writer"))
    message = str(raised.value)
    assert f"session {session.id!r}" in message
    assert "changed since it was written" in message and "damaged" in message
    assert "backup" in message
