"""Where a store-on fanout run's extra time goes (issue 32 item 3: the store on <= 1.3x bare).

    python benchmarks/store_anatomy.py --runs 200

Runs the fanout (N=10) bare and with a SQLite store (one file, as `sagents.py --scenario
fanout-store`), alternating in one process, and prints medians in µs a run:

- the timeline: before the first model call, between the first and the last, after the last
  until `run_sync` returns, and the process CPU, for both, with the ratio;
- the store thread's commit: wall and CPU of that thread, and its share spent encoding; the
  process's user and system time a run (system time is the kernel's, e.g. writing the WAL:
  callgrind does not count it);
- the WAL frames (pages) a commit writes, by B-tree (`dbstat`), and the bytes of the packed steps.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import sagents

import sagents_nb as sn
from sagents_nb._runtime.journal import PendingStep
from sagents_nb._store import writer
from sagents_nb._store.sqlite.store import SQLiteStore

PHASES = ("before the first call", "first to last call", "after the last call", "process CPU")
FRAME_HEADER = 24
FRAME_RUNS = 30


class Probe:
    """Timestamps of one run's model calls, and what its commit cost on the store thread."""

    def __init__(self) -> None:
        self.calls: list[float] = []
        self.commits: list[dict[str, float]] = []
        self.frames: collections.Counter[str] = collections.Counter()
        self.row_bytes = 0
        self.counting = False
        """Count the WAL frames of each commit (slow: not while timing)."""

    def install(self) -> None:
        tick = sagents._clock.tick

        def ticked() -> None:
            self.calls.append(time.perf_counter())
            tick()

        sagents._clock.tick = ticked  # type: ignore[method-assign]
        commit, committed, plain, packed, commit_packed = (
            writer.StepWriter._commit,
            writer.StepWriter._committed,
            PendingStep.plain,
            PendingStep.packed,
            SQLiteStore.commit_packed,
        )
        started: dict[str, Any] = {}

        def timed_commit(self_: Any, steps: Any, promises: Any) -> Any:
            started["wall"] = time.perf_counter()
            started["cpu"] = time.thread_time()
            started["encoding"] = 0.0
            return commit(self_, steps, promises)

        def timed_committed(self_: Any, *args: Any) -> None:
            # measured before the promises wake the run: the next run then takes the GIL
            self.commits.append(
                {
                    "wall": time.perf_counter() - started["wall"],
                    "thread CPU": time.thread_time() - started["cpu"],
                    "encoding": started["encoding"],
                }
            )
            committed(self_, *args)

        def encoding(way: Any) -> Any:
            def timed(self_: Any) -> Any:
                start = time.thread_time()
                try:
                    return way(self_)
                finally:
                    started["encoding"] += time.thread_time() - start

            return timed

        def counted(store: SQLiteStore, session_id: str, steps: Any) -> None:
            if not self.counting:
                commit_packed(store, session_id, steps)
                return
            self.row_bytes += sum(map(len, steps.blobs))
            wal = store.path + "-wal"
            start = os.path.getsize(wal)
            commit_packed(store, session_id, steps)
            self.frames.update(_frames(store, wal, start))

        writer.StepWriter._commit = timed_commit  # type: ignore[method-assign]
        writer.StepWriter._committed = timed_committed  # type: ignore[method-assign]
        PendingStep.plain = encoding(plain)  # type: ignore[method-assign]
        PendingStep.packed = encoding(packed)  # type: ignore[method-assign]
        SQLiteStore.commit_packed = counted  # type: ignore[method-assign]


def _frames(store: SQLiteStore, wal: str, start: int) -> collections.Counter[str]:
    """The B-trees of the pages a commit appended to the WAL (from `start`)."""
    end = os.path.getsize(wal)
    if end <= start:  # a checkpoint restarted the WAL: not counted
        return collections.Counter()
    page = store._db.execute("PRAGMA page_size").fetchone()[0]
    with open(wal, "rb") as file:
        file.seek(start)
        data = file.read(end - start)
    numbers = [
        struct.unpack(">I", data[at : at + 4])[0] for at in range(0, len(data), page + FRAME_HEADER)
    ]
    names = dict(store._db.execute("SELECT pageno, name FROM dbstat"))
    return collections.Counter(names.get(number, "?") for number in numbers)


def one(store: SQLiteStore | None, probe: Probe) -> tuple[float, ...]:
    probe.calls = []
    llm = sn.mock_llm(sagents.fanout_handler(10))
    options: dict[str, Any] = {} if store is None else {"store": store}
    started, cpu = time.perf_counter(), time.process_time()
    sagents.PARENT.run_sync("go", llm=llm, **options)
    ended, cpu = time.perf_counter(), time.process_time() - cpu
    first, last = probe.calls[0], probe.calls[-1]
    return first - started, last - first, ended - last, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    probe = Probe()
    probe.install()
    store = SQLiteStore(Path(tempfile.mkdtemp(prefix="sn-anatomy-")) / "runs.db")
    warm = 10
    bare, stored = [], []
    usage_bare, usage_store = [0.0, 0.0], [0.0, 0.0]
    for n in range(args.runs + warm):
        if n == warm:
            probe.commits.clear()
            usage_bare, usage_store = [0.0, 0.0], [0.0, 0.0]
        for store_or_none, times, usage in ((None, bare, usage_bare), (store, stored, usage_store)):
            before = resource.getrusage(resource.RUSAGE_SELF)
            times.append(one(store_or_none, probe))
            after = resource.getrusage(resource.RUSAGE_SELF)
            usage[0] += after.ru_utime - before.ru_utime
            usage[1] += after.ru_stime - before.ru_stime
    bare, stored = bare[warm:], stored[warm:]
    commits = len(probe.commits)
    probe.counting = True
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL grows from its start
    for _ in range(FRAME_RUNS):
        one(store, probe)
    print(f"{args.runs} runs each, alternating; µs a run (medians)")
    print(f"{'':24s} {'bare':>8s} {'store':>8s} {'store - bare':>13s}")
    for k, phase in enumerate(PHASES):
        a = statistics.median(r[k] for r in bare) * 1e6
        b = statistics.median(r[k] for r in stored) * 1e6
        print(f"{phase:24s} {a:8.0f} {b:8.0f} {b - a:13.0f}")
    walls = [sum(r[:3]) for r in bare], [sum(r[:3]) for r in stored]
    print(f"wall ratio {statistics.median(walls[1]) / statistics.median(walls[0]):.2f}x")
    print(
        f"\nthe store thread's commits ({commits / args.runs:.2f} a run), µs a commit (medians; "
        "thread CPU is user and system time):"
    )
    for key in ("wall", "thread CPU", "encoding"):
        print(f"  {key:10s} {statistics.median(c[key] for c in probe.commits) * 1e6:8.0f}")
    for name, usage in (("bare", usage_bare), ("store", usage_store)):
        user, system = (total / args.runs * 1e6 for total in usage)
        print(f"process {name}: user {user:.0f}, system {system:.0f} µs a run (means)")
    print(
        f"\nWAL frames a commit ({sum(probe.frames.values()) / FRAME_RUNS:.1f}, of "
        f"{probe.row_bytes / FRAME_RUNS / 1024:.1f} KB of packed steps; {FRAME_RUNS} more runs):"
    )
    for name, count in probe.frames.most_common():
        print(f"  {name:14s} {count / FRAME_RUNS:6.1f}")
    store.close()


if __name__ == "__main__":
    main()
