"""`PostgresStore` beyond the contract (tests/test_store_contract.py runs that against it): a real
session through it, a URL as `store=`, processes creating one store at once, a dropped
connection, a password kept out of sight, a foreign schema, and psycopg as an optional extra.
Every test runs on the real PostgreSQL server of `postgres_support.py`."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.store import (
    PostgresStore,
    SessionRows,
    Step,
    StoredSession,
    StoreError,
)

from .postgres_support import PostgresServer
from .test_store import dumps, lookup
from .test_store_contract import event, write
from .test_store_fork import bank_model, transfer

pytestmark = pytest.mark.timeout(120)

PAYER = sn.Agent("payer", does="pays people", tools=[transfer])
CHIEF = sn.Agent("chief", does="has bills paid", tools=[lookup], team=[PAYER])


CHIEF_STEPS = [
    sn.reply(tool_calls=[sn.call("lookup", x=7)]),
    sn.reply(tool_calls=[sn.call("task", agent="payer", prompt="payer 1000 — 支払い")]),
]


def chief_model(req: sn.ChatRequest) -> sn.Reply | str:
    """The chief looks a number up, has the payer pay (`bank_model`), then reports."""
    if "task" not in req.tools:
        return bank_model(req)
    done = len(req.tool_results)
    return CHIEF_STEPS[done] if done < len(CHIEF_STEPS) else f"fait : {req.tool_results[-1]}"


def said(messages: list[sn.Message]) -> list[tuple[Any, ...]]:
    """A transcript without its call ids."""
    return [
        (m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls or ()]) for m in messages
    ]


def record(session: sn.Session) -> tuple[Any, ...]:
    """What a session holds, without its ids and times."""
    return (
        [(e.seq, e.run, e.type, e.path) for e in session.events],
        said(session.llm_messages),
        said(session.display_messages),
        [(r.number, r.status) for r in session.runs],
        session.tree.status,
    )


def scenario(store: Any, folder: Path) -> dict[str, Any]:
    """A session with a child, tools and two pauses, stored in `store`, then reopened, forked at
    the child's pause (the fork resumes and is rejected there), exported and imported."""
    llm = sn.mock_llm(chief_model)
    session = sn.Session(CHIEF, llm=llm, store=store)
    run = session.send("payez la facture — 請求書 🧾", pause_on={"tool"})
    assert run.wait(timeout=20) == "paused" and run.paused_at is not None
    assert run.paused_at.name == "lookup"
    run.approve()
    assert run.wait(timeout=20) == "paused" and run.paused_at.name == "transfer"
    pause = session.events[-1].seq
    run.edit(amount=10, to="Alice")
    answer = run.result(timeout=20).text
    session.flush()

    again = sn.Session.open(store, session.id, agent=CHIEF, llm=sn.mock_llm(chief_model))
    assert [e.model_dump() for e in again.events] == [e.model_dump() for e in session.events]
    assert dumps(again.llm_messages) == dumps(session.llm_messages)
    assert again.tree.to_dict() == session.tree.to_dict()
    fork = again.fork(at=pause)
    forked_before = record(fork)
    resumed = fork.resume(pause_on={"tool"})
    assert resumed.wait(timeout=20) == "paused" and resumed.paused_at is not None
    paused_again = resumed.paused_at.name
    resumed.reject("non, pas à Mallory")
    forked_answer = resumed.result(timeout=20).text
    fork.flush()
    reopened_fork = sn.Session.open(store, fork.id, agent=CHIEF)

    exported = again.export_jsonl(folder / f"{session.id}.jsonl")
    imported = sn.Session.import_jsonl(exported, store, agent=CHIEF, session_id="imported")
    listed = {s.id: s for s in sn.Session.list_stored(store)}
    return {
        "answer": answer,
        "record": record(again),
        "fork": forked_before,
        "paused again": paused_again,
        "forked answer": forked_answer,
        "fork reopened": record(reopened_fork) == record(fork),
        "imported": record(imported) == record(again),
        "listed": sorted(
            (s.parent == session.id, s.fork_seq, s.last_seq, s.agent) for s in listed.values()
        ),
        "tasks": [(t.agent, t.status) for t in again.tree.children],
    }


