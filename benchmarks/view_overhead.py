"""What a live view costs a run: ~10,000 events on the mock endpoint, with and without a view.

The view has no front end here, so this measures the kernel side: folding every event into view
state and rendering and serialising the (throttled) updates. Target: at most 1.15x. The verdict
uses process CPU time, which other load on the machine disturbs less than wall-clock time; both
are printed. Variants alternate (plain, viewed, viewed, plain, ...) so drift hits both alike.

    .venv/bin/python benchmarks/view_overhead.py [--repeats 5] [--turns 900]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sagents_nb as sn
from sagents_nb.notebook import view

TARGET = 1.15
CALLS_PER_TURN = 4


@sn.tool
def lookup(key: int) -> str:
    """Look a key up.

    Args:
        key: which key.
    """
    return f"value {key}"


def scripted(turns: int) -> Callable[[sn.ChatRequest], Any]:
    """A handler asking for `CALLS_PER_TURN` lookups a turn for `turns` turns, then answering."""
    remaining = iter(range(turns))

    def handler(request: sn.ChatRequest) -> Any:
        turn = next(remaining, None)
        if turn is None:
            return "all looked up"
        first = turn * CALLS_PER_TURN
        return sn.reply(
            tool_calls=[sn.call("lookup", key=first + i) for i in range(CALLS_PER_TURN)]
        )

    return handler


@dataclass
class Sample:
    """One run's cost."""

    wall: float
    cpu: float
    events: int


def one_run(turns: int, *, with_view: bool) -> Sample:
    """Run once, timing from the send to the result."""
    agent = sn.Agent("bench", tools=[lookup], max_turns=turns + 1)
    session = sn.Session(agent, llm=sn.mock_llm(scripted(turns)))
    live = view(session) if with_view else None
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = session.send("look everything up").result()
    if live is not None:
        live.close()  # after its last push: the run's cost includes every update
    sample = Sample(time.perf_counter() - wall, time.process_time() - cpu, len(session.events))
    if result.status != "done":
        raise RuntimeError(f"the benchmark run ended {result.status}: {result.text}")
    return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per variant (median taken)")
    parser.add_argument("--turns", type=int, default=900, help="model turns per run")
    options = parser.parse_args()
    one_run(20, with_view=True)  # warm up imports, the loop thread and the mock
    samples: dict[bool, list[Sample]] = {False: [], True: []}
    for repeat in range(options.repeats):
        for with_view in (False, True) if repeat % 2 == 0 else (True, False):
            samples[with_view].append(one_run(options.turns, with_view=with_view))
    print(f"{samples[False][0].events} events per run, median of {options.repeats} runs each")
    ratios = {}
    for measure in ("cpu", "wall"):
        without = statistics.median(getattr(s, measure) for s in samples[False])
        with_ = statistics.median(getattr(s, measure) for s in samples[True])
        ratios[measure] = with_ / without
        print(f"{measure:>4} time: {without:.3f} s without a view, {with_:.3f} s with one")
    verdict = "ok" if ratios["cpu"] <= TARGET else f"over the {TARGET}x target"
    print(f"ratio: {ratios['cpu']:.3f}x CPU, {ratios['wall']:.3f}x wall ({verdict})")


if __name__ == "__main__":
    main()
