"""The Timing tab's pane: a run's waterfall and its token table, for the chosen node's subtree."""

from __future__ import annotations

from typing import Any

from ._projector import Projector
from ._waterfall import token_rollup, waterfall

TOKEN_ROWS = 60
"""Nodes the token table lists at most (its sums cover every node)."""


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
    tokens = token_rollup(timing, top)
    return {
        "node": top,
        "runs": numbers,
        "waterfall": waterfall(timing, top),
        "tokens": [row.to_dict() for row in tokens[:TOKEN_ROWS]],
        "tokens_more": max(0, len(tokens) - TOKEN_ROWS),
    }
