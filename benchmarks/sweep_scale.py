"""`sn.sweep` at eval scale (issue 32, item 2): 10,000 one-turn mocked items into a SQLite
store, in this process. Targets: at most 15 s, peak RSS growth at most 300 MB. Prints the
figures and a PASS/FAIL line per target. (Ray and the Inspect AI comparison: not yet here.)

    .venv/bin/python benchmarks/sweep_scale.py [--items 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mb, rss_mb

import sagents_nb as sn

SECONDS, RSS_GROWTH_MB = 15.0, 300.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    agent = sn.Agent("solver", does="answers")
    before = rss_mb()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        cmp = sn.sweep(
            agent,
            [f"question {i}" for i in range(args.items)],
            llm=lambda: sn.mock_llm(lambda request: "42"),
            store=Path(folder) / "sweep.db",
            progress=False,
        )
        wall = time.perf_counter() - started
        done = sum(r["status"] == "done" for r in cmp.rows)
    growth = peak_rss_mb() - before
    print(
        f"sweep: {args.items:,} one-turn items into SQLite: {wall:.1f} s, {done:,} done, "
        f"peak RSS growth {growth:.0f} MB"
    )
    print(
        f"  {'PASS' if wall <= SECONDS and done == args.items else 'FAIL'}: "
        f"<= {SECONDS:.0f} s: {wall:.1f} s"
    )
    print(
        f"  {'PASS' if growth <= RSS_GROWTH_MB else 'FAIL'}: peak RSS growth <= "
        f"{RSS_GROWTH_MB:.0f} MB: {growth:.0f} MB"
    )


if __name__ == "__main__":
    main()