def test_a_real_session_reopens_forks_and_moves_as_in_sqlite(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    in_sqlite = scenario(tmp_path / "runs.db", tmp_path)
    store = postgres_server.store()
    try:
        in_postgres = scenario(store, tmp_path)
    finally:
        store.close()
    assert in_postgres == in_sqlite
    assert in_postgres["answer"] == "fait : Résultat : envoyé 10 à Alice"
    assert in_postgres["paused again"] == "transfer"
    assert "rejected" in in_postgres["forked answer"]
    assert in_postgres["fork reopened"] and in_postgres["imported"]


def test_a_postgresql_url_as_store_names_the_database(postgres_server: PostgresServer) -> None:
    url = postgres_server.database()
    session = sn.Session(CHIEF, llm=sn.mock_llm(chief_model), store=url)
    assert isinstance(session.store, PostgresStore)
    assert repr(session.store) == f"PostgresStore({url!r})"
    assert session.send("payez").result(timeout=20).text.startswith("fait : Résultat")
    again = sn.Session.open(url, session.id, agent=CHIEF)
    assert again.store is session.store  # one store (one connection) for one URL
    assert dumps(again.llm_messages) == dumps(session.llm_messages)
    assert [s.id for s in sn.Session.list_stored(url)] == [session.id]
    tables = postgres_server.sql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'sagents_nb'", url=url
    )
    assert tables == [(6,)]


def test_processes_creating_one_store_at_once_all_write(postgres_server: PostgresServer) -> None:
    """Four processes open the same new store (schema) at the same moment and write a session
    each, five times over: none fails, and a lock is never taken for damage."""
    schemas = [postgres_server.schema() for _ in range(5)]
    code = """
import sys, time
from sagents_nb.store import PostgresStore, SessionRows, StoredSession, Step, EventRow
url, start, name, *schemas = sys.argv[1:]
time.sleep(max(0.0, float(start) - time.time()))
for schema in schemas:
    store = PostgresStore(url, schema=schema)
    store.create(SessionRows(StoredSession(name, "boss", time.time())))
    store.commit(name, [Step(1, [EventRow(1, 1, "run_started", "boss", '{"t":"日本語"}')])])
    store.close()
"""
    start = time.time() + 3  # every process imported by then: they open together
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", code, postgres_server.url(), str(start), f"w{n}", *schemas],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    errors = [worker.communicate(timeout=90)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0] * 4, errors
    for schema in schemas:
        store = PostgresStore(postgres_server.url(), schema=schema, create=False)
        assert sorted((s.id, s.last_seq) for s in store.sessions()) == [
            (f"w{n}", 1) for n in range(4)
        ]
        store.close()


