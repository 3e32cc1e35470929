"""The context pane of one long node, built in the kernel as a tab switch or a redraw builds it:
the whole pane (chart, diff, forgotten list, the turn's two columns) and the columns alone
(`turn_detail`), on a 1,200-turn `Main` node with a small view (`top_k=4`) and with everything
in view (`top_k=None`), the latest turn shown.

    .venv/bin/python benchmarks/context_pane.py [--turns 1200] [--rounds 5] [--against DIR]

`--against DIR` times the package found in DIR too (e.g. main's, from `git archive main
sagents_nb | tar -x -C DIR`), alternating with this checkout's round by round, and prints the
medians of each with the load at the start and the end (the machine is shared: noisy).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCENARIOS = {"small view": 4, "all in view": None}


def measure(turns: int, top_k: int | None, repeats: int = 30) -> dict[str, float]:
    """Median milliseconds of one `context_pane` and one `turn_detail` of the latest turn."""
    import sagents_nb as sn
    from sagents_nb.notebook._context_pane import context_pane, turn_detail
    from sagents_nb.notebook._projector import Projector

    @sn.tool
    def tick(n: int) -> str:
        """Count one.

        Args:
            n: which tick.
        """
        return f"tick {n} · 計数 ✓"

    count = itertools.count()

    def handler(request: sn.ChatRequest) -> Any:
        done = next(count)
        if done >= turns - 1:
            return "fini"
        return sn.reply(tool_calls=[sn.call("tick", n=done)])

    kind = sn.kinds.Main(top_k=top_k, recent=2, max_turns=turns + 10)
    session = sn.Session(sn.Agent("counter", tools=[tick], kind=kind), llm=sn.mock_llm(handler))
    session.send("compte — 数えて").result()
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    node = projector.nodes["counter"]
    turn = node.turn_log[-1]
    context_pane(node, None)  # the diff is worked out once, then cached on the node

    def median_ms(build: Any) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            build()
            samples.append(time.perf_counter() - started)
        return round(statistics.median(samples) * 1000, 3)

    return {
        "turns": len(node.turn_log),
        "storage": turn.storage_len,
        "view": len(turn.view),
        "context_pane_ms": median_ms(lambda: context_pane(node, None)),
        "turn_detail_ms": median_ms(lambda: turn_detail(node, turn)),
    }


def child(package: str | None, turns: int) -> dict[str, Any]:
    """One measure in a fresh process importing the package from `package` (None: this one)."""
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = package
    out = subprocess.run(
        [sys.executable, __file__, "--one", "--turns", str(turns)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="a directory holding another sagents_nb")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps({name: measure(options.turns, k) for name, k in SCENARIOS.items()}))
        return
    arms: dict[str, str | None] = {"this": None}
    if options.against is not None:
        arms = {"against": str(options.against.resolve()), **arms}
    load = os.getloadavg()
    samples: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    for round_ in range(options.rounds):
        order = list(arms) if round_ % 2 == 0 else list(reversed(arms))
        for arm in order:
            samples[arm].append(child(arms[arm], options.turns))
    print(f"load average at the start {load[0]:.2f}, at the end {os.getloadavg()[0]:.2f}")
    for arm, runs in samples.items():
        for name in SCENARIOS:
            first = runs[0][name]
            figures = {
                key: statistics.median(run[name][key] for run in runs)
                for key in ("context_pane_ms", "turn_detail_ms")
            }
            print(
                f"{arm:8} {name:12} {first['turns']} turns, storage {first['storage']}, "
                f"view {first['view']}: context_pane {figures['context_pane_ms']:.2f} ms, "
                f"turn_detail {figures['turn_detail_ms']:.2f} ms (median of {len(runs)} rounds)"
            )


if __name__ == "__main__":
    main()
