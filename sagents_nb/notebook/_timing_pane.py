"""The Timing tab's pane: a run's waterfall and its token table, for the chosen node's subtree."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._projector import Projector
from ._waterfall import token_rollup, waterfall

TOKEN_ROWS = 60
"""Nodes the token table lists at most (its sums cover every node)."""
REBUILD_INTERVAL = 0.5
"""Seconds between rebuilds of the Timing pane while a run streams: the whole waterfall is
rebuilt each time, too much work for every update of a big run."""


class TimingStamp:
    """When the Timing pane is rebuilt: after every change, but while a run is running at most
    every `REBUILD_INTERVAL` seconds.

    Args:
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._stamp = -1
        self._at = float("-inf")

    def __call__(self, projector: Projector) -> tuple[int, bool]:
        """The pane's version, and whether a newer state waits (then ask for another update:
        it comes after the interval)."""
        if projector.version == self._stamp:
            return self._stamp, False
        now = self._clock()
        running = any(run.status == "running" for run in projector.runs.values())
        if running and now - self._at < REBUILD_INTERVAL:
            return self._stamp, True
        self._stamp, self._at = projector.version, now
        return self._stamp, False


def timing_pane(projector: Projector, chosen: str | None, run: int | None) -> dict[str, Any]:
    """The waterfall and token rollup of `chosen`'s subtree (the root's when None) in run `run`
    (by default the newest run that has the node in it). Folds the events it has not seen yet."""
    timings = projector.timings
    timings.update(projector.events)
    numbers = sorted(timings.runs)
    if not numbers:
        return {"node": chosen or projector.root, "runs": [], "empty": "no runs timed yet"}
    top = chosen or projector.root
    if run not in timings.runs:
        having = [n for n in numbers if top in timings.runs[n].nodes]
        run = (having or numbers)[-1]
    timing = timings.runs[run]
    if top not in timing.nodes:
        top = timing.root
    tokens = token_rollup(timing, top, projector.prices)
    return {
        "node": top,
        "runs": numbers,
        "waterfall": waterfall(timing, top, prices=projector.prices),
        "tokens": [row.to_dict() for row in tokens[:TOKEN_ROWS]],
        "tokens_more": max(0, len(tokens) - TOKEN_ROWS),
    }
