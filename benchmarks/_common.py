"""What every scenario file shares: the scenarios' work counts, the clock, RSS, and the JSON line.

Stdlib only: each peer's scenario file runs in that peer's own venv and imports this module from
the benchmarks folder (a script's folder is on `sys.path`).

Timing method, the same for every framework: the fake model function (the mock handler for
sagents_nb and the floor, the peer's fake model otherwise) calls `Clock.tick()` once per model
call, and the run itself is timed from just before the framework's run call to just after it
returns. A fanout result is `wall / model_calls` (µs per model turn); the long scenario's growth
is the median time between successive model calls at turns 901-1000 over that at turns 1-100
(the typical turn: a full garbage collection lands in one window or the other depending on the
heap, so the window means, also recorded, swing with it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MARK = "BENCH_JSON "
"""Prefix of the one line a scenario process prints for the harness."""

EARLY = (1, 100)
"""Turns (1-based, inclusive) of the early window of the long scenario."""

SECOND = (101, 200)
"""The next window: a kind with a bounded view (`Main(top_k=64)`) fills it during the early
window, so growth from here on is what its history adds."""


def late_window(n: int) -> tuple[int, int]:
    """Turns of the late window: the last 100 turns (901-1000 for N = 1000)."""
    return max(1, n - 99), n


def expected_work(scenario: str, n: int) -> tuple[int, int]:
    """(model calls, tool calls) a scenario must make, for every framework alike."""
    if scenario.startswith("fanout"):
        return 4 * n + 1, 3 * n
    if scenario == "long-realtime":
        return n, n // 2
    return n + 1, n


@dataclass
class Clock:
    """Timestamps taken by the fake model at each call, plus the run's start and end."""

    ticks: list[float] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    cpu: float = 0.0
    tools: int = 0

    def tick(self) -> None:
        self.ticks.append(time.perf_counter())

    def begin(self) -> None:
        self.ticks = []
        self.tools = 0
        self.cpu = time.process_time()
        self.start = time.perf_counter()

    def finish(self) -> None:
        self.end = time.perf_counter()
        self.cpu = time.process_time() - self.cpu

    @property
    def calls(self) -> int:
        return len(self.ticks)


def window_us(ticks: list[float], lo: int, hi: int, average: Callable[..., float]) -> float:
    """µs between successive model calls for turns lo..hi (turn k = ticks[k] - ticks[k-1])."""
    deltas = [ticks[k] - ticks[k - 1] for k in range(max(1, lo), min(hi, len(ticks) - 1) + 1)]
    return average(deltas) * 1e6 if deltas else float("nan")


def summarise(scenario: str, n: int, clock: Clock) -> dict[str, Any]:
    """One run's numbers, with its work counts checked against the scenario."""
    want_calls, want_tools = expected_work(scenario, n)
    wall = clock.end - clock.start
    sample: dict[str, Any] = {
        "wall_s": wall,
        "model_calls": clock.calls,
        "tool_calls": clock.tools,
        "us_per_turn": wall / max(1, clock.calls) * 1e6,
        "cpu_us_per_turn": clock.cpu / max(1, clock.calls) * 1e6,
    }
    if clock.calls != want_calls or clock.tools != want_tools:
        sample["work_error"] = (
            f"expected {want_calls} model calls and {want_tools} tool calls, got "
            f"{clock.calls} and {clock.tools}"
        )
    if scenario.startswith("long"):
        late = late_window(n)
        for name, average in (("", statistics.median), ("_mean", statistics.fmean)):
            early_us = window_us(clock.ticks, *EARLY, average)
            late_us = window_us(clock.ticks, *late, average)
            sample[f"early{name}_us"] = early_us
            sample[f"late{name}_us"] = late_us
            sample[f"growth{name}"] = late_us / early_us
        sample["growth_after_100"] = sample["late_us"] / window_us(
            clock.ticks, *SECOND, statistics.median
        )
    return sample


def pin_to_one_cpu() -> int | None:
    """Keep this process's threads (those running and those to come) on one CPU; the CPU, or
    None where affinity cannot be set. The long scenarios' growth compares turns of one run:
    a sync tool's worker thread woken on the other CPU than the loop's costs every turn of
    that stretch 70-80 µs more (measured on this 2-core machine), and which window such a
    stretch lands on is chance, so their growth is measured pinned, every framework alike."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = max(os.sched_getaffinity(0))
    for thread in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(thread), {cpu})
        except OSError:  # the thread ended meanwhile
            pass
    return cpu


def rss_mb() -> float:
    """Current resident set size in MB (Linux)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize() / 2**20
    except OSError:
        return float("nan")


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


Scenario = Callable[[int], Clock]


class Unavailable(Exception):
    """Raised by a scenario the installed code cannot run (e.g. no store yet): reported as n/a."""


def main(framework: str, version: str, scenarios: dict[str, Scenario]) -> None:
    """Parse the harness's arguments, run one scenario, print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", required=True, choices=sorted(scenarios))
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds; stop adding runs")
    args = parser.parse_args()
    run = scenarios[args.scenario]
    payload: dict[str, Any] = {
        "framework": framework,
        "version": version,
        "scenario": args.scenario,
        "n": args.n,
        "python": sys.version.split()[0],
    }
    if args.scenario.startswith("long"):
        payload["pinned_cpu"] = pin_to_one_cpu()
    try:
        for _ in range(args.warmup):
            run(min(args.n, 20))
        gc.collect()
        payload["rss_before_mb"] = rss_mb()
        started = time.perf_counter()
        samples = []
        for _ in range(args.runs):
            gc.collect()  # each run starts from a clean heap: no earlier run's garbage, for all alike
            samples.append(summarise(args.scenario, args.n, run(args.n)))
            if time.perf_counter() - started > args.budget:
                break
        payload["samples"] = samples
        payload["peak_rss_mb"] = peak_rss_mb()
        errors = [s["work_error"] for s in samples if "work_error" in s]
        if errors:
            payload["error"] = errors[0]
    except Unavailable as exc:
        payload["unavailable"] = str(exc)
    except Exception as exc:  # reported in the table, never a crash of the harness
        payload["error"] = f"{type(exc).__name__}: {exc}"[:500]
    print(MARK + json.dumps(payload), flush=True)
