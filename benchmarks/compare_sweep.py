"""What `sn.compare` and `sn.sweep` cost over plain runs, on the mock endpoint (issue 22).

- compare: 3 variants of the fanout N=10 scenario in one `sn.compare` against the same three
  runs one after another with `run_sync`. Target: at most 1.2x. The verdict uses process CPU
  time (other load on the machine disturbs it less than wall time; compare's runs overlap, so
  its wall time is lower); both are printed. Variants alternate so drift hits both alike.
- sweep: 200 fanout N=10 runs at concurrency 20. Per-run cost must stay flat: the process CPU
  time per finished run over runs 110-180 against runs 21-90 of the same sweep (the first and
  last `concurrency` runs ramp up and drain), ~1.0 when flat; a 50-run sweep's per-run CPU time
  is printed beside it.
- ray (`--ray`): the same sweep of `--ray-runs` runs with `executor="ray"` on a local two-CPU
  cluster (started and shut down here), reported as wall time per run over in-process; no target.

    .venv/bin/python benchmarks/compare_sweep.py [--repeats 5] [--ray]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from sagents import PARENT, fanout_handler

import sagents_nb as sn

TARGET = 1.2
N = 10
VARIANTS = {
    "default": {},
    "six turns": {"worker": sn.kinds.Worker(max_turns=6)},
    "seven turns": {"worker": {"kind": "worker", "max_turns": 7}},
}


def endpoint() -> sn.LLM:
    return sn.mock_llm(fanout_handler(N))


def measured(work: Callable[[], Any]) -> tuple[float, float]:
    """(wall, cpu) seconds of `work()` after a full collection."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def three_runs() -> None:
    for _ in VARIANTS:
        result = PARENT.run_sync("go", llm=endpoint())
        assert result.status == "done", result.text


def one_compare() -> None:
    cmp = sn.compare(PARENT, "go", VARIANTS, llm=endpoint)
    assert [r["status"] for r in cmp.rows] == ["done"] * 3, cmp.rows
    assert all(r["model_calls"] == 4 * N + 1 for r in cmp.rows), cmp.rows


class Completions:
    """A progress reporter that only notes the process's CPU time at each finished run."""

    def __init__(self) -> None:
        self.cpu: list[float] = []

    def start(self, total: int, done: int) -> None:
        self.cpu = [time.process_time()]

    def advance(self, done: int, errors: int) -> None:
        self.cpu.append(time.process_time())

    def close(self, interrupted: bool) -> None:
        pass


def a_sweep(runs: int, concurrency: int, **options: Any) -> tuple[sn.Comparison, Completions]:
    clock = Completions()
    cmp = sn.sweep(
        PARENT,
        [f"go {i}" for i in range(runs)],
        llm=endpoint,
        concurrency=concurrency,
        progress=clock,
        **options,
    )
    bad = [r for r in cmp.rows if r["status"] != "done"]
    assert not bad, bad[:3]
    return cmp, clock


def steady_growth(cpu: list[float], concurrency: int) -> float:
    """CPU per finished run late in the sweep over early on, both in the steady state (the
    first `concurrency` completions ramp up, the last ones drain)."""
    n = len(cpu) - 1
    width = (n - 3 * concurrency) // 2
    early = concurrency + 1
    late = n - concurrency - width
    return (cpu[late + width] - cpu[late]) / (cpu[early + width] - cpu[early])


def bench_compare(repeats: int) -> None:
    one_compare(), three_runs()  # warm up
    plain, compared = [], []
    for i in range(repeats):
        order = (three_runs, one_compare) if i % 2 == 0 else (one_compare, three_runs)
        for work in order:
            (plain if work is three_runs else compared).append(measured(work))
    wall = statistics.median(c[0] for c in compared) / statistics.median(p[0] for p in plain)
    cpu = statistics.median(c[1] for c in compared) / statistics.median(p[1] for p in plain)
    print(
        f"compare: 3 variants of fanout N={N} in one sn.compare vs 3 run_sync runs: "
        f"cpu {cpu:.2f}x, wall {wall:.2f}x (three runs: "
        f"{statistics.median(p[0] for p in plain) * 1e3:.0f} ms wall)"
    )
    print(f"  target compare <= {TARGET}x (cpu): {'met' if cpu <= TARGET else 'MISSED'}")


def bench_sweep(repeats: int) -> None:
    a_sweep(20, 20)  # warm up
    growth, per_run = [], {50: [], 200: []}
    for _ in range(repeats):
        for runs in (50, 200):
            gc.collect()
            cpu = time.process_time()
            _cmp, clock = a_sweep(runs, 20)
            per_run[runs].append((time.process_time() - cpu) / runs)
            if runs == 200:
                growth.append(steady_growth(clock.cpu, 20))
    late_early = statistics.median(growth)
    print(
        f"sweep: 200 fanout N={N} runs at concurrency 20: "
        f"{statistics.median(per_run[200]) * 1e3:.2f} ms cpu per run "
        f"(a 50-run sweep: {statistics.median(per_run[50]) * 1e3:.2f} ms); cpu per run, runs "
        f"110-180 over 21-90: {late_early:.2f}"
    )
    print(f"  per-run cost flat (late/early <= 1.2): {'met' if late_early <= 1.2 else 'MISSED'}")


def start_ray(ray: Any, attempts: int = 3) -> None:
    """A local two-CPU cluster; Ray gives its node 30 s to start, which a loaded machine can
    miss: then what the failed start left (this process's Ray children) is stopped and Ray is
    started again."""
    import psutil

    for attempt in range(attempts):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            return
        except Exception:
            ray.shutdown()
            left = [p for p in psutil.Process().children(recursive=True) if _is_ray(p)]
            for child in left:
                child.terminate()
            psutil.wait_procs(left, timeout=10)
            if attempt == attempts - 1:
                raise


def _is_ray(process: Any) -> bool:
    import psutil

    try:
        return "ray" in " ".join(process.cmdline())
    except psutil.Error:  # already gone, or a zombie
        return False


def bench_ray(runs: int) -> None:
    import os

    import ray

    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    start_ray(ray)
    try:
        a_sweep(4, 2, executor="ray")  # warm up the workers
        here = measured(lambda: a_sweep(runs, 2))[0]
        there = measured(lambda: a_sweep(runs, 2, executor="ray"))[0]
    finally:
        ray.shutdown()
    print(
        f"ray: {runs} fanout N={N} runs, concurrency 2, local 2-CPU cluster: "
        f"{there / runs * 1e3:.1f} ms wall per run vs {here / runs * 1e3:.1f} ms in process "
        f"(+{(there - here) / runs * 1e3:.1f} ms per run); no target yet"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ray", action="store_true", help="also measure executor='ray'")
    parser.add_argument("--ray-runs", type=int, default=40)
    parser.add_argument("--ray-only", action="store_true", help="only measure executor='ray'")
    args = parser.parse_args()
    if not args.ray_only:
        bench_compare(args.repeats)
        bench_sweep(max(1, args.repeats // 2))
    if args.ray or args.ray_only:
        bench_ray(args.ray_runs)


if __name__ == "__main__":
    main()
