"""A fanout run's steps packed (`PendingStep.packed`) against encoded as rows (`plain`), and
the blobs read back (`_store.packed.unpack`): process CPU a run, on this thread alone.

    python benchmarks/store_packed.py [--runs 6] [--rounds 200]

Records `--runs` fanout (N=10) runs with a SQLite store, keeping each step as the store thread
got it; then, in rounds, encodes every run's steps both ways (fresh numberings, the two ways
alternating) and unpacks the blobs, and prints the medians. It checks first that every blob
unpacks to the rows `plain()` gives (PASS/FAIL).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable

import sagents

from sagents_nb._runtime.journal import Numbering, PendingStep
from sagents_nb._store.packed import unpack


def record(runs: int) -> list[list[PendingStep]]:
    """Each run's steps, as the store thread encoded them (before it did)."""
    steps: list[list[PendingStep]] = []
    plain = PendingStep.plain

    def keeping(step: PendingStep) -> object:
        if step._plain is None:
            steps[-1].append(dataclasses.replace(step, report=None))
        return plain(step)

    PendingStep.plain = keeping  # type: ignore[method-assign]
    try:
        for _ in range(runs):
            steps.append([])
            sagents.fanout_store(10)
    finally:
        PendingStep.plain = plain  # type: ignore[method-assign]
    return steps


def fresh(steps: list[PendingStep]) -> list[PendingStep]:
    numbering = Numbering()
    return [dataclasses.replace(step, numbering=numbering) for step in steps]


def timed(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return (time.process_time() - started) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    runs = record(args.runs)
    blobs = [[fresh_step.packed() for fresh_step in fresh(steps)] for steps in runs]
    same = all(
        unpack(blob) == [step.plain()] if blob is not None else False  # type: ignore[arg-type]
        for steps, run_blobs in zip(runs, blobs, strict=True)
        for step, blob in zip(fresh(steps), run_blobs, strict=True)
    )
    print(f"{'PASS' if same else 'FAIL'}: every blob unpacks to the rows plain() gives")
    sizes = [sum(len(b or b"") for b in run) for run in blobs]
    events = [sum(len(step.events) for step in steps) for steps in runs]
    print(
        f"{len(runs)} runs, {statistics.median(events):.0f} events and "
        f"{statistics.median(len(s) for s in runs):.0f} step(s) a run, "
        f"blob {statistics.median(sizes) / 1024:.1f} KB a run"
    )
    plain: list[float] = []
    packed: list[float] = []
    unpacked: list[float] = []
    for _ in range(args.rounds):
        for steps, run_blobs in zip(runs, blobs, strict=True):
            a, b = fresh(steps), fresh(steps)
            plain.append(timed(lambda a=a: [step.plain() for step in a]))
            packed.append(timed(lambda b=b: [step.packed() for step in b]))
            unpacked.append(timed(lambda r=run_blobs: [unpack(blob) for blob in r]))  # type: ignore[arg-type]
    for name, times in (("plain()", plain), ("packed()", packed), ("unpack()", unpacked)):
        print(f"{name:10} {statistics.median(times):7.1f} µs CPU a run (median)")


if __name__ == "__main__":
    main()
