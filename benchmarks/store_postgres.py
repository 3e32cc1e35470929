"""The PostgreSQL store beside SQLite (issue 32 item 5): recording a long session, committing a
step, reopening and forking, on the same sessions, in one run.

    .venv/bin/python benchmarks/store_postgres.py                  # 1,000 and 4,000 tool turns
    .venv/bin/python benchmarks/store_postgres.py --turns 200 800  # quicker

PostgreSQL is a cluster of its own on loopback (Debian's `postgresql`, started and stopped as the
tests do: tests/postgres_support.py), with the server's default settings (`fsync=on`,
`synchronous_commit=on`: a commit is on disk when it returns). It is measured twice: as it is,
and with `synchronous_commit=off` for the store's connection (in its URL), which is what SQLite's
WAL with `synchronous=NORMAL` promises (a killed process loses nothing committed; an OS crash may
lose the last commits). Printed: one JSON line per figure, then a table with the ratios to
SQLite. No target: the figures say what a team's shared store costs against a file. A full
garbage collection runs before each timing, outside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sagents_nb as sn
from sagents_nb.store import (
    EventRow,
    MessageWrite,
    NodeRow,
    PostgresStore,
    SessionRows,
    Step,
    StoredSession,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' server, shared
from tests.postgres_support import running_postgres


@sn.tool
def step(i: int) -> str:
    """One step of a long job.

    Args:
        i: the step's number.
    """
    return f"step {i} done — étape {i} 完了"


def recorded(store: Any, turns: int, durability: str = "async") -> tuple[str, float, int]:
    """A session of `turns` tool turns recorded into `store`: its id, the run's seconds (until
    everything is committed) and its event count."""

    def handler(req: sn.ChatRequest) -> object:
        done = len(req.tool_results)
        if done < turns:
            return sn.reply(tool_calls=[sn.call("step", i=done)])
        return "all done"

    agent = sn.Agent("worker", tools=[step], max_turns=turns + 5, kind=sn.kinds.Main(top_k=8))
    session = sn.Session(
        agent,
        llm=sn.mock_llm(handler),
        store=store,
        max_model_calls=None,
        durability=durability,
    )
    gc.collect()
    started = time.perf_counter()
    result = session.send("go").result()
    session.flush()
    took = time.perf_counter() - started
    assert result.turns >= turns, f"the {turns}-turn session stopped early: {result.text}"
    return session.id, took, len(session.events)


def open_and_fork(store: Any, sid: str) -> tuple[float, float]:
    """Seconds of `Session.open` and of `fork()` of session `sid`, on a new store object."""
    agent = sn.Agent("worker", tools=[step])
    gc.collect()  # the sessions opened before are garbage: collected outside the timing
    started = time.perf_counter()
    session = sn.Session.open(store, sid, agent=agent)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    session.fork()
    forked = time.perf_counter() - started
    store.close()
    return opened, forked


def commit_cost(store: Any, count: int) -> float:
    """Seconds per `store.commit` of one ordinary step (3 events, 2 messages, a node row),
    committed one by one, as `durability="turn"` does."""
    store.create(SessionRows(StoredSession("commits", "worker", time.time())))
    text = "le résultat est prêt — 結果の準備ができました 🚀 " * 4
    timings = []
    for n in range(count):
        seq = 3 * n
        events = [
            EventRow(seq + k, 1, "tool_call", "worker", json.dumps({"seq": seq + k, "t": text}))
            for k in (1, 2, 3)
        ]
        messages = [MessageWrite("worker", "llm", seq + 3, [(2 * n + 1, text), (2 * n + 2, text)])]
        nodes = [NodeRow("worker", "state", seq + 3, json.dumps({"turns": n}))]
        started = time.perf_counter()
        store.commit("commits", [Step(seq + 3, events, messages, nodes)])
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--turn-durability", type=int, default=200, help="turns, durability=turn")
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="sn-pg-") as tmp, running_postgres(()) as server:
        version = server.sql("SHOW server_version")[0][0]
        kinds: dict[str, Callable[[str], Any]] = {
            "sqlite": lambda n: sn.SQLiteStore(Path(tmp) / f"{n}.db"),
            "postgres": lambda n: PostgresStore(server.url(), schema=n),
            "postgres, synchronous_commit=off": lambda n: PostgresStore(
                server.url() + "?options=-csynchronous_commit%3Doff", schema=n
            ),
        }
        names = {kind: f"k{index}" for index, kind in enumerate(kinds)}
        for kind, make in kinds.items():  # warm-up: imports, schemas, the server's caches
            sid, _, _ = recorded(make(f"{names[kind]}_warm"), 20)
            open_and_fork(make(f"{names[kind]}_warm"), sid)
            rows[kind] = {}
        for turns in sorted(args.turns):
            stored: dict[str, str] = {}
            records: dict[str, list[float]] = {kind: [] for kind in kinds}
            timings: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
            for round_ in range(args.repeat):  # the kinds in turn, each round
                for kind, make in kinds.items():
                    store = make(f"{names[kind]}_{turns}_{round_}")
                    sid, took, events = recorded(store, turns)
                    store.close()
                    stored.setdefault(kind, sid)
                    records[kind].append(took)
            for _ in range(args.repeat):
                for kind, make in kinds.items():
                    store = make(f"{names[kind]}_{turns}_0")
                    timings[kind].append(open_and_fork(store, stored[kind]))
            for kind, pairs in timings.items():
                rows[kind][f"record {turns} turns ({events} events), s"] = statistics.median(
                    records[kind]
                )
                rows[kind][f"open {events} events, s"] = statistics.median(p[0] for p in pairs)
                rows[kind][f"fork {events} events, s"] = statistics.median(p[1] for p in pairs)
        turn = f"durability=turn, ms a turn ({args.turn_durability} turns)"
        rounds: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
        for round_ in range(args.repeat):
            for kind, make in kinds.items():
                store = make(f"{names[kind]}_durable{round_}")
                _, took, _ = recorded(store, args.turn_durability, durability="turn")
                rounds[kind].append((took / args.turn_durability, commit_cost(store, args.commits)))
                store.close()
        for kind, pairs in rounds.items():
            rows[kind][turn] = statistics.median(p[0] for p in pairs) * 1000
            rows[kind]["commit of a step, ms"] = statistics.median(p[1] for p in pairs) * 1000
        for kind, figures in rows.items():
            print(json.dumps({kind: figures}, ensure_ascii=False), flush=True)
    print(f"\nPostgreSQL {version} on loopback; medians of {args.repeat} rounds, the kinds in turn")
    figures = list(rows["sqlite"])
    kinds_shown = list(rows)
    print("| | " + " | ".join(kinds_shown) + " |")
    print("|---" * (len(kinds_shown) + 1) + "|")
    for name in figures:
        base = rows["sqlite"][name]
        cells = [f"{base:.3g}"] + [
            f"{rows[kind][name]:.3g} ({rows[kind][name] / base:.1f}x)" for kind in kinds_shown[1:]
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
