"""What `store=` accepts (a `Store`, a path to a file, ':memory:') and the error for the rest."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.store import MemoryStore

from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(30)

ACCEPTS = r"store= takes a file path \(a str or os\.PathLike .*':memory:'.*or a Store object"


class FileName:
    """An `os.PathLike` that is not a `pathlib.Path` (its str() is not the path)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return str(self.path)


def durable(store: Any) -> sn.Session:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=store)
    session.send("go").result()
    session.flush()
    return session


@pytest.mark.parametrize(
    "kind",
    [
        "str",
        "Path",
        "PathLike",
        "bytes-PathLike",
        "SQLiteStore",
        "MemoryStore",
        "memory",
        "unicode",
    ],
)
def test_store_takes_a_store_a_path_or_memory(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    file = tmp_path / ("journée 日本語 運行 🤖.db" if kind == "unicode" else "runs.db")
    make: dict[str, Any] = {
        "unicode": lambda: str(file),
        "str": lambda: str(file),
        "Path": lambda: file,
        "PathLike": lambda: FileName(file),
        "bytes-PathLike": lambda: type("Bytes", (), {"__fspath__": lambda _: os.fsencode(file)})(),
        "SQLiteStore": lambda: sn.SQLiteStore(FileName(file)),
        "MemoryStore": MemoryStore,
        "memory": lambda: ":memory:",
    }
    store = make[kind]()
    session = durable(store)
    if kind in ("MemoryStore", "memory"):
        assert os.listdir(tmp_path) == []
        store = session.store  # the store it wrote to
    else:  # the file and its WAL companions, nothing else
        assert {name.split("-")[0] for name in os.listdir(tmp_path)} == {file.name}
        store = file
    again = sn.Session.open(store, session.id, agent=BOSS)
    assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("", "is an empty path"),
        ("   ", "is an empty path"),
        ("notes: 你好\nplus de texte", "holds line breaks or control characters"),
        ("runs\x00.db", "holds line breaks or control characters"),
        ("mysql://user@db.example/runs", "is a URL.*pass a Store object that writes to it"),
        ("sqlite:///runs.db", "is a URL.*for SQLite pass the file's path itself, e.g. 'runs.db'"),
        ("runs/", r"names a folder; pass a file in it, e\.g\. 'runs/runs\.db'"),
        (".", "names a folder"),
        (Path(".."), "names a folder"),
    ],
)
def test_a_string_that_cannot_name_a_file_is_refused(
    target: Any, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    export = durable(":memory:").export_jsonl(tmp_path / "s.jsonl")
    for use in (
        lambda: sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=target),
        lambda: sn.Session.open(target, "x", agent=BOSS),
        lambda: sn.Session.list_stored(target),
        lambda: sn.Session.import_jsonl(export, target, agent=BOSS),
    ):
        with pytest.raises(sn.StoreError, match=f"{problem}.*; {ACCEPTS}"):
            use()
    assert sorted(os.listdir(tmp_path)) == ["runs", "s.jsonl"]  # nothing was created
    assert os.listdir(tmp_path / "runs") == []


class HalfAStore:
    def create(self, rows: object) -> None: ...

    def load(self, session_id: str) -> object: ...


@pytest.mark.parametrize(
    ("target", "named"),
    [
        (42, "not a int"),
        (b"runs.db", "not a bytes"),
        ({"path": "runs.db"}, "not a dict"),
        (HalfAStore(), r"not a HalfAStore \(it has no commit, sessions, close\)"),
    ],
)
def test_another_object_is_refused_with_what_store_takes(
    target: object, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sn.StoreError, match=f"{ACCEPTS}.*; {named}"):
        sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=target)
    with pytest.raises(sn.StoreError, match=f"{ACCEPTS}.*; not a NoneType"):
        sn.Session.open(None, "x", agent=BOSS)
    assert os.listdir(tmp_path) == []