def test_stores_opened_at_the_same_instant_take_turns(postgres_server: PostgresServer) -> None:
    """Eight connections making one new store at the very same moment, twenty times."""
    for _ in range(20):
        schema = postgres_server.schema()
        barrier = threading.Barrier(8)
        opened: list[object] = []

        def open_one(
            schema: str = schema,
            barrier: threading.Barrier = barrier,
            opened: list[object] = opened,
        ) -> None:
            barrier.wait()
            opened.append(_try(lambda: PostgresStore(postgres_server.url(), schema=schema)))

        threads = [threading.Thread(target=open_one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        stores = [store for store in opened if isinstance(store, PostgresStore)]
        for store in stores:
            store.close()
        assert len(stores) == 8, [e for e in opened if e not in stores]


def test_a_store_being_made_elsewhere_is_waited_for_not_called_damaged(
    postgres_server: PostgresServer,
) -> None:
    import psycopg

    from sagents_nb._store.postgres.schema import lock_id

    schema = postgres_server.schema()
    holder = psycopg.connect(postgres_server.url(), autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (lock_id(schema),))
    opened: list[object] = []
    thread = threading.Thread(
        target=lambda: opened.append(
            _try(lambda: PostgresStore(postgres_server.url(), schema=schema))
        )
    )
    thread.start()
    time.sleep(1.0)
    assert opened == []  # waiting for the lock, not failing
    impatient = postgres_server.url() + "?options=-clock_timeout%3D200"
    with pytest.raises(StoreError, match=r"another process is making .*not damaged: open it"):
        PostgresStore(impatient, schema=schema)  # a server that stops waiting says so
    holder.execute("SELECT pg_advisory_unlock(%s)", (lock_id(schema),))
    holder.close()
    thread.join(timeout=30)
    (store,) = opened
    assert isinstance(store, PostgresStore)
    store.close()


def _try(make: Any) -> object:
    try:
        return make()
    except BaseException as exc:
        return exc


def drop(server: PostgresServer, store: PostgresStore) -> None:
    """Have the server end `store`'s connection, as a restart or an idle timeout does."""
    pid = store._link._db.info.backend_pid
    assert server.sql("SELECT pg_terminate_backend(%s)", pid) == [(True,)]


def test_a_dropped_connection_is_made_again_and_the_write_sent_again(
    postgres_server: PostgresServer,
) -> None:
    store = postgres_server.store()
    store.create(SessionRows(StoredSession("s1", "boss", 1.0)))
    store.commit("s1", [Step(1, [event(1)], [write(1, 1)])])
    drop(postgres_server, store)
    store.commit("s1", [Step(2, [event(2)], [write(2, 2)])])  # on a new connection
    drop(postgres_server, store)
    assert [e.seq for e in store.load("s1").events] == [1, 2]
    loaded = store.load("s1")
    assert ([e.seq for e in loaded.events], [m.n for m in loaded.messages]) == ([1, 2], [1, 2])
    store.close()


def test_a_session_goes_on_while_its_connection_is_dropped(postgres_server: PostgresServer) -> None:
    """The session's writer retries a refused commit with its next step: nothing is lost."""
    store = postgres_server.store()
    session = sn.Session(CHIEF, llm=sn.mock_llm(chief_model), store=store)
    run = session.send("payez", pause_on={"tool"})
    assert run.wait(timeout=20) == "paused"
    drop(postgres_server, store)
    run.approve()
    assert run.wait(timeout=20) == "paused"
    run.approve()
    assert run.result(timeout=20).status == "done"
    session.flush()
    again = sn.Session.open(store, session.id, agent=CHIEF)
    assert record(again) == record(session)
    store.close()


def test_a_password_is_never_shown(postgres_server: PostgresServer) -> None:
    secret = "s3cret-été-🔑"
    url = postgres_server.url().replace("postgres@", f"postgres:{secret}@")
    store = PostgresStore(url, schema=postgres_server.schema())  # trusted: any password passes
    assert secret not in repr(store) and "postgres:***@127.0.0.1" in repr(store)
    store.close()
    with pytest.raises(StoreError) as closed:
        store.sessions()
    assert secret not in str(closed.value)

    with _closed_port() as port:
        shown = []
        for conninfo in (
            f"postgresql://alice:{secret}@127.0.0.1:{port}/runs",
            f"postgresql://alice@127.0.0.1:{port}/runs?password={secret}&sslmode=disable",
            f"host=127.0.0.1 port={port} dbname=runs user=alice password='{secret}'",
            f"host=127.0.0.1 port={port} password={secret} nonsense",  # a malformed one
        ):
            for make in (
                lambda c=conninfo: PostgresStore(c, connect_timeout=2),
                lambda c=conninfo: (
                    sn.Session(CHIEF, llm=sn.mock_llm(chief_model), store=c)
                    if "://" in c
                    else PostgresStore(c)
                ),
            ):
                with pytest.raises(StoreError) as failed:
                    make()
                assert secret not in str(failed.value) and failed.value.__cause__ is None
                shown.append(str(failed.value))
    assert "cannot connect to postgresql://alice:***@127.0.0.1" in shown[0]
    assert "check that the server is running" in shown[0]


class _closed_port:
    """A loopback port nothing listens on."""

    def __enter__(self) -> int:
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))  # bound, never listening: connecting is refused
        return int(self._socket.getsockname()[1])

    def __exit__(self, *_: object) -> None:
        self._socket.close()


