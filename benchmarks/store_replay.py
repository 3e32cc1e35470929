"""The store thread's work on a fixed input, for A/B counts of instructions (issue 32 item 3).

    python benchmarks/store_replay.py --capture /tmp/steps.pkl   # record 6 fanout-store runs
    python benchmarks/store_replay.py --replay /tmp/steps.pkl --reps 4 [--encode-only] [--hash]

`--capture` runs the fanout (N=10) with a SQLite store and pickles the steps each commit took
(`PendingStep`s: events, messages, node snapshots, tasks, as the loop sealed them). `--replay`
encodes and commits them again, `--reps` times, into sessions of a new file, on this thread
alone (no loop, no GIL hand-overs), and prints the process CPU a model turn. The same pickle
replayed by two trees is the same work, so callgrind counts compare exactly: run it under
`valgrind --tool=callgrind` with `--reps 1` and `--reps 4`; the difference over 3 × the turns
is the store thread's instructions a turn. `--hash` prints a digest of every table's rows
(the same digest from two trees: the same bytes stored).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import pickle
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import sagents

from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb._store import writer
from sagents_nb._store.protocol import SessionRows, StoredSession
from sagents_nb._store.sqlite.store import SQLiteStore

RUNS = 6
TURNS = 41
"""Model turns of a fanout run of N=10 (the parent's 11, each worker's 3)."""
TABLES = ("events", "messages", "nodes", "tasks", "texts", "streams")


def capture(path: Path) -> None:
    captured: list[tuple[str, list[PendingStep]]] = []
    commit_all = writer._commit_all

    def recording(batches: list[writer.Batch]) -> None:
        for step_writer, steps, _ in batches:
            if steps:
                kept = [dataclasses.replace(cast(PendingStep, s), report=None) for s in steps]
                captured.append((step_writer.session_id, kept))
        commit_all(batches)

    writer._commit_all = recording
    for _ in range(RUNS):
        sagents.fanout_store(10)
    path.write_bytes(pickle.dumps(captured))
    print(f"{len(captured)} commits, {sum(len(s) for _, s in captured)} steps -> {path}")


def replay(path: Path, reps: int, encode_only: bool, digest: bool) -> None:
    captured = pickle.loads(path.read_bytes())
    ids = {sid for sid, _ in captured}
    store = SQLiteStore(str(Path(tempfile.mkdtemp(prefix="sn-replay-")) / "replay.db"))
    for rep in range(reps):
        for sid in ids:
            store.create(SessionRows(StoredSession(f"{sid}-{rep}", "parent", 0.0)))
    times = []
    for rep in range(reps):
        numbering = {sid: Numbering() for sid in ids}
        work = [
            (f"{sid}-{rep}", [dataclasses.replace(s, numbering=numbering[sid]) for s in steps])
            for sid, steps in captured
        ]
        started = time.process_time()
        for sid, steps in work:
            plain = [step.plain() for step in steps]
            if not encode_only:
                store.commit_plain(sid, plain)
        times.append(time.process_time() - started)
    if digest:
        found = hashlib.sha256()
        store.settle()  # the tables as every commit's log row makes them
        with sqlite3.connect(store.path) as db:
            for table in TABLES:
                for row in db.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
                    found.update(repr(row).encode())
        print(f"rows: {found.hexdigest()}")
    store.close()
    times.sort()
    print(f"{times[len(times) // 2] / (RUNS * TURNS) * 1e6:.1f} µs CPU a model turn (median)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capture", type=Path)
    parser.add_argument("--replay", type=Path)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--encode-only", action="store_true")
    parser.add_argument("--hash", action="store_true")
    args = parser.parse_args()
    if args.capture:
        capture(args.capture)
    elif args.replay:
        replay(args.replay, args.reps, args.encode_only, args.hash)
    else:
        sys.exit("pass --capture FILE or --replay FILE")


if __name__ == "__main__":
    main()
