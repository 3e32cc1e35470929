"""`token_rollup(obj)`: a run's tokens per node, own and with the subtree, from Python."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .. import Result, Run, Session
from ._timings import Timings
from ._waterfall import NodeTokens
from ._waterfall import token_rollup as _rollup

if TYPE_CHECKING:
    from ..events import Event


def token_rollup(
    obj: Session | Run | Result | Iterable[Event],
    *,
    run: int | None = None,
    node: str | None = None,
) -> list[NodeTokens]:
    """Tokens per node in one run, prompt and completion, each node's own and its subtree's,
    with the cost a CLI child reported and the model calls' estimated cost at their prices (the
    session's `prices=` over genai-prices'; `no price` for a model neither knows, never 0).

    Args:
        obj: a `sn.Session`, `sn.Run` or `sn.Result`, or a list of its events.
        run: the run's number; by default the result's or run's own, or a session's newest.
        node: the subtree's top (a node id such as `lead/explore.1`); by default the root.

    Returns:
        One `NodeTokens` per node of the subtree, depth first; empty when the run has no events.

    Raises:
        ValueError: `run` names no run among the events.
    """
    prices = None
    if isinstance(obj, Result | Run | Session):
        events: list[Event] = list(obj.events)
        prices = obj.session.prices if isinstance(obj, Run) else obj.prices
        if run is None and not isinstance(obj, Session):
            run = obj.run if isinstance(obj, Result) else obj.number
    else:
        events = list(obj)
    timings = Timings()
    timings.update(events)
    if not timings.runs:
        return []
    if run is None:
        run = max(timings.runs)
    if run not in timings.runs:
        raise ValueError(
            f"no run {run} among these events (runs: {', '.join(map(str, sorted(timings.runs)))}); "
            "pass one of those as run=, or leave run= out for the newest"
        )
    return _rollup(timings.runs[run], node, prices)
