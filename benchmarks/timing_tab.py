"""What the Timing tab costs a run while it is open: a 200-child delegation on the mock endpoint,
viewed with the default tab, with the Timing tab, and with the Timing tab rebuilt at every update
(no `REBUILD_INTERVAL`), and the size of one Timing pane.

No front end: this measures the kernel side (folding the timings, building and serialising the
throttled pane updates). Variants rotate, a different one first each round, so drift hits all
alike; process CPU time decides, wall time is printed beside it.

    .venv/bin/python benchmarks/timing_tab.py [--repeats 5] [--children 200]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

import sagents_nb as sn
from sagents_nb.notebook import _timing_pane, view

VARIANTS = ("transcript", "timing", "timing, every update")


@sn.tool
def lookup(key: int) -> str:
    """Look a key up.

    Args:
        key: which key.
    """
    return f"value {key}"


def handler(children: int) -> Any:
    def answer(request: sn.ChatRequest) -> Any:
        if "task" in request.tools:
            if not request.tool_results:
                calls = [sn.call("task", agent="w", prompt=f"job {i}") for i in range(children)]
                return sn.reply(tool_calls=calls)
            return "all done"
        if len(request.tool_results) < 2:
            return sn.reply(tool_calls=[sn.call("lookup", key=len(request.tool_results))])
        return "done"

    return answer


def one_run(children: int, variant: str) -> tuple[float, float, int]:
    """Run once with a view on `variant`'s tab; CPU and wall seconds, and the last pane's bytes."""
    tab, _, every = variant.partition(", ")
    interval = _timing_pane.REBUILD_INTERVAL
    if every:
        _timing_pane.REBUILD_INTERVAL = 0.0
    try:
        return _timed_run(children, tab)
    finally:
        _timing_pane.REBUILD_INTERVAL = interval


def _timed_run(children: int, tab: str) -> tuple[float, float, int]:
    worker = sn.Agent("w", does="looks up", tools=[lookup])
    lead = sn.Agent("lead", does="delegates", team=[worker])
    session = sn.Session(lead, llm=sn.mock_llm(handler(children)))
    live = view(session)
    live.focus.tab = tab
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = session.send("go").result()
    live.flush()
    sample = (time.process_time() - cpu, time.perf_counter() - wall, len(live.pane))
    live.close()
    if result.status != "done":
        raise RuntimeError(f"the benchmark run ended {result.status}: {result.text}")
    return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per variant (median taken)")
    parser.add_argument("--children", type=int, default=200, help="children the lead spawns")
    options = parser.parse_args()
    one_run(5, "timing")  # warm up imports, the loop thread and the mock
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in VARIANTS}
    for repeat in range(options.repeats):
        shift = repeat % len(VARIANTS)
        for variant in VARIANTS[shift:] + VARIANTS[:shift]:
            samples[variant].append(one_run(options.children, variant))
    base = statistics.median(s[0] for s in samples["transcript"])
    for variant, runs in samples.items():
        cpu = statistics.median(s[0] for s in runs)
        wall = statistics.median(s[1] for s in runs)
        print(
            f"{variant:>20}: {cpu:.3f} s CPU ({cpu / base:.2f}x the default tab), "
            f"{wall:.3f} s wall, last pane {runs[-1][2]} bytes"
        )
    print(f"medians of {options.repeats} runs each")


if __name__ == "__main__":
    main()
