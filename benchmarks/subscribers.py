"""What a slow `session.subscribe` callback costs a streamed run: a delegation whose child streams
its answer, with no subscriber and with one that takes 50 ms an event (the seed: no plugin
latency throttles generation). Measured to the run's end on the loop (not to `result()`, which
waits for the callback to be handed every event); PASS within 1.1x of none.

    .venv/bin/python benchmarks/subscribers.py [--repeats 5] [--delay 0.05]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import sagents_nb as sn

LIMIT = 1.1


def handler(request: sn.ChatRequest) -> Any:
    if request.model == "boss":
        if not request.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="writer", prompt="write")])
        return "done: " + request.tool_results[-1][:20]
    return sn.reply("東京 🌞 c'est très beau. " * 200, stream=True)


def one_run(delay: float | None) -> tuple[float, int]:
    """Seconds from send to the run's end, and the events of the run."""
    writer = sn.Agent("writer", does="writes", model="writer", kind=sn.kinds.Realtime())
    session = sn.Session(sn.Agent("boss", model="boss", team=[writer]), llm=sn.mock_llm(handler))
    unsubscribe = None
    if delay is not None:
        unsubscribe = session.subscribe(lambda event: time.sleep(delay))
    started = time.perf_counter()
    run = session.send("go")
    run._stop.wait()
    elapsed = time.perf_counter() - started
    if unsubscribe is not None:
        unsubscribe()  # the events it has not been handed yet are dropped
    return elapsed, len(session.events)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    one_run(None)  # warm-up
    bare, slow = [], []
    events = 0
    for round_ in range(args.repeats):  # interleaved, the other first each round
        for delay in (None, args.delay) if round_ % 2 else (args.delay, None):
            seconds, events = one_run(delay)
            (bare if delay is None else slow).append(seconds)
    none_s, slow_s = statistics.median(bare), statistics.median(slow)
    ratio = slow_s / none_s
    print(
        f"streamed run, {events} events, median of {args.repeats}: none {none_s * 1000:.1f} ms, "
        f"with a {args.delay * 1000:.0f} ms subscriber {slow_s * 1000:.1f} ms"
    )
    verdict = "PASS" if ratio <= LIMIT else "FAIL"
    print(f"{verdict} slow subscriber ÷ none {ratio:.2f}x (limit {LIMIT}x)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
