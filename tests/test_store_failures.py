"""Clear errors, nothing lost: a non-numeric schema, a full disk, a damaged export."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

import sagents_nb as sn

from .settled import settled
from .test_store import BOSS, boss_handler

pytestmark = pytest.mark.timeout(60)


def test_a_schema_that_is_not_a_number_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)
    session.send("go").result()
    session.store.close()
    with sqlite3.connect(db) as con:
        con.execute("UPDATE meta SET value = 'two' WHERE key = 'schema'")
    with pytest.raises(sn.StoreError, match=r"schema 'two', not a number"):
        sn.Session.open(db, session.id, agent=BOSS)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (needs root in a sandbox that allows mounts; skipped otherwise)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_says_disk_full_and_loses_nothing(small_disk: Path) -> None:
    big = "données 東京 " * 40_000  # ~0.6 MB: more than the disk holds
    agent = sn.Agent("a")
    session = sn.Session(agent, llm=sn.script("short", big), store=small_disk / "runs.db")
    assert session.send("first").result().text == "short"
    run = session.send("second")
    with pytest.raises(sn.StoreError, match="disk full") as caught:
        run.result()
    assert "cannot rollback" not in str(caught.value)
    assert caught.value.remedy == "free space on its disk, then call session.flush()"
    assert run.status == "done"  # the run itself finished; it waits in memory to be written
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    session.flush()  # space again: what was queued is written now
    again = sn.Session.open(small_disk / "runs.db", session.id, agent=agent)
    assert [e.type for e in again.events] == [e.type for e in session.events]
    assert again.runs[-1].result().text == big
    session.store.close()
    again.store.close()


def test_a_second_writer_is_told_to_reopen_not_to_free_the_disk(tmp_path: Path) -> None:
    """Two live Sessions on one stored session: the one that writes second is refused with
    what fits its cause (it was told to free the disk)."""
    db = tmp_path / "runs.db"
    first = sn.Session(sn.Agent("a"), llm=sn.script("un", "deux", "三"), store=db)
    first.send("premier").result()
    second = sn.Session.open(db, first.id, agent=sn.Agent("a"), llm=sn.script("四"))
    second.send("第二").result()
    with pytest.raises(sn.StoreError, match="already has events with these numbers") as caught:
        first.send("encore 🚀").result()
    message = str(caught.value)
    assert "sn.Session.open" in message and "free" not in message and "disk" not in message
    first.store.close()
    second.store.close()


def test_a_damaged_export_is_refused_whole_and_can_be_imported_again(tmp_path: Path) -> None:
    session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=tmp_path / "a.db")
    session.send("go").result()
    good = session.export_jsonl(tmp_path / "good.jsonl")
    lines = good.read_text().splitlines()
    # the last message parses as JSON but is no message: found only when it is read back
    last = max(i for i, line in enumerate(lines) if re.search(r'"role":\s*"', line))
    damaged = list(lines)
    damaged[last] = re.sub(r'"role":\s*"\w+"', '"role": "robot"', lines[last], count=1)
    assert damaged != lines
    (tmp_path / "bad.jsonl").write_text("\n".join(damaged) + "\n")
    target = tmp_path / "b.db"
    with pytest.raises(sn.StoreError):
        sn.Session.import_jsonl(tmp_path / "bad.jsonl", target, agent=BOSS)
    assert sn.Session.list_stored(target) == []  # nothing was written
    imported = sn.Session.import_jsonl(good, target, agent=BOSS)  # the same id, now whole
    assert imported.id == session.id
    assert imported.runs[-1].result().text == session.runs[-1].result().text


@pytest.fixture
def read_only_disk(tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """A store with one session on a tmpfs remounted read-only (root needed, else skipped)."""
    disk = tmp_path / "ro"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        session = sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=disk / "runs.db")
        text = session.send("go").result().text
        session.store.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        yield disk / "runs.db", session.id, text
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_read_only_store_opens_to_look_at_and_says_read_only(
    read_only_disk: tuple[Path, str, str],
) -> None:
    db, sid, text = read_only_disk
    assert [s.id for s in sn.Session.list_stored(db)] == [sid]
    session = sn.Session.open(db, sid, agent=BOSS, llm=sn.mock_llm(boss_handler))
    assert session.runs[-1].result().text == text
    assert session.events[-1].type == "run_finished"
    with pytest.raises(sn.StoreError, match="read-only"):
        session.fork()
    with pytest.raises(sn.StoreError, match="read-only") as caught:
        session.send("more").result()
    assert "damaged" not in str(caught.value)
    with pytest.raises(sn.StoreError, match="read-only"):
        sn.Session(BOSS, llm=sn.mock_llm(boss_handler), store=db)


@pytest.mark.parametrize("schema", [2, 3])
def test_an_older_store_on_a_read_only_disk_opens_to_look_at(tmp_path: Path, schema: int) -> None:
    """A file of an older schema is read as it is when it cannot be upgraded (its upgrade only
    adds tables that would be empty); it used to be refused with "copy it"."""
    from .test_store_texts import FIXTURES, LEAD, handler

    disk = tmp_path / "ro"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    db = disk / "runs.db"
    try:
        if schema == 2:  # written by the code before schema 3, with the exports it made
            shutil.copy(FIXTURES / "store_schema2.sqlite3", db)
            expected = [(FIXTURES / f"store_schema2-{n}.jsonl").read_text() for n in (0, 1)]
        else:  # this version's file without what schemas 4 and 5 added
            session = sn.Session(LEAD, llm=sn.mock_llm(handler), store=db)
            session.send("le rapport, s'il vous plaît / 报告").result()
            expected = [session.export_jsonl(tmp_path / "expected.jsonl").read_text()]
            session.store.close()
            with (
                closing(sqlite3.connect(settled(db))) as con,
                con,
            ):  # closed, or the disk stays busy
                con.execute("DROP TABLE streams")
                con.execute("DROP TABLE log")
                con.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        stored = sn.Session.list_stored(db)
        assert len(stored) == len(expected)
        for number, info in enumerate(stored):
            opened = sn.Session.open(db, info.id, agent=LEAD, llm=sn.mock_llm(handler))
            export = opened.export_jsonl(tmp_path / f"{number}.jsonl")
            assert export.read_text() == expected[number]  # every row, as it was
            with pytest.raises(sn.StoreError, match="read-only"):
                opened.fork()
        with closing(sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)) as con:
            assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (
                str(schema),
            )
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