def test_a_schema_holding_something_else_is_refused(postgres_server: PostgresServer) -> None:
    schema = postgres_server.schema()
    with pytest.raises(StoreError, match=rf"no sagents_nb store in schema '{schema}'"):
        PostgresStore(postgres_server.url(), schema=schema, create=False)
    postgres_server.sql(f'CREATE SCHEMA "{schema}"; CREATE TABLE "{schema}".events (x int)')
    with pytest.raises(
        StoreError, match=r"holds tables that are not a sagents_nb store \(events\)"
    ):
        PostgresStore(postgres_server.url(), schema=schema)
    newer = postgres_server.schema()
    PostgresStore(postgres_server.url(), schema=newer).close()
    postgres_server.sql(f"UPDATE \"{newer}\".meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(StoreError, match=r"written by a newer sagents_nb .*upgrade sagents_nb"):
        PostgresStore(postgres_server.url(), schema=newer)


def test_a_fork_of_an_unknown_session_names_the_ones_there(postgres_server: PostgresServer) -> None:
    store = postgres_server.store()
    store.create(SessionRows(StoredSession("s1", "boss", 1.0)))
    with pytest.raises(StoreError, match=r"no session 'zz' .*\(sessions there: s1\)"):
        store.fork("zz", 1, StoredSession("f1", "boss", 2.0, "zz", 1, 1))
    with pytest.raises(StoreError, match=r"no session 'zz' .*to commit to; create it first"):
        store.commit("zz", [Step(1, [event(1)])])
    assert [s.id for s in store.sessions()] == ["s1"]
    store.close()


def test_psycopg_is_an_optional_extra() -> None:
    """`import sagents_nb` and its store seam never load psycopg; without it, a PostgresStore
    (or a postgresql:// URL as store=) says which extra to install."""
    code = """
import sys
import sagents_nb as sn, sagents_nb.store
assert "psycopg" not in sys.modules
sys.modules["psycopg"] = None  # as if not installed
from sagents_nb.store import PostgresStore
for make in (lambda: PostgresStore("postgresql://127.0.0.1/x"),
             lambda: sn.Session(sn.Agent("a"), llm=sn.mock_llm(str), store="postgresql://127.0.0.1/x")):
    try:
        make()
    except ImportError as exc:
        print(exc)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        done.stdout.splitlines()
        == ["PostgresStore needs psycopg 3, an optional extra: pip install 'sagents_nb[postgres]'"]
        * 2
    )


def test_a_sweep_commits_its_runs_in_groups_as_in_sqlite(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """A sweep's store thread commits many runs in one transaction (`commit_group`) on the
    server too; every run reads back as the same sweep's runs read back from SQLite."""
    items = ["payez la facture — 請求書 🧾", "encore : もう一度 🤖", "print('42')"]
    variants = {"worker": {}, "resident": {"payer": sn.kinds.Resident()}}

    def sweep(store: Any) -> tuple[list[Any], list[Any]]:
        cmp = sn.sweep(CHIEF, items, variants, llm=sn.mock_llm(chief_model), store=store)
        reopened = [record(cmp.open(r.variant, r.item)) for r in cmp.records]
        return [(r["variant"], r["status"], r["answer"]) for r in cmp.rows], reopened

    store = postgres_server.store()
    groups: list[int] = []
    grouped = store.commit_group

    def counted(writes: Any) -> None:
        groups.append(len(writes))
        grouped(writes)

    store.commit_group = counted  # type: ignore[method-assign]
    try:
        in_postgres = sweep(store)
    finally:
        store.close()
    assert in_postgres == sweep(tmp_path / "runs.db")
    assert [status for _, status, _ in in_postgres[0]] == ["done"] * 6
    assert groups  # the runs went through the group commit
